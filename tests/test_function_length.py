"""Every function in nnrnn/ fits on a screen: at most MAX_LINES lines from its ``def`` to its end."""
import ast
from pathlib import Path

import nnrnn

MAX_LINES = 60


def test_no_function_in_the_package_is_longer_than_max_lines():
    package = Path(nnrnn.__file__).parent
    offenders = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                where = f"{path.relative_to(package)}:{node.name}"
                if length > MAX_LINES:
                    offenders.append(f"{where} ({length} lines)")
    assert not offenders, "LONG FUNCTIONS (split by meaning): " + ", ".join(offenders)
