"""The doctor's save/load/resume check: N updates of the real trainer in one go against N/2 and a resume."""
from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import torch

from ..errors import TrainingDiverged, UserError
from ..tasks import task_class
from ..training import checkpoint, runfolder
from ..training.network import build
from ..training.train import train
from .rows import Row
from .workload import Sizes, config_for, relative

RESUME_RTOL = {"cpu": 0.0, "cuda": 1e-5}
# Evaluation batch of the resume rows' real tasks (psMNIST: images; PTB: parallel streams, each carrying its state
# through 1/EVAL_BATCH of the file): few sequential steps, so an evaluation is quick and an nnRNN whose |λ| drifted
# just above 1 in its first updates stays finite over it (over PTB's whole file it does not).
EVAL_BATCH = 1000


def _train_options(task: str, model: str, sizes: Sizes, device: torch.device, data_dir) -> dict:
    cls = task_class(task)
    options = {"device": str(device), "seed": 0, "log_every": 1, "eval_every": 2, "checkpoint_every": 2,
               "lr_schedule": "none"}
    if cls.has_data_files:
        options["data_dir"] = data_dir
    if "eval_batch_size" in cls.CONFIG_OPTIONS:
        options["eval_batch_size"] = EVAL_BATCH
    return options


def final_parameters(folder: Path) -> dict:
    return checkpoint.load(runfolder.last_checkpoint(folder))["model"]


def quietly(function, *args, **kwargs):
    """Runs ``function`` with its stdout (the trainer's progress lines) discarded."""
    with contextlib.redirect_stdout(io.StringIO()):
        return function(*args, **kwargs)


def _train_to_checkpoint(config: dict, resume: bool = False) -> bool:
    """Trains quietly; True if an evaluation diverged.  train() writes the last checkpoint before it refuses a run
    whose validation or test score is not finite, and that checkpoint's parameters are what the resume check
    compares; a divergence of the updates themselves (a skipped update, or a run stopped early) is a failure."""
    try:
        quietly(train, config, resume=resume)
    except TrainingDiverged:
        last = runfolder.last_checkpoint(config["out"])
        saved = checkpoint.load(last) if last.is_file() else {}
        if saved.get("step") != config["steps"] or saved.get("skipped", 0):
            raise
        return True
    return False


def check_resume(model: str, task_name: str, device: torch.device, sizes: Sizes, data_dir=None,
                 workdir: Path | None = None) -> Row:
    updates = 4
    options = _train_options(task_name, model, sizes, device, data_dir)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        straight = config_for(task_name, model, sizes, out=str(Path(tmp) / "straight"), steps=updates, **options)
        if task_class(task_name).has_data_files:
            try:
                build(straight)
            except UserError as error:  # the data is not where it was looked for
                return Row("save/load/resume", model, task_name, f"skipped (no data: {error})")
        diverged = _train_to_checkpoint(straight)
        split = config_for(task_name, model, sizes, out=str(Path(tmp) / "split"), steps=updates // 2, **options)
        diverged |= _train_to_checkpoint(split)
        diverged |= _train_to_checkpoint({**split, "steps": updates}, resume=True)
        a, b = final_parameters(Path(tmp) / "split"), final_parameters(Path(tmp) / "straight")
    tolerance = RESUME_RTOL.get(device.type, 1e-5)
    errors = {name: relative(a[name], b[name]) for name in b if b[name].is_floating_point()}
    worst = max(errors, key=errors.get)
    ok = set(a) == set(b) and errors[worst] <= tolerance
    how = "equal" if tolerance == 0 else f"within {tolerance:g}"
    note = "; an evaluation was not finite, every update was (parameters compared all the same)" if diverged else ""
    return Row("save/load/resume", model, task_name, "ok" if ok else "FAIL",
               f"{updates} updates vs {updates // 2} + resume: parameters {how} (largest difference "
               f"{errors[worst]:.1e}, {worst}){note}")
