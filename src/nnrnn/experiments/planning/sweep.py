"""Hyperparameter search with Optuna over the space of the paper's supplement.

The supplement ("Hyperparameter search") searched

* the learning rate between 0.005 and 1e-5 (steps of 1e-4 and 2e-4, or 5x / 10x);
* the learning rate of the orthogonal factor between 1e-5 and 1e-4 (nnRNN, expRNN);
* RMSprop's smoothing alpha in {0.5, 0.9, 0.99};
* nnRNN's delta in {0, 1e-4, 1e-3, 1e-2, 0.1, 0.15, 1, 10} and the L2 decay on T
  in {0, 1e-6, 1e-5, 1e-4};
* the orthogonal initialisation in {random, cayley, henaff} (nnRNN, expRNN, RNN-orth).

:func:`search_space` turns that into Optuna distributions for one model.  The
two learning rates are drawn log-uniformly from those ranges rather than from a
hand-made grid: every value of the paper's grid (and of its tables) lies in the
range, and TPE models a continuous log-scale better than a long categorical.
The other parameters keep the paper's discrete sets.

Each trial is an ordinary training run in ``OUT/trial-NNNN`` (config.json,
metrics.jsonl, checkpoints), made by :func:`nnrnn.training.train.train`.  Its value is
the best validation value of the task's monitored metric (``task.monitor``);
the validation points are reported to Optuna as they come, and a median
pruner stops trials that do worse than the median of earlier trials at the
same update.  A run that diverges is recorded as PRUNED with the reason in
its ``stopped``/``reason`` user attributes, and the search goes on.

Every process that calls :func:`run_sweep` with the same storage and study
name joins the same study: Optuna hands out distinct trial numbers, so any
number of processes, on one machine or many, can search together.  See
docs/sweep.md.
"""
from __future__ import annotations

import contextlib
import math
import os
import socket
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ... import presets
from ...errors import Interrupted, OptionError, TrainingDiverged, UserError
from ...models import model_class
from ...tasks import task_class
from ...training import runfolder
from ...training.config import resolve_config, total_steps
from ...training.network import build, build_task
from ...training.runlock import make_folder
from ...training.train import train

LR_RANGE = (1e-5, 5e-3)           # log-uniform
# with Adam: up to 1e-2, since the models trained with Adam by their authors (coRNN, LEM) use rates above 5e-3
# (psMNIST: 0.0054 and 0.0073)
ADAM_LR_RANGE = (1e-5, 1e-2)
LR_ORTH_RANGE = (1e-5, 1e-4)      # log-uniform
ALPHAS = (0.5, 0.9, 0.99)
DELTAS = (0.0, 1e-4, 1e-3, 1e-2, 0.1, 0.15, 1.0, 10.0)
T_DECAYS = (0.0, 1e-6, 1e-5, 1e-4)
INITS = ("random", "cayley", "henaff")  # searched for a model whose INITS holds all three
SEARCHED = ("lr", "lr_orth", "alpha", "delta", "t_decay", "init")  # and each model's own (its class's SEARCHED)

# ---- equal terms (issue 59, item 4): what a grid's searches draw, every model alike (docs/design.md)
# one learning-rate range for every model and optimizer: the supplement's floor, and a ceiling above every rate a
# paper we follow trains with (LSTM's PTB 8e-3, coRNN's adding 2e-2), so no published rate sits at an edge
EQUAL_LR_RANGE = (1e-5, 3e-2)
# lr_orth is not a dimension of its own: lr_orth = lr × this, the paper's ratio for nnRNN and expRNN on psMNIST
# (2e-4 / 2e-5, 5e-4 / 5e-5) and nnRNN's on PTB at 150 steps; every model then searches lr and its own options only
LR_ORTH_RATIO = 0.1
OWN_OPTIONS = 2  # K: the most own options (a model class's TUNED_OPTIONS) any model searches beside lr
# the supplement's options a model may name among its TUNED_OPTIONS (the others come from its class's SEARCHED)
SUPPLEMENT_CHOICES = {"alpha": ALPHAS, "delta": DELTAS, "t_decay": T_DECAYS, "init": INITS}
# each model's paper's optimizer (None: its paper names none we follow, and it trains with the default, RMSprop);
# nnrnn has Adam and RMSprop, so the LRU's AdamW is Adam here (docs/design.md)
PAPER_OPTIMIZERS = {"rnn": "rmsprop", "rnn-orth": "rmsprop", "eurnn": "rmsprop", "exprnn": "rmsprop",
                    "nnrnn": "rmsprop", "lstm": "rmsprop", "cornn": "adam", "lem": "adam", "lru": "adam",
                    "nnlru": "adam"}
