"""Timing the candidate kernels of one decision of :mod:`nnrnn.kernels.policy` at the shape in use, and the cache
that keeps the results between processes.

How a decision is measured: each candidate runs once to warm up (oneDNN builds its primitive, pages are
faulted in), then the candidates run in alternating order, round after round, at least MIN_ROUNDS rounds (3
where the warm-up says 5 would take more than twice the budget) and until BUDGET_S seconds have passed (at most
MAX_ROUNDS); each candidate's median time counts.  The fastest wins,
except that the fixed thresholds' choice is kept unless another candidate is faster by more than MARGIN: on
a busy machine medians still move by several percent, a short timing is not the whole update (whose operands
may not fit the caches as the timed ones do), and a change of kernel also changes float32 rounding.

The cache: one JSON file in the per-user cache folder (``$XDG_CACHE_HOME/nnrnn/kernel-timings.json``), one entry
per key of CPU (:func:`nnrnn.kernels.host.describe_cpu`), torch version, threads, device and dtype, and shape bucket, so
that an entry measured on another CPU or with another torch is never used.  It is written atomically (a
temporary file renamed over it).  A corrupt or unreadable file counts as empty, and a folder that cannot be
written only means the next process measures again: the cache is never a reason to fail.
"""
from __future__ import annotations

import functools
import json
import math
import os
import statistics
import tempfile
import time

import torch

from .. import environment
from . import host

BUDGET_S = 0.3  # per decision: well under a second, once per shape bucket, CPU and torch version
MIN_ROUNDS, MAX_ROUNDS, FEWEST_ROUNDS = 5, 15, 3
MARGIN = 0.10  # above the ±7% that medians of alternating rounds moved by on a shared host (docs/performance.md)
FORMAT, VERSION = "nnrnn-kernel-timings", 1
clock = time.perf_counter
_state: dict = {}  # {"entries": the file's entries as read, "write_error": why the last write failed}


def timer(name: str, call) -> float:
    """Seconds one call of ``call`` (candidate ``name``) takes; a test replaces this with a fake timer."""
    start = clock()
    call()
    return clock() - start


def measure(runners: dict, budget: float = BUDGET_S) -> dict[str, float]:
    """Median seconds of each candidate in ``runners`` ({name: callable}), alternating (see the module's text)."""
    names = list(runners)
    with torch.no_grad():
        start = clock()
        for name in names:
            runners[name]()
        # where MIN_ROUNDS rounds would take well over the budget (large shapes on a slow or busy host), the
        # fewest rounds whose median still drops one outlier
        least = FEWEST_ROUNDS if (clock() - start) * MIN_ROUNDS > 2 * budget else MIN_ROUNDS
        times = {name: [] for name in names}
        start = clock()
        for done in range(MAX_ROUNDS):
            for name in (names if done % 2 == 0 else names[::-1]):
                times[name].append(timer(name, runners[name]))
            if done + 1 >= least and clock() - start > budget:
                break
    return {name: statistics.median(values) for name, values in times.items()}


def pick(times: dict[str, float], threshold_choice: str) -> str:
    """The fastest candidate, or the thresholds' choice where it is within MARGIN of the fastest."""
    best = min(times, key=times.get)
    if threshold_choice in times and times[threshold_choice] <= times[best] * (1 + MARGIN):
        return threshold_choice
    return best


@functools.cache
def cpu() -> str:
    return host.describe_cpu()


def cache_path():
    return environment.cache_folder() / "kernel-timings.json"


def cache_key(policy_name: str, key: str) -> str:
    return f"{cpu()} | torch {torch.__version__} | {torch.get_num_threads()} threads | {policy_name} | {key}"


def _read() -> dict:
    """The cache file's entries; {} if it is missing, unreadable, corrupt or not this format."""
    try:
        saved = json.loads(cache_path().read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(saved, dict) or saved.get("format") != FORMAT or saved.get("version") != VERSION:
        return {}
    entries = saved.get("entries")
    return entries if isinstance(entries, dict) else {}


def lookup(key: str, candidates: list[str]) -> dict | None:
    """The cached entry for ``key`` if it is well-formed and measured the same ``candidates``, else None."""
    if "entries" not in _state:
        _state["entries"] = _read()
    entry = _state["entries"].get(key)
    if not isinstance(entry, dict) or entry.get("choice") not in candidates:
        return None
    times = entry.get("times_ms")
    if not isinstance(times, dict) or sorted(times) != sorted(candidates) or not all(
            isinstance(t, (int, float)) and math.isfinite(t) for t in times.values()):
        return None
    return entry


def store(key: str, entry: dict) -> None:
    """Add ``entry`` to the cache file (merged with what other processes wrote meanwhile), atomically; a
    failure to write is remembered for ``nnrnn kernels`` and otherwise ignored."""
    _state.setdefault("entries", {})[key] = entry
    path = cache_path()
    try:
        entries = {**_read(), key: entry}
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kernel-timings.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"format": FORMAT, "version": VERSION, "entries": entries}, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _state.pop("write_error", None)
    except OSError as error:
        _state["write_error"] = f"{path}: {error.strerror or error}"


def write_error() -> str:
    """Why the cache could not be written the last time ("" if it could, or was not written)."""
    return _state.get("write_error", "")


def reset() -> None:
    """Forget what was read from the cache file (a test, or a process whose cache folder changed)."""
    _state.clear()
    cpu.cache_clear()


def format_times(times_ms: dict[str, float]) -> str:
    return ", ".join(f"{name} {ms:.3g} ms" for name, ms in sorted(times_ms.items(), key=lambda item: item[1]))
