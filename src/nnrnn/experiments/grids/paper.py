"""The ``paper`` grid: the paper's sizes and the release's lengths (copy 1500 updates, psMNIST and PTB 100 epochs);
meant for GPUs.

Its report, which the grids that judge the paper's claims share (``cpu``, ``cpu-long``, ``paper``, ``smoke``), and
that report's own sections, from the run folders. Sections (after the introduction and the data each run
saw, :mod:`.report`): the scale against the paper's; per setting (copy, psMNIST, PTB at each T_PTB) the results in
both columns with learning curves; copy's training speed; nnRNN with γ held (supplementary Table 7); the rules the
verdicts follow; the paper's claims (:mod:`..judging.task_sentences`, :mod:`..judging.gamma_sentences`,
:mod:`..judging.structure_sentences`, :mod:`..judging.theory_sentences`); how settled the runs are; what nnRNN
learned over every seed; the theory.  Every number comes from the run folders or the theory code; every
comparison follows the rule in :mod:`.statistics`."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from ...analysis import analyze_model, claim_numbers, plots, theta_example
from ...training.network import best_checkpoint, load_model
from ..reporting.collect import (bptt_of, converged, converged_table, copy_speed, done, final_value, group,
                                 held_gamma, learned_structure, probe_norms, results, scored, setting_task_of, spike)
from ..judging import family, rules
from ..planning.grid import COLUMNS, PLAN as OUT_PLAN, Grid, GridFolder, metrics, recorded_rules
from ..judging.paper import ANALYSED, GAMMA_HELD, GAMMA_ONE
from ..judging.rules import Claim, not_converged, rule
from ..reporting.sections import (Report, claims_section, row_scope, scope, scope_section, solved_baseline,
                                  settings_sections, settled_section)
from ..judging.statistics import Stat, labelled
from ..judging.gamma_sentences import (all_or_nothing_claim, backprop_claim, gamma_claims, gradient_claim,
                                       regularization_claim)
from ..judging.structure_sentences import structure_claims
from ..judging.task_sentences import (copy_claims, copy_columns_claim, gap_claims, gated_claim, psmnist_claim,
                                      ptb_accuracy_claim, ptb_claim)
from ..judging.theory_sentences import theory_claims
from ..judging.words import column_words, name, title
from ..planning.declaration import BOTH, Scale, Setting

def analyse_first_seed(grid: Grid) -> list[str]:
    """The analysis figures (Θ, spectrum, gradients) of the first seed's nnRNN per task."""
    lines = []
    for task in ANALYSED:
        setting = next((r.setting for r in grid.planned if r.task == task), None)
        members = sorted(group(grid.planned, setting, "hidden", "nnrnn"), key=lambda r: r.seed) if setting else []
        if not members or not best_checkpoint(grid.run_folder(members[0])).exists():
            continue
        folder, target = grid.run_folder(members[0]), grid.analysis(task)
        summary = grid.probe(task)
        if not (summary.is_file() and summary.stat().st_mtime >= best_checkpoint(folder).stat().st_mtime):
            net, _ = load_model(folder)
            analyze_model(net.rnn, target,
                          title=f"nnRNN trained on {title(grid.planned, setting)}, seed {members[0].seed}")
        lines += [f"![{task} {png.stem}]({png.relative_to(grid.out)})" for png in sorted(target.glob("*.png"))]
    return lines


# --------------------------------------------------------------------------------------------- sections
def judged_sections(grid: Grid) -> list[str]:
    """Everything after the settings' results: nnRNN with γ held, the rules the verdicts follow, the paper's claims
    judged, how settled the runs are, what nnRNN learned, the first seeds' analysis and the theory (its figures and
    numbers are made first: the claims judge them too)."""
    settings, baseline = grid.settings, solved_baseline(grid.planned)
    numbers = theory_numbers(grid.figures)
    claims = judge(grid, settings, baseline, numbers)
    learned = learned_structure(grid, ANALYSED)
    changes = rules_section(grid, claims, lambda: judge(grid, settings, baseline, numbers))
    lines = gamma_section(grid, settings) + changes + claims_section(claims)
    lines += settled_section(grid) + learned_section(learned)
    return lines + grid.analysis_lines + [""] + theory_section(grid.figures, [], numbers)


