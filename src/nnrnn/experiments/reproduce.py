"""``nnrnn reproduce``: the paper's experiment grid at a chosen scale, and a report.

The grid is copy, psMNIST and PTB × the six models × several seeds, in up to
two columns as in the paper: a fixed number of hidden units, and a fixed
parameter count (each model's hidden size from :func:`nnrnn.hidden_size_for`
so that it matches nnRNN's count, counted with each model's own options:
embedding, biases, the LSTM's single bias).  Learning rates, initialisations,
schedules and the other settings come from the ``paper`` / ``paper-params``
presets, which train as the authors' released code does; a scale only changes
sizes, lengths and which columns run.  Each run is an ordinary run folder;
finished runs are skipped and interrupted ones resumed, so the command can be
repeated.  ``--jobs N`` trains N runs at once, each in its own process with
one thread (on 2 cores, small models train more per second that way than one
run on two threads).

The scales are the modules of :mod:`.grids`, one file each (data: the MNIST test set split 8000/1000/1000 and PTB
trained on 90% of its validation file when only ``shared/data`` is present).
"""
from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import time
import zlib
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import presets
from ..analysis.mechanism import write_record
from ..errors import FolderInUse, Interrupted, OptionError, TrainingDiverged, UserError
from ..models import model_class
from ..tasks import task_class
from ..training import runlock
from ..training.runfolder import DIVERGED_MARKER, WALL_SECONDS, is_run_folder
from ..training.pace import Countdown
from ..training.train import train
from .planning import joint
from .planning.grid import (TPE_STARTUP, TUNED, Grid, GridFolder, PlannedRun, finished, joint_arms, plan, record_plan,
                            searches, write_whole)
from .planning.declaration import PICKED, Scale
from .planning.cluster import cluster_slots, run_on_cluster
from .grids import SCALES, planned_grid
from .planning.cost import estimate
from .planning.placement import CPU, Slots, check_devices, check_present, slot_devices, visible_devices
from .reporting.compact import materialize
from .reporting.report import report_of, write_report
from .planning.searching import EQUAL, span
from .planning.storage import holds_study, open_storage, search_storage
from .planning.sweep import run_sweep


def run_log(folder: Path) -> Path:
    """Where a grid's run prints: ``runs/NAME.log``, beside the run folder (a file inside it would make the folder
    one that nnrnn did not write, before the run has claimed it)."""
    return folder.parent / f"{folder.name}.log"


def _train_one(folder: Path, planned: PlannedRun, threads: int | None, device: str = CPU) -> str:
    """Train one planned run into ``folder`` on ``device`` (resuming it if interrupted); returns a line for the log.
    The device goes into the run's config.json, which so records where it trained (it is not part of the run's
    name: the same run on another device is the same run); the rest is the configuration planned, not resolved
    again."""
    if threads:
        torch.set_num_threads(threads)
    config = {**planned.resolved(), "out": str(folder), "device": device}
    resume = is_run_folder(folder)  # interrupted, at any moment: it continues from its last checkpoint, if any
    start = time.time()
    # what the run prints (a line per validation, its summary) goes to runs/NAME.log beside its folder, so that
    # the grid's own output stays one line per run when several train at once
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(run_log(folder), "a") as log, contextlib.redirect_stdout(log):
            train(config, resume=resume, on_end=write_record)  # mechanism.json beside its outcome
    except FolderInUse:  # grids sharing a runs folder (--runs): the other grid is training this run
        return f"{folder.name}: being trained by another process; run the command again later to include it"
    except TrainingDiverged as exc:
        # a result in its own right (the paper reports failed runs too): record it, go on
        folder.mkdir(parents=True, exist_ok=True)
        (folder / DIVERGED_MARKER).write_text(str(exc) + "\n")
        return f"{folder.name}: diverged: {exc}"
    seconds = time.time() - start
    (folder / WALL_SECONDS).write_text(f"{seconds:.1f}\n")
    return f"{folder.name}: {seconds:.0f} s" + (" (resumed)" if resume else "")


