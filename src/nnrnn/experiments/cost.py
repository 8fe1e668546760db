"""What a grid will cost before it starts: its runs and search trials, device-hours and wall time.

A run costs ``updates × u + evaluations × batches × f``: ``u`` one training update and ``f`` one forward pass
of a validation batch, both measured on this machine at the run's shape (its task, model, sizes and options, on
the device and threads it will train with: a few updates after one to warm up, medians), ``evaluations`` its
validations and the final test.  A search costs its trials, each a run at the search's options (an upper
bound: a pruned trial ends early).  Device-hours are the sum; the wall time is the runs placed longest first,
each on the slot that frees first (as :func:`.reproduce.run_all` hands them out), so it scales with the number of
slots.  Measurements are cached per shape, machine, torch version and thread count in the per-user cache folder
(``update-times.json`` beside the kernel timings of :mod:`nnrnn.kernels.tuning`), so a second ``--plan`` is
instant; other processes on the machine (a shared or busy one) make the measured times, and so the estimate,
longer."""
from __future__ import annotations

import heapq
import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import environment
from ..kernels.host import describe_cpu
from ..training.config import evaluation_interval, resolve_config, total_steps
from ..training.network import build_task
from ..training.train import start, update
from .grid import PlannedRun

UPDATES = 3  # updates timed per shape, after one that warms up (the optimizer's state, first allocations)
FORMAT = "nnrnn update times"
# options that change neither the network nor a batch's shape: not part of a shape
NOT_SHAPE = ("seed", "out", "steps", "epochs", "eval_every", "log_every", "checkpoint_every", "progress", "data_dir",
             "patience", "device", "threads")


@dataclass(frozen=True)
class Shape:
    """The seconds of one training update and of one validation batch's forward pass at a run's shape, and how
    many of each a run takes."""
    update_s: float
    forward_s: float
    updates: int
    eval_batches: int
    evaluations: int

    @property
    def seconds(self) -> float:
        return self.updates * self.update_s + self.evaluations * self.eval_batches * self.forward_s


def cache_path() -> Path:
    return environment.cache_folder() / "update-times.json"


def _read_cache() -> dict:
    try:
        saved = json.loads(cache_path().read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return saved.get("entries", {}) if isinstance(saved, dict) and saved.get("format") == FORMAT else {}


def _write_cache(entries: dict) -> None:
    """Merged with what other processes wrote meanwhile, atomically; a cache that cannot be written is measured
    again next time, never a failure."""
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".update-times.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump({"format": FORMAT, "entries": {**_read_cache(), **entries}}, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass


def shape_key(config: dict, threads: int) -> str:
    """A run's shape, the machine, torch and the threads: what an update's time depends on."""
    shape = {k: v for k, v in config.items() if k not in NOT_SHAPE}
    where = describe_cpu() if config["device"] == "cpu" else torch.cuda.get_device_name(torch.device(config["device"]))
    return f"{where} | torch {torch.__version__} | {threads} threads | {config['device']} | " + \
        json.dumps(shape, sort_keys=True, default=str)


def _median_seconds(call, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        begin = time.perf_counter()
        call()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def measure(config: dict) -> tuple[float, float, int]:
    """(seconds per update, seconds per validation batch's forward pass, validation batches) of ``config``'s run,
    measured by building it as training does (:func:`nnrnn.training.train.start`) and timing :data:`UPDATES`
    updates after one."""
    task = build_task(config)
    with tempfile.TemporaryDirectory() as folder:  # nothing is written there: start() only names its files
        training = start(config, task, Path(folder), False, torch.device(config["device"]), 0, 1)
        update(training, None)
        update_s = _median_seconds(lambda: update(training, None), UPDATES)
    batches = list(task.eval_batches("valid"))
    net, device = training.net, training.device
    net.eval()
    with torch.no_grad():
        forward_s = _median_seconds(lambda: net(batches[0].inputs.to(device), None), 2)
    return update_s, forward_s, len(batches)


def run_shape(options: dict, preset: str | None, device: str, threads: int, cache: dict, fresh: dict) -> Shape:
    """The :class:`Shape` of the run of ``options`` over ``preset`` on ``device`` with ``threads`` threads; measured
    unless ``cache`` holds it (a new measurement goes into ``fresh``)."""
    config = resolve_config({**options, "device": device, "progress": False}, preset)
    key = shape_key(config, threads)
    if key not in cache:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            cache[key] = fresh[key] = dict(zip(("update_s", "forward_s", "eval_batches"), measure(config)))
        finally:
            torch.set_num_threads(before)
    task = build_task(config)
    updates = total_steps(config, task)
    return Shape(cache[key]["update_s"], cache[key]["forward_s"], updates, cache[key]["eval_batches"],
                 updates // evaluation_interval(config, task) + 1)


@dataclass(frozen=True)
class Estimate:
    """A grid's cost: its runs and trials, the device-seconds of each unit of work (a run, or a search's trials),
    and the slots they are placed on."""
    runs: int
    trials: int
    seconds: list[float]
    slots: int
    device: str

    @property
    def device_hours(self) -> float:
        return sum(self.seconds) / 3600

    @property
    def wall_hours(self) -> float:
        """Longest first, each on the slot that frees first."""
        ends = [0.0] * self.slots
        for seconds in sorted(self.seconds, reverse=True):
            heapq.heapreplace(ends, ends[0] + seconds)
        return max(ends, default=0.0) / 3600

    def line(self) -> str:
        return (f"{self.runs} runs and {self.trials} search trials: about {hours(self.device_hours)} of {self.device} "
                f"time, {hours(self.wall_hours)} of wall time on {self.slots} {self.device} slot"
                f"{'s' * (self.slots != 1)} (update times measured here at each run's shape)")


def hours(value: float) -> str:
    """A duration for a person: seconds, minutes, hours or days."""
    seconds = value * 3600
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{value:.1f} h" if value < 48 else f"{value / 24:.1f} days"


def estimate(runs: list[PlannedRun], searches: list[dict], slots: list[str], log=None) -> Estimate:
    """The cost of training ``runs`` and the ``searches`` (:func:`.grid.searches`' values: a run at the search's
    options, its trials) on ``slots`` (:func:`.placement.slot_devices`); ``log``, if given, hears of the shapes
    measured."""
    device = slots[0]
    threads = 1 if device == "cpu" and len(slots) > 1 else torch.get_num_threads()
    cache, fresh = _read_cache(), {}
    seconds = []
    try:
        for planned in runs:
            seconds.append(run_shape(planned.options, planned.preset, device, threads, cache, fresh).seconds)
        for search in searches:
            options = {**search["options"], "task": search["task"], "model": search["model"]}
            seconds.append(search["trials"] * run_shape(options, search["preset"], device, threads, cache,
                                                        fresh).seconds)
    finally:
        if fresh:
            _write_cache(fresh)
    if fresh and log:
        log(f"measured the update time of {len(fresh)} run shape{'s' * (len(fresh) != 1)} ({cache_path()})")
    kind = "CPU" if device == "cpu" else "GPU"
    return Estimate(len(runs), sum(s["trials"] for s in searches), seconds, len(slots), kind)
