"""The timing harness the doctor and ``benchmarks/`` share: one call timed between device synchronisations, the
peak memory of one call, and rounds of calls alternating in one process.

A timing counts only as a ratio against a reference measured the same way in the same process: every
implementation is called once per round, the round starting one name further on each time (so none always runs
first, or always after the same neighbour, whose cache or clock state it would inherit), and each keeps the
median of its rounds.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Hashable

import torch


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, call: Callable[[], object],
          clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds of one ``call()``, the device's queued work finished before and after (CUDA runs kernels
    asynchronously: without the synchronisations the clock would time their launches only).  ``clock``: wall time
    (default), or ``time.thread_time`` for the calling thread's CPU time, which the other processes of a busy
    machine do not inflate by preempting it (meaningful with one intra-op thread on the CPU only)."""
    synchronize(device)
    start = clock()
    call()
    synchronize(device)
    return clock() - start


def update_memory(device: torch.device, call: Callable[[], object]) -> int | None:
    """Bytes one ``call()`` allocates at its peak beyond what is resident before it (the models and optimizer
    states); None on the CPU, whose allocator torch does not count."""
    if device.type != "cuda":
        return None
    synchronize(device)
    resident = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    call()
    synchronize(device)
    return torch.cuda.max_memory_allocated(device) - resident


def alternate(calls: dict[Hashable, Callable[[], object]], rounds: int, device: torch.device = torch.device("cpu"),
              after_round: Callable[[], object] | None = None,
              clock: Callable[[], float] = time.perf_counter) -> dict[Hashable, list[float]]:
    """The seconds of every call in each of ``rounds`` rounds, round r starting at the (r mod n)-th call, by
    ``clock`` (:func:`timed`); ``after_round`` (if given) runs after each round, untimed."""
    names = list(calls)
    seconds: dict[Hashable, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            seconds[name].append(timed(device, calls[name], clock))
        if after_round is not None:
            after_round()
    return seconds


def medians(seconds: dict[Hashable, list[float]]) -> dict[Hashable, float]:
    """The median of each call's seconds."""
    return {name: statistics.median(times) for name, times in seconds.items()}