def expected_cost(planned: PlannedRun) -> float:
    """A rough relative cost of a run (recurrent steps × units², gated models × their gate count), to order the
    queue; not a prediction of time."""
    options = planned.options
    task = task_class(planned.task)
    length = task.sequence_length(options)
    updates = options.get("steps") or (options.get("epochs") or 1) * task.rough_updates_per_epoch(options)
    gates = model_class(planned.model).GATES
    return updates * length * options.get("batch_size", 1) * (gates * planned.hidden ** 2 + 64 ** 2)


def execute(grid: Grid, log=print, where: Where | None = None) -> None:
    """Train every planned run that has not finished (resuming interrupted ones); runs that share a folder
    (identical settings) train once, on the devices and the cluster of ``where`` (default: one process on this
    machine's first device)."""
    todo = {}
    for planned in grid.planned:
        folder = grid.run_folder(planned)
        if not finished(folder) and folder not in todo:
            todo[folder] = planned
    # longest first: with several jobs the grid then ends with short runs filling both processes
    todo = dict(sorted(todo.items(), key=lambda item: -expected_cost(item[1])))
    run_all(grid.out, todo, _train_one, "runs to train", log, where or Where())


@dataclass(frozen=True)
class Where:
    """Where a grid trains: ``slots``, the device of each run trained at once on this machine
    (:func:`.placement.slot_devices`), or ``cluster``, a Ray cluster's address (``auto``, ``HOST:PORT``), whose
    tasks each ask for one GPU, or one CPU thread when ``gpus`` is False."""
    slots: tuple = (CPU,)
    cluster: str | None = None
    gpus: bool = False


def _one_at_a_time(todo: dict, work, device: str, log, countdown: Countdown, again: str) -> None:
    """:func:`run_all` in this process, on ``device``: each run in turn, on the process's own threads."""
    for folder, planned in todo.items():
        try:
            line = work(folder, planned, None, device)
        except Interrupted as exc:
            raise Interrupted(exc.signum, exc.path, again) from None
        log(f"{countdown.done()} {line}{countdown.left()}")


def run_all(out: Path, todo: dict, work, what: str, log=print, where: Where = Where()) -> None:
    """``work(folder, item, threads, device)`` for every (folder, item) of ``todo``: on a Ray cluster
    (:func:`.cluster.run_on_cluster`), or here in processes of one thread, one per slot (each run on the device of a
    free slot); a signal to this process checkpoints the work under way and starts no more."""
    if not todo:
        return
    if where.cluster is not None:
        run_on_cluster(where.cluster, list(todo.items()), work, what, log, where.gpus)
        return
    jobs = len(where.slots)
    devices = sorted(set(where.slots))
    on = "" if devices == [CPU] else f" on {', '.join(devices)}"
    log(f"{len(todo)} {what}" + (f", {jobs} at a time" if jobs > 1 else "") + on)
    again = "run the same command again to continue (finished runs are kept, interrupted ones resume)"
    countdown = Countdown(len(todo))
    if jobs <= 1:
        _one_at_a_time(todo, work, where.slots[0], log, countdown, again)
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    slots, waiting, running, stopped = Slots(list(where.slots)), list(todo.items()), {}, []

    def forward(signum, frame):  # a signal to this process alone (kill PID) reaches the runs too
        stopped.append(signum)
        for child in multiprocessing.active_children():
            try:
                os.kill(child.pid, signum)
            except ProcessLookupError:
                pass

    # Only `jobs` runs are handed to the pool at a time, so that after a signal none starts, and each holds a slot.
    with ProcessPoolExecutor(max_workers=jobs, initializer=_ignore_signals) as pool:
        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            while waiting or running:
                while waiting and slots.free() and not stopped:
                    folder, planned = waiting.pop(0)
                    device = slots.take()
                    running[pool.submit(work, folder, planned, 1, device)] = folder, device
                if not running:
                    break
                for future in wait(running, return_when=FIRST_COMPLETED)[0]:
                    folder, device = running.pop(future)
                    slots.give(device)
                    try:
                        line = future.result()
                    except Interrupted:
                        line = f"{folder.name}: interrupted, checkpoint saved"
                    except BrokenProcessPool:
                        raise UserError(f"a training process died while training {folder.name} (killed, or out "
                                        f"of memory); {again}") from None
                    log(f"{countdown.done()} {line}{countdown.left()}")
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if stopped:
        raise Interrupted(stopped[0], out, again)


