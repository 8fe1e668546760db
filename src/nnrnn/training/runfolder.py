"""A run folder's layout, the one place that names its files, and how a run claims a folder.

A run folder holds::

    .nnrnn-run             the marker, written first: nnrnn writes only into folders that hold one
    .lock                  held by the process training there (nnrnn.training.runlock)
    config.json            every resolved option
    metrics.jsonl          one JSON object per logged point (nnrnn.training.runlog)
    tensorboard/           the same scalars for TensorBoard
    curves.png             the training curves
    outcome.json           learned, did not learn or diverged, and why (nnrnn.training.outcome)
    mechanism.json         what training made of the recurrent matrix, measured when the run ended, where the caller
                           of train() asked for it (nnrnn.analysis.mechanism, which `nnrnn train` and the grids pass)
    checkpoints/last.pt    the whole run's state, for --resume
    checkpoints/best.pt    the model at its best validation score
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..errors import UserError
from . import checkpoint
from .runlock import LOCK_NAME

MARKER = ".nnrnn-run"
CONFIG = "config.json"
METRICS = "metrics.jsonl"
TENSORBOARD = "tensorboard"
CURVES = "curves.png"
OUTCOME = "outcome.json"
MECHANISM = "mechanism.json"
ANALYSIS = "analysis"  # what `nnrnn analyze RUN` writes into the run folder: of the run it replaces, after --overwrite
CHECKPOINTS = "checkpoints"
LAST = f"{CHECKPOINTS}/last.pt"
BEST = f"{CHECKPOINTS}/best.pt"
DIVERGED_MARKER = "DIVERGED"  # in a grid run that diverged (nnrnn reproduce; older grids wrote no outcome.json)
WALL_SECONDS = "wall_seconds"  # a grid run's training time in seconds, written by nnrnn reproduce
# what --overwrite removes
RUN_FILES = (CHECKPOINTS, METRICS, TENSORBOARD, CURVES, CONFIG, OUTCOME, MECHANISM, ANALYSIS)


def last_checkpoint(folder) -> Path:
    return Path(folder) / LAST


def best_checkpoint(folder) -> Path:
    return Path(folder) / BEST


def config_file(folder) -> Path:
    return Path(folder) / CONFIG


def metrics_file(folder) -> Path:
    return Path(folder) / METRICS


def is_run_folder(folder: Path) -> bool:
    """Whether ``folder`` holds an nnrnn run: its marker, or (runs made before the marker) a last checkpoint or
    a config.json of nnrnn's."""
    folder = Path(folder)
    if (folder / MARKER).is_file() or last_checkpoint(folder).is_file():
        return True
    try:
        saved = json.loads(config_file(folder).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(saved, dict) and {"task", "model", "hidden", "out"} <= set(saved)


def other_files(folder: Path, marker: str = MARKER) -> list[str]:
    """The sorted names in ``folder`` other than its run lock and ``marker`` (the marker of whichever nnrnn
    folder it is meant to be): the files a folder already held that nnrnn must not replace."""
    return sorted(p.name for p in Path(folder).iterdir() if p.name not in (LOCK_NAME, marker))


def check_not_foreign(folder: Path) -> None:
    """UserError if ``folder`` holds files and is not an nnrnn run: nnrnn writes nothing into it."""
    others = other_files(folder) if folder.is_dir() else []
    if others and not is_run_folder(folder):
        raise UserError(f"{folder} holds files nnrnn did not write ({', '.join(others[:3])}"
                        f"{', …' if len(others) > 3 else ''}); choose another --out (a new folder or an empty one)")


def claim(folder: Path, resume: bool, overwrite: bool) -> bool:
    """Claim ``folder`` for this run (write the marker) and return whether there is a checkpoint to resume
    from.  UserError, touching nothing, for a new run over an existing one (unless ``overwrite``), and for a
    resume without a run or without a writable checkpoint folder.  The caller has checked, before taking the
    folder's lock, that the folder is not foreign (:func:`check_not_foreign`)."""
    last = last_checkpoint(folder)
    if resume:
        if not is_run_folder(folder):
            raise UserError(f"cannot resume: {folder} holds no nnrnn run; start the run without --resume")
        if last.is_file() and not os.access(last.parent, os.W_OK | os.X_OK):
            raise UserError(f"cannot resume: {last.parent} is not writable, so no checkpoint could be saved; "
                            f"make it writable or copy the run elsewhere")
        if not last.is_file():
            print(f"[nnrnn] {folder} has no checkpoint yet: its run starts from the beginning", flush=True)
        return last.is_file()
    work = [name for name in RUN_FILES if (folder / name).exists()
            and not (name == METRICS and not (folder / name).read_text(errors="replace").strip())]
    if {CHECKPOINTS, METRICS} & set(work) and not overwrite:
        raise UserError(f"{folder} already holds a run; pass --resume to continue it, --overwrite to replace it, "
                        f"or choose another --out")
    for name in work:  # --overwrite, or an attempt that logged nothing: nnrnn's own files only
        shutil.rmtree(folder / name) if (folder / name).is_dir() else (folder / name).unlink()
    checkpoint.atomic_write(folder / MARKER, lambda f: f.write(b"an nnrnn run folder\n"))
    return False


def read_config(path: Path) -> dict:
    """A run's saved config.json; UserError naming the file if it cannot be read."""
    try:
        saved = json.loads(Path(path).read_text())
    except OSError as error:
        raise UserError(f"cannot read {path} ({error.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UserError(f"{path} is not a valid config.json ({error}); restore it or start a new run") from None
    if not isinstance(saved, dict):
        raise UserError(f"{path} is not a valid config.json (it holds a {type(saved).__name__}, not an object); "
                        f"restore it or start a new run")
    return saved


def saved_run(folder: Path) -> tuple[dict | None, dict | None]:
    """(configuration, last checkpoint) of the run in ``folder``, for its resume: the last checkpoint's own
    configuration and the checkpoint, read once (on the CPU); else config.json's and None (a run that died
    before its first checkpoint); (None, None) for a folder claimed and stopped before its options were written
    (a new start).  UserError if it holds no nnrnn run."""
    folder = Path(folder)
    last, config = last_checkpoint(folder), config_file(folder)
    if last.is_file():
        saved = checkpoint.load(last)
        if not isinstance(saved.get("config"), dict):
            raise UserError(f"{last} holds no run configuration; it was not written by nnrnn's trainer")
        return saved["config"], saved
    if config.is_file():
        return read_config(config), None
    if (folder / MARKER).is_file():
        return None, None
    check_not_foreign(folder)  # a folder of the user's own: the advice is another --out, not a new start
    raise UserError(f"cannot resume: {folder} holds no nnrnn run (no {LAST}, no {CONFIG}); start the run without "
                    f"--resume")
