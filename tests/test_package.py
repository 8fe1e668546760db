"""The package as a user installs it (nnrnn/dependencies.py, pyproject.toml): the torch range, said alike in
pyproject.toml, the README and the oldest environment's pins, an older torch refused in one line; the core's
dependencies and the cli extra, a command without its extra saying which to install; what ``import nnrnn`` loads;
the LICENSE and CITATION.cff in the source distribution."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

from nnrnn import dependencies

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}
OLDEST = ".".join(map(str, dependencies.OLDEST_TORCH))


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_torch_range_is_the_same_in_pyproject_the_readme_and_the_oldest_environment():
    assert f"torch>={OLDEST}" in project()["dependencies"]
    assert dependencies.torch_range() == f"torch>={OLDEST}"
    assert f"torch>={OLDEST}" in (REPO / "README.md").read_text()
    assert f"torch=={OLDEST}\n" in (REPO / "requirements-oldest.txt").read_text()
    assert f"torch=={dependencies.TESTED_TORCH}\n" in (REPO / "requirements.txt").read_text()


@pytest.mark.parametrize("version, supported", [("2.1.2+cu121", False), ("2.4.0", False), (OLDEST, True),
                                                (f"{OLDEST}+cu121", True), ("2.13.0+cpu", True),
                                                ("2.15.0a0+git1234", True), ("3.0.0", True)])
def test_an_older_torch_is_refused_with_the_range(version, supported):
    if supported:
        dependencies.check_torch(version)
        return
    with pytest.raises(ImportError, match=re.escape(f"nnrnn needs torch>={OLDEST}")) as raised:
        dependencies.check_torch(version)
    assert version in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.subprocess
def test_the_command_line_under_an_older_torch_says_one_line_and_exits_2():
    code = ("import sys, torch; torch.__version__ = '2.1.2'\n"
            "from nnrnn_cli.command import main; sys.exit(main(['presets']))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=ENV)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (f"nnrnn: error: nnrnn needs torch>={OLDEST} (tested: {OLDEST} and "
                             f"{dependencies.TESTED_TORCH}); this is torch 2.1.2: pip install --upgrade torch\n")


def test_the_core_is_torch_numpy_scipy_and_ninja_and_the_cli_extra_the_rest():
    names = [re.match(r"[A-Za-z0-9_-]+", r).group() for r in project()["dependencies"]]
    assert names == ["torch", "numpy", "scipy", "ninja"]
    cli = [re.match(r"[A-Za-z0-9_-]+", r).group() for r in project()["optional-dependencies"]["cli"]]
    assert sorted(cli) == sorted(dependencies.CLI_EXTRA)


@pytest.mark.subprocess
@pytest.mark.parametrize("command, missing", [(["sweep", "--help"], ["optuna"]),
                                              (["presets"], list(dependencies.CLI_EXTRA))])
def test_a_command_without_its_extra_says_in_one_line_which_to_install(command, missing):
    # a fresh process, as a user's: one where the command's module was never imported
    code = (f"import sys\nfor name in {missing!r}:\n    sys.modules[name] = None  # import name: ModuleNotFoundError\n"
            f"from nnrnn_cli.command import main\nsys.exit(main({command!r}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=ENV)
    if command == ["presets"]:  # a command that needs none of the extra runs without it
        assert result.returncode == 0 and result.stderr == "", result.stderr
        return
    assert result.returncode == 2
    assert result.stderr == ("nnrnn: error: this command needs optuna, which comes with nnrnn's cli extra: "
                             "pip install 'nnrnn[cli]'\n")


def test_a_missing_package_outside_the_extra_stays_an_internal_error():
    assert dependencies.missing_extra(ModuleNotFoundError("No module named 'rwkv'", name="rwkv")) is None
    assert dependencies.missing_extra(ModuleNotFoundError("x", name="matplotlib.pyplot")) == "matplotlib"
    assert dependencies.missing_extra(ImportError("cannot import name", name="optuna")) is None


@pytest.mark.subprocess
def test_import_nnrnn_loads_no_compiler_machinery():
    # beyond what `import torch` loads itself (torch.hub imports tqdm where it is installed)
    code = ("import sys, torch\nbefore = set(sys.modules)\nimport nnrnn\n"
            "print(sorted(m for m in ('torch._dynamo', 'torch._inductor', 'scipy.linalg', 'matplotlib', 'optuna', "
            "'tqdm', 'tensorboard') if m in set(sys.modules) - before))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=ENV)
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout + result.stderr


@pytest.mark.subprocess
def test_the_source_distribution_carries_the_license_and_the_citation(tmp_path):
    pytest.importorskip("setuptools", minversion="77")  # pyproject.toml's license needs it
    tree = tmp_path / "tree"  # a copy: the build writes an egg-info beside the sources, which stay untouched
    shutil.copytree(REPO / "src", tree / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "CITATION.cff", "MANIFEST.in"):
        shutil.copy(REPO / name, tree / name)
    code = f"from setuptools import build_meta; print(build_meta.build_sdist({str(tmp_path)!r}))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tree)
    assert result.returncode == 0, result.stderr
    with tarfile.open(tmp_path / result.stdout.strip().splitlines()[-1]) as sdist:
        names = {Path(*Path(n).parts[1:]).as_posix() for n in sdist.getnames()}
        license_text = sdist.extractfile(next(n for n in sdist.getnames() if n.endswith("/LICENSE"))).read().decode()
    assert {"LICENSE", "CITATION.cff", "pyproject.toml", "src/nnrnn/__init__.py"} <= names
    assert license_text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in license_text


def test_the_citation_names_the_papers_authors_in_the_papers_order():
    text = (REPO / "CITATION.cff").read_text()
    families = re.findall(r"family-names: (.+)", text)
    assert families == ["Kerg", "Goyette", "Puelma Touzel", "Gidel", "Vorontsov", "Bengio", "Lajoie"]
    assert "cff-version: 1.2.0" in text and "type: software" in text and "preferred-citation:" in text