def _ignore_signals() -> None:
    """In a pool worker: the parent forwards SIGINT/SIGTERM, and train() catches them while it trains; an idle
    worker must not die of one (that would break the pool)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def _search_one(folder: Path, search: dict, threads: int | None, device: str = CPU) -> str:
    """Run the trials one search still lacks.  A trial counts when it ended (finished, pruned or diverged); one
    interrupted by a signal does not, so a search stopped part-way goes on to its full budget.  The sampler's
    seed comes from the search's name: an uninterrupted search draws the same trials every time."""
    import optuna

    if threads:
        torch.set_num_threads(threads)
    start = time.time()
    lacking = search["trials"] - ended_trials(folder, search)
    sampler = optuna.samplers.TPESampler(seed=zlib.crc32(folder.name.encode()), constant_liar=True,
                                         n_startup_trials=search.get("startup", TPE_STARTUP))
    with _trial_output(folder):
        study = run_sweep(search["task"], search["model"], lacking, out=str(folder), sampler=sampler,
                          storage=search_storage(folder),
                          train_options={**search["options"], "preset": search["preset"], "device": device},
                          searching=EQUAL)
    return f"{folder.name}: {time.time() - start:.0f} s, best {best_params(study)}"


def _trial_one(folder: Path, trial: tuple, threads: int | None, device: str = CPU) -> str:
    """One trial of a search, ``trial`` = (search, its ordinal among the search's trials): a cluster's task.  The
    sampler's seed comes from the search's name and the ordinal, so that trials drawn at once in separate processes
    differ (each process has a sampler of its own; the study in the shared storage tells it the trials so far)."""
    import optuna

    search, ordinal = trial
    if threads:
        torch.set_num_threads(threads)
    start = time.time()
    sampler = optuna.samplers.TPESampler(seed=zlib.crc32(folder.name.encode()) + ordinal, constant_liar=True,
                                         n_startup_trials=search.get("startup", TPE_STARTUP))
    with _trial_output(folder):
        run_sweep(search["task"], search["model"], 1, out=str(folder), sampler=sampler,
                  storage=search_storage(folder, shared=True),  # its trials' processes on several machines
                  train_options={**search["options"], "preset": search["preset"], "device": device}, searching=EQUAL)
    return f"{folder.name}: trial {ordinal + 1} of {search['trials']}, {time.time() - start:.0f} s"


SEARCH_LOG = "search.log"


@contextlib.contextmanager
def _trial_output(folder: Path):
    """What a search prints (its ``[sweep]`` lines per trial) goes to ``searches/NAME/search.log``, and Optuna says
    only its warnings while it runs, so that the grid's own output stays one line per search, as it is per run, when
    several search at once.  The log is inside the search's folder: beside it, it would count as a search (compact
    data, reports)."""
    import optuna

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with open(folder / SEARCH_LOG, "a") as log, contextlib.redirect_stdout(log):
            yield
    finally:
        optuna.logging.set_verbosity(verbosity)  # the caller's logging is its own


def _trials(folder: Path, search: dict) -> list:
    """The Optuna trials of a search in any state ([] while its study does not exist)."""
    if not holds_study(folder):
        return []
    try:
        return _study(folder, search).trials
    except KeyError:  # the storage exists, the study was never created in it
        return []


