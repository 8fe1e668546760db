"""The beyond report's own sections (``nnrnn reproduce --scale beyond``, :mod:`.grids.beyond`): the non-normal family
against the paper's models, each tuned alike: how every model was tuned, the comparisons the family was built for,
the project's own goal and what each model learned."""
from __future__ import annotations

import json

from ..models import model_class
from .collect import copy_speed, early_stat, group, learned_structure, results, setting_task_of
from .grid import TPE_STARTUP, Grid, metric, search_name
from .rules import judged_by, rule
from .sections import copy_baseline, rescored_intro, scoring_at_start
from .sentences import compare
from .statistics import missing
from .sweep import EQUAL_LR_RANGE, LR_ORTH_RATIO, OWN_OPTIONS, SEARCHED
from .words import column_words, name, title

NON_NORMAL = ("nnrnn", "nnrnn delay", "nnrnn-complex", "nngru")


BEYOND_STARTS = ("The options a search does not search are taken from `paper-params` where the paper gives the model "
                 "hyperparameters. The paper gives no hyperparameters for GRU, nnGRU and the complex nnRNN, so they "
                 "appear in the tuned column only, trained by the task's procedure in the paper's presets (batch "
                 "size, read-out initialisation, PTB's embedding and plateau schedule).")


def tuning_section(grid: Grid, starts: str = BEYOND_STARTS) -> list[str]:
    """How every model of the grid was tuned: the search's budget and space, where it starts from (``starts``, in
    words) and each pick."""
    spec = grid.tune
    picks = json.loads(grid.tuned.read_text()) if grid.tuned.is_file() else {}
    startup = spec.get("startup", TPE_STARTUP)
    sampler = (f"Optuna's TPE sampler, which draws its first {startup} trials at random and models the rest on "
               "them" if startup < spec["trials"] else
               f"Optuna's TPE sampler, which draws its first {startup} trials at random, so all of these")
    lines = ["## How every model was tuned", "",
             f"Every model and variant got the same search on every task: {spec['trials']} "
             f"trial{'s' if spec['trials'] != 1 else ''} of `nnrnn sweep` "
             f"({sampler}; its median pruner), each a run of seed {spec.get('seed', 0)} at the model's "
             f"size and {spec['share']:.0%} of the run's updates (or epochs), "
             + (_equal_space_words(grid) if searched_alike(grid) else _supplement_space_words(grid))
             + " " + starts, "",
             *(["Seed 0, on which every search trained, is also one of the seeds the tables report: each tuned "
                "pick was chosen on a seed its row then averages in, which favours every model's pick a little and "
                "alike.", ""] if spec.get("seed", 0) in grid.spec["seeds"] else
               [f"No table reports seed {spec['seed']}, on which every search trained: no pick was chosen on a run "
                "its row averages in.", ""]),
             "| table | model | tuned options |", "|---|---|---|"]
    for setting, chosen in picks.items():
        for label, options in chosen.items():
            shown = ", ".join(f"{k}={_short(v)}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in sorted(options.items()))
            lines.append(f"| {setting} | {name(label)} | {shown} |")
    searched = sorted(p.name for p in grid.searches.iterdir()) if grid.searches.is_dir() else []
    picked = {search_name(setting, label) for key, chosen in picks.items() for label in chosen
              for setting in (key, key.split("-")[0], *spec.get("settings", ()))}  # the task, table key or rung
    unpicked = [folder for folder in searched if folder not in picked]
    if unpicked:
        lines += ["", "No trial of these searches finished (every one diverged or was stopped), so they have no tuned "
                  "column: " + ", ".join(f"`{m}`" for m in unpicked) + "."]
    return lines + [""]


def searched_alike(grid: Grid) -> bool:
    """Whether the grid's searches recorded their ranges (``trials.json``), as searches on equal terms do
    (:data:`~nnrnn.experiments.sweep.EQUAL`); the committed grids that predate them searched the supplement's space."""
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
            f"{OWN_OPTIONS} of its own options" + (f" ({'; '.join(own)})" if own else "") + ", each model with its "
            "paper's optimizer and its published settings queued as the first trial, a trial judged by the area under "
            "its validation curve over its length (`src/nnrnn/experiments/sweep.py`, each model's `TUNED_OPTIONS`; "
            "\"Where the picks fell\" below). The best trial's options are the tuned column's; they are in "
            "`tuned.json` beside this report.")