REPORT = Report("Reproduction report", (scope_section, settings_sections, judged_sections),
                analyse=analyse_first_seed)


def judge(grid: Grid, settings: list[str], baseline, numbers: tuple) -> list[Claim]:
    """Every claim of the report, in its order, under the rules in force (:func:`.rules.judged_by` sets them):
    copy, psMNIST and PTB per setting, the gap to expRNN, what nnRNN learned, the theory (``numbers``:
    :func:`theory_numbers`)."""
    claims = []
    for setting in settings:
        task = setting_task_of(grid.planned, setting)
        table = results(grid, setting)
        if task == "copy" and baseline:
            speed = copy_speed(grid, setting, baseline)
            for column in COLUMNS:
                if table.get(column):
                    claims += copy_claims(table[column], speed.get(column, {}), baseline, column,
                                          scope=row_scope(grid, setting, column))
            if table.get("hidden") and table.get("params"):
                claims.append(copy_columns_claim(table["hidden"], table["params"],
                                                 scope=row_scope(grid, setting, "params")))
        elif task == "psmnist":
            claims += [psmnist_claim(table[c], c, scope=row_scope(grid, setting, c)) for c in COLUMNS
                       if table.get(c)]
        elif task == "ptb":
            claims += ptb_claims(grid, setting)
    claims += ptb_gap_claims(grid, settings)
    first_ptb = next((s for s in settings if setting_task_of(grid.planned, s) == "ptb"), None)
    if first_ptb is not None:  # the first seed's analysis is of the first PTB setting
        claims.append(backprop_claim(probe_norms(grid, "ptb"), bptt_of(grid.planned, first_ptb),
                                     scope=row_scope(grid, first_ptb, "hidden")))
    sizes = {r.task: r.hidden for r in reversed(grid.planned) if r.column == "hidden" and r.label == "nnrnn"}
    claims += structure_claims(learned_structure(grid, ANALYSED), sizes)
    claims += theory_claims(*numbers)
    # each row names the comparisons it rests on, listed with their tests and p values at the report's end
    return [dataclasses.replace(c, here=c.here + family.cited(c.claim)) for c in claims]


def rules_section(grid: GridFolder, claims: list[Claim], rejudge) -> list[str]:
    """The rules the verdicts were judged by, against those the grid recorded when it started
    (:func:`.grid.record_plan`): for each verdict that moved, the verdict under the rules at the start beside the
    one now, and the changed rules that move it (each changed rule put back alone).  ``rejudge()`` judges every
    claim again under the rules in force."""
    now = rules.fingerprint()
    lines = ["## The rules these verdicts follow", "",
             "Every threshold and window the verdicts use is in `src/nnrnn/experiments/judging/rules.py`, each with "
             f"its reason (fingerprint `{now}`)."]
    started = recorded_rules(grid.out)
    if started is None:
        return lines + ["This grid recorded no rules when it started (it predates that record), so a change of rule "
                        "while it ran cannot be told from it.", ""]
    if rules.fingerprint({**rules.values(), **started}) == now and set(started) >= set(rules.RULES):
        return lines + [f"They are the rules this grid recorded when it started (`{OUT_PLAN}`).", ""]
    at_start = rules.as_recorded(started)
    with rules.judged_by(at_start), family.unrecorded():  # judged again, not new members of the report's family
        then = rejudge()
    lines += ["", f"**The rules changed after this grid started** (fingerprint then `{rules.fingerprint(started)}`): "
              + "; ".join(rules.changed(started)) + ". Under the rules at the start, a rule added since takes the "
              "value that gives the behaviour before it where it has one, else its value now.", ""]
    moved = [(c, t) for c, t in zip(claims, then) if c.verdict != t.verdict]
    if not moved:
        return lines + ["No verdict moved: every claim has the same verdict under the rules at the start.", ""]
    blame = {}
    for key in (n for n in rules.RULES if at_start[n] != rules.RULES[n].value):
        with rules.judged_by({key: at_start[key]}), family.unrecorded():
            for c, t in zip(claims, rejudge()):
                if c.verdict != t.verdict:
                    blame.setdefault(c.claim, []).append(key)
    lines += ["| claim | verdict under the rules at the start | verdict now | the change that moves it |",
              "|---|---|---|---|"]
    return lines + [f"| {c.claim} | {t.verdict} | **{c.verdict}** | {', '.join(blame.get(c.claim, [])) or 'several'} |"
                    for c, t in moved] + [""]


