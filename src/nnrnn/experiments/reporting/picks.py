"""Where each search's pick fell in its range, the optimizer each model trained with, and each search's queued
published settings: the report section that shows a tuned grid searched every model on equal terms
(:data:`nnrnn.experiments.planning.searching.EQUAL`).

A pick's position in a range [lo, hi] searched log-uniformly is (log p − log lo) / (log hi − log lo): 0 at the floor,
1 at the ceiling.  A pick within :data:`EDGE` of either end is named: the search may have wanted to go beyond, and
the range, not the model, may have decided the result.  A choice among a set (e.g. δ) has no scale; its place is
given as "k of n" and not named, since two of three values of a three-value set are ends."""
from __future__ import annotations

import math
from ...tasks import task_class
from .collect import ran_config
from .signal import best_trial, read_trials, signal_lines, signals
from .tuning import short
from ..planning.grid import Grid, PlannedRun, search_name
from ...models import model_class
from ..planning.searching import search_space, span
from ..judging.words import name

EDGE = 0.05  # a pick within this fraction of the log range of an end is named
# a grid searched before trials recorded their ranges searched the supplement's space (searching.search_space) with
# coRNN's ranges as they were then, before Δt ε < 1 cut them (issue 59)
SUPPLEMENT_BEFORE = {"cornn": {"dt": {"log": [0.01, 0.5]}, "gamma": {"log": [0.1, 100.0]},
                               "epsilon": {"log": [0.5, 50.0]}}}


def position(value: float, low: float, high: float) -> float:
    """``value``'s place in the log-uniform range [low, high] as a fraction (0: low, 1: high; outside [0, 1] when
    the value lies outside, as a queued published setting may)."""
    return (math.log(value) - math.log(low)) / (math.log(high) - math.log(low))


def at_edge(fraction: float) -> bool:
    """Whether a position lies within :data:`EDGE` of either end of its range (or beyond it)."""
    return fraction <= EDGE or fraction >= 1 - EDGE


def supplement_ranges(grid: Grid, planned: PlannedRun) -> dict:
    """{option: its span (:func:`nnrnn.experiments.planning.searching.span`)} of the supplement's search of
    ``planned``'s model
    and optimizer, as a grid searched it before trials recorded their ranges (:data:`SUPPLEMENT_BEFORE`)."""
    optimizer = ran_config(grid, planned)["optimizer"]
    ranges = {k: span(d) for k, d in search_space(planned.model, optimizer=optimizer).items()}
    return {**ranges, **SUPPLEMENT_BEFORE.get(planned.model, {})}


def pick_rows(grid: Grid) -> list[dict]:
    """One row per searched option of every search that finished a trial: setting, label, option, range (its
    span, :func:`nnrnn.experiments.planning.searching.span`), pick, and position (:func:`place`)."""
    trials, rows = read_trials(grid), []
    for setting in grid.settings:
        members = [r for r in grid.planned if r.setting == setting]
        lower = task_class(members[0].task).monitor[1] == "min"
        for label in dict.fromkeys(r.label for r in members):
            found = trials.get(search_name(setting, label), [])
            best = best_trial(found, lower)
            if best is None:
                continue
            ranges = best.get("ranges") or supplement_ranges(grid, next(r for r in members if r.label == label))
            for option, searched in ranges.items():
                if option not in best["params"]:
                    continue
                rows.append({"setting": setting, "label": label, "option": option, "range": searched,
                             "pick": best["params"][option], "position": place(best["params"][option], searched)})
    return rows


def place(value, span: dict):
    """Where ``value`` lies in ``span``: a fraction on the log scale for a log range, "k of n" for a set."""
    if "log" in span:
        return position(value, *span["log"])
    if "uniform" in span:
        low, high = span["uniform"]
        return (value - low) / (high - low)
    choices = span["choices"]
    return f"{choices.index(value) + 1} of {len(choices)}" if value in choices else "outside the set"


def _shown(value) -> str:
    """A pick (:func:`~.tuning.short`: no 0.9999 shown as "1")."""
    return short(value) if isinstance(value, float) else str(value)


def _searched(value) -> str:
    """A bound or choice of a searched range as it was searched: every digit it has (12 significant at most)."""
    return f"{value:.12g}" if isinstance(value, float) else str(value)


def _place(where) -> str:
    return f"{where:.2f}" if isinstance(where, float) else where


def _range_words(span: dict) -> str:
    """A searched range as it was searched (no bound or choice rounded: the LRU's r_max choices 0.999 and 0.9999
    read as "0.999, 1" before)."""
    if "choices" in span:
        return "{" + ", ".join(map(_searched, span["choices"])) + "}"
    kind, (low, high) = next(iter(span.items()))
    return f"{_searched(low)} to {_searched(high)} ({kind})"


def edge_picks(rows: list[dict]) -> list[dict]:
    """The rows whose pick lies within :data:`EDGE` of an end of a log range (or outside it)."""
    return [r for r in rows if isinstance(r["position"], float) and at_edge(r["position"])]


