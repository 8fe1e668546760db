"""What a grid will cost before it starts: its runs and search trials, device-hours and wall time.

A run costs ``floor + start + updates × u + (validations × valid batches + test batches) × b + saves × s``:

* ``u`` one training update, ``b`` one evaluation batch's forward pass and loss, ``s`` one checkpoint save and
  ``start`` reading the task's data, building the network and its first update beyond ``u`` (warm-up: first
  allocations, the optimizer's state), all measured on this machine at the run's shape (its task, model, sizes and
  options, on the device and threads it will train with; medians of a few);
* ``floor`` what every run of a task costs whatever its shape (its folder, lock, metrics, the curves drawn at its
  end, its summary): one real run of a tiny network on the task timed end to end, once per machine and task;
* the counts (updates, validations, evaluation batches, saves) from the run's options and its task's data.

A search costs its trials, each a run at the search's options (an upper bound: a pruned trial ends early); a joint
search's trial a run of each of its arms, every arm's runs placed as one unit of work.  A joint trial waits for the
last of its arms, so that placement is a little short where the slots do not divide the arms (5 arms on 2 slots: 3
rounds a trial, against the 2.5 it counts).
Device-hours are the sum; the wall time is the runs placed longest first, each on the slot that frees first (as
:func:`.reproduce.run_all` hands them out), so it scales with the number of slots.  It leaves out the report
written after the runs and the start of the worker processes of ``--jobs``.

Measurements are cached per shape, machine, torch version and thread count, and the counts per run, in the
per-user cache folder (``update-times.json`` beside the kernel timings of :mod:`nnrnn.kernels.tuning`), so that an
estimate of cached runs reads no data and trains nothing (well under a second); other processes on the machine (a
shared or busy one) make the measured times, and so the estimate, longer."""
from __future__ import annotations

import contextlib
import heapq
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ... import environment
from ...kernels import tuning
from ...kernels.host import describe_cpu
from ...tasks import task_class
from ...training.config import evaluation_interval, resolve_config, total_steps
from ...training.network import build_task
from ...training.pace import duration
from ...training.runlog import MetricsLog
from ...training.run_state import save
from ...training.train import start, train, update
from .grid import PlannedRun

UPDATES = 3  # updates timed per shape, after one that warms up (the optimizer's state, first allocations)
FORMAT = "nnrnn run costs 2"  # 2: start, evaluation batch and save times, the counts, the floor
PARTS = ("shapes", "counts", "floor", "process")  # the cache's parts
# options that change neither the network nor a batch's shape: not part of a shape
NOT_SHAPE = ("seed", "out", "steps", "epochs", "eval_every", "log_every", "checkpoint_every", "progress", "data_dir",
             "patience", "device", "threads")
# options that change no count of a run either: not part of its counts' key
NOT_COUNTED = ("seed", "out", "progress", "device", "threads")
# the run a task's floor is measured on: a tiny network, one update, one validation, its test and its curves
FLOOR_RUN = {"model": "rnn", "hidden": 4, "batch_size": 2, "steps": 1, "eval_every": 1, "progress": False}
# the options a floor run keeps from the run it stands for: where its data is, its device, and those its task's class
# names (Task.floor_keeps: the task's length)


@dataclass(frozen=True)
class Times:
    """Seconds measured at one shape: building the run (data, network, warm-up), one update, one evaluation batch,
    one checkpoint save."""
    start_s: float
    update_s: float
    batch_s: float
    save_s: float


@dataclass(frozen=True)
class Counts:
    """How many of each a run does."""
    updates: int
    validations: int
    valid_batches: int
    test_batches: int
    saves: int


def run_seconds(times: Times, counts: Counts, floor_s: float) -> float:
    """A run's seconds (the module's formula)."""
    batches = counts.validations * counts.valid_batches + counts.test_batches
    return (floor_s + times.start_s + counts.updates * times.update_s + batches * times.batch_s
            + counts.saves * times.save_s)


def cache_path() -> Path:
    return environment.cache_folder() / "update-times.json"