def ptb_claims(grid: Grid, setting: str) -> list:
    """Table 1 (test bpc) and supplementary Table 2 (test accuracy) in each column, and for a setting with γ
    held, supplementary Table 7 on the runs that converged and the supplement's gradient norms."""
    bptt, bpc = bptt_of(grid.planned, setting), results(grid, setting)
    accuracy = results(grid, setting, "accuracy", "test")
    claims = []
    for column in COLUMNS:
        if bpc.get(column):
            where = row_scope(grid, setting, column)
            claims += [ptb_claim(bpc[column], bptt, column, scope=where),
                       ptb_accuracy_claim(accuracy[column], bptt, column, scope=where)]
    if bpc.get("hidden") and "lstm" in bpc["hidden"]:
        claims.append(gated_claim(bpc["hidden"], bptt, scope=row_scope(grid, setting, "hidden")))
    if held_gamma(grid.planned, setting):
        where = row_scope(grid, setting, "hidden")
        claims += gamma_claims(_converged(grid, setting), bptt, criterion=not_converged(), scope=where)
        claims.append(gradient_claim({label: [spike(grid.run_folder(r), rule('WARM_UP')) for r in members]
                                      for label in ("nnrnn", GAMMA_ONE, GAMMA_HELD)
                                      if (members := done(grid, group(grid.planned, setting, "hidden", label)))},
                                     bptt, scope=where))
        claims.append(all_or_nothing_claim(
            [(label, r.seed, final_value(grid.run_folder(r), "bpc", "test"), converged(grid.run_folder(r), "bpc"),
              spike(grid.run_folder(r))) for label in ("nnrnn", GAMMA_ONE, GAMMA_HELD)
             for r in sorted(done(grid, group(grid.planned, setting, "hidden", label)), key=lambda r: r.seed)],
            bptt, scope=where))
        claims.append(regularization_claim(_converged(grid, setting),
                                           {label: [spike(grid.run_folder(r)) for r in members]
                                            for label in ("nnrnn", GAMMA_ONE, GAMMA_HELD)
                                            if (members := done(grid, group(grid.planned, setting, "hidden", label)))},
                                           bptt, scope=where))
    return claims


def _converged(grid: Grid, setting: str) -> dict:
    """The γ table's results over the runs that converged, each named for the report's list of comparisons."""
    return labelled(converged_table(grid, setting), ", the runs that converged", name)


def ptb_gap_claims(grid: Grid, settings: list[str]) -> list:
    """The gap from nnRNN to expRNN at T_PTB = 150 against 300 (§4.2), when the grid has both."""
    by_bptt = {bptt_of(grid.planned, s): s for s in settings if setting_task_of(grid.planned, s) == "ptb"}
    if not {150, 300} <= set(by_bptt):
        return []
    where = "; ".join(f"{column_words(c)}: {scope(grid.planned, by_bptt[300], c)}" for c in COLUMNS
                      if scope(grid.planned, by_bptt[300], c))
    return gap_claims(results(grid, by_bptt[150]), results(grid, by_bptt[300]), scope=where)