def optimizer_rows(grid: Grid) -> list[tuple[str, str]]:
    """(label, the optimizer its runs trained with) for every label the grid trains: read from each run's resolved
    configuration (:func:`~.collect.ran_config`), not from the paper's intent, and beside it the paper's optimizer
    (its class's ``PAPER_OPTIMIZER``) where that differs (issue 67: the committed grids' task procedure fixed one,
    which won over the optimizer the search derived from the paper)."""
    rows = []
    for label in dict.fromkeys(r.label for r in grid.planned):
        runs = [r for r in grid.planned if r.label == label]
        by_setting = {}
        for r in runs:
            by_setting.setdefault(r.setting, ran_config(grid, r)["optimizer"])
        ran = sorted(set(by_setting.values()))
        paper = model_class(runs[0].model).PAPER_OPTIMIZER
        words = ran[0] if len(ran) == 1 else ", ".join(f"{o} on {s}" for s, o in by_setting.items())
        if paper is None:
            words += " (its paper names none we follow)"
        elif ran != [paper]:
            words += f" (its paper's is {paper}; the option the grid fixed won)"
        else:
            words += " (its paper's)"
        rows.append((label, words))
    return rows


def picks_section(grid: Grid) -> list[str]:
    """The report's section: each model's optimizer, each search's queued published settings, and where every
    pick fell in its range, the picks at an edge named."""
    trials = read_trials(grid)
    if not trials:
        return []
    if not any("ranges" in t for found in trials.values() for t in found):
        return ["## Where the picks fell", "",
                "This grid searched before the searches were put on equal terms (issue 59): each model over the "
                "supplement's space as it applies to it (`nnrnn.experiments.planning.searching.search_space`, with the "
                "Adam range for coRNN and LEM where their preset trains with Adam, and coRNN's ranges then: Δt "
                "0.01 to 0.5, γ 0.1 to 100, ε 0.5 to 50), judged by each trial's best validation value, no published "
                "settings queued. Position: the pick's place in its range on the log scale (0 the floor, 1 the "
                "ceiling); a "
                f"pick within {EDGE:.0%} of an end is named below the table.", "", *_pick_table(grid)]
    lines = ["## Where the picks fell", "",
             "Every model searched its learning rate over one range and at most the same number of its own options "
             "(`nnrnn.experiments.planning.searching.equal_space`); its published settings, where a preset holds them, "
             "were its search's first trial. Each label's runs trained with the optimizer below, as their resolved "
             "configurations say.", "",
             "| label | optimizer it trained with |", "|---|---|",
             *[f"| {name(m)} | {words} |" for m, words in optimizer_rows(grid)], "",
             "| setting | model | first trial |", "|---|---|---|",
             *first_trial_rows(grid, trials)]
    if any("options" not in found[0] for found in trials.values() if found):
        lines += ["", "A first trial above gives its searched values only: these searches ran before one space per "
                  "search (issue 67), when a published first trial also took the published values of options it "
                  "did not search (the model's own settings, lr_orth, clipping), which the trial records did not "
                  "keep."]
    lines += ["", *signal_lines(grid)]
    lines += [f"Position: the pick's place in its range on the log scale (0 the floor, 1 the ceiling); a pick "
                  f"within {EDGE:.0%} of an end is named below the table.", ""]
    return lines + _pick_table(grid)


def first_trial_rows(grid: Grid, trials: dict) -> list[str]:
    """One row per search that ran (a rung or setting where none ran is not listed): where its first trial came
    from and every value it set, as its record holds them (the drawn and derived options; a record made before
    they were kept holds the drawn ones)."""
    rows = []
    for setting in grid.settings:
        for label in dict.fromkeys(r.label for r in grid.planned if r.setting == setting):
            found = trials.get(search_name(setting, label))
            if not found:
                continue
            first = found[0]
            values = ", ".join(f"{k}={_shown(v)}" for k, v in sorted((first.get("options") or first["params"]).items()))
            source = first.get("published")
            rows.append(f"| {setting} | {name(label)} | "
                        + (f"published settings ({source})" if source else "drawn (none published)")
                        + (f": {values}" if values else "") + " |")
    return rows


def _pick_table(grid: Grid) -> list[str]:
    """The table of every pick's place in its range, and the picks at an edge named."""
    quiet = {key for key, signal in signals(grid).items() if not signal.learned}
    rows = pick_rows(grid)
    lines = ["| setting | model | option | range | pick | position |", "|---|---|---|---|---|---|",
             *[f"| {r['setting']} | {name(r['label'])} | {r['option']} | {_range_words(r['range'])} | "
               + (f"none (no trial learned; its best trial had {_shown(r['pick'])}) | |"
                  if (r['setting'], r['label']) in quiet else f"{_shown(r['pick'])} | {_place(r['position'])} |")
               for r in rows], ""]
    edges = [r for r in edge_picks(rows) if (r["setting"], r["label"]) not in quiet]
    lines.append("Picks at an edge of their range: " + ("; ".join(
        f"{name(r['label'])}'s {r['option']} on {r['setting']} ({_shown(r['pick'])}, at {r['position']:.2f})"
        for r in edges) + "." if edges else "none."))
    return lines + [""]