# where a model's published settings are looked for (the search's own preset first), and the tasks nearest to each
# where its papers report none for the task itself
PUBLISHED_PRESETS = ("long-memory", "paper-params", "paper")
NEAREST_TASKS = {"copy": ("adding", "psmnist"), "adding": ("copy", "psmnist"), "psmnist": ("adding", "copy"),
                 "ptb": ("psmnist", "copy", "adding")}
# the options of a published entry a first trial takes beside the searched ones (the grid keeps its sizes, lengths
# and batches): the model's own settings, its orthogonal factor's rate and the clipping its code uses
PUBLISHED_EXTRAS = ("lr_orth", "clip")

PRUNE_STARTUP_TRIALS = 5     # MedianPruner: prune nothing until this many trials have finished
PRUNE_WARMUP_FRACTION = 0.25  # ... nor before this fraction of a trial's updates
HEARTBEAT_S = 60             # SQL storages: a trial whose process stops beating for
GRACE_S = 300                # GRACE_S seconds is marked FAIL by the next trial started


# --------------------------------------------------------------------------- search space

def search_space(model: str, fixed=(), optimizer: str = "rmsprop") -> dict:
    """The Optuna distributions searched for ``model``, by option name: the supplement's (the learning rates,
    RMSprop's α, the Schur form's penalties, the orthogonal initialisation), then the model's own (its class's
    ``SEARCHED``, e.g. coRNN's Δt, γ and ε).

    Options named in ``fixed`` (given explicitly by the user) are left out, and
    so is ``alpha`` unless the optimizer is RMSprop.
    """
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    cls = model_class(model)  # unknown names fail here with the list of valid ones
    space = {"lr": FloatDistribution(*(ADAM_LR_RANGE if optimizer == "adam" else LR_RANGE), log=True)}
    if cls.ORTHOGONAL_FACTOR:
        space["lr_orth"] = FloatDistribution(*LR_ORTH_RANGE, log=True)
    if optimizer == "rmsprop":
        space["alpha"] = CategoricalDistribution(ALPHAS)
    if cls.SCHUR_FORM:  # γ and T, so delta and t_decay
        space["delta"] = CategoricalDistribution(DELTAS)
        space["t_decay"] = CategoricalDistribution(T_DECAYS)
    if set(INITS) <= set(cls.INITS):
        space["init"] = CategoricalDistribution(INITS)
    for name, (kind, *bounds) in cls.SEARCHED.items():
        space[name] = (FloatDistribution(*bounds, log=True) if kind == "log"
                       else CategoricalDistribution(bounds[0]))
    return {name: dist for name, dist in space.items() if name not in set(fixed)}


def equal_space(model: str, fixed=(), optimizer: str = "rmsprop") -> dict:
    """The distributions a grid's search draws for ``model``, every model alike: its learning rate over
    :data:`EQUAL_LR_RANGE`, then its class's ``TUNED_OPTIONS`` (at most :data:`OWN_OPTIONS`), each over its class's
    ``SEARCHED`` range or the supplement's set (:data:`SUPPLEMENT_CHOICES`).  lr_orth is tied to lr
    (:func:`tie_rates`), RMSprop's α held at its preset's value; ``optimizer`` changes nothing (one range for all).
    Options in ``fixed`` are left out."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    del optimizer  # the same dimensions whatever the optimizer
    cls = model_class(model)
    own = tuple(cls.TUNED_OPTIONS)
    if len(own) > OWN_OPTIONS:
        raise ValueError(f"{model} names {len(own)} options to tune ({', '.join(own)}); every model tunes at most "
                         f"{OWN_OPTIONS} beside its learning rate")
    space = {"lr": FloatDistribution(*EQUAL_LR_RANGE, log=True)}
    for name in own:
        if name in cls.SEARCHED:
            kind, *bounds = cls.SEARCHED[name]
            space[name] = (FloatDistribution(*bounds, log=True) if kind == "log"
                           else CategoricalDistribution(bounds[0]))
        else:
            space[name] = CategoricalDistribution(SUPPLEMENT_CHOICES[name])
    return {name: dist for name, dist in space.items() if name not in set(fixed)}


def no_derived(model: str, params: dict, fixed=()) -> dict:
    """The supplement's searches derive nothing from the drawn options."""
    return {}