def gamma_section(grid: Grid, settings: list[str]) -> list[str]:
    ptb = [s for s in settings if setting_task_of(grid.planned, s) == "ptb" and held_gamma(grid.planned, s)]
    if not ptb:
        return []
    bptts = {s: next(r.options["bptt"] for r in grid.planned if r.setting == s) for s in ptb}
    tables = {s: results(grid, s)["hidden"] for s in ptb}
    accuracy = {s: results(grid, s, "accuracy", "test")["hidden"] for s in ptb}
    lines = ["## nnRNN with γ held (supplementary Table 7)", "",
             "Test bits per character (test accuracy, %) at fixed hidden units; γ held means every γ_i is fixed at "
             "that value and the δ penalty is off (`--fixed-gamma G --delta 0`).", "",
             "| model | " + " | ".join(f"T_PTB = {bptts[s]}" for s in ptb) + " |", "|---" * (1 + len(ptb)) + "|"]
    for label in ("nnrnn", GAMMA_ONE, GAMMA_HELD):
        cells = []
        for s in ptb:
            b, a = tables[s].get(label), accuracy[s].get(label)
            cells.append("not finished" if b is None else f"{b.show(3)} ({_percent(a)})")
        lines.append(f"| {name(label)} | " + " | ".join(cells) + " |")
    lines.append(f"| {name(GAMMA_ONE)}, the runs that converged | "
                 + " | ".join(converged_table(grid, s)[GAMMA_ONE].show(3, failed="did not converge")
                              if tables[s].get(GAMMA_ONE) else "not finished" for s in ptb) + " |")
    lines += ["", f"A run \"did not converge\" here: {not_converged()} (the paper's Table 7 counts such runs as "
              "failed without a definition; docs/design.md). Each run's test bpc, its first and best validation bpc "
              "and its largest training gradient norm over its median:", ""]
    key, split, _, _ = scored("ptb")
    for s in ptb:
        for label in ("nnrnn", GAMMA_ONE, GAMMA_HELD):
            members = sorted(done(grid, group(grid.planned, s, "hidden", label)), key=lambda r: r.seed)
            cells = [f"seed {r.seed}: " + _per_run(grid.run_folder(r), key, split) for r in members]
            if cells:
                lines.append(f"- T_PTB = {bptts[s]}, {name(label)}: " + "; ".join(cells))
    return lines + [""]


def _percent(accuracy) -> str:
    """A test accuracy Stat in percent, as the paper's Table 2 prints it."""
    if accuracy is None or accuracy.empty:
        return "–"
    return Stat(100 * accuracy.mean, 100 * accuracy.se, accuracy.n, accuracy.failed).show(1) + "%"


def _per_run(folder: Path, key: str, split: str) -> str:
    value, ratio = final_value(folder, key, split), spike(folder)
    curve = [r[key] for r in metrics(folder) if r.get("split") == "valid" and key in r and math.isfinite(r[key])]
    shown = "diverged" if value is None else f"{value:.3f}"
    if curve:
        shown += f" (validation {curve[0]:.2f} first, {min(curve):.2f} best"
        shown += "" if ratio is None else f"; largest gradient norm {ratio:.3g}× its median"
        shown += ")"
    return shown + ("" if converged(folder, key) else ", did not converge")



def learned_section(learned: dict) -> list[str]:
    if not learned:
        return []
    lines = ["## What nnRNN learned", "",
             "Every seed's trained nnRNN at fixed hidden units (its best checkpoint), mean ± s.e. over seeds: "
             "‖T‖/‖Θ‖ (the strictly lower triangle's share of the Schur form), Henrici's departure from normality "
             "of V divided by ‖V‖_F (equal to ‖T‖/‖Θ‖ whenever every 2×2 block has complex eigenvalues, so the "
             "two columns agree here), the mean |λ| of V's eigenvalues (with the paper's strict T the in-block "
             "entries of T move the eigenvalues, so this is not the mean γ), the mean trained γ, the "
             "concentration of the rotation angles θ_i (1 − sd(θ)/sd of the uniform law on [0, π]: 0 spread "
             "evenly, 1 all equal), the delay line between Schur modes (mean |T| over the links from each diagonal "
             "block of Θ to the next, T[rows of block b+1, columns of block b], over the mean |T| over the "
             "sub-blocks further below) and T inside the 2×2 blocks (mean |T[2k+1, 2k]|, alone and over the mean "
             "|T| of a link entry): those entries link no two modes but move the block's eigenvalues off "
             "γ e^{±iθ}.", "",
             "| task | ‖T‖/‖Θ‖ | departure (normalised) | mean abs(λ) | mean γ | angle concentration | delay line "
             "| T in the 2×2 blocks | over a link entry |",
             "|---|---|---|---|---|---|---|---|---|"]
    for task, s in learned.items():
        lines.append(f"| {task} | " + " | ".join(s[q].show(3, failed="n/a") for q in (
            "triangular_fraction", "departure", "mean_modulus", "mean_gamma", "angle_concentration", "delay_line",
            "in_block", "in_block_to_link")) + " |")
    return lines + ["", "The first seed's Θ, spectrum and gradient propagation:", ""]


