"""A joint search (:class:`~.declaration.JointSearch`, the thesis-joint grid's): one Optuna study whose every trial
trains every label of one setting with the same drawn options, judged by the mean of their measures.

A trial draws one value per dimension of the search's space (its first trial: the declared ``first``, the
published settings) and trains each label with those of the drawn options its model has (:func:`applies`), over
its run as the search starts it (:func:`.grid.joint_arms`: the tuned column at the search's seed and share).  With
m = ``measure`` and L the labels, the trial's value, which the search minimizes, is

    value = (1 / |L|) Σ_{l ∈ L} m(run of l),

every label weighing alike.  The runs are ordinary run folders in ``searches/joint/runs``, named by their
configuration as a grid's are (:func:`.grid.run_name`), and trained by the executor the caller gives (the grid's
own, :mod:`..reproduce`: at once on its slots, each resumed from its checkpoint).  A trial stopped by a signal is
marked FAIL and queued again with its options when the search goes on, so it finds the runs it had finished:
nothing finished is trained again.  A label whose run diverged prunes the trial, which so ranks below every
finished one, as a diverged trial of a grid's other searches does.  The study is kept beside the runs
(:func:`.storage.search_storage`), named :data:`STUDY`."""
from __future__ import annotations

import math
import zlib
from dataclasses import replace
from pathlib import Path
from statistics import fmean

from ...errors import Interrupted, UserError
from .declaration import LOG, JointSearch
from .grid import PlannedRun, diverged, finished, metrics, resolve_once, run_name
from .objective import planned_steps, stopped_by
from .searching import search_space, suggest
from .storage import holds_study, open_storage, search_storage
from .sweep import _claim_study, _create_study, _optimize

STUDY = "joint"  # the study's name in its storage
FIRST = "JointSearch.first"  # where the first trial's options come from, as its trial records say


def applies(model: str, option: str, optimizer: str) -> bool:
    """Whether a drawn ``option`` acts on a label of ``model`` trained with ``optimizer``: it is a dimension of the
    model's own search in the supplement's space (:func:`.searching.search_space`: the learning rate always,
    lr_orth for a model with an orthogonal factor, RMSprop's α under RMSprop, δ and the L2 decay on T for a model
    with the Schur form)."""
    return option in search_space(model, optimizer=optimizer)


def arm_options(arm: PlannedRun, params: dict) -> dict:
    """The drawn ``params`` that act on ``arm`` (:func:`applies`), less any its variant sets itself (the options
    that make the label are not the search's)."""
    optimizer = arm.resolved()["optimizer"]
    return {k: v for k, v in params.items() if applies(arm.model, k, optimizer) and k not in arm.extra}


def arm_pick(arm: PlannedRun, params: dict) -> dict:
    """``arm``'s entry of the picks in a preset's layout (:func:`nnrnn.experiments.reproduce.tune`'s): the options
    that make its variant, then the drawn ones that act on it."""
    return {**arm.extra, **arm_options(arm, params)}


def trial_runs(arms: dict[str, PlannedRun], params: dict, resolved: dict) -> dict[str, PlannedRun]:
    """Every arm at the drawn ``params`` (:func:`arm_options`), its folder's name that of the options it trains
    with."""
    found = {}
    for label, arm in arms.items():
        options = {**arm.options, **arm_options(arm, params)}
        config = resolve_once(options, arm.preset, resolved)
        found[label] = replace(arm, options=options, name=run_name(config), config=config)
    return found


