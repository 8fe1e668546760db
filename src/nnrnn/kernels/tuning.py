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

A busy minute must not worsen a host for good, so a timing is kept only when it can be trusted
(:func:`trusted`): no candidate's rounds spread by more than SPREAD_MAX (each round's times taken relative to
that round's mean, then the interquartile range over the median), and the other processes on the machine left
this one the cores it runs on while it timed (the CPU time the machine spent besides this process, read from
``/proc/stat``, steal time included, left at least its threads' worth of cores free).  An untrusted timing
decides nothing: the thresholds' choice stands for this process and nothing is cached, so a later process times
again.  Each entry carries the date it was measured and is timed again once it is older than MAX_AGE_DAYS; an
entry without a date (written before this rule) counts as stale.
"""
from __future__ import annotations

import dataclasses
import datetime
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
SPREAD_MAX = 0.25  # quiet: 0.02-0.17 at the copy and paper sizes, 2026-11-28 (docs/performance.md, 'Loop choice')
MAX_AGE_DAYS = 30  # an entry older than this is timed again: drivers, BIOS settings and neighbours change
FORMAT, VERSION = "nnrnn-kernel-timings", 1
clock = time.perf_counter
_state: dict = {}  # {"entries": the file's entries as read, "write_error": why the last write failed}


def timer(name: str, call) -> float:
    """Seconds one call of ``call`` (candidate ``name``) takes; a test replaces this with a fake timer."""
    start = clock()
    call()
    return clock() - start


@dataclasses.dataclass
class Timing:
    """What timing the candidates of one decision gave: each one's rounds in seconds, and the cores the rest of
    the machine used meanwhile (None where it cannot be read)."""
    rounds: dict[str, list[float]]
    others: float | None = None

    def medians(self) -> dict[str, float]:
        return {name: statistics.median(values) for name, values in self.rounds.items()}

    def spread(self) -> float:
        """How unsteady the comparison was: each round's times divided by that round's mean over the candidates
        (a load that slows a whole round cancels), then the largest interquartile range over the median among
        the candidates (0 with fewer than 3 rounds)."""
        rounds = min(len(values) for values in self.rounds.values())
        if rounds < 3:
            return 0.0
        relative = {name: [] for name in self.rounds}
        for i in range(rounds):
            level = statistics.fmean(values[i] for values in self.rounds.values())
            for name, values in self.rounds.items():
                relative[name].append(values[i] / level if level > 0 else 1.0)
        worst = 0.0
        for values in relative.values():
            low, _, high = statistics.quantiles(values, n=4, method="inclusive")
            worst = max(worst, (high - low) / statistics.median(values))
        return worst


def cpu_seconds() -> tuple[float, float] | None:
    """(CPU seconds the whole machine has spent busy since boot, those of this process), or None where the
    machine's are not readable (no ``/proc/stat``): a test replaces this with a quiet or a busy machine."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal …: idle and iowait are the idle time
    busy = sum(fields[:3]) + sum(fields[5:8])
    own = os.times()
    return busy / os.sysconf("SC_CLK_TCK"), own.user + own.system


def other_cores(before, after, seconds: float) -> float | None:
    """Cores the other processes kept busy over ``seconds`` of wall time, from two :func:`cpu_seconds` readings."""
    if before is None or after is None or seconds <= 0:
        return None
    return max(0.0, (after[0] - before[0]) - (after[1] - before[1])) / seconds


def measure(runners: dict, budget: float = BUDGET_S) -> Timing:
    """Each candidate in ``runners`` ({name: callable}) timed in alternating rounds (see the module's text)."""
    names = list(runners)
    with torch.no_grad():
        start = clock()
        for name in names:
            runners[name]()
        # where MIN_ROUNDS rounds would take well over the budget (large shapes on a slow or busy host), the
        # fewest rounds whose median still drops one outlier
        least = FEWEST_ROUNDS if (clock() - start) * MIN_ROUNDS > 2 * budget else MIN_ROUNDS
        times = {name: [] for name in names}
        before, wall = cpu_seconds(), time.monotonic()
        start = clock()
        for done in range(MAX_ROUNDS):
            for name in (names if done % 2 == 0 else names[::-1]):
                times[name].append(timer(name, runners[name]))
            if done + 1 >= least and clock() - start > budget:
                break
        others = other_cores(before, cpu_seconds(), time.monotonic() - wall)
    return Timing(times, others)


def trusted(timing: Timing, threads: int | None = None) -> str:
    """"" where ``timing`` may decide and be cached, else why not (in words): its rounds spread by more than
    SPREAD_MAX, or the other processes left this one fewer free cores than its ``threads`` (torch's)."""
    threads = threads or torch.get_num_threads()
    cores = os.cpu_count() or 1
    if timing.others is not None and cores - timing.others < 0.9 * min(threads, cores):
        return f"the machine was busy ({min(timing.others, cores):.1f} of {cores} cores used by other processes)"
    if timing.spread() > SPREAD_MAX:
        return f"the rounds spread by {timing.spread():.0%} (more than {SPREAD_MAX:.0%})"
    return ""


def today() -> datetime.date:
    return datetime.datetime.now(datetime.timezone.utc).date()


def stale(entry: dict) -> bool:
    """Whether a cached entry must be timed again: no date (an entry of the first format), or older than
    MAX_AGE_DAYS."""
    try:
        measured = datetime.date.fromisoformat(entry["date"])
    except (KeyError, TypeError, ValueError):
        return True
    return (today() - measured).days > MAX_AGE_DAYS


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
    """The cached entry for ``key`` if it is well-formed, measured the same ``candidates`` and not stale, else None."""
    if "entries" not in _state:
        _state["entries"] = _read()
    entry = _state["entries"].get(key)
    if not isinstance(entry, dict) or entry.get("choice") not in candidates:
        return None
    times = entry.get("times_ms")
    if not isinstance(times, dict) or sorted(times) != sorted(candidates) or not all(
            isinstance(t, (int, float)) and math.isfinite(t) for t in times.values()) or stale(entry):
        return None
    return entry


def entries() -> dict:
    """Every entry of the cache file, {key: entry}, as read now."""
    return _read()


def store(key: str, entry: dict) -> None:
    """Add ``entry`` (its date added) to the cache file (merged with what other processes wrote meanwhile),
    atomically; a failure to write is remembered for ``nnrnn kernels`` and otherwise ignored."""
    entry = {**entry, "date": today().isoformat()}
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