def tie_rates(model: str, params: dict, fixed=()) -> dict:
    """What an equal search sets from the drawn options: lr_orth = lr × :data:`LR_ORTH_RATIO` for a model with an
    orthogonal factor, and the model's paper's optimizer (:data:`PAPER_OPTIMIZERS`); an option in ``fixed`` (given
    by the user) is left as given."""
    derived = {}
    if model_class(model).ORTHOGONAL_FACTOR and "lr" in params:
        derived["lr_orth"] = params["lr"] * LR_ORTH_RATIO
    if PAPER_OPTIMIZERS.get(model):
        derived["optimizer"] = PAPER_OPTIMIZERS[model]
    return {k: v for k, v in derived.items() if k not in set(fixed)}


def best_value(curve: list[tuple[int, float]], minimize: bool) -> float:
    """The best validation value of ``curve`` ((update, value) pairs in order)."""
    values = [v for _, v in curve]
    return min(values) if minimize else max(values)


def curve_area(curve: list[tuple[int, float]], minimize: bool) -> float:
    """The area under the validation curve per update (trapezoids between its points, divided by the updates they
    span; a single point: its value), in the metric's units: a trial is judged over its whole length, and a fast
    start that stalls scores below a steady descent to the same end."""
    del minimize  # lower area is better where the metric is, and higher where it is
    if len(curve) == 1:
        return curve[0][1]
    area = sum((s1 - s0) * (v0 + v1) / 2 for (s0, v0), (s1, v1) in zip(curve, curve[1:]))
    return area / (curve[-1][0] - curve[0][0])


def held_to(curve: list[tuple[int, float]], steps: int) -> list[tuple[int, float]]:
    """``curve`` as if the run went on to its planned ``steps`` at its last value: a run that stopped early by its
    own rule (solved, ``--stop-when-solved``; its rates halved enough, ``--stop-after-halvings``) is judged over the
    length it was planned for, so that an area under the curve does not count an early solve against it."""
    if curve and curve[-1][0] < steps:
        return [*curve, (steps, curve[-1][1])]
    return curve


@dataclass(frozen=True)
class Searching:
    """How a search draws and judges a trial: ``space`` (model, fixed, optimizer) → distributions, ``derive``
    (model, drawn options, fixed) → the options set from them, ``value`` (validation curve, minimize) → the trial's
    score (what Optuna ranks and the pruner compares, at every validation point), and ``first``: whether the model's
    published settings (:func:`published`) are queued as the study's first trial."""
    space: Callable
    derive: Callable
    value: Callable
    first: bool


SUPPLEMENT = Searching(search_space, no_derived, best_value, False)  # ``nnrnn sweep``: the paper's supplement
EQUAL = Searching(equal_space, tie_rates, curve_area, True)  # a grid's searches: every model alike


def published(task: str, model: str, bptt: int | None = None, preset: str | None = None) -> tuple[dict, str] | None:
    """(options, where from) of ``model``'s published settings for ``task``, or for the nearest task its papers
    report (:data:`NEAREST_TASKS`), as the presets hold them (``preset`` first, then :data:`PUBLISHED_PRESETS`):
    the options an equal search draws, the model's own settings and :data:`PUBLISHED_EXTRAS`; None when no preset
    gives the model a learning rate for any of those tasks."""
    cls = model_class(model)
    wanted = {*equal_space(model), *cls.CONFIG_OPTIONS, *PUBLISHED_EXTRAS} - {"bias", "hidden"}
    names = tuple(dict.fromkeys(p for p in (preset, *PUBLISHED_PRESETS) if p))
    for near in (task, *NEAREST_TASKS.get(task, ())):
        for name in names:
            entry = presets.load(name).get(presets.table_key(near, bptt if near == "ptb" else None), {}).get(model)
            if entry and "lr" in entry:
                return {k: v for k, v in entry.items() if k in wanted}, f"{name}: {presets.table_key(near, bptt)}"
    return None


def span(distribution) -> dict:
    """An Optuna distribution as data: {"log": [low, high]} (a log-uniform range), {"uniform": [low, high]} or
    {"choices": [...]}."""
    if hasattr(distribution, "choices"):
        return {"choices": list(distribution.choices)}
    return {"log" if distribution.log else "uniform": [distribution.low, distribution.high]}