def distributions(search: JointSearch) -> dict:
    """The search's space as Optuna distributions, by option name."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution
    return {name: FloatDistribution(d[1], d[2], log=True) if d[0] == LOG else CategoricalDistribution(d[1])
            for name, d in search.space.items()}


class JointObjective:
    """One trial (what Optuna calls): every arm of ``arms`` at the drawn options, the unfinished ones trained by
    ``train({folder: planned run})``, in ``folder``/runs; ``log`` hears of each trial's end."""

    def __init__(self, search: JointSearch, arms: dict[str, PlannedRun], folder: Path, train, log=print):
        self.search, self.arms, self.folder, self.train, self.log = search, arms, Path(folder), train, log
        self.space = distributions(search)
        self.resolved: dict = {}
        self.interrupted: Interrupted | UserError | None = None

    def __call__(self, trial) -> float:
        import optuna
        params = suggest(trial, self.space)
        trial.set_user_attr("options", params)
        runs = trial_runs(self.arms, params, self.resolved)
        trial.set_user_attr("runs", {label: run.name for label, run in runs.items()})
        folders = {label: self.folder / "runs" / run.name for label, run in runs.items()}
        try:
            self.train({folders[label]: run for label, run in runs.items() if not finished(folders[label])})
            left = [label for label, f in folders.items() if not finished(f)]
            if left:  # another process holds it (grids sharing a runs folder): the trial waits for a later sitting
                raise UserError(f"the joint search's run of {', '.join(left)} is being trained by another process; "
                                "run the same command again later")
        except (Interrupted, UserError) as exc:  # a signal, or what ends any run: the search ends too
            self.interrupted = exc
            return stopped_by(trial, exc)
        failed = [label for label, f in folders.items() if diverged(f)]
        measures = {} if failed else {label: self.search.measure(runs[label].resolved(), metrics(folders[label]))
                                      for label in runs}
        if failed or not all(math.isfinite(m) for m in measures.values()):
            reason = f"{', '.join(failed)} diverged" if failed else "an arm's measure is not finite"
            trial.set_user_attr("stopped", "diverged" if failed else "no measure")
            trial.set_user_attr("reason", reason)
            self.log(f"joint search: trial {trial.number} pruned ({reason})")
            raise optuna.TrialPruned(reason)
        trial.set_user_attr("arms", measures)
        value = fmean(measures.values())
        self.log(f"joint search: trial {trial.number} value {value:.4g}")
        return value


def ended(folder: Path) -> int:
    """Trials of the joint search in ``folder`` that finished or were pruned (not those a signal stopped); 0 while
    its study does not exist."""
    study = load(folder)
    if study is None:
        return 0
    import optuna
    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    return sum(t.state in states for t in study.trials)


def load(folder: Path):
    """The joint search's study in ``folder``; None while there is none."""
    import optuna
    if not holds_study(folder):
        return None
    try:
        return optuna.load_study(study_name=STUDY, storage=open_storage(search_storage(folder)))
    except KeyError:  # the storage exists, the study was never created in it
        return None


def queue(study, search: JointSearch) -> None:
    """Queue the trial that must come next: on a new study the search's ``first`` (the published settings); after a
    trial a signal stopped, that trial's options again (with its origin), so that it finds the runs it finished."""
    import optuna
    trials = study.trials
    if any(t.state == optuna.trial.TrialState.WAITING for t in trials):
        return  # queued by a sitting that stopped before it ran
    if not trials:
        study.enqueue_trial(dict(search.first), user_attrs={"published_from": FIRST})
    elif trials[-1].state == optuna.trial.TrialState.FAIL and set(trials[-1].params) == set(search.space):
        kept = {k: v for k, v in trials[-1].user_attrs.items() if k == "published_from"}
        study.enqueue_trial(dict(trials[-1].params), user_attrs=kept)


def run_joint(folder: Path, search: JointSearch, arms: dict[str, PlannedRun], train, log=print):
    """Run the trials the joint search in ``folder`` still lacks of ``search.trials`` (a trial counts once finished
    or pruned); its arms are :func:`.grid.joint_arms`, its runs trained by ``train``.  The sampler's seed comes from
    the folder's name, so an uninterrupted search draws the same trials every time.  Returns the study; re-raises
    the signal (or the error) that stopped a trial, once the study has stopped."""
    import optuna
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # a line per trial is the objective's, in the grid's log
    try:
        study, objective = _run(Path(folder), search, arms, train, log)
    finally:
        optuna.logging.set_verbosity(verbosity)  # the caller's logging is its own
    if objective is not None and objective.interrupted is not None:
        raise objective.interrupted
    return study


def _run(folder: Path, search: JointSearch, arms: dict[str, PlannedRun], train, log) -> tuple:
    """(the study, the objective that ran its trials, None where none lacked): :func:`run_joint`'s work."""
    import optuna
    folder.mkdir(parents=True, exist_ok=True)
    url = search_storage(folder)
    sampler = optuna.samplers.TPESampler(seed=zlib.crc32(folder.name.encode()), n_startup_trials=search.startup)
    study = _create_study(url, STUDY, "minimize", sampler, optuna.pruners.NopPruner())
    first = next(iter(arms.values())).resolved()
    _claim_study(study, url, STUDY, {"task": first["task"], "model": STUDY, "budget": planned_steps(first)})
    lacking = search.trials - ended(folder)
    if lacking <= 0:
        return study, None
    queue(study, search)
    objective = JointObjective(search, arms, folder, train, log)
    _optimize(study, objective, url, n_trials=lacking)
    return study, objective


def pick(study) -> dict | None:
    """The drawn options of the study's best finished trial; None when none finished."""
    import optuna
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    return dict(study.best_trial.params) if done else None