def started_trials(folder: Path, search: dict) -> int:
    """Trials of a search in any state (0: its study does not exist yet)."""
    return len(_trials(folder, search))


def ended_trials(folder: Path, search: dict) -> int:
    """Trials of a search that finished, were pruned or diverged (not those a signal interrupted)."""
    import optuna
    ended = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    return sum(t.state in ended for t in _trials(folder, search))


def best_params(study) -> dict | None:
    """The options of a study's best finished trial (the searched ones and those it set from them or its
    published settings, its ``options`` attribute); None when none finished."""
    import optuna
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not done:
        return None
    return {**study.best_trial.user_attrs.get("options", {}), **study.best_trial.params}


def _study(folder: Path, search: dict):
    """The Optuna study of a search in ``folder`` (the default storage and name of ``nnrnn sweep``)."""
    import optuna

    return optuna.load_study(study_name=f"{search['task']}-{search['model']}",
                             storage=open_storage(search_storage(folder)))


def tune(scale: str, out: Path, models=None, tasks=None, data_dir=None, log=print, where: Where = Where(),
         found: dict | None = None, resolved: dict | None = None) -> dict:
    """The ``tuned`` column's picks in a preset's layout, {table key: {label: options}} (a variant's entry also
    holds the options that make it): every label gets the same search (the scale's ``tune`` budget) in
    ``OUT/searches/SETTING-LABEL``; the picks are written to ``OUT/tuned.json``, and the tuned column as a whole
    preset (:func:`tuned_preset`) to ``OUT/preset.json``, which can be installed as ``nnrnn/presets/SCALE.json``.
    ``found``: the searches (:func:`.grid.searches`) where the caller has them; ``resolved``: the configurations
    this invocation resolved (:func:`.grid.resolve_once`)."""
    files = GridFolder(Path(out))
    resolved = {} if resolved is None else resolved
    found = searches(SCALES[scale], models, tasks, data_dir, resolved) if found is None else found
    todo = {files.searches / name: search for name, search in found.items()}
    pending = {}
    for folder, search in todo.items():
        if ended_trials(folder, search) < search["trials"]:
            pending[folder] = search
    if where.cluster is not None:  # each trial its own task, the study's storage shared
        # a study's first trial queues its published settings; trials started at once on a new study would each
        # queue them, so every new study's first trial runs alone, before the rest
        first = [(folder, (search, 0)) for folder, search in pending.items() if not started_trials(folder, search)]
        run_on_cluster(where.cluster, first, _trial_one, "search trials to run first", log, where.gpus)
        trials = [(folder, (search, ended + k)) for folder, search in pending.items()
                  for ended in [ended_trials(folder, search)] for k in range(search["trials"] - ended)]
        run_on_cluster(where.cluster, trials, _trial_one, "search trials to run", log, where.gpus)
    else:
        run_all(out, pending, _search_one, "hyperparameter searches to run", log, where)
    picks: dict = {}
    for folder, search in todo.items():
        best = best_params(_study(folder, search)) if holds_study(folder) else None
        if best is not None:  # in a preset's layout, with the options that make a variant
            key = presets.table_key(search["task"], search["options"].get("bptt"))
            variant = {k: v for k, v in search["options"].items() if k in search["extra"]}
            picks.setdefault(key, {})[search["label"]] = {**variant, **best}
    write_whole(files.tuned, json.dumps(picks, indent=1, sort_keys=True) + "\n")
    write_whole(files.preset, json.dumps(tuned_preset(scale, picks, data_dir, resolved), indent=1) + "\n")
    trials = {folder.name: trial_records(_study(folder, search)) for folder, search in todo.items()
              if holds_study(folder)}
    write_whole(files.trials, json.dumps(trials, indent=1, sort_keys=True) + "\n")
    return picks