def suggest(trial, space: dict) -> dict:
    """One value per distribution of ``space``, drawn through ``trial``'s public API."""
    from optuna.distributions import CategoricalDistribution
    params = {}
    for name, dist in space.items():
        if isinstance(dist, CategoricalDistribution):
            params[name] = trial.suggest_categorical(name, list(dist.choices))
        else:
            params[name] = trial.suggest_float(name, dist.low, dist.high, log=dist.log)
    return params


# --------------------------------------------------------------------------- storage

def default_storage(out) -> str:
    """``sqlite:///OUT/study.db`` with OUT's characters taken literally: SQLAlchemy reads ``?`` as the start of
    options and unquotes ``%XX``, so the path is escaped (a folder named ``a?b`` would otherwise put the
    database in ``a``, where another sweep may share it)."""
    from sqlalchemy.engine import URL
    return URL.create("sqlite", database=str(Path(out).resolve() / "study.db")).render_as_string(hide_password=False)


def _sqlite_path(url: str) -> str:
    """The file a ``sqlite://`` URL names, as SQLAlchemy reads it (escapes undone, options dropped)."""
    from sqlalchemy.engine import make_url
    try:
        return make_url(url).database or ""
    except Exception as exc:  # SQLAlchemy's ArgumentError and the errors of a malformed URL's parts
        raise UserError(f"cannot read the storage URL {url!r}: {_first_line(exc)}") from None


def _shown(url: str) -> str:
    """``url`` with any password masked, for messages."""
    try:
        from sqlalchemy.engine import make_url
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def open_storage(url: str, must_exist: bool = False):
    """An Optuna storage for ``url``.

    ``sqlite:///PATH``, ``postgresql://...``, ``mysql://...`` (any SQLAlchemy
    URL): :class:`optuna.storages.RDBStorage`, with heartbeats so that the
    trials of a process that died are marked FAIL.  ``journal:PATH``: a
    :class:`optuna.storages.JournalStorage` on an append-only file (safe for
    many processes, also over NFS).  ``redis://...``: a journal in Redis.
    """
    import optuna
    if not isinstance(url, str) or not url.strip():
        raise UserError(f"the storage must be a URL such as sqlite:///study.db or journal:study.log; got {url!r}")
    scheme = url.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme == "journal":
        if not url.split(":", 1)[1].strip():
            raise UserError("a journal storage needs a file, as in journal:runs/sweep/journal.log")
        path = Path(url.split(":", 1)[1]).expanduser()
        if must_exist and not path.is_file():
            raise UserError(f"no study journal at {path}; check --storage")
        try:
            from optuna.storages.journal import JournalFileBackend
            path.parent.mkdir(parents=True, exist_ok=True)
            return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
        except OSError as exc:
            raise UserError(f"cannot open the journal file {path}: {exc.strerror or exc}") from None
    if scheme in ("redis", "rediss", "unix"):
        try:
            from optuna.storages.journal import JournalRedisBackend
            return optuna.storages.JournalStorage(JournalRedisBackend(url))
        except Exception as exc:
            raise UserError(f"cannot open the storage {_shown(url)}: {_first_line(exc)}") from None
    engine_kwargs = {"pool_pre_ping": True}
    if scheme == "sqlite":
        path = _sqlite_path(url)
        if path and path != ":memory:":
            if must_exist and not Path(path).is_file():
                raise UserError(f"no study database at {path}; run the sweep first or give --storage")
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UserError(f"cannot create the folder of {path}: {exc.strerror or exc}") from None
        engine_kwargs["connect_args"] = {"timeout": 60}  # wait for other processes' locks
    elif scheme in ("postgresql", "postgres", "mysql", "mariadb"):
        engine_kwargs["connect_args"] = {"connect_timeout": 15}
    last = None
    for attempt in range(4):  # concurrent first use of a fresh SQLite file can race on the schema
        try:
            with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna; they work
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs, heartbeat_interval=HEARTBEAT_S,
                                                  grace_period=GRACE_S)
        except Exception as exc:
            last = exc
            if scheme != "sqlite":
                break
            time.sleep(0.3 * (attempt + 1))
    raise UserError(f"cannot open the storage {_shown(url)}: {_first_line(last)}; check the URL, "
                    f"the database driver and that the server is reachable") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0].rstrip(".") if text else type(exc).__name__


def _study_names(storage) -> list[str]:
    import optuna
    return [s.study_name for s in optuna.study.get_all_study_summaries(storage, include_best_trial=False)]