def _read_cache() -> dict:
    try:
        saved = json.loads(cache_path().read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        saved = None
    if not (isinstance(saved, dict) and saved.get("format") == FORMAT):
        return {part: {} for part in PARTS}
    # a cache of this format but another structure (edited, or written by a broken copy) is read as far as it is
    # sound: an entry that is not what its part holds is measured again, never a traceback in --plan
    return {part: {key: value for key, value in saved[part].items() if _sound(part, value)}
            if isinstance(saved.get(part), dict) else {} for part in PARTS}


def _sound(part: str, value) -> bool:
    """Whether ``value`` is what the cache's ``part`` holds: seconds (a finite number >= 0), a shape's
    :class:`Times` or a run's :class:`Counts` (non-negative integers)."""
    def seconds(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0
    if part in ("floor", "process"):
        return seconds(value)
    fields = Times.__dataclass_fields__ if part == "shapes" else Counts.__dataclass_fields__
    if not (isinstance(value, dict) and set(value) == set(fields)):
        return False
    if part == "shapes":
        return all(seconds(x) for x in value.values())
    return all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in value.values())


def _write_cache(fresh: dict) -> None:
    """Merged with what other processes wrote meanwhile, atomically; a cache that cannot be written is measured
    again next time, never a failure."""
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        now = _read_cache()
        merged = {part: {**now[part], **fresh[part]} for part in now}
        fd, tmp = tempfile.mkstemp(prefix=".update-times.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump({"format": FORMAT, **merged}, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass


def where_key(device: str, threads: int) -> str:
    """The machine (its CPU or GPU), torch, the threads and the device: what a measured time depends on."""
    where = describe_cpu() if device == "cpu" else torch.cuda.get_device_name(torch.device(device))
    return f"{where} | torch {torch.__version__} | {threads} threads | {device}"


def _median_seconds(call, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        begin = time.perf_counter()
        call()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def measure(config: dict) -> Times:
    """The :class:`Times` of ``config``'s run, measured by building it as training does
    (:func:`nnrnn.training.train.start`), timing :data:`UPDATES` updates after one, a checkpoint save and the
    forward pass and loss of its first validation batch."""
    begin = time.perf_counter()
    task = build_task(config)
    with tempfile.TemporaryDirectory() as folder:
        training = start(config, task, Path(folder), False, torch.device(config["device"]), 0, 1)
        log = MetricsLog(Path(folder), None)  # an update skipped as non-finite (a searched lr) is logged
        try:
            update(training, log)
            built = time.perf_counter() - begin
            update_s = _median_seconds(lambda: update(training, log), UPDATES)
        finally:
            log.close()
        training.last_path.parent.mkdir(parents=True, exist_ok=True)
        save_s = _median_seconds(lambda: save(training), 2)
    batch, net, device = next(iter(task.eval_batches("valid"))), training.net, training.device
    net.eval()
    with torch.no_grad():
        batch_s = _median_seconds(lambda: task.loss(net(batch.inputs.to(device), None)[0], batch.targets.to(device)),
                                  2)
    return Times(max(0.0, built - update_s), update_s, batch_s, save_s)


def measure_floor(config: dict) -> float:
    """Seconds of a whole run (:func:`nnrnn.training.train.train`, its output discarded) of :data:`FLOOR_RUN` on
    ``config``'s task: what a run of that task costs beyond its shape's work (its curves are most of it)."""
    import matplotlib.pyplot  # noqa: F401  once per process: the process's start, not a run's floor
    with tempfile.TemporaryDirectory() as folder:
        kept = {k: config[k] for k in ("data_dir", "device", *task_class(config["task"]).floor_keeps)
                if config.get(k) is not None}
        config = resolve_config({**FLOOR_RUN, **kept, "task": config["task"], "out": str(Path(folder) / "run")},
                                None)
        begin = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            train(config)
        return time.perf_counter() - begin


def measure_process() -> float:
    """Seconds of a new Python process importing matplotlib's pyplot: what the first run's curves cost a process
    once (a worker of ``--jobs`` also imports torch and nnrnn, which this leaves out)."""
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import matplotlib.pyplot"], check=False, capture_output=True)
    return time.perf_counter() - begin


def count(config: dict) -> Counts:
    """The :class:`Counts` of ``config``'s run (its task's data is read)."""
    task = build_task(config)
    updates = total_steps(config, task)
    every = evaluation_interval(config, task)
    saving = config["checkpoint_every"] or every
    test = sum(1 for _ in task.eval_batches("test")) if "test" in task.splits else 0
    return Counts(updates, -(-updates // every), sum(1 for _ in task.eval_batches("valid")), test,
                  -(-updates // saving))


class Costs:
    """Run costs from the cache, measuring (and then caching) what it lacks; :attr:`fresh` holds what was measured
    here.  ``shape_times``, ``floor_time``, ``run_counts`` and ``process_time`` are :func:`measure`,
    :func:`measure_floor`, :func:`count` and :func:`measure_process` unless given (tests give others)."""

    def __init__(self, device: str, threads: int, shape_times=None, floor_time=None, run_counts=None,
                 process_time=None):
        self.device, self.threads = device, threads
        self.where = where_key(device, threads)
        self.measure = shape_times or measure
        self.measure_floor = floor_time or measure_floor
        self.count = run_counts or count
        self.measure_process = process_time or measure_process
        self.cache = _read_cache()
        self.fresh = {part: {} for part in PARTS}
        self.busy = 0  # measurements taken while the machine was busy (kept for this estimate only)

    def _cached(self, part: str, key: str, work):
        if key not in self.cache[part]:
            if part == "counts":
                self.cache[part][key] = self.fresh[part][key] = work()
                return self.cache[part][key]
            # a time measured while other processes kept the cores busy is this estimate's only: cached, it would
            # lengthen every later estimate (timed at nice 19 beside a grid, copy's LEM came out 20 times too slow)
            before, wall = tuning.cpu_seconds(), time.monotonic()
            value = work()
            others = tuning.other_cores(before, tuning.cpu_seconds(), time.monotonic() - wall)
            cores = os.cpu_count() or 1
            self.cache[part][key] = value
            if others is not None and cores - others < 0.9 * min(self.threads, cores):
                self.busy += 1
            else:  # a measurement is written at once: a --plan stopped part-way keeps what it timed
                self.fresh[part][key] = value
                _write_cache({p: self.fresh[p] if p == part else {} for p in PARTS})
        return self.cache[part][key]

    def run(self, config: dict) -> float:
        """Seconds of the run of the resolved configuration ``config`` on this device."""
        config = {**config, "device": self.device, "progress": False}
        shape = {k: v for k, v in config.items() if k not in NOT_SHAPE}
        counted = {k: v for k, v in config.items() if k not in NOT_COUNTED}
        times = self._cached("shapes", f"{self.where} | {json.dumps(shape, sort_keys=True, default=str)}",
                             lambda: asdict(self._measure(config)))
        counts = self._cached("counts", json.dumps(counted, sort_keys=True, default=str),
                              lambda: asdict(self.count(config)))
        floor = self._cached("floor", f"{self.where} | {config['task']}",
                             lambda: self._threaded(lambda: self.measure_floor(config)))
        return run_seconds(Times(**times), Counts(**counts), floor)

    def process(self) -> float:
        """Seconds a slot's process takes to start plotting (:func:`measure_process`), once per slot."""
        return self._cached("process", self.where, self.measure_process)

    def _measure(self, config: dict) -> Times:
        return self._threaded(lambda: self.measure(config))

    def _threaded(self, work):
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            return work()
        finally:
            torch.set_num_threads(before)


@dataclass(frozen=True)
class Estimate:
    """A grid's cost: its runs and trials, the device-seconds of each unit of work (a run, or a search's trials),
    the slots they are placed on, and each slot's start (:func:`measure_process`)."""
    runs: int
    trials: int
    seconds: list[float]
    slots: int
    device: str
    start_s: float = 0.0

    @property
    def device_hours(self) -> float:
        return (sum(self.seconds) + self.slots * self.start_s * bool(self.seconds)) / 3600

    @property
    def wall_hours(self) -> float:
        """Longest first, each on the slot that frees first."""
        ends = [self.start_s * bool(self.seconds)] * self.slots
        for seconds in sorted(self.seconds, reverse=True):
            heapq.heapreplace(ends, ends[0] + seconds)
        return max(ends, default=0.0) / 3600

    def line(self) -> str:
        return (f"{self.runs} runs and {self.trials} search trials: about {hours(self.device_hours)} of {self.device} "
                f"time, {hours(self.wall_hours)} of wall time on {self.slots} {self.device} slot"
                f"{'s' * (self.slots != 1)} (times measured here at each run's shape; the report not included)")


def hours(value: float) -> str:
    """A duration in hours for a person: seconds, minutes, hours or days, in the words a run says its own in."""
    return duration(value * 3600)


def trial_configs(search: dict) -> list[dict]:
    """The configurations one trial of ``search`` trains: its run's (a search of one label, :func:`.grid.searches`'
    values), or each of its arms' (a joint search's, whose ``arms`` are :func:`.grid.joint_arms`' runs: at the
    published options, which size every trial alike)."""
    if "arms" in search:
        return [arm.resolved() for arm in search["arms"]]
    options = {**search["options"], "task": search["task"], "model": search["model"]}
    return [resolve_config(options, search["preset"])]


def estimate(runs: list[PlannedRun], searches: list[dict], slots: list[str], log=None, costs: Costs | None = None
             ) -> Estimate:
    """The cost of training ``runs`` and the ``searches`` (:func:`.grid.searches`' values: a run at the search's
    options, its trials; a joint search's: its arms' runs, its trials, :func:`trial_configs`) on ``slots``
    (:func:`.placement.slot_devices`), from ``costs`` (default: this machine's, cached); ``log``, if given, hears of
    the shapes measured."""
    device = slots[0]
    threads = 1 if device == "cpu" and len(slots) > 1 else torch.get_num_threads()
    costs = costs or Costs(device, threads)
    seconds = []
    try:
        for planned in runs:
            seconds.append(costs.run(planned.resolved()))  # as planned, not resolved again
        for search in searches:
            for config in trial_configs(search):
                seconds.append(search["trials"] * costs.run(config))
        start = costs.process() if seconds else 0.0
    finally:
        if any(costs.fresh.values()):
            _write_cache(costs.fresh)
    measured = len(costs.fresh["shapes"])
    if measured and log:
        log(f"measured the times of {measured} run shape{'s' * (measured != 1)} ({cache_path()})")
    if costs.busy and log:
        log(f"{costs.busy} time{'s' * (costs.busy != 1)} measured while other processes kept the cores busy: used "
            f"for this estimate only (too long), not cached; --plan again on a quiet machine measures them again")
    kind = "CPU" if device == "cpu" else "GPU"
    return Estimate(len(runs), sum(s["trials"] for s in searches), seconds, len(slots), kind, start)
