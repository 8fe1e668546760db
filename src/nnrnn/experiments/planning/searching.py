"""What an Optuna search over training options draws and how it judges a trial: the space of the paper's
supplement (``nnrnn sweep``) and a grid's equal terms, every model alike (:data:`SUPPLEMENT`, :data:`EQUAL`).

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

(:mod:`.sweep` runs the search.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ... import presets
from ...models import model_class
from ...tasks import task_class


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
# where a model's published settings are looked for (the search's own preset first); where its papers report none
# for the task itself, the tasks nearest to it are its class's (Task.nearest_tasks)
PUBLISHED_PRESETS = ("long-memory", "paper-params", "paper")

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
    orthogonal factor; an option in ``fixed`` (given by the user) is left as given.  The optimizer is not the
    search's to set: a grid's plan gives each run its paper's where the grid asks so
    (:func:`nnrnn.experiments.planning.grid.paper_optimizer`), so that no fixed option of the task's procedure
    silently wins over it (issue 67)."""
    if model_class(model).ORTHOGONAL_FACTOR and "lr" in params and "lr_orth" not in set(fixed):
        return {"lr_orth": params["lr"] * LR_ORTH_RATIO}
    return {}


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


def published(task: str, model: str, bptt: int | None = None, preset: str | None = None,
              space: dict | None = None) -> tuple[dict, str] | None:
    """(options, where from) of ``model``'s published settings for ``task``, or for the nearest task its papers
    report (the task class's :attr:`~nnrnn.tasks.base.Task.nearest_tasks`), as the presets hold them (``preset``
    first, then :data:`PUBLISHED_PRESETS`): its values of the dimensions of ``space`` (default: the model's
    :func:`equal_space`), from the first entry whose every such value lies in its range (:func:`inside`); None when
    no preset gives the model a learning rate inside the range for any of those tasks.

    One space per search (issue 67): the first trial is a point of the space the others are drawn from.  It takes
    only the searched values, so every option a search does not search is the same in all its trials (coRNN's γ
    among them, which the adding entry set to 66 in the first trial alone), lr_orth is tied to lr in it as in every
    other (:func:`tie_rates`; the nnRNN's published 1e-6 is not), and an entry with a value outside its range
    (coRNN's adding ε = 15 against [0.5, 9.9]) gives way to the next nearest task's."""
    space = equal_space(model) if space is None else space
    names = tuple(dict.fromkeys(p for p in (preset, *PUBLISHED_PRESETS) if p))
    for near in (task, *task_class(task).nearest_tasks):
        for name in names:  # a table's key names the length only where the presets key a task by it (PTB's T_PTB)
            entry = presets.load(name).get(presets.table_key(near, bptt), {}).get(model)
            if not entry or "lr" not in entry:
                continue
            values = {k: v for k, v in entry.items() if k in space}
            if "lr" in space and "lr" not in values:
                continue
            if all(inside(v, space[k]) for k, v in values.items()):
                return values, f"{name}: {presets.table_key(near, bptt)}"
    return None


def inside(value, distribution) -> bool:
    """Whether ``value`` is a point of the Optuna ``distribution`` (one of its choices, or within its range)."""
    if hasattr(distribution, "choices"):
        return value in distribution.choices
    return distribution.low <= value <= distribution.high


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