# --------------------------------------------------------------------------- the search

def planned_steps(config: dict) -> int:
    """The number of updates a run of ``config`` will make (builds the task if it must)."""
    if config.get("steps"):
        return config["steps"]
    cls = task_class(config["task"])
    if config.get("epochs") is None and not cls.has_data_files:  # no epochs: no data to read to count them
        return cls.default_steps
    task, _ = build(config)
    return total_steps(config, task)


def make_pruner(steps: int, startup_trials: int = PRUNE_STARTUP_TRIALS,
                warmup_fraction: float = PRUNE_WARMUP_FRACTION, warmup_steps: int | None = None):
    """A MedianPruner: a trial is stopped at a validation point when its best value so far
    is worse than the median of the earlier trials' values at that update, but never
    while fewer than ``startup_trials`` trials have finished, nor before update
    ``warmup_steps`` (default: ``warmup_fraction`` of the ``steps`` updates)."""
    import optuna
    if warmup_steps is None:
        warmup_steps = int(steps * warmup_fraction)
    return optuna.pruners.MedianPruner(n_startup_trials=startup_trials, n_warmup_steps=warmup_steps,
                                       interval_steps=1)


class _Objective:
    def __init__(self, task, model, out, options, preset, space, monitor, mode, searching: Searching = SUPPLEMENT):
        self.task, self.model, self.out, self.options, self.preset = task, model, Path(out), options, preset
        self.space, self.monitor, self.mode, self.searching = space, monitor, mode, searching
        self.host = socket.gethostname()
        self.interrupted = None

    def _options(self, trial) -> tuple[dict, dict]:
        """(the drawn options, every option the trial sets beyond the fixed ones): a queued first trial's
        published extras (user attribute ``published``), then the drawn ones and what is derived from them, which
        the trial records as ``options`` (a pick is that whole set, not only the drawn ones)."""
        params = suggest(trial, self.space)
        derived = self.searching.derive(self.model, params, list(self.options))
        published_extras = {k: v for k, v in trial.user_attrs.get("published", {}).items() if k not in params}
        options = {**derived, **published_extras, **params}
        trial.set_user_attr("options", options)
        return params, options

    def __call__(self, trial):
        import optuna

        params, chosen = self._options(trial)
        folder = self.out / f"trial-{trial.number:04d}"
        trial.set_user_attr("run", str(folder.resolve()))
        trial.set_user_attr("host", self.host)
        if runfolder.config_file(folder).exists() or (folder / runfolder.CHECKPOINTS).exists():
            raise UserError(f"{folder} already holds a run that is not trial {trial.number} of study "
                            f"{trial.study.study_name!r}; choose another --out or --study")
        config = resolve_config({**self.options, "task": self.task, "model": self.model, "out": str(folder),
                                 "progress": False, **chosen}, self.preset)
        # what the run prints goes to its log, so that the sweep's own output stays a line or two per trial
        log = self.out / "logs" / f"{folder.name}.log"
        print(f"[sweep] trial {trial.number}: {format_params(params)} -> {folder} (its output: logs/{log.name})",
              flush=True)
        better = (lambda a, b: a < b) if self.mode == "min" else (lambda a, b: a > b)
        best = {"value": None, "step": None}
        curve = []

        def on_eval(step, record):
            value = record.get(self.monitor)
            if value is None or not math.isfinite(value):
                trial.set_user_attr("stopped", "diverged")
                trial.set_user_attr("reason", f"validation {self.monitor} is {value} at update {step}")
                raise optuna.TrialPruned(f"validation {self.monitor} is {value} at update {step}")
            if best["value"] is None or better(value, best["value"]):
                best["value"], best["step"] = value, step
            curve.append((step, value))
            trial.report(self.searching.value(curve, self.mode == "min"), step)
            if trial.should_prune():
                trial.set_user_attr("stopped", "pruned")
                trial.set_user_attr("reason", f"below the median of earlier trials at update {step}")
                raise optuna.TrialPruned(f"pruned at update {step}")

        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a") as written, contextlib.redirect_stdout(written):
                result = train(config, on_eval=on_eval)
        except TrainingDiverged as exc:
            trial.set_user_attr("stopped", "diverged")
            trial.set_user_attr("reason", str(exc))
            raise optuna.TrialPruned(str(exc)) from None
        except Interrupted as exc:
            return self._interrupted(trial, exc)
        finally:
            if best["step"] is not None:
                trial.set_user_attr("best_step", best["step"])
        if best["value"] is None:
            trial.set_user_attr("stopped", "no validation")
            raise optuna.TrialPruned("the run made no validation point")
        if result.get("test"):
            trial.set_user_attr("test", {k: v for k, v in result["test"].items()
                                         if isinstance(v, (int, float))})
        return self.searching.value(held_to(curve, planned_steps(config)), self.mode == "min")

    def _interrupted(self, trial, exc: Interrupted) -> float:
        """The run is checkpointed: the trial is marked FAIL (a NaN value does, without a traceback in the log), no
        other trial starts, and run_sweep re-raises ``exc``.  Optuna would warn twice that NaN "is not acceptable",
        which reads as a diverged run: its warnings are off until run_sweep puts its verbosity back."""
        import optuna
        trial.set_user_attr("stopped", "interrupted")
        trial.set_user_attr("reason", str(exc))
        self.interrupted = exc
        trial.study.stop()
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        return float("nan")


