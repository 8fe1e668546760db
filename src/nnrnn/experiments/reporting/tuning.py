"""How every model of a tuned grid was tuned: the search's budget and space, where it starts from and each pick
(shared by every tuned grid's report)."""
from __future__ import annotations

import json

from ... import presets
from ...models import model_class
from .collect import ran_config
from .signal import signals
from ..planning.grid import TUNED, Grid, search_name
from ..planning.searching import EQUAL_LR_RANGE, LR_ORTH_RATIO, OWN_OPTIONS, SEARCHED
from ..judging.words import name




def tuning_section(grid: Grid, starts: str) -> list[str]:
    """How every model of the grid was tuned: the search's budget and space, where it starts from (``starts``, in
    words) and each pick."""
    spec = grid.tune
    picks = json.loads(grid.tuned.read_text()) if grid.tuned.is_file() else {}
    startup = spec.startup
    sampler = (f"Optuna's TPE sampler, which draws its first {startup} trials at random and models the rest on "
               "them" if startup < spec.trials else
               f"Optuna's TPE sampler, which draws its first {startup} trials at random, so all of these")
    lines = ["## How every model was tuned", "",
             f"Every model and variant got the same search on every task: {spec.trials} "
             f"trial{'s' if spec.trials != 1 else ''} of `nnrnn sweep` "
             f"({sampler}; its median pruner), each a run of seed {spec.seed} at the model's "
             f"size and {spec.share:.0%} of the run's updates (or epochs), "
             + (_equal_space_words(grid) if searched_alike(grid) else _supplement_space_words(grid))
             + " " + starts, "",
             *(["Seed 0, on which every search trained, is also one of the seeds the tables report: each tuned "
                "pick was chosen on a seed its row then averages in, which favours every model's pick a little and "
                "alike.", ""] if spec.seed in grid.spec.seeds else
               [f"No table reports seed {spec.seed}, on which every search trained: no pick was chosen on a run "
                "its row averages in.", ""]),
             "| table | model | tuned options |", "|---|---|---|"]
    quiet = {(_table_key(grid, setting), label) for (setting, label), signal in signals(grid).items()
             if not signal.learned}
    for setting, chosen in picks.items():
        for label, options in chosen.items():
            ran = ran_options(grid, setting, label, options)
            lines.append(f"| {setting} | {name(label)} | "
                         + (f"none: no trial learned (its runs trained with the best trial's {ran})"
                            if (setting, label) in quiet else ran) + " |")
    searched = sorted(p.name for p in grid.searches.iterdir()) if grid.searches.is_dir() else []
    picked = {search_name(setting, label) for key, chosen in picks.items() for label in chosen
              for setting in (key, key.split("-")[0], *dict.fromkeys(r.setting for r in grid.planned))}
    # (the task, table key or rung; the rungs those the runs trained at, not the declaration's now)
    unpicked = [folder for folder in searched if folder not in picked]
    if unpicked:
        lines += ["", "No trial of these searches finished (every one diverged or was stopped), so they have no tuned "
                  "column: " + ", ".join(f"`{m}`" for m in unpicked) + "."]
    return lines + [""]


def _table_key(grid: Grid, setting: str) -> str:
    """The picks' table key of a setting (its task, with PTB's length)."""
    run = next(r for r in grid.planned if r.setting == setting)
    return presets.table_key(run.task, run.options.get("bptt"))


def ran_options(grid: Grid, key: str, label: str, pick: dict) -> str:
    """The tuned options of ``label``'s runs for the table ``key`` as they trained with them, in words: the options
    its pick sets, its optimizer and, for a model with an orthogonal factor, lr_orth, each read from the runs'
    resolved configurations (:func:`~.collect.ran_config`; issue 67: a fixed option won over what a search
    derived, and the table printed the pick); a value that differs between settings is given per setting, and a
    label with no tuned run yet shows its pick."""
    runs = [r for r in grid.planned if r.column == TUNED and r.label == label
            and presets.table_key(r.task, r.options.get("bptt")) == key]
    if not runs:
        return _words(sorted(pick.items()))
    shown = {*pick, "optimizer", *(["lr_orth"] if model_class(runs[0].model).ORTHOGONAL_FACTOR else [])}
    configs = {}
    for r in runs:  # a setting's seeds share their options
        configs.setdefault(r.setting, ran_config(grid, r))
    words = []
    for option in sorted(shown):
        values = {setting: config.get(option, pick.get(option)) for setting, config in configs.items()}
        if len(set(map(repr, values.values()))) == 1:
            words.append(_words([(option, next(iter(values.values())))]))
        else:
            words.append(f"{option}=" + ", ".join(f"{_value(v)} on {s}" for s, v in values.items()))
    return ", ".join(words)


def _value(value) -> str:
    return short(value) if isinstance(value, float) else str(value)


def _words(options) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in options)


def searched_alike(grid: Grid) -> bool:
    """Whether the grid's searches recorded their ranges (``trials.json``), as searches on equal terms do
    (:data:`~nnrnn.experiments.planning.searching.EQUAL`); the committed grids that predate them searched the
    supplement's space."""
    if not grid.trials.is_file():
        return False
    return any("ranges" in t for trials in json.loads(grid.trials.read_text()).values() for t in trials)


def _equal_space_words(grid: Grid) -> str:
    """The search space of searches on equal terms, in words."""
    lo, hi = EQUAL_LR_RANGE
    own = [f"{name(m)}: {', '.join(model_class(m).TUNED_OPTIONS)}" for m in dict.fromkeys(r.model for r in grid.planned)
           if model_class(m).TUNED_OPTIONS]
    return (f"over the same dimensions for every model: its learning rate, log-uniform in [{lo:g}, {hi:g}] for every "
            f"model and optimizer (the orthogonal factor's rate tied at {LR_ORTH_RATIO:g} × it), and at most "
            f"{OWN_OPTIONS} of its own options" + (f" ({'; '.join(own)})" if own else "") + ", each label with the "
            "optimizer its runs' configurations name (\"Where the picks fell\", beside its paper's) and its "
            "published settings queued as the first trial, a trial judged by the "
            "area under its validation curve over its length (`src/nnrnn/experiments/planning/searching.py`, each "
            "model's `TUNED_OPTIONS`; "
            "\"Where the picks fell\" below). The best trial's options are the tuned column's; they are in "
            "`tuned.json` beside this report.")


def _supplement_space_words(grid: Grid) -> str:
    """The search space of the searches before equal terms (the paper's supplement's and each model's own), in
    words."""
    own = [f"{name(m)}: {', '.join(model_class(m).SEARCHED)}" for m in dict.fromkeys(r.model for r in grid.planned)
           if model_class(m).SEARCHED]
    return (f"over the options the paper's supplement searched that act on the model ({', '.join(SEARCHED)}"
            + (f"; and each model's own: {'; '.join(own)}" if own else "")
            + "; `src/nnrnn/experiments/planning/searching.py` and each model's `SEARCHED`). The best trial's options "
            "(by the validation metric) are the tuned column's; they are in `tuned.json` beside this report.")


def short(value: float) -> str:
    """Three significant digits, or as many as it takes not to show a value near 0 or 1 as 0 or 1 (an LRU ring's
    r_max of 0.9999)."""
    shown = f"{value:.3g}"
    return f"{value:.6g}" if float(shown) in (0.0, 1.0) and float(shown) != value else shown
