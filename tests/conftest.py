"""Shared test settings: where the real data is, and the markers.

Markers (pyproject.toml registers them; ``make mutate`` deselects both):

* ``subprocess``: runs nnrnn in another process (the installed command, torchrun, kill -9, signals), so it
  tests the installed package, not the code a mutation tool rewrote in place;
* ``slow``: torch.compile, or many generated cases.

Kernel choices: the suite runs with ``NNRNN_TUNE=0`` (set here, before nnrnn is imported, and so inherited by
the processes tests start), so that every kernel is chosen by the fixed thresholds, the same on every run and
host, and nothing is written to the user's timings cache.  A test that needs the measured policy opts in with
the ``tuning`` fixture (its own cache folder, a fresh policy).
"""
from __future__ import annotations

import gc
import gzip
import os
from pathlib import Path

import pytest

os.environ["NNRNN_TUNE"] = "0"

REPO = Path(__file__).resolve().parents[1]
# the real MNIST test set and PTB character files: ../shared/data beside the checkout, or $NNRNN_SHARED_DATA
SHARED = Path(os.environ.get("NNRNN_SHARED_DATA") or REPO.parent / "shared" / "data")
HAS_MNIST = (SHARED / "mnist" / "t10k-images-idx3-ubyte.gz").is_file()
HAS_PTB = (SHARED / "ptb" / "ptb.char.valid.txt").is_file() and (SHARED / "ptb" / "ptb.char.test.txt").is_file()
needs_mnist = pytest.mark.skipif(not HAS_MNIST, reason=f"MNIST test files not found in {SHARED}/mnist "
                                                       f"(set NNRNN_SHARED_DATA to the shared data folder)")
needs_ptb = pytest.mark.skipif(not HAS_PTB, reason=f"PTB character files not found in {SHARED}/ptb "
                                                   f"(set NNRNN_SHARED_DATA to the shared data folder)")


def pytest_collection_finish(session):
    """Every object alive once the tests are collected (torch, dynamo, nnrnn, optuna, and the test modules) is
    moved out of the garbage collector's sight (``gc.freeze``): a full collection then walks only what the tests
    made since.  Optuna collects after every trial of nnrnn's sweeps (``gc_after_trial=True``), and in this
    process each collection took 0.27 s, 5 of a tuned grid's 14 s."""
    gc.freeze()


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished copy run of 4 updates (a test copies it before changing it)."""
    from helpers import TINY

    from nnrnn_cli import command as cli
    folder = tmp_path_factory.mktemp("runs") / "done"
    assert cli.main(["train", "copy", "--steps", "4", "--eval-every", "2", "--out", str(folder), *TINY]) == 0
    return folder



@pytest.fixture(scope="session")
def data_head(tmp_path_factory) -> Path:
    """The head of the shared data, in the same files and formats: psMNIST's first 100 test images (split
    80/10/10, as a test-only folder is) and PTB's first 100,000 characters of each file (100 per stream of 1000).
    For tests of a command that reads data, not of the data: evaluating the whole files is most of their time
    (psMNIST's 2,000 images and PTB's 1.7 M characters were 4 of a model's 4.3 s of the doctor's resume rows).
    Where the shared data is missing, the shared folder itself (the tests' own skips and the doctor's
    'skipped (no data' rows apply)."""
    mnist, ptb = SHARED / "mnist", SHARED / "ptb"
    images, labels = mnist / "t10k-images-idx3-ubyte.gz", mnist / "t10k-labels-idx1-ubyte.gz"
    texts = [ptb / f"ptb.char.{split}.txt" for split in ("valid", "test")]
    if not all(path.is_file() for path in (images, labels, *texts)):
        return SHARED
    folder = tmp_path_factory.mktemp("data")
    (folder / "mnist").mkdir()
    (folder / "ptb").mkdir()
    n = 100
    for path, header, size in ((images, 16, 28 * 28), (labels, 8, 1)):  # idx: magic, count, dimensions, data
        raw = gzip.decompress(path.read_bytes())
        head = raw[:4] + n.to_bytes(4, "big") + raw[8:header] + raw[header:header + n * size]
        (folder / "mnist" / path.name).write_bytes(gzip.compress(head, compresslevel=1))
    for path in texts:
        text = path.read_text()
        (folder / "ptb" / path.name).write_text(text[:text.index("\n", 100_000) + 1])
    return folder


@pytest.fixture
def undrawn_figures(monkeypatch):
    """Figures are built but not drawn: ``savefig`` writes a placeholder file where the figure would go, and
    ``tight_layout`` (a drawing's layout) does nothing.  For tests of what is trained, analysed and written, not of
    the figures: drawing is most of their time (a run's curves.png, drawn twice, is 9/10 of a 4-update run; a 2-layer
    bidirectional analysis 10 of its 12 s), and tests/analysis/test_figures.py draws every figure nnrnn makes."""
    from helpers import undraw
    undraw(monkeypatch)


@pytest.fixture(autouse=True)
def fresh_kernel_policy():
    """Every test starts from a kernel policy that has decided nothing and read the environment as the test set it
    (a test's monkeypatched variable, a pinned record, are gone after it)."""
    from nnrnn.kernels import policy as kernel_policy
    kernel_policy.reset()
    yield
    kernel_policy.reset()


@pytest.fixture(autouse=True)
def event_files_unordered(monkeypatch):
    """A run's TensorBoard writer starts at once, not at the next second after an earlier event file of its folder
    (runlog.after_earlier_event_files): that wait only orders event files for TensorBoard's reading, and a run or
    resume started within a second of another slept up to a second (19 of the full doctor's 35 s).
    tests/training/test_runlog.py reads TensorBoard's files, and overrides this fixture to keep the wait."""
    from nnrnn.training import runlog
    monkeypatch.setattr(runlog, "after_earlier_event_files", lambda directory: None)


@pytest.fixture
def tuning(monkeypatch, tmp_path):
    """The measured kernel policy (NNRNN_TUNE on), with its timings cache in a folder of the test's own."""
    from nnrnn.kernels import policy as kernel_policy, tuning as kernel_tuning
    monkeypatch.setenv("NNRNN_TUNE", "1")
    path = tmp_path / "cache" / "nnrnn" / "kernel-timings.json"
    monkeypatch.setattr(kernel_tuning, "cache_path", lambda: path)  # not XDG_CACHE_HOME: the compiled loops stay
    kernel_policy.reset()
    return path


@pytest.fixture(autouse=True)
def planted_costs(monkeypatch, tmp_path_factory):
    """A grid's cost is estimated from planted times, not measured (measuring a shape trains it;
    tests/experiments/test_cost.py measures once, on its own), and the estimates' cache is the test's own."""
    from nnrnn.experiments.planning import cost
    path = tmp_path_factory.mktemp("costs") / "update-times.json"
    monkeypatch.setattr(cost, "cache_path", lambda: path)
    monkeypatch.setattr(cost, "measure", lambda config: cost.Times(0.1, 0.01, 0.001, 0.01))
    monkeypatch.setattr(cost, "measure_floor", lambda config: 1.0)
    monkeypatch.setattr(cost, "measure_process", lambda: 1.0)
    monkeypatch.setattr(cost.tuning, "cpu_seconds", lambda: None)  # a planted time is taken on a quiet machine
    return path
