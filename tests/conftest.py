"""Shared test settings: where the real data is, and the markers.

Markers (pyproject.toml registers them; ``make mutate`` deselects both):

* ``subprocess``: runs nnrnn in another process (the installed command, torchrun, kill -9, signals), so it
  tests the installed package, not the code a mutation tool rewrote in place;
* ``slow``: torch.compile, or many generated cases.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# the real MNIST test set and PTB character files: ../shared/data beside the checkout, or $NNRNN_SHARED_DATA
SHARED = Path(os.environ.get("NNRNN_SHARED_DATA") or REPO.parent / "shared" / "data")
HAS_MNIST = (SHARED / "mnist" / "t10k-images-idx3-ubyte.gz").is_file()
HAS_PTB = (SHARED / "ptb" / "ptb.char.valid.txt").is_file() and (SHARED / "ptb" / "ptb.char.test.txt").is_file()
needs_mnist = pytest.mark.skipif(not HAS_MNIST, reason=f"MNIST test files not found in {SHARED}/mnist "
                                                       f"(set NNRNN_SHARED_DATA to the shared data folder)")
needs_ptb = pytest.mark.skipif(not HAS_PTB, reason=f"PTB character files not found in {SHARED}/ptb "
                                                   f"(set NNRNN_SHARED_DATA to the shared data folder)")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished copy run of 4 updates (a test copies it before changing it)."""
    from helpers import TINY

    from nnrnn_cli import command as cli
    folder = tmp_path_factory.mktemp("runs") / "done"
    assert cli.main(["train", "copy", "--steps", "4", "--eval-every", "2", "--out", str(folder), *TINY]) == 0
    return folder