def _supplement_space_words(grid: Grid) -> str:
    """The search space of the searches before equal terms (the paper's supplement's and each model's own), in
    words."""
    own = [f"{name(m)}: {', '.join(model_class(m).SEARCHED)}" for m in dict.fromkeys(r.model for r in grid.planned)
           if model_class(m).SEARCHED]
    return (f"over the options the paper's supplement searched that act on the model ({', '.join(SEARCHED)}"
            + (f"; and each model's own: {'; '.join(own)}" if own else "")
            + "; `src/nnrnn/experiments/sweep.py` and each model's `SEARCHED`). The best trial's options (by the "
            "validation metric) are the tuned column's; they are in `tuned.json` beside this report.")


def _short(value: float) -> str:
    """Three significant digits, or as many as it takes not to show a value near 0 or 1 as 0 or 1 (an LRU ring's
    r_max of 0.9999)."""
    shown = f"{value:.3g}"
    return f"{value:.6g}" if float(shown) in (0.0, 1.0) and float(shown) != value else shown


def questions_section(grid: Grid) -> list[str]:
    settings, baseline = grid.settings, copy_baseline(grid.planned)
    lines = ["## What the comparison shows", "",
             "Each sentence compares two results by the rule above (\"clearly\": more than two combined standard "
             "errors apart). Lower is better for copy's loss and PTB's bits per character, higher for psMNIST's "
             "accuracy.", ""]
    tables = {s: results(grid, s) for s in settings}
    task_of = {s: setting_task_of(grid.planned, s) for s in settings}
    lower = {s: task_of[s] != "psmnist" for s in settings}
    digits = {s: 4 if task_of[s] == "copy" else 3 for s in settings}

    lines += ["### Does the delay initialisation change nnRNN's learning speed or final score?", ""]
    for setting in settings:
        for column in ("params", "tuned"):
            t = tables[setting].get(column, {})
            final, _ = compare("nnrnn delay", t.get("nnrnn delay"), "nnrnn", t.get("nnrnn"), digits[setting],
                               lower[setting])
            if task_of[setting] == "copy" and baseline:
                sp = copy_speed(grid, setting, baseline).get(column, {})
                speed, _ = compare("nnrnn delay", sp.get("nnrnn delay"), "nnrnn", sp.get("nnrnn"), 0, True,
                                   failed="never solved")
                speed = "updates until solved: " + speed
            else:
                key = metric(task_of[setting])
                early = {m: early_stat(grid, group(grid.planned, setting, column, m), key)
                         for m in ("nnrnn delay", "nnrnn")}
                speed, _ = compare("nnrnn delay", early["nnrnn delay"], "nnrnn", early["nnrnn"], digits[setting],
                                   lower[setting])
                speed = "validation score after a quarter of training: " + speed
            lines.append(f"- {title(grid.planned, setting)}, {column_words(column)}: final: {final}; {speed}.")
    lines += ["", "### Complex against real nnRNN (equal real parameter count, both tuned)", ""]
    for setting in settings:
        t = tables[setting].get("tuned", {})
        lines.append(f"- {title(grid.planned, setting)}: " + compare(
            "nnrnn-complex", t.get("nnrnn-complex"), "nnrnn", t.get("nnrnn"), digits[setting], lower[setting])[0] + ".")
    ptb = next((s for s in settings if task_of[s] == "ptb"), None)
    if ptb:
        t = tables[ptb].get("tuned", {})
        lines += ["", "### nnGRU against GRU and LSTM on PTB (equal parameter count, all tuned)", ""]
        for rival in ("gru", "lstm"):
            lines.append("- " + compare("nngru", t.get("nngru"), rival, t.get(rival), 3)[0] + ".")
    if set(task_of.values()) >= {"copy", "psmnist", "ptb"}:
        lines += ["", goal_section(tables, task_of, digits), ""]
    return lines + [""]


def compared_section(grid: Grid) -> list[str]:
    """:func:`questions_section`, and where the scoring changed after the grid started (the rule SCORED_BY), every
    sentence and row of it that the scoring at the start gave otherwise, beside the one now."""
    now = questions_section(grid)
    then = scoring_at_start(grid)
    if then is None:
        return now
    with judged_by({"SCORED_BY": then}):
        before = questions_section(grid)
    # line by line (the goal table is one string of rows): a row of it that moved is shown alone
    moved = [(b, n) for b, n in zip("\n".join(before).split("\n"), "\n".join(now).split("\n")) if b != n]
    lines = ["### These comparisons under the scoring at the start", "", *rescored_intro(then)]
    if not moved:
        return now + lines + ["No sentence and no row moved.", ""]
    for b, n in moved:
        lines += [f"- at the start: {b.removeprefix('- ')}", f"  - now: {n.removeprefix('- ')}"]
    return now + lines + [""]


