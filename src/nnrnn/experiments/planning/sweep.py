"""Hyperparameter search with Optuna: a study's life, from its storage and its first (published) trial to its
last trial (:func:`run_sweep`).  What is searched is in :mod:`.searching`, a trial in :mod:`.objective`, where
the study is kept in :mod:`.storage`, its table of best trials in :mod:`.summary`.

Every process that calls :func:`run_sweep` with the same storage and study
name joins the same study: Optuna hands out distinct trial numbers, so any
number of processes, on one machine or many, can search together.  See
docs/sweep.md.
"""
from __future__ import annotations

import time
import warnings
from pathlib import Path

from ...errors import OptionError, UserError
from ...models import model_class
from ...tasks import task_class
from ...training.config import resolve_config
from ...training.network import build_task
from ...training.pace import Countdown
from ...training.runlock import make_folder
from .objective import _Objective, planned_steps
from .searching import SUPPLEMENT, Searching, published
from .storage import _first_line, _shown, check_searches, default_storage, open_storage


PRUNE_STARTUP_TRIALS = 5     # MedianPruner: prune nothing until this many trials have finished
PRUNE_WARMUP_FRACTION = 0.25  # ... nor before this fraction of a trial's updates


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


class _TrialReport:
    """The line a trial ends with (an Optuna callback): its outcome, then how many of this process's ``trials`` are
    done and the time left at the pace so far (:class:`~nnrnn.training.pace.Countdown`), on a terminal and off it."""

    def __init__(self, trials: int):
        self.countdown = Countdown(trials)

    def __call__(self, study, trial) -> None:
        state = trial.state.name
        if state == "COMPLETE":
            said = (f"trial {trial.number} complete: best valid {study.user_attrs.get('monitor', 'value')} "
                    f"{trial.value:.6g} at update {trial.user_attrs.get('best_step')}")
        else:
            reason = trial.user_attrs.get("reason", "")
            said = f"trial {trial.number} {({'FAIL': 'failed'}.get(state, state.lower()))}"
            said += f": {reason}" if reason else ""
        done = self.countdown.done()
        print(f"[sweep] {said} | {done[1:-1]} done here{self.countdown.left()}", flush=True)


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
    _claim_study(the_study, url, name, {"task": task, "model": model, "monitor": monitor, "mode": mode,
                                        "budget": planned_steps(base)})

    if searching.first and not the_study.trials:
        queue_published(the_study, task, model, options, preset, space)
    objective = _Objective(task, model, out, options, preset, space, monitor, mode, searching)
    callbacks = [_TrialReport(trials)]
    if total_trials is not None:
        callbacks.append(optuna.study.MaxTrialsCallback(total_trials, states=None))
        if len(the_study.trials) >= total_trials:
            print(f"[sweep] study {name!r} already holds {len(the_study.trials)} trials; nothing to do", flush=True)
            return the_study
    print(f"[sweep] study {name!r} in {_shown(url)}: {len(the_study.trials)} trials so far; running {trials} "
          f"more here, searching {', '.join(space) or 'nothing'}", flush=True)
    _optimize(the_study, objective, url, n_trials=trials, timeout=timeout, callbacks=callbacks)
    if objective.interrupted is not None:
        raise objective.interrupted
    return the_study


def _optimize(the_study, objective, url: str, **options) -> None:
    """``the_study.optimize(objective, **options)``, Optuna's verbosity put back after it; a storage Optuna cannot
    write (a full disk: its StorageInternalError) is one line."""
    import optuna
    verbosity = optuna.logging.get_verbosity()
    try:
        the_study.optimize(objective, gc_after_trial=True, **options)
    except optuna.exceptions.StorageInternalError as error:
        raise UserError(f"cannot write the study's storage {_shown(url)} ({_first_line(error)}); free some space, "
                        f"then run the same sweep again (the trials it holds are kept)") from None
    finally:
        optuna.logging.set_verbosity(verbosity)


def queue_published(study, task: str, model: str, options: dict, preset: str | None, space: dict) -> dict | None:
    """Queue ``model``'s published settings (:func:`published`: its values of the searched options, each inside
    its range) as ``study``'s next trial; every other option is the search's, as in its other trials.  Returns what
    was queued (None: nothing published)."""
    found = published(task, model, options.get("bptt"), preset, space)
    if found is None:
        return None
    params, source = found
    study.enqueue_trial(params, user_attrs={"published_from": source})
    return params


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


def _claim_study(the_study, url: str, name: str, attrs: dict) -> None:
    """UserError if the study searches another task or model; else record what it searches, once."""
    saved = the_study.user_attrs
    check_searches(saved, attrs, name, url)
    if "budget" in saved and saved["budget"] != attrs["budget"]:  # a trial's value depends on its length
        raise UserError(f"study {name!r} in {_shown(url)} holds trials of {saved['budget']} updates each, not "
                        f"{attrs['budget']}: trials of different budgets are not ranked together; give --steps "
                        f"{saved['budget']} to continue it, or another --study or --out")
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