def trial_records(study) -> list[dict]:
    """Every trial of a study in the order it started: its number, state (COMPLETE, PRUNED, FAIL, ...), why it
    stopped early (the sweep's ``stopped``: "pruned", "diverged", "interrupted"; None for a finished one), value (a
    finished trial's best validation score, else None) and searched options; what a report's best-so-far reads.  A
    joint search's trial adds each arm's measure (``arms``, :mod:`.planning.joint`)."""
    return [{"number": t.number, "state": t.state.name, "stopped": t.user_attrs.get("stopped"), "value": t.value,
             "params": t.params, **_ranges(t), **({"arms": t.user_attrs["arms"]} if "arms" in t.user_attrs else {})}
            for t in sorted(study.trials, key=lambda t: t.number)]


def _ranges(trial) -> dict:
    """A trial's searched ranges, every option it set (the drawn ones and those derived from them) and queued
    published settings, for the report's picks (:mod:`.picks`)."""
    return {"ranges": {k: span(d) for k, d in trial.distributions.items()},
            **({"options": trial.user_attrs["options"]} if "options" in trial.user_attrs else {}),
            **({"published": trial.user_attrs["published_from"]} if "published_from" in trial.user_attrs else {})}


def joint_tune(scale: str, out: Path, data_dir=None, log=print, where: Where = Where(),
               arms: dict | None = None, resolved: dict | None = None) -> dict:
    """The ``tuned`` column's picks from the scale's one joint search (:mod:`.planning.joint`), in
    ``OUT/searches/joint``, in a preset's layout as :func:`tune` gives them (every label of the search's setting its
    share of the one pick); ``OUT/tuned.json``, ``preset.json`` and ``trials.json`` written as :func:`tune` writes
    them.  Each trial's runs train as a grid's do (:func:`run_all`: at once on the slots of ``where``, resumed from
    their checkpoints).  ``arms``: :func:`.grid.joint_arms`, where the caller has them."""
    spec, files = SCALES[scale], GridFolder(Path(out))
    resolved = {} if resolved is None else resolved
    arms = joint_arms(spec, data_dir, resolved) if arms is None else arms

    def train(todo: dict) -> None:
        run_all(files.out, todo, _train_one, "runs of a joint search trial to train", log, where)
    study = joint.run_joint(files.joint_search, spec.joint, arms, train, log)
    best = joint.pick(study)
    picks: dict = {}
    if best is not None:  # one pick, each label's share of it
        for label, arm in arms.items():
            key = presets.table_key(arm.task, arm.options.get("bptt"))
            picks.setdefault(key, {})[label] = joint.arm_pick(arm, best)
    write_whole(files.tuned, json.dumps(picks, indent=1, sort_keys=True) + "\n")
    write_whole(files.preset, json.dumps(tuned_preset(scale, picks, data_dir, resolved), indent=1) + "\n")
    write_whole(files.trials, json.dumps({files.joint_search.name: trial_records(study)}, indent=1, sort_keys=True)
                + "\n")
    return picks


def tuned_preset(scale: str, picks: dict, data_dir=None, resolved: dict | None = None) -> dict:
    """The ``tuned`` column as a preset: {table key: {model: the options its runs train with, but the seed}},
    each model's entry whole (its ``paper-params`` entry or the task's procedure, the scale's size and length, the
    pick), so that ``--preset NAME`` alone trains a tuned model as the grid did; a variant's entry (e.g. nnRNN
    started as a delay line) goes under ``_variants`` (table key → label → options), since a preset is keyed by
    model."""
    preset: dict = {"_description": f"The `{scale}` grid's tuned column (nnrnn reproduce --scale {scale}): each "
                                    "model at nnRNN's parameter count with the options its search picked.",
                    "_source": f"nnrnn reproduce --scale {scale}, OUT/tuned.json; docs/design.md says how it searched"}
    for planned in plan(SCALES[scale], picks=picks, seeds=[0], data_dir=data_dir, resolved=resolved):
        if planned.column != TUNED:
            continue
        bptt = planned.options.get("bptt")
        base = presets.lookup(planned.preset, planned.task, planned.model, bptt) if planned.preset else {}
        entry = {**base, **{k: v for k, v in planned.options.items()
                            if k not in ("task", "model", "seed", "progress", "data_dir")}}
        key = presets.table_key(planned.task, bptt)
        if planned.label == planned.model:
            preset.setdefault(key, {})[planned.model] = entry
        else:
            variants = preset.setdefault("_variants", {}).setdefault(key, {})
            variants[planned.label] = {"model": planned.model, **entry}
    return preset


