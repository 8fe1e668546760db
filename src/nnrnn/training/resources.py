"""What a run needs of this machine, asked when it starts: its device, present here, its threads, and enough
memory."""
from __future__ import annotations

import torch

from ..environment import free_cores, usable_cores
from ..errors import OptionError, UserError
from .options import device_name


def choose_threads(given: int | None, keep_own: bool = False) -> tuple[int | None, str | None]:
    """The CPU threads of a run (``nnrnn train``) or of every trial of a search (``nnrnn sweep``), and the line
    that says why when they were not given: ``given`` (``--threads``), checked against the cores this process may
    run on; else, unless ``keep_own`` (a resumed run keeps its own number: the sums' order), the free-cores rule
    (:func:`nnrnn.environment.free_cores`).  (None, None): the run's own."""
    if given is not None and given > usable_cores():  # far more crash the OpenMP runtime (a segfault at 100000)
        raise OptionError(f"--threads {given} is more than the {usable_cores()} cores this process may run on; "
                          f"give at most that (more threads than cores slow training, docs/training.md, Threads)")
    if given is not None or keep_own:
        return given, None
    threads, why = free_cores()
    return threads, (f"{threads} thread{'s' * (threads != 1)}: {why} (--threads N sets them; docs/training.md, "
                     f"Threads)")


def check_device(name) -> torch.device:
    """The device ``name`` stands for; OptionError if it is not one nnrnn trains on, UserError if it is not
    present here."""
    device_name("device", name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cpu":  # cpu:0 is the CPU; torch.load's map_location knows it only as "cpu"
        return torch.device("cpu")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UserError(f"--device {name}: no CUDA device is available to this torch ({torch.__version__}); "
                            f"use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UserError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                            f"numbered from 0")
    return device


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


# a layer's Python objects (its module, parameters, parametrizations and their hooks), measured: 18 KiB for an
# nnLRU layer of 8 units on 2026-12-02 (AMD EPYC, torch 2.13, create("nnlru", 2, 8, num_layers=2000)); counted low
LAYER_OBJECT_BYTES = 16 * 2 ** 10


def check_memory(config: dict, task=None) -> None:
    """UserError, before anything is allocated, when a deliberately low estimate of what training needs does
    not fit in the memory available: for every layer of the stack, the recurrent matrices' n² storage, four copies
    (parameter, gradient, two optimizer buffers), and the layer's Python objects; with ``task`` the activations of
    one update, three float32 (steps × batch × hidden) blocks per layer (the layer's outputs, their gradient, the
    pre-activations' gradient), or one per layer for an evaluation batch."""
    available = available_memory()
    if available is None:
        return
    n, layers = config["hidden"], config.get("num_layers") or 1
    stack = f"{layers} layers of --hidden {n}" if layers > 1 else f"--hidden {n}"
    lower = "lower --num-layers or --hidden" if layers > 1 else "lower --hidden"
    # weight_hh (+ T, P's skew log), float32, four copies, and the layer's objects
    needed = layers * (4 * 4 * (3 * n ** 2 + 4 * n) + LAYER_OBJECT_BYTES * (layers > 1))
    if needed > available:
        raise UserError(f"{stack} needs at least {needed / 2 ** 30:,.1f} GiB of memory "
                        f"for its parameters and training state; {available / 2 ** 30:,.1f} GiB are available; "
                        f"{lower}")
    if task is None:
        return
    (steps, batch), (eval_steps, eval_batch) = task.batch_shapes()
    activations = layers * 4 * n * max(3 * steps * batch, eval_steps * eval_batch)
    if needed + activations > available:
        units = f"{layers} layers of {n}" if layers > 1 else f"{n}"
        raise UserError(f"a training update of {batch} sequences of {steps} steps at {units} hidden units (or an "
                        f"evaluation batch of {eval_batch}) needs at least {(needed + activations) / 2 ** 30:,.1f} "
                        f"GiB of memory; {available / 2 ** 30:,.1f} GiB are available; lower --batch-size, "
                        f"--eval-batch-size, the sequence length, {'--num-layers ' if layers > 1 else ''}or --hidden")
