"""The torch versions nnrnn supports, checked when nnrnn is imported, and the packages of its ``cli`` extra.

``pip install nnrnn`` brings what the layers, parametrizations and theory need (torch, numpy, scipy, and ninja,
which torch needs to compile the recurrence loops); the command line's trainer, sweeps, grids and figures need
the ``cli`` extra as well (``pip install 'nnrnn[cli]'``; docs/design.md, "Dependencies and why each is here").
The range is pyproject.toml's and the README's (tests/test_package.py holds the three equal); ``make test`` runs
the library's suite under the oldest (docs/testing.md, "The oldest torch").
"""
from __future__ import annotations

import re

from .errors import UnsupportedTorch

OLDEST_TORCH = (2, 4, 1)  # the oldest torch tested; older ones lack torch.library.custom_op
TESTED_TORCH = "2.13.0"  # the newest tested: requirements.txt's pin
# the packages of the cli extra (pyproject.toml's), by the name they are imported under
CLI_EXTRA = ("matplotlib", "optuna", "tensorboard", "tqdm")


def torch_range() -> str:
    """The supported torch versions in words, as pip writes them."""
    return f"torch>={'.'.join(map(str, OLDEST_TORCH))}"


def release(version: str) -> tuple[int, ...]:
    """(major, minor, patch) of a version string such as '2.4.1+cu121' or '2.6.0a0+git1234'."""
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def check_torch(version: str) -> None:
    """UnsupportedTorch (one line naming the range) for a torch older than :data:`OLDEST_TORCH`; a pre-release
    of a supported version passes."""
    if release(version) < OLDEST_TORCH:
        raise UnsupportedTorch(f"nnrnn needs {torch_range()} (tested: {'.'.join(map(str, OLDEST_TORCH))} and "
                               f"{TESTED_TORCH}); this is torch {version}: pip install --upgrade torch")


def missing_extra(error: BaseException) -> str | None:
    """The package of the ``cli`` extra whose absence ``error`` (a ModuleNotFoundError) reports, else None."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        top = error.name.split(".")[0]
        return top if top in CLI_EXTRA else None
    return None