def share_runs(out: Path, runs_dir) -> None:
    """Make ``OUT/runs`` a link to ``runs_dir``, a folder of run folders that several grids share (a run is
    named by its settings, so a grid finds the finished runs of another grid it has in common)."""
    target = Path(runs_dir).resolve()
    link = GridFolder(out).runs
    if link.is_symlink() and link.resolve() == target:
        return
    if link.exists() or link.is_symlink():
        raise UserError(f"{link} already exists and is not a link to {target}; give --runs only with a new --out, "
                        f"or leave --runs out")
    runlock.make_folder(target, "--runs")
    runlock.make_folder(out)
    link.symlink_to(target, target_is_directory=True)


def _check_filters(scale: str, models, tasks) -> None:
    """An OptionError for a task or model the scale does not run (it would plan an empty grid)."""
    has_tasks, has_models = SCALES[scale].tasks, SCALES[scale].models
    for given, has, what in ((tasks, has_tasks, "task"), (models, has_models, "model")):
        missing = [g for g in given or () if g not in has]
        if missing:
            raise OptionError(f"scale {scale} has no {what} {', '.join(missing)}; its {what}s are {', '.join(has)}")


def _costed_plan(spec: Scale, tuned: Path, models, tasks, seeds, data_dir, resolved: dict) -> list[PlannedRun]:
    """The runs a grid's cost counts: a tuned grid's with the picks its searches made (``tuned``), or, before they
    exist, every label planned as its search starts it (the same sizes and lengths; a pick changes rates and
    options, not a run's shape); every rung of a ladder (its ceiling).  A grid without a search trains these."""
    if not spec.searched:
        return plan(spec, models, tasks, seeds, data_dir, resolved=resolved)
    if tuned.is_file():
        return plan(spec, models, tasks, seeds, data_dir, json.loads(tuned.read_text()), resolved=resolved)
    return plan(spec, models, tasks, seeds, data_dir, searching=True, resolved=resolved)


def _to_train(grid: Grid, searching: bool) -> list[PlannedRun]:
    """The runs a grid's cost counts as still to train, one per run folder.  Before its searches have picked
    (``searching``) every tuned run is one of its own and unfinished: planned as its search starts it, it has the
    paper column's options and folder, but the picks will name it apart (the beyond grid's plan counted 63 of its 99
    runs so)."""
    todo = {}
    for planned in grid.planned:
        folder = grid.run_folder(planned)
        if searching and planned.column in PICKED:
            todo[planned.column, folder] = planned
        elif not finished(folder):
            todo[folder] = planned
    return list(todo.values())