def theory_numbers(figures: Path) -> tuple:
    """The theory's figures (written into ``figures``) and the numbers its claims are judged on, in the order
    :func:`..judging.theory_sentences.theory_claims` takes them; the figures and the claims share one computation of
    each ensemble and curve (the caches of :mod:`nnrnn.analysis.claim_numbers`)."""
    figures.mkdir(parents=True, exist_ok=True)
    plots.figure1b(figures / "figure1b.png")
    plots.figure1c(figures / "figure1c.png")
    plots.figure_proposition1(figures / "proposition1.png")
    _, fits = plots.figure_proposition2(figures / "proposition2.png")
    return (claim_numbers.transient_numbers(), claim_numbers.fisher_memory_numbers(), theta_example.table3(),
            claim_numbers.proposition1_numbers(), claim_numbers.proposition2_numbers(fits=fits))


def theory_section(figures: Path, claims: list | None = None, numbers: tuple | None = None) -> list[str]:
    """The theory's section: Table 3, the figures of §3 and the Propositions, and the claims of §3 judged on their
    numbers (:func:`..judging.theory_sentences.theory_claims`; ``numbers`` from :func:`theory_numbers`, made here
    when not given).  With a list ``claims`` the theory's claims are appended to it (for the report's claim table)
    and the section holds none; without, the section ends with their own table."""
    transients, memory, rows, prop1, prop2 = numbers or theory_numbers(figures)
    lines = ["## Theory: supplementary Table 3 (J_tot)", "", "| α | β | d | nnrnn | paper |", "|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['alpha']} | {row['beta']} | {row['d']} | {row['j_tot']:.3g} | {row['paper']} |")
    judged = theory_claims(transients, memory, rows, prop1, prop2)
    lines += ["", "![Figure 1b](figures/figure1b.png)", "", "![Figure 1c](figures/figure1c.png)", "",
              "Proposition 1: the Fisher memory curve J(k) against the lower bound α^k/σ_max^{2(N−1)} · "
              "(α−1)/(α^{k+1}−1), for the delay line (where they coincide) and with β > 0 (docs/theory.md).",
              "", "![Proposition 1](figures/proposition1.png)", "",
              "![Proposition 2](figures/proposition2.png)", ""]
    if claims is not None:
        claims.extend(judged)
        return lines
    return lines + ["### The claims of §3 judged", "",
                    f"No seeds here: the transients are means over {transients['n_init']} initial conditions "
                    "(their standard error is over those), everything else exact arithmetic, judged by the fixed "
                    "criteria each row states.", "", "| claim | the paper | here | verdict |", "|---|---|---|---|"] + [
        f"| {c.claim} | {c.paper} | {c.here} | **{c.verdict}** |" for c in judged] + [""]


NAME = "paper"
SCALE = Scale(
    name=NAME,
    about="paper: the paper's sizes and the release's 100 epochs (for GPUs; its time is not measured)",
    seeds=(0, 1, 2),
    report=REPORT,
    settings={
        # the release's lengths: copytask.py's 1500 updates, sMNIST.py's and language_task.py's 100 epochs
        "copy": Setting(task="copy", hidden=None, columns=BOTH, options={"T": 200, "batch_size": 10, "steps": 1500}),
        "psmnist": Setting(task="psmnist", hidden=None, columns=BOTH, options={"batch_size": 128, "epochs": 100}),
        "ptb": Setting(task="ptb", hidden=None, columns=BOTH,
                       options={"bptt": 150, "batch_size": 128, "epochs": 100}),
    },
)
