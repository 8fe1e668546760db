"""The ``beyond`` grid, beyond the paper (docs/beyond/report.md): the non-normal family at cpu-long's sizes and
sequence lengths, at nnRNN's parameter count, with the paper's hyperparameters where it gives them and with the same
search for every model (5 trials of runs a fifth as long, on seed TUNE_SEED, which no table reports).  Shorter
training than cpu-long's, so that the whole grid, searches included, ends within one sitting: about an hour on 2
cores (docs/design.md).

Its report's own sections: the non-normal family against the paper's models, each tuned alike: how every model was
tuned, the comparisons the family was built for, the project's own goal and what each model learned."""
from __future__ import annotations

from ...tasks import task_class

from ..reporting.collect import copy_speed, early_stat, group, learned_structure, results, setting_task_of
from ..planning.grid import Grid, metric
from ..judging import family
from ..judging.rules import judged_by, rule
from ..reporting.sections import judged_again, rescored_intro, scoring_at_start, solved_baseline
from ..judging.comparisons import compare
from ..judging.labels import variant
from ..judging.paper import ANALYSED
from ..judging.statistics import labelled, missing
from ..judging.words import column_words, name, title
from ..planning.grid import TUNE_SEED, TUNED
from ..planning.declaration import Scale, Search, Setting, Variant
from ..reporting.tuning import tuning_section as tuned_alike
from ..reporting.sections import Report, settings_sections, settled_section
from .cpu_long import LONG_COPY, LONG_PSMNIST, LONG_PTB

NON_NORMAL = ("nnrnn", "nnrnn delay", "nnrnn-complex", "nngru")

BEYOND_STARTS = ("The options a search does not search are taken from `paper-params` where the paper gives the model "
                 "hyperparameters. The paper gives no hyperparameters for GRU, nnGRU and the complex nnRNN, so they "
                 "appear in the tuned column only, trained by the task's procedure in the paper's presets (batch "
                 "size, read-out initialisation, PTB's embedding and plateau schedule).")


def tuning_section(grid: Grid) -> list[str]:
    """How every model was tuned (:func:`..reporting.tuning.tuning_section`), from ``paper-params``."""
    return tuned_alike(grid, BEYOND_STARTS)


def questions_section(grid: Grid) -> list[str]:
    settings, baseline = grid.settings, solved_baseline(grid.planned)
    lines = ["## What the comparison shows", "",
             "Each sentence compares two results by the rule above (\"clearly\": a two-sided Welch test passes at "
             f"{rule('LEVEL'):g}). Lower is better for copy's loss and PTB's bits per character, higher for psMNIST's "
             "accuracy.", ""]
    tables = {s: results(grid, s) for s in settings}
    task_of = {s: setting_task_of(grid.planned, s) for s in settings}
    lower = {s: task_class(task_of[s]).lower_is_better() for s in settings}
    digits = {s: task_class(task_of[s]).reported.digits for s in settings}

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
                early = labelled({m: early_stat(grid, group(grid.planned, setting, column, m), key)
                                  for m in ("nnrnn delay", "nnrnn")}, ", after a quarter of training",
                                 name)
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
    with judged_by({"SCORED_BY": then}), family.unrecorded():  # judged again: no new members of its family
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
            lower = task_class(task).lower_is_better()
            bar = _best([table.get(c, {}).get(rival) for c in ("params", "tuned")], lower)
            ours = table.get("tuned", {}).get(model)
            sentence, sign = compare(model, ours, rival, bar, task_class(task).reported.digits, lower)
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
        for task, stats in learned_structure(grid, ANALYSED, "tuned", label).items():
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


BEYOND_MODELS = ("nnrnn", "exprnn", "lstm", "gru", "nngru", "nnrnn-complex")
# nnRNN with T starting as a delay line (the paper's §3); α = 0.02, the largest of 0.5, 0.2, 0.1, 0.05, 0.02
# that trains on psMNIST and PTB from its start (docs/design.md)
# nnRNN with T started as the delay line of the paper's §3
DELAY = variant("nnrnn delay", "nnRNN (delay init)", ("#8db600", (0, (14, 4))))
DELAY_INIT = {DELAY: Variant(model="nnrnn", options={"t_init": "delay:0.02"}, columns=("params", TUNED))}
REPORT = Report("Beyond the paper: the non-normal family", (
    tuning_section, settings_sections, compared_section, judged_again(questions_section), family_learned_section,
    settled_section))
NAME = "beyond"
SCALE = Scale(
    name=NAME,
    about="beyond: the non-normal family, each model tuned alike (0 h 57 min with --jobs 2 on 2 cores, "
          "docs/beyond/report.md)",
    seeds=(0, 1, 2),
    report=REPORT,
    tune=Search(trials=5, share=0.2, seed=TUNE_SEED),
    settings={
        "copy": Setting(task="copy", hidden=128, columns=("params", TUNED), models=BEYOND_MODELS,
                        variants=DELAY_INIT, options={**LONG_COPY, "steps": 2000}),
        "psmnist": Setting(task="psmnist", hidden=64, columns=("params", TUNED), models=BEYOND_MODELS,
                           variants=DELAY_INIT, options={**LONG_PSMNIST, "epochs": 5}),
        "ptb": Setting(task="ptb", hidden=128, columns=("params", TUNED), models=BEYOND_MODELS,
                       variants=DELAY_INIT, options={**LONG_PTB, "epochs": 30}),
    },
)