def reproduce(scale: str, out, models=None, tasks=None, seeds=None, data_dir=None, log=print, jobs: int = 1,
              runs_dir=None, devices=None, runs_per_device=None, cluster=None, plan_only: bool = False) -> Path | None:
    """Run the grid of ``scale`` (a module of :mod:`.grids`) in ``out``: its searches when it has a tuned column,
    every run not finished, then its report; ``models``, ``tasks`` and ``seeds`` narrow it, ``runs_dir`` keeps its
    run folders elsewhere (:func:`share_runs`).  The runs train on ``devices`` (default: every visible GPU, else
    the CPU in ``jobs`` processes), ``runs_per_device`` at a time on each, or as tasks of the Ray cluster at
    ``cluster``.  Its cost (:mod:`.cost`) is logged first; ``plan_only`` logs it and trains nothing (returns None)."""
    if scale not in SCALES:
        raise OptionError(f"scale must be one of {', '.join(SCALES)}; got {scale!r}")
    where = _where(devices, runs_per_device, jobs, cluster)
    _check_filters(scale, models, tasks)
    spec = SCALES[scale]
    resolved: dict = {}  # every configuration this invocation resolves, each once (grid.resolve_once)
    files = GridFolder(Path(out))
    # every option checked first
    costed = planned_grid(out, scale, _costed_plan(spec, files.tuned, models, tasks, seeds, data_dir, resolved))
    todo = _to_train(costed, searching=spec.searched and not files.tuned.is_file())
    found = searches(spec, models, tasks, data_dir, resolved) if spec.tune is not None else {}
    pending = [s for name, s in found.items() if ended_trials(files.searches / name, s) < s["trials"]]
    arms = joint_arms(spec, data_dir, resolved) if spec.joint is not None else {}
    lacking = max(0, spec.joint.trials - joint.ended(files.joint_search)) if arms else 0
    pending += [{"trials": lacking, "arms": list(arms.values())}] if lacking > 0 else []
    local = visible_devices()[0] if where.cluster is not None else where.slots[0]
    cost = estimate(todo, pending, [local] * len(where.slots), log)
    runs = f"at most {len(costed.planned)}" if spec.climb is not None else str(len(costed.planned))  # a ladder may stop
    searched = (f"1 joint search of {spec.joint.trials} trials, {len(arms)} runs each ({lacking} to run)" if arms
                else f"{len(found)} searches")
    log(f"{scale}: {runs} planned runs ({len(todo)} to train), {searched}; " + cost.line())
    if plan_only:
        return None
    if runs_dir is not None:
        share_runs(files.out, runs_dir)
    grid = costed  # what a grid without a search trains
    with runlock.hold(files.out):  # one reproduce per folder; its runs lock their own folders as they train
        record_plan(files.out, scale, spec)  # the rules fixed before the runs: a report says if they change as it runs
        if spec.tune is not None:
            picks = tune(scale, files.out, models, tasks, data_dir, log, where, found, resolved)
        elif spec.joint is not None:  # one search for every label together
            picks = joint_tune(scale, files.out, data_dir, log, where, arms, resolved)
        if spec.searched:
            grid = planned_grid(out, scale, plan(spec, models, tasks, seeds, data_dir, picks, resolved=resolved))
        if spec.climb is not None:  # an adaptive grid (grids/memory.py) plans each rung from the last's results
            grid = spec.climb(grid, lambda rung: execute(rung, log, where))
        else:
            execute(grid, log, where)
        if report_of(grid).prepare:
            report_of(grid).prepare(grid, log)
        report = write_report(grid)
    log(f"report: {report}")
    return report


def _where(devices, runs_per_device, jobs, cluster) -> Where:
    """The :class:`Where` of reproduce's options: a cluster's (one slot per GPU, else per CPU, of the cluster), or
    this machine's slots."""
    if cluster is not None:
        count, gpus = cluster_slots(cluster)
        return Where((CPU,) * count, cluster, gpus)
    return Where(tuple(slot_devices(check_present(check_devices(devices or visible_devices())), runs_per_device, jobs)))


def regenerate(path: Path, out: Path, data_dir=None) -> Path:
    """The report of the compact data at ``path``, written into ``out`` from that data alone (``data_dir``: where
    the MNIST and PTB files are here, for the data section's counts)."""
    data = json.loads(Path(path).read_text())
    planned = materialize(data, out, data_dir)
    return write_report(planned_grid(out, data["scale"], planned, date=data["date"], analysis_lines=data["analysis"]))
