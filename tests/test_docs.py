"""The documentation's examples run as they stand."""
import re
from pathlib import Path

import torch

import nnrnn

DOCS = Path(__file__).resolve().parents[1] / "docs"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.DOTALL)


def test_the_complete_own_loop_of_layers_md_trains(capsys):
    loop = next(block for block in python_blocks(DOCS / "layers.md") if "nnrnn.regularization(model" in block)
    namespace = {"__name__": "layers_md"}
    exec(compile(loop, "docs/layers.md", "exec"), namespace)  # noqa: S102  (the documentation's own code)
    assert namespace["accuracy"] > 0.8, capsys.readouterr().out  # it recalls the sign 20 steps back
    groups = nnrnn.param_groups(namespace["model"], lr=1e-3, lr_orth=1e-4)
    assert [g["name"] for g in groups] == ["default", "orthogonal"]
    assert namespace["penalty"].requires_grad and torch.isfinite(namespace["penalty"])


def test_the_long_memory_models_example_of_layers_md_gives_the_shapes_it_states():
    block = next(block for block in python_blocks(DOCS / "layers.md") if 'nnrnn.create("lem"' in block)
    namespace = {"torch": torch, "nnrnn": nnrnn}
    exec(compile(block, "docs/layers.md", "exec"), namespace)  # noqa: S102  (the documentation's own code)
    for line in block.splitlines():  # each "# name (shape)" comment against the value
        for name, shape in re.findall(r"(\w+) \(([\d, ]+)\)", line.partition("#")[2]):
            want = tuple(int(v) for v in shape.split(","))
            got = namespace[name].shape if name in namespace else None
            assert got == want, (line, name, got)
