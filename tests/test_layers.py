"""The package's floors (docs/contributing.md): each part imports only from its own floor and those below, so that
the library never depends on the command line, nor the models on training; no module imports, at any depth,
one that imports it back (no circle between files); and the command modules import at their top.  Read from the
source (every import statement, at any depth), not from what a run happens to import."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# lowest first; a module's floor is that of its first package below nnrnn (or of its own name at the top level)
LAYERS = (
    {"errors", "environment", "dependencies"},
    {"kernels"},
    {"parametrizations", "tasks", "data", "presets"},
    {"models", "serialization"},
    {"training"},
    {"analysis", "doctor", "experiments"},
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
            # `from .x import y` names a submodule y or a name in x: both are counted, and module_of keeps
            # the longest that is a file
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
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
    assert upward(model, tmp_path) == ["line 5: nnrnn.training.train", "line 6: nnrnn.commands.eval"]


def module_of(name: str, modules: dict[str, Path]) -> str | None:
    """The module (file) an imported dotted ``name`` lands in: the longest prefix that is one."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """{module: the nnrnn modules it imports, at any depth}, a package standing for its ``__init__``."""
    modules = {}
    for path in (src / "nnrnn").rglob("*.py"):
        parts = path.relative_to(src).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for module, path in modules.items():
        targets = {module_of(name, modules) for _, name in imported(path, src)}
        graph[module] = {target for target in targets if target and target != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_one_that_imports_it_back():
    assert circles(import_graph()) == []


def test_a_circle_through_an_import_inside_a_function_is_found(tmp_path):
    kernels = tmp_path / "nnrnn" / "kernels"
    kernels.mkdir(parents=True)
    (kernels / "__init__.py").write_text("")
    (kernels / "policy.py").write_text("def f():\n    from . import loops\n")
    (kernels / "loops.py").write_text("from .policy import f\n")
    (kernels / "onednn.py").write_text("from . import loops\n")
    assert circles(import_graph(tmp_path)) == [["nnrnn.kernels.loops", "nnrnn.kernels.policy"]]


def test_the_kernels_are_one_package_below_everything_but_the_errors():
    """Everything that chooses or runs a kernel lives in nnrnn/kernels/; the kernels import only the lowest floor."""
    graph = import_graph()
    kernel_modules = [m for m in graph if m.startswith("nnrnn.kernels")]
    assert {"nnrnn.kernels.policy", "nnrnn.kernels.loops", "nnrnn.kernels.operations"} <= set(kernel_modules)
    assert not any(m.startswith("nnrnn.kernel_") for m in graph)
    below = {f"nnrnn.{name}" for name in LAYERS[0]}
    outside = {t for m in kernel_modules for t in graph[m] if not t.startswith("nnrnn.kernels")}
    assert outside <= below, outside


def docstring_order(package: Path) -> dict[str, int]:
    """{module: its rank} from the package docstring's bullet list, bottom first: each bullet's ``:mod:`.x``` names
    before its first colon share a rank."""
    import re
    ranks = {}
    for line in ast.get_docstring(ast.parse((package / "__init__.py").read_text())).splitlines():
        if line.startswith("* "):
            for module in re.findall(r":mod:`\.(\w+)`", line[2:].split("`: ")[0] + "`"):
                ranks[module] = len({*ranks.values()})
    return ranks


ROOMS = ("experiments", "experiments/judging", "experiments/planning", "experiments/reporting")


@pytest.mark.parametrize("room", ROOMS)
def test_the_experiments_rooms_import_in_the_order_their_package_describes(room):
    """experiments/ and each of its rooms: every module or room in it is in its docstring's list, and none imports
    one listed after it (an arrow up), at any depth below it."""
    package = SRC / "nnrnn" / room
    dotted = "nnrnn." + room.replace("/", ".")
    ranks = docstring_order(package)
    members = {p.relative_to(package).parts[0].removesuffix(".py") for p in package.rglob("*.py")} - {"__init__"}
    assert members <= set(ranks), f"not in the package's docstring: {sorted(members - set(ranks))}"
    upward = []
    for path in sorted(package.rglob("*.py")):
        own = path.relative_to(package).parts[0].removesuffix(".py")
        for line, name in imported(path):
            if own == "__init__" or not name.startswith(dotted + "."):
                continue
            other = name[len(dotted) + 1:].split(".")[0]
            if other in ranks and other != own and ranks[other] > ranks[own]:
                upward.append(f"{path.relative_to(package)} line {line}: {name}")
    assert upward == []


def test_no_room_of_experiments_imports_a_particular_grid():
    """Shared code (judging, planning, reporting) never imports a grid: a grid declares its hooks, the shared code
    calls them."""
    shared = [p for room in ROOMS[1:] for p in sorted((SRC / "nnrnn" / room).rglob("*.py"))]
    found = [f"{p.relative_to(SRC)} line {line}: {name}" for p in shared for line, name in imported(p)
             if name.startswith("nnrnn.experiments.grids")]
    assert found == []