def _best(stats: list, lower: bool):
    stats = [x for x in stats if x is not None and not x.empty]
    return (min if lower else max)(stats, key=lambda x: x.mean) if stats else None


def goal_section(tables: dict, task_of: dict, digits: dict) -> str:
    """The goal of the comparison: a non-normal model clearly below the LSTM's bits per character on PTB (the
    better of its two columns) while not clearly worse than expRNN (the better of its columns) on copy and
    psMNIST; each model judged in its tuned column."""
    by_task = {task_of[s]: tables[s] for s in tables}
    rows = ["### The goal: a non-normal model that beats the LSTM on PTB and matches expRNN on copy and psMNIST", "",
            "This goal is the project's own, not a claim of the paper's: the paper concedes that the LSTM does "
            "better on PTB. Each non-normal model at its tuned options against the better of the LSTM's (on PTB) and "
            "expRNN's (on copy and psMNIST) results, paper's or tuned.", "",
            "| model | PTB against the LSTM | copy against expRNN | psMNIST against expRNN | goal reached |",
            "|---|---|---|---|---|"]
    for model in (m for m in NON_NORMAL if any(m in t.get("tuned", {}) for t in tables.values())):
        cells, reached = [], True
        for task, rival in (("ptb", "lstm"), ("copy", "exprnn"), ("psmnist", "exprnn")):
            table = by_task.get(task, {})
            lower = task != "psmnist"
            bar = _best([table.get(c, {}).get(rival) for c in ("params", "tuned")], lower)
            ours = table.get("tuned", {}).get(model)
            sentence, sign = compare(model, ours, rival, bar, 4 if task == "copy" else 3, lower)
            cells.append(sentence)
            reached &= sign == 1 if task == "ptb" else sign >= 0 and not missing(ours, bar)
        rows.append(f"| {name(model)} | " + " | ".join(cells) + f" | {'yes' if reached else 'no'} |")
    return "\n".join(rows)


def family_learned_section(grid: Grid) -> list[str]:
    lines = ["## What each model learned", "",
             "Every seed's trained model in the tuned column (its best checkpoint), mean ± s.e.: the mean |λ| of "
             "the recurrent matrix (a gated model's candidate or cell matrix), its departure from normality "
             "(Henrici, divided by ‖V‖_F), ‖T‖/‖Θ‖ in its Schur form and the delay line (the mean |T| of the links "
             "between consecutive Schur modes over the mean |T| of the links between modes further apart; the "
             "entries inside Λ's 2×2 blocks are not links and are left out).", "",
             "| task | model | mean abs(λ) | departure (normalised) | ‖T‖/‖Θ‖ | delay line |",
             "|---|---|---|---|---|---|"]
    for label in dict.fromkeys(r.label for r in grid.planned if r.column == "tuned"):
        for task, stats in learned_structure(grid, "tuned", label).items():
            cells = [stats[q].show(3, failed="n/a") for q in ("mean_modulus", "departure", "triangular_fraction")]
            # T ≈ 0 (expRNN): the delay line would be a ratio of rounding noise
            near_zero = not stats["triangular_fraction"].empty and stats["triangular_fraction"].mean < rule('NO_T')
            cells.append("n/a (T ≈ 0)" if near_zero else stats["delay_line"].show(3, failed="n/a"))
            lines.append(f"| {task} | {name(label)} | " + " | ".join(cells) + " |")
    return lines + ["", "The two middle columns nearly agree by construction: V = P Θ Pᵀ with P orthogonal (unitary "
                        "for the complex nnRNN) and Λ normal, so Henrici's departure from normality is ‖T‖/‖Θ‖ but "
                        "for T's entries inside Λ's 2×2 blocks, which move the eigenvalues. Θ is the model's trained "
                        "Schur factors where it has them (the nnRNNs, nnGRU's candidate matrix) and the matrix's "
                        "real Schur form otherwise (expRNN, GRU, LSTM).", ""]
