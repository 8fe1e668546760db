"""Evaluating a network on a split: during training (:func:`evaluate`) and of a saved checkpoint afterwards
(:func:`evaluate_checkpoint`, ``nnrnn eval``), refusing a score that is not finite."""
from __future__ import annotations

import math
import zlib
from pathlib import Path

import torch
from torch import nn

from ..kernels import policy as kernel_policy
from ..errors import TrainingDiverged
from .network import Saved, build_saved_task, check_weights, load_saved
from ..tasks.base import accumulate, generator

EVALUATION_STREAM = 7  # the key of evaluation's random numbers beside a task's own streams (tasks.base.generator)


@torch.no_grad()
def evaluate(net: nn.Module, task, split: str, device) -> dict:
    """The task's metrics of ``net`` on ``split``, in evaluation mode (the mode is restored after).  What draws
    random numbers in evaluation (a model's ``state_noise``) draws them from a generator seeded by the task's seed
    and the split, the training's left as they were: a split's score is a function of the parameters alone (a
    checkpoint scores later what it scored in training), and the training's noise does not depend on how often, or
    on which rank, it validates."""
    was_training = net.training
    net.eval()
    sums, carried = {}, None
    device = torch.device(device)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(generator(task.seed, EVALUATION_STREAM, zlib.crc32(split.encode())).initial_seed())
        for batch in task.eval_batches(split):
            carried = carried if batch.carry else None
            outputs, carried = net(batch.inputs.to(device), carried)
            accumulate(sums, task.loss(outputs, batch.targets.to(device))[1])
    net.train(was_training)
    return task.summarize(sums)


def check_finite(metrics: dict, split: str, path: Path) -> None:
    """TrainingDiverged naming the split and metric when a checkpoint's score is not finite."""
    bad = [name for name, value in metrics.items() if isinstance(value, float) and not math.isfinite(value)]
    if bad:
        raise TrainingDiverged(f"the {split} {bad[0]} of {path} is {metrics[bad[0]]}: the model's predictions are "
                               f"not finite, so the run is not trustworthy; retrain with a lower --lr or --clip")


def evaluate_checkpoint(path: Path, device="cpu", split: str = "test", data_dir=None) -> dict:
    """Metrics of a saved model (a checkpoint file, or a run folder's best) on ``split``, its data found as
    :func:`~nnrnn.training.network.build_saved_task` says (``data_dir``, else the run's own folder, else
    NNRNN_DATA or the cache); data or weights that do not fit are a UserError naming which."""
    return evaluate_saved(load_saved(path, device), device, split, data_dir)


def evaluate_saved(saved: Saved, device="cpu", split: str = "test", data_dir=None) -> dict:
    """:func:`evaluate_checkpoint` of a network already read back (:func:`~nnrnn.training.network.load_saved`)."""
    kernel_policy.pin(saved.checkpoint.get("kernels"))  # the run's kernels where it meets the same shapes
    task = build_saved_task(saved.config, data_dir)
    if saved.checkpoint.get("data") is not None:
        task.check_data_state(saved.checkpoint["data"])
    check_weights(saved.net, saved.checkpoint["model"], saved.path, task)  # the read-out against this data's width
    metrics = evaluate(saved.net, task, split, device)
    check_finite(metrics, split, saved.path)
    return metrics
