"""The documentation's examples run as they stand."""
import re
import shlex
import textwrap
from pathlib import Path

import pytest
import torch

import nnrnn

DOCS = Path(__file__).resolve().parents[1] / "docs"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.DOTALL)


README = DOCS.parent / "README.md"
WITH_PYTHON = [path for path in (README, *sorted(DOCS.rglob("*.md"))) if python_blocks(path)]


@pytest.mark.parametrize("path", WITH_PYTHON, ids=lambda path: str(path.relative_to(DOCS.parent)))
def test_every_python_block_runs_as_written(path, tmp_path, monkeypatch, capsys):
    """Each file's blocks, in order, in one namespace (as a reader would type them into one session), in a folder
    that holds what the README says is there: the run `make demo` writes, runs/demo-copy-DATE-TIME (a tiny one)."""
    from nnrnn.training.config import resolve_config
    from nnrnn.training.train import train
    monkeypatch.chdir(tmp_path)
    train(resolve_config({"task": "copy", "model": "nnrnn", "hidden": 8, "T": 3, "batch_size": 2, "steps": 2,
                          "progress": False, "out": "runs/demo-copy-20261127-153000"}))
    namespace = {"__name__": path.stem}
    for block in python_blocks(path):
        exec(compile(textwrap.dedent(block), str(path), "exec"), namespace)  # noqa: S102  (the docs' own code)
    if path == README:
        assert isinstance(namespace["net"].rnn, nnrnn.NonNormalRNN) and not namespace["net"].training
    if path.name == "layers.md":  # the complete own loop trains: it recalls the sign 20 steps back
        assert namespace["accuracy"] > 0.8, capsys.readouterr().out
        groups = nnrnn.param_groups(namespace["model"], lr=1e-3, lr_orth=1e-4)
        assert [g["name"] for g in groups] == ["default", "orthogonal"]
        assert namespace["penalty"].requires_grad and torch.isfinite(namespace["penalty"])


def command_lines(path: Path) -> list[str]:
    """The ``nnrnn ...`` command lines of a file's plain fenced blocks, as typed (comments dropped, torchrun's
    prefix too); a synopsis (``[options]``, ``...``) is not a command."""
    lines, fence = [], None
    for raw in path.read_text().splitlines():
        stripped = raw.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:]
            continue
        line = stripped.split("  #")[0].strip()
        if fence != "" or "[" in line or "..." in line:
            continue
        if " -m nnrnn " in line:
            lines.append(line.split(" -m nnrnn ", 1)[1])
        elif line.startswith("nnrnn "):
            lines.append(line.removeprefix("nnrnn "))
    return lines


@pytest.mark.parametrize("path", [README, DOCS / "training.md"], ids=lambda path: path.name)
def test_every_command_line_of_the_readme_and_training_md_parses(path):
    """Training them all takes hours; what can rot without a test is a flag or a command that no longer exists."""
    from nnrnn_cli.command import make_parser
    lines = command_lines(path)
    assert lines, path
    for line in lines:
        make_parser().parse_args(shlex.split(line))


def inline_commands(path: Path) -> list[str]:
    """The ``nnrnn ...`` command lines quoted inline (`` `nnrnn reproduce --scale beyond` ``) outside fenced blocks,
    joined where a line break splits them."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    spans = (" ".join(span.split()) for span in re.findall(r"`([^`]+)`", text))
    return [span.removeprefix("nnrnn ") for span in spans if span.startswith("nnrnn ")]


@pytest.mark.parametrize("path", [README, DOCS / "results.md"], ids=lambda path: path.name)
def test_every_command_quoted_in_the_readme_and_results_md_parses(path):
    """The commands that say how a result was measured (the grids, `nnrnn doctor`) must still be ones to type."""
    from nnrnn_cli.command import make_parser
    lines = inline_commands(path)
    assert any(line.startswith("reproduce --scale cpu-long") for line in lines), path
    for line in lines:
        make_parser().parse_args(shlex.split(line))


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def links(path: Path) -> list[str]:
    """The relative link targets of a Markdown file, outside fenced blocks."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", target)]


MARKDOWN = [README, *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda path: str(path.relative_to(DOCS.parent)))
def test_every_relative_link_reaches_a_file_and_heading_that_exist(path):
    """Results moved from the README to docs/results.md; a link to the old place (a file or an anchor) fails here."""
    broken = []
    for target in links(path):
        name, _, heading = target.partition("#")
        dest = path.parent / name if name else path
        if not dest.exists():
            broken.append(target)
        elif heading and dest.suffix == ".md":
            text = re.sub(r"```.*?```", "", dest.read_text(), flags=re.DOTALL)
            if heading not in {anchor(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}:
                broken.append(target)
    assert broken == [], path


def test_the_readme_links_the_full_results():
    assert "docs/results.md" in links(README)


def test_the_long_memory_models_example_of_layers_md_gives_the_shapes_it_states():
    block = next(block for block in python_blocks(DOCS / "layers.md") if 'nnrnn.create("lem"' in block)
    namespace = {"torch": torch, "nnrnn": nnrnn}
    exec(compile(block, "docs/layers.md", "exec"), namespace)  # noqa: S102  (the documentation's own code)
    for line in block.splitlines():  # each "# name (shape)" comment against the value
        for name, shape in re.findall(r"(\w+) \(([\d, ]+)\)", line.partition("#")[2]):
            want = tuple(int(v) for v in shape.split(","))
            got = namespace[name].shape if name in namespace else None
            assert got == want, (line, name, got)