def _report_trial(study, trial) -> None:
    state = trial.state.name
    if state == "COMPLETE":
        print(f"[sweep] trial {trial.number} complete: best valid {study.user_attrs.get('monitor', 'value')} "
              f"{trial.value:.6g} at update {trial.user_attrs.get('best_step')}", flush=True)
    else:
        reason = trial.user_attrs.get("reason", "")
        state = {"FAIL": "failed"}.get(state, state.lower())
        print(f"[sweep] trial {trial.number} {state}{': ' + reason if reason else ''}", flush=True)


def run_sweep(task: str, model: str, trials: int, storage: str | None = None, study: str | None = None,
              out: str | None = None, train_options: dict | None = None, *, pruner=None, sampler=None,
              prune_startup: int = PRUNE_STARTUP_TRIALS, prune_warmup: int | None = None,
              total_trials: int | None = None, timeout: float | None = None, searching: Searching = SUPPLEMENT):
    """Run ``trials`` trials of a search over :func:`search_space` for (``task``, ``model``).

    ``storage``: an Optuna storage URL (see :func:`open_storage`), by default
    ``sqlite:///OUT/study.db``.  ``study``: the study name, by default
    ``TASK-MODEL``; an existing study of that name is joined.  ``out``: the
    folder of the trial runs (default ``runs/sweep-TASK-MODEL``).
    ``train_options``: fixed training options (``steps``, ``hidden``,
    ``preset``, ...); a searched option given here is held fixed.
    ``pruner``/``sampler``: Optuna objects; by default a TPE sampler with the
    constant liar (for parallel workers) and :func:`make_pruner` with
    ``prune_startup`` trials and ``prune_warmup`` updates (default: a quarter
    of each trial's updates); ``optuna.pruners.NopPruner()`` prunes nothing.
    ``total_trials``: stop once the study holds that many trials, whoever ran
    them.  ``timeout``: seconds after which this process starts no new trial.
    ``searching``: what is drawn and how a trial is judged (:data:`SUPPLEMENT`, the default: the paper's
    supplement and the best validation value; :data:`EQUAL`: a grid's, every model alike, its published settings
    queued first, judged by the area under its validation curve).
    Returns the :class:`optuna.Study`.
    """
    import optuna

    _check_limits(trials, total_trials, timeout)
    monitor, mode = task_class(task).monitor
    model_class(model)
    options, preset = _fixed_options(train_options)
    out = Path(out or f"runs/sweep-{task}-{model}")
    base = resolve_config({**options, "task": task, "model": model, "out": str(out), "progress": False}, preset)
    space = searching.space(model, fixed=list(options), optimizer=base["optimizer"])  # an option given is held
    pruner, sampler = _pruner_and_sampler(base, pruner, sampler, prune_startup, prune_warmup)
    build_task(base)  # the data must be there before a study or trial is created (one line if it is not)
    make_folder(out, "--out")
    url = storage or default_storage(out)
    name = study or f"{task}-{model}"
    the_study = _create_study(url, name, "minimize" if mode == "min" else "maximize", sampler, pruner)
    _claim_study(the_study, url, name, {"task": task, "model": model, "monitor": monitor, "mode": mode})

    if searching.first and not the_study.trials:
        queue_published(the_study, task, model, options, preset, space)
    objective = _Objective(task, model, out, options, preset, space, monitor, mode, searching)
    callbacks = [_report_trial]
    if total_trials is not None:
        callbacks.append(optuna.study.MaxTrialsCallback(total_trials, states=None))
        if len(the_study.trials) >= total_trials:
            print(f"[sweep] study {name!r} already holds {len(the_study.trials)} trials; nothing to do", flush=True)
            return the_study
    print(f"[sweep] study {name!r} in {_shown(url)}: {len(the_study.trials)} trials so far; running {trials} "
          f"more here, searching {', '.join(space) or 'nothing'}", flush=True)
    verbosity = optuna.logging.get_verbosity()
    try:
        the_study.optimize(objective, n_trials=trials, timeout=timeout, callbacks=callbacks, gc_after_trial=True)
    finally:
        optuna.logging.set_verbosity(verbosity)
    if objective.interrupted is not None:
        raise objective.interrupted
    return the_study


