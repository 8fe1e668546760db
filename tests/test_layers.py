"""The package's layers (docs/contributing.md): each imports only from the layers below it and its own, so that
the library never depends on the command line, nor the models on training; and the command modules import at
their top.  Read from the source (every import statement, at any depth), not from what a run happens to import."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# lowest first; a module's layer is that of its first package below nnrnn (or of its own name at the top level)
LAYERS = (
    {"errors", "environment", "kernels", "serialization", "presets", "data", "tasks", "parametrizations", "models"},
    {"training"},
    {"experiments", "analysis", "doctor"},
    {"commands", "__main__"},
)


def layer(part: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if part in names)


def imported(path: Path, src: Path = SRC) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import of an nnrnn module in the file at ``path`` below ``src``."""
    module = ".".join(path.relative_to(src).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module.removesuffix(".__init__")
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: `..` is the package above this file's
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            # `from . import x` may name a submodule: count it as one
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names] if not node.module else \
                [(node.lineno, base)]
    return [(line, name) for line, name in found if name.split(".")[0] == "nnrnn"]


MODULES = sorted(p for p in (SRC / "nnrnn").rglob("*.py") if p.name != "__init__.py" or p.parent != SRC / "nnrnn")


def test_every_part_of_the_package_has_a_layer():
    parts = {p.relative_to(SRC / "nnrnn").with_suffix("").parts[0] for p in MODULES}
    assert parts <= set().union(*LAYERS), parts - set().union(*LAYERS)


def upward(path: Path, src: Path = SRC) -> list[str]:
    """The imports in ``path`` of modules in a layer above its own."""
    own = layer(path.relative_to(src / "nnrnn").with_suffix("").parts[0])
    return [f"line {line}: {name}" for line, name in imported(path, src)
            if name != "nnrnn" and layer(name.split(".")[1]) > own]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_a_module_imports_only_from_its_layer_and_those_below(path):
    assert upward(path) == [], f"{path.relative_to(SRC)} imports from a layer above its own"


def test_the_command_modules_import_at_their_top():
    inside = []
    for path in sorted((SRC / "nnrnn" / "commands").glob("*.py")):
        tree = ast.parse(path.read_text())
        top = {id(node) for node in tree.body}
        inside += [f"{path.name}:{node.lineno}" for node in ast.walk(tree)
                   if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top]
    assert inside == []


def test_an_import_from_above_is_found_at_any_depth_and_in_any_form(tmp_path):
    model = tmp_path / "nnrnn" / "models" / "bad.py"
    model.parent.mkdir(parents=True)
    model.write_text("import torch\nfrom . import base\nfrom ..errors import UserError\n"
                     "def f():\n    from ..training import train\n    import nnrnn.commands.eval\n")
    assert upward(model, tmp_path) == ["line 5: nnrnn.training", "line 6: nnrnn.commands.eval"]
