"""nnrnn.environment: every environment variable of nnrnn's own (NNRNN_*) is read there and nowhere else, and
each is in its table and in docs/training.md's."""
import re
from pathlib import Path

import pytest

from nnrnn import environment

SRC = Path(__file__).resolve().parents[1] / "src" / "nnrnn"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "training.md"


def names_in(text: str) -> set[str]:
    return set(re.findall(r"\bNNRNN_[A-Z_]+[A-Z]\b", text))


def test_only_environment_py_reads_nnrnn_variables():
    readers = [f"{path.relative_to(SRC)}:{number}" for path in SRC.rglob("*.py") if path.name != "environment.py"
               for number, line in enumerate(path.read_text().splitlines(), 1)
               if re.search(r"os\.environ|getenv", line) and "NNRNN_" in line]
    assert readers == []


def test_every_variable_the_package_names_is_in_both_tables():
    named = set().union(*(names_in(path.read_text()) for path in SRC.rglob("*.py")))
    table = environment.__doc__
    documented = {name for name in names_in(table) if f"``{name}``" in table}
    rows = {name for name in names_in(DOCS.read_text()) if f"| `{name}` |" in DOCS.read_text()}
    assert named <= documented, named - documented
    assert documented == rows, documented ^ rows


@pytest.mark.parametrize("value, expected", [("", None), ("  ", None), ("~/data", Path.home() / "data"),
                                             ("/x/y", Path("/x/y"))])
def test_folders_expand_the_home_folder(monkeypatch, value, expected):
    monkeypatch.setenv("NNRNN_DATA", value)
    assert environment.folder("NNRNN_DATA") == expected


def test_the_cache_folder_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("NNRNN_EXTENSIONS_DIR", raising=False)
    assert environment.cache_folder() == tmp_path / "nnrnn" == environment.extensions_dir()
    monkeypatch.setenv("NNRNN_EXTENSIONS_DIR", str(tmp_path / "loops"))
    assert environment.extensions_dir() == tmp_path / "loops"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert environment.cache_folder() == Path.home() / ".cache" / "nnrnn"