def queue_published(study, task: str, model: str, options: dict, preset: str | None, space: dict) -> dict | None:
    """Queue ``model``'s published settings (:func:`published`) as ``study``'s next trial: the searched options
    among them as its parameters (out of a range too: Optuna takes a queued value as given), the others (the model's
    own settings it does not search, lr_orth, clipping) as its ``published`` user attribute, which the objective
    applies; options the search holds fixed stay fixed.  Returns what was queued (None: nothing published)."""
    found = published(task, model, options.get("bptt"), preset)
    if found is None:
        return None
    settings, source = found
    params = {k: v for k, v in settings.items() if k in space}
    extras = {k: v for k, v in settings.items() if k not in space and k not in options}
    study.enqueue_trial(params, user_attrs={"published": extras, "published_from": source})
    return {**extras, **params}


def _pruner_and_sampler(base: dict, pruner, sampler, prune_startup, prune_warmup) -> tuple:
    """The pruner and sampler given, else the defaults :func:`run_sweep` describes."""
    import optuna
    for key, value in (("prune_startup", prune_startup), ("prune_warmup", prune_warmup)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise OptionError(f"{key} must be zero or a positive integer; got {value!r}")
    if pruner is None:
        pruner = make_pruner(0 if prune_warmup is not None else planned_steps(base), startup_trials=prune_startup,
                             warmup_steps=prune_warmup)
    if sampler is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(constant_liar=True)
    return pruner, sampler


def _check_limits(trials, total_trials, timeout) -> None:
    if isinstance(trials, bool) or not isinstance(trials, int) or trials <= 0:
        raise OptionError(f"trials must be a positive integer; got {trials!r}")
    if total_trials is not None and (isinstance(total_trials, bool) or not isinstance(total_trials, int)
                                     or total_trials <= 0):
        raise OptionError(f"total_trials must be a positive integer; got {total_trials!r}")
    if timeout is not None and not timeout > 0:
        raise OptionError(f"timeout must be a positive number of seconds; got {timeout!r}")


def _fixed_options(train_options: dict | None) -> tuple[dict, str | None]:
    """The training options every trial shares (those given, None ones dropped) and the preset named."""
    options = dict(train_options or {})
    preset = options.pop("preset", None)
    for key in ("task", "model", "out"):
        if options.get(key) is not None:
            raise OptionError(f"train_options must not set {key!r}; give it to run_sweep directly")
        options.pop(key, None)
    return {k: v for k, v in options.items() if v is not None}, preset


def check_searches(saved: dict, attrs: dict, name: str, url: str) -> None:
    """UserError if a study whose attributes are ``saved`` searches another task or model than ``attrs``."""
    if any(key in saved and saved[key] != attrs[key] for key in ("task", "model")):
        raise UserError(f"study {name!r} in {_shown(url)} searches {saved.get('task')}/{saved.get('model')}, "
                        f"not {attrs['task']}/{attrs['model']}; choose another --study")


def _claim_study(the_study, url: str, name: str, attrs: dict) -> None:
    """UserError if the study searches another task or model; else record what it searches, once."""
    saved = the_study.user_attrs
    check_searches(saved, attrs, name, url)
    for key, value in attrs.items():
        if key not in saved:
            the_study.set_user_attr(key, value)


def _create_study(url, name, direction, sampler, pruner):
    import optuna
    storage = open_storage(url)
    last = None
    for attempt in range(4):
        try:
            return optuna.create_study(study_name=name, storage=storage, direction=direction, sampler=sampler,
                                       pruner=pruner, load_if_exists=True)
        except Exception as exc:  # a concurrent creator may hold the lock briefly
            last = exc
            time.sleep(0.3 * (attempt + 1))
    raise UserError(f"cannot create or load study {name!r} in {_shown(url)}: {_first_line(last)}")


# --------------------------------------------------------------------------- reporting

def format_params(params: dict) -> str:
    return " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def _trial_value(trial, minimize: bool):
    """A COMPLETE trial's value; a PRUNED trial's best reported value (None if it reported none)."""
    if trial.state.name == "COMPLETE":
        return trial.value
    values = [v for v in trial.intermediate_values.values() if v is not None and math.isfinite(v)]
    if not values:
        return None
    return min(values) if minimize else max(values)


def _where(path: str | None) -> str:
    if not path:
        return "-"
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _existing_study(url: str, study: str | None, searches: dict | None):
    """The study named ``study`` in the storage at ``url`` (the only one there when None); a UserError when there
    is none, or ``searches`` names another task or model than the study searches."""
    import optuna
    store = open_storage(url, must_exist=True)
    names = _study_names(store)
    if study is None:
        if len(names) != 1:
            raise UserError(f"{_shown(url)} holds {len(names)} studies ({', '.join(names) or 'none'}); "
                            f"name one with --study")
        study = names[0]
    elif study not in names:
        raise UserError(f"{_shown(url)} has no study {study!r}; it holds {', '.join(names) or 'none'}")
    the_study = optuna.load_study(study_name=study, storage=store)
    if searches:
        check_searches(the_study.user_attrs, searches, study, url)
    return the_study


def summary(out=None, storage: str | None = None, study: str | None = None, top: int = 10, file=None,
            searches: dict | None = None) -> list:
    """Print the ``top`` best trials of a study and return them (FrozenTrials, best first).

    The study is found in ``storage``, or in ``sqlite:///OUT/study.db``; with
    no ``study`` name, the storage must hold exactly one study.  Completed
    trials rank first by value, then pruned ones by their best reported value.
    ``searches`` ({"task": …, "model": …}, what the command named): a UserError
    if the study searches another task or model.
    """
    import optuna
    if isinstance(top, bool) or not isinstance(top, int) or top <= 0:
        raise OptionError(f"top must be a positive integer; got {top!r}")
    if storage is None and out is None:
        raise OptionError("summary needs the sweep folder (out) or a storage URL")
    file = file or sys.stdout
    url = storage or default_storage(out)
    the_study = _existing_study(url, study, searches)
    study = the_study.study_name
    minimize = the_study.direction == optuna.study.StudyDirection.MINIMIZE
    trials = the_study.get_trials(deepcopy=False)
    counts = {}
    for t in trials:
        counts[t.state.name.lower()] = counts.get(t.state.name.lower(), 0) + 1
    ranked = []
    for rank_state in ("COMPLETE", "PRUNED"):
        group = [(t, _trial_value(t, minimize)) for t in trials if t.state.name == rank_state]
        scored = sorted([g for g in group if g[1] is not None], key=lambda g: g[1] if minimize else -g[1])
        ranked += scored + [g for g in group if g[1] is None]
    shown = ranked[:top]
    attrs = the_study.user_attrs
    metric = f"valid {attrs['monitor']}" if "monitor" in attrs else "value"
    what = f" ({attrs['task']}, {attrs['model']})" if "task" in attrs else ""
    tally = f" ({', '.join(f'{n} {s}' for s, n in counts.items())})" if counts else ""
    print(f"study {study!r}{what} in {_shown(url)}: {'minimize' if minimize else 'maximize'} {metric}; "
          f"{len(trials)} trial{'s' if len(trials) != 1 else ''}{tally}", file=file)
    if not shown:
        print("no completed or pruned trials yet", file=file)
        return []
    hosts = {t.user_attrs.get("host") for t, _ in shown}
    rows = [("rank", "trial", "state", metric, "params", "run")]
    for rank, (t, value) in enumerate(shown, 1):
        state = t.state.name
        if t.user_attrs.get("stopped") in ("diverged", "interrupted"):
            state += f" ({t.user_attrs['stopped']})"
        run = _where(t.user_attrs.get("run"))
        if len(hosts) > 1:
            run = f"{t.user_attrs.get('host', '?')}:{run}"
        rows.append((str(rank), str(t.number), state, "-" if value is None else f"{value:.6g}",
                     format_params(t.params), run))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1], file=file)
    return [t for t, _ in shown]
