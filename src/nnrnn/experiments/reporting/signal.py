"""A search that found nothing (issue 67): whether a search's best trial left its task's memoryless baseline.

Where no trial of a search did, its score (the area under the validation curve) ranks how fast a trial fell to the
plateau, not what it remembers: it rewards the largest learning rate, its pick is no tuned setting, and the label's
memory is not measurable at the grid's budget.  The reports say so (:mod:`.picks`, :mod:`.tuning`, the memory
grid's horizon) instead of naming a pick or a horizon of "none"."""
from __future__ import annotations

import json
from dataclasses import dataclass

from ...tasks import task_class
from ...training.network import build_task
from ...training.outcome import MARGIN, clearly_below
from .collect import ran_config
from ..judging.words import name
from ..planning.grid import Grid, search_name


def read_trials(grid: Grid) -> dict:
    """Every search's trials in order (``trials.json``), {} where the grid searched none."""
    return json.loads(grid.trials.read_text()) if grid.trials.is_file() else {}


def best_trial(trials: list[dict], lower: bool) -> dict | None:
    """The finished trial with the best value (the study's best trial), None when none finished."""
    done = [t for t in trials if t["state"] == "COMPLETE" and t["value"] is not None]
    return (min if lower else max)(done, key=lambda t: t["value"]) if done else None


@dataclass(frozen=True)
class Signal:
    """What a search's best trial shows against its task's baseline, the loss of a prediction with no memory of
    the inputs (copy's memoryless plateau): ``value``, the best trial's score (a grid's: the area under its
    validation loss curve per update, :func:`~nnrnn.experiments.planning.searching.curve_area`), and
    ``baseline``."""
    value: float
    baseline: float

    @property
    def share(self) -> float:
        """The best trial's score over the baseline (below 1: under the plateau)."""
        return self.value / self.baseline

    @property
    def learned(self) -> bool:
        """Whether any trial learned: the best is clearly below the baseline, by the margin by which the trainer
        judges a run to have learned (:func:`nnrnn.training.outcome.clearly_below`).  Where none did, the score
        ranks how fast a trial fell to the plateau, not what it remembers (issue 67): the search found no signal
        and its pick is no tuned setting."""
        return clearly_below(self.value, self.baseline)


def signals(grid: Grid) -> dict[tuple[str, str], Signal]:
    """{(setting, label): its search's :class:`Signal`} for every search that finished a trial on a task scored by
    a loss with a memoryless baseline generated with the task (copy, adding); searches on other tasks are not
    judged so."""
    trials, found = read_trials(grid), {}
    for setting in grid.settings:
        for label in dict.fromkeys(r.label for r in grid.planned if r.setting == setting):
            run = next(r for r in grid.planned if (r.setting, r.label) == (setting, label))
            cls = task_class(run.task)
            if cls.monitor != ("loss", "min") or cls.has_data_files:
                continue
            best = best_trial(trials.get(search_name(setting, label), []), True)
            baseline = build_task(ran_config(grid, run)).realised_baseline("valid") if best else None
            if best is not None and baseline:
                found[(setting, label)] = Signal(best["value"], baseline)
    return found


def no_signal(grid: Grid) -> set[str]:
    """The labels whose search found no signal (:attr:`Signal.learned` false): their memory is not measurable at
    the grid's budget, and the reports say so instead of a pick or a horizon of "none"."""
    return {label for (_, label), signal in signals(grid).items() if not signal.learned}


def signal_lines(grid: Grid) -> list[str]:
    """The report's table of every judged search's best trial against its baseline, and how many found a
    signal."""
    found = signals(grid)
    if not found:
        return []
    learned = sum(s.learned for s in found.values())
    return [f"Did each search find a signal? A search found one where its best trial's score is at least "
            f"{MARGIN:.0%} below the memoryless baseline (the margin by which a run is judged to have learned); "
            "where none is, the score ranks how fast a trial fell to the plateau, which favours the largest "
            f"learning rate, and the search's pick is no tuned setting. {learned} of {len(found)} searches found "
            "a signal.", "",
            "| setting | model | best trial's score / baseline | search |", "|---|---|---|---|",
            *[f"| {setting} | {name(label)} | {s.share:.3f} | "
              f"{'found a signal' if s.learned else 'no trial learned'} |" for (setting, label), s in found.items()],
            ""]
