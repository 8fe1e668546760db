"""A training under way, as one object (:class:`Training`), and its :class:`Progress`: everything that changes while
it trains is saved to ``last.pt`` (:func:`save`) and restored from it (:func:`restore`) in one place, so a resumed run
continues exactly as if uninterrupted."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from ..kernels import policy as kernel_policy
from . import checkpoint, distributed, runfolder
from .config import check_resumable
from ..errors import UserError
from .network import check_weights, foreign_options, network_sizes
from .step import CapturedStep, TrainStep, capturable

CHECKPOINT_KEYS = ("config", "model", "optimizer", "schedule", "rng", "step", "best", "window", "bad_steps", "state")


@dataclass
class Progress:
    """A run's progress: everything about it that changes while it trains, besides the network's parameters
    and the optimizer's and schedule's own state; what ``last.pt`` holds and a resume restores."""

    step: int = 0             # updates done
    best: float | None = None  # best validation score so far (the task's monitor)
    window: dict = field(default_factory=dict)  # training metric sums since the last logged point
    bad_steps: int = 0        # non-finite updates in a row
    skipped: int = 0          # non-finite updates in all
    carried: torch.Tensor | tuple | None = None  # the hidden state carried into the next batch (PTB)
    initial_loss: float | None = None  # the first finite update's training loss: the untrained model's
    above_limit: int = 0      # logged losses in a row above the divergence limit (outcome.py)
    below_solved: int = 0     # validations in a row below --stop-when-solved's loss (checkpointed: a resume stops
    #                           where the uninterrupted run stops)

    def to_checkpoint(self, carried) -> dict:
        return {"step": self.step, "best": self.best, "window": self.window, "bad_steps": self.bad_steps,
                "skipped": self.skipped, "state": carried, "initial_loss": self.initial_loss,
                "above_limit": self.above_limit, "below_solved": self.below_solved}

    @classmethod
    def from_checkpoint(cls, saved: dict, carried) -> Progress:
        return cls(saved["step"], saved["best"], saved["window"], saved["bad_steps"], saved.get("skipped", 0), carried,
                   saved.get("initial_loss"), saved.get("above_limit", 0), saved.get("below_solved", 0))


@dataclass
class Training:
    """A training under way, as one object: the run's configuration and folder, what was built from them, and
    its :class:`Progress`.  (A *run* is what the user starts and its folder; this is the process training it.)"""

    config: dict
    folder: Path
    device: torch.device
    rank: int
    world: int
    task: object
    net: nn.Module
    model: nn.Module          # the network, or its DistributedDataParallel wrapper
    optimizer: torch.optim.Optimizer
    schedule: object
    progress: Progress
    steps: int
    data_state: dict | None
    train_step: TrainStep | CapturedStep  # one training update (captured in CUDA graphs where it can be)
    on_end: object = None  # called with the run folder when the run ends (train()'s on_end), or None

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def last_path(self) -> Path:
        return runfolder.last_checkpoint(self.folder)

    @property
    def best_path(self) -> Path:
        return runfolder.best_checkpoint(self.folder)


def save(training: Training) -> None:
    """Write ``last.pt``: the run's state, parameters, optimizer, schedule, RNG and data description.  Every
    rank takes part (the carried state is gathered from all of them); rank 0 writes."""
    carried = distributed.gather_batch(training.progress.carried, training.world)
    if training.main:
        schedule = training.schedule.state_dict() if training.schedule is not None else None
        checkpoint.save(training.last_path, {"config": training.config, "sizes": network_sizes(training.task),
                                             "model": training.net.state_dict(),
                                             "optimizer": training.optimizer.state_dict(), "schedule": schedule,
                                             "rng": torch.get_rng_state(), "cuda_rng": cuda_rng_state(training),
                                             "data": training.data_state,
                                             "kernels": kernel_policy.record(),  # float32 rounds by kernel: for resume
                                             **training.progress.to_checkpoint(carried)})


def cuda_rng_state(training: Training) -> torch.Tensor | None:
    """The state of the training device's CUDA generator (None on the CPU), which dropout and a model's state noise
    draw from there: saved beside the CPU generator's so that a resumed run on CUDA draws what it would have."""
    return torch.cuda.get_rng_state(training.device) if training.device.type == "cuda" else None


def restore(training: Training, saved: dict | None = None) -> None:
    """The inverse of :func:`save` (of ``saved``, ``last.pt`` already read, else of the file), refusing a
    checkpoint that is not a run's last one, or that holds another model, configuration or data."""
    if saved is None:
        saved = checkpoint.load(training.last_path, map_location=training.device)
    else:  # read on the CPU: its tensors go where the file's would have been loaded to
        saved = checkpoint.to_device(saved, training.device)
    missing = [key for key in CHECKPOINT_KEYS if key not in saved]
    if missing:
        raise UserError(f"{training.last_path} is not a run's last checkpoint (it has no {', '.join(missing)}; a "
                        f"best.pt holds only the model); put the run's own last.pt back or start a new run")
    config, before = training.config, saved["config"]
    for key in ("task", "model", "hidden"):
        if before.get(key) != config.get(key):
            raise UserError(f"{training.last_path} holds a {before.get('model')} run on {before.get('task')} with "
                            f"{before.get('hidden')} hidden units, not the {config.get(key)!r} {key} this run asks "
                            f"for; start a new run elsewhere")
    check_resumable(before, config, training.folder)
    check_own_checkpoint(training, before)
    if saved.get("data") is not None:  # before the weights: other data can mean another embedding's shape
        training.task.check_data_state(saved["data"])
    check_weights(training.net, saved["model"], training.last_path, training.task)
    training.net.load_state_dict(saved["model"])
    try:
        training.optimizer.load_state_dict(saved["optimizer"])
        capturable(training.optimizer, isinstance(training.train_step, CapturedStep) and training.device.type == "cuda")
        if training.schedule is not None:
            training.schedule.load_state_dict(saved["schedule"])
    except (RuntimeError, ValueError, KeyError) as error:
        raise UserError(f"the optimizer state in {training.last_path} does not fit the {training.config['optimizer']} "
                        f"optimizer its configuration describes ({type(error).__name__}: {error}); restore the "
                        f"run's own last.pt or start a new run") from None
    carried = distributed.shard_state(saved["state"], training.rank, training.world)
    training.progress = Progress.from_checkpoint(saved, carried)
    if training.progress.step > training.steps:
        raise UserError(f"{training.folder} is already at update {training.progress.step}, past the {training.steps} "
                        f"updates asked for; give a larger --steps (or --epochs) to train further")
    torch.set_rng_state(saved["rng"].cpu())  # loaded onto the device; the CPU generator takes CPU tensors only
    if saved.get("cuda_rng") is not None and training.device.type == "cuda":  # .get: checkpoints from before it
        torch.cuda.set_rng_state(saved["cuda_rng"].cpu(), training.device)
    kernel_policy.pin(saved.get("kernels"))  # the kernels the run trained with, whatever this process would time


def check_own_checkpoint(training: Training, before: dict) -> None:
    """UserError naming every option that may not change on resume and differs between ``last.pt``'s
    configuration ``before`` and the run folder's config.json: a checkpoint copied in from another run, which a
    resume must neither continue nor write its options over the run's own (config.json, metrics) with."""
    shown = foreign_options(training.folder, before)
    if shown:
        raise UserError(f"{training.last_path} is another run's checkpoint, not this run's ({shown}); put the run's "
                        f"own last.pt back, or resume the other run in its own folder")
