"""The report of a ``nnrnn reproduce`` grid: ``OUT/report.md`` and its figures, from the run folders.

Sections: the data each run saw against the official files; per setting (copy, psMNIST, PTB at each T_PTB)
the results in both columns with learning curves; copy's training speed; nnRNN with γ held (supplementary
Table 7); the paper's claims judged by :mod:`.verdicts`; how settled the runs are; what nnRNN learned
over every seed; the theory.  Every number comes from the run folders or the theory code; every comparison
follows the rule in :mod:`.statistics`.
"""
from __future__ import annotations

import datetime
import json
import math
from pathlib import Path

from ..analysis import analyze_model, plots, theory
from ..tasks import task_class
from ..training.network import best_checkpoint, load_model
from ..training.runlog import read_metrics
from .beyond import goal_section, write_beyond_report  # noqa: F401 (goal_section: the report's public names)
from .collect import (PROBED, STRUCTURE, bptt_of, converged, converged_table, copy_speed, done,  # noqa: F401
                      final_value, group, held_gamma, learned_structure, probe_norms, results, setting_task_of, spike,
                      updates_to_solve)
from .figures import learning_curves  # noqa: F401
from . import rules
from .compact import materialize, write_data
from .grid import COLUMNS, PLAN as OUT_PLAN, recorded_rules, report_kind, run_folder
from .modern import write_modern_report
from .paper import GAMMA_HELD, GAMMA_ONE
from .rules import Claim, not_converged, rule
from .sections import (claims_section, copy_baseline, data_section, introduction, notes, row_scope, scope,
                       scope_section, settings_sections, settled_section)
from .statistics import Stat
from .sentences import (all_or_nothing_claim, backprop_claim, copy_claims, copy_columns_claim, gamma_claims, gap_claims,
                        gated_claim, gradient_claim, psmnist_claim, ptb_accuracy_claim, ptb_claim, regularization_claim,
                        structure_claims)
from .theory_verdicts import theory_claims
from .words import column_words, name
from .words import title  # noqa: F401


def analyse_first_seed(out: Path, runs: list[dict]) -> list[str]:
    """The analysis figures (Θ, spectrum, gradients) of the first seed's nnRNN per task."""
    lines = []
    for task in PROBED:
        setting = next((r["setting"] for r in runs if r["task"] == task), None)
        members = sorted(group(runs, setting, "hidden", "nnrnn"), key=lambda r: r["seed"]) if setting else []
        if not members or not best_checkpoint(run_folder(out, members[0])).exists():
            continue
        folder, target = run_folder(out, members[0]), out / "analysis" / task
        summary = target / "summary.json"
        if not (summary.is_file() and summary.stat().st_mtime >= best_checkpoint(folder).stat().st_mtime):
            net, _ = load_model(folder)
            analyze_model(net.rnn, target, title=f"nnRNN trained on {title(runs, setting)}, seed {members[0]['seed']}")
        lines += [f"![{task} {png.stem}]({png.relative_to(out)})" for png in sorted(target.glob("*.png"))]
    return lines


# --------------------------------------------------------------------------------------------- sections
def write_report(out: Path, scale: str, runs: list[dict], date: str | None = None,
                 analysis: list[str] | None = None) -> Path:
    """``OUT/report.md``: the paper's claims judged, or the comparison a scale's ``report`` names (``beyond``:
    the non-normal family, :func:`write_beyond_report`; ``modern``: today's long-memory RNNs,
    :func:`write_modern_report`); beside it ``OUT/data.json``, the compact data it is computed
    from (:mod:`.compact`).  ``date`` (default today) is the one the report gives; ``analysis``, the lines of the
    first seeds' analysis figures when they cannot be made from checkpoints (a report written from compact data)."""
    out = Path(out)
    date = date or datetime.date.today().isoformat()
    kind = report_kind(scale)
    if kind == "beyond":
        report = write_beyond_report(out, scale, runs, date)
        analysis = []
    elif kind == "modern":
        report = write_modern_report(out, scale, runs, date)
        analysis = []
    else:
        analysis = analyse_first_seed(out, runs) if analysis is None else analysis
        report = _paper_report(out, scale, runs, date, analysis)
    write_data(out, scale, runs, date, analysis)
    return report


def _paper_report(out: Path, scale: str, runs: list[dict], date: str, analysis: list[str]) -> Path:
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    settings = list(dict.fromkeys(r["setting"] for r in runs))
    baseline = copy_baseline(runs)
    lines = introduction(out, scale, runs, date=date) + data_section(runs) + scope_section(runs)
    lines += settings_sections(out, runs, settings, figures, baseline)
    numbers = theory_numbers(figures)
    claims = judge(out, runs, settings, baseline, numbers)
    learned = learned_structure(out, runs)
    changes = rules_section(out, claims, lambda: judge(out, runs, settings, baseline, numbers))
    lines += gamma_section(out, runs, settings) + changes + claims_section(claims)
    lines += settled_section(out, runs, settings) + learned_section(learned)
    lines += analysis + [""] + theory_section(figures, [], numbers) + notes(out)
    report = out / "report.md"
    report.write_text("\n".join(lines))
    return report


def judge(out: Path, runs: list[dict], settings: list[str], baseline, numbers: tuple) -> list[Claim]:
    """Every claim of the report, in its order, under the rules in force (:func:`.rules.judged_by` sets them):
    copy, psMNIST and PTB per setting, the gap to expRNN, what nnRNN learned, the theory (``numbers``:
    :func:`theory_numbers`)."""
    claims = []
    for setting in settings:
        task = setting_task_of(runs, setting)
        table = results(out, runs, setting)
        if task == "copy" and baseline:
            speed = copy_speed(out, runs, setting, baseline)
            for column in COLUMNS:
                if table.get(column):
                    claims += copy_claims(table[column], speed.get(column, {}), baseline, column,
                                          scope=row_scope(out, runs, setting, column))
            if table.get("hidden") and table.get("params"):
                claims.append(copy_columns_claim(table["hidden"], table["params"],
                                                 scope=row_scope(out, runs, setting, "params")))
        elif task == "psmnist":
            claims += [psmnist_claim(table[c], c, scope=row_scope(out, runs, setting, c)) for c in COLUMNS
                       if table.get(c)]
        elif task == "ptb":
            claims += ptb_claims(out, runs, setting)
    claims += ptb_gap_claims(out, runs, settings)
    first_ptb = next((s for s in settings if setting_task_of(runs, s) == "ptb"), None)
    if first_ptb is not None:  # the first seed's analysis is of the first PTB setting
        claims.append(backprop_claim(probe_norms(out, "ptb"), bptt_of(runs, first_ptb),
                                     scope=row_scope(out, runs, first_ptb, "hidden")))
    sizes = {r["task"]: r["hidden"] for r in reversed(runs) if r["column"] == "hidden" and r["label"] == "nnrnn"}
    claims += structure_claims(learned_structure(out, runs), sizes)
    return claims + theory_claims(*numbers)


def rules_section(out: Path, claims: list[Claim], rejudge) -> list[str]:
    """The rules the verdicts were judged by, against those the grid recorded when it started
    (:func:`.grid.record_plan`): for each verdict that moved, the verdict under the rules at the start beside the
    one now, and the changed rules that move it (each changed rule put back alone).  ``rejudge()`` judges every
    claim again under the rules in force."""
    now = rules.fingerprint()
    lines = ["## The rules these verdicts follow", "",
             "Every threshold and window the verdicts use is in `src/nnrnn/experiments/rules.py`, each with its reason "
             f"(fingerprint `{now}`)."]
    started = recorded_rules(out)
    if started is None:
        return lines + ["This grid recorded no rules when it started (it predates that record), so a change of rule "
                        "while it ran cannot be told from it.", ""]
    if rules.fingerprint({**rules.values(), **started}) == now and set(started) >= set(rules.RULES):
        return lines + [f"They are the rules this grid recorded when it started (`{OUT_PLAN}`).", ""]
    at_start = rules.as_recorded(started)
    with rules.judged_by(at_start):
        then = rejudge()
    lines += ["", f"**The rules changed after this grid started** (fingerprint then `{rules.fingerprint(started)}`): "
              + "; ".join(rules.changed(started)) + ". Under the rules at the start, a rule added since takes the "
              "value that gives the behaviour before it where it has one, else its value now.", ""]
    moved = [(c, t) for c, t in zip(claims, then) if c.verdict != t.verdict]
    if not moved:
        return lines + ["No verdict moved: every claim has the same verdict under the rules at the start.", ""]
    blame = {}
    for key in (n for n in rules.RULES if at_start[n] != rules.RULES[n].value):
        with rules.judged_by({key: at_start[key]}):
            for c, t in zip(claims, rejudge()):
                if c.verdict != t.verdict:
                    blame.setdefault(c.claim, []).append(key)
    lines += ["| claim | verdict under the rules at the start | verdict now | the change that moves it |",
              "|---|---|---|---|"]
    return lines + [f"| {c.claim} | {t.verdict} | **{c.verdict}** | {', '.join(blame.get(c.claim, [])) or 'several'} |"
                    for c, t in moved] + [""]


def ptb_claims(out: Path, runs: list[dict], setting: str) -> list:
    """Table 1 (test bpc) and supplementary Table 2 (test accuracy) in each column, and for a setting with γ
    held, supplementary Table 7 on the runs that converged and the supplement's gradient norms."""
    bptt, bpc = bptt_of(runs, setting), results(out, runs, setting)
    accuracy = results(out, runs, setting, "accuracy", "test")
    claims = []
    for column in COLUMNS:
        if bpc.get(column):
            where = row_scope(out, runs, setting, column)
            claims += [ptb_claim(bpc[column], bptt, column, scope=where),
                       ptb_accuracy_claim(accuracy[column], bptt, column, scope=where)]
    if bpc.get("hidden") and "lstm" in bpc["hidden"]:
        claims.append(gated_claim(bpc["hidden"], bptt, scope=row_scope(out, runs, setting, "hidden")))
    if held_gamma(runs, setting):
        where = row_scope(out, runs, setting, "hidden")
        claims += gamma_claims(converged_table(out, runs, setting), bptt, criterion=not_converged(), scope=where)
        claims.append(gradient_claim({label: [spike(run_folder(out, r), rule('WARM_UP')) for r in members]
                                      for label in ("nnrnn", GAMMA_ONE, GAMMA_HELD)
                                      if (members := done(out, group(runs, setting, "hidden", label)))},
                                     bptt, scope=where))
        claims.append(all_or_nothing_claim(
            [(label, r["seed"], final_value(run_folder(out, r), "bpc", "test"), converged(run_folder(out, r)),
              spike(run_folder(out, r))) for label in ("nnrnn", GAMMA_ONE, GAMMA_HELD)
             for r in sorted(done(out, group(runs, setting, "hidden", label)), key=lambda r: r["seed"])],
            bptt, scope=where))
        claims.append(regularization_claim(converged_table(out, runs, setting),
                                           {label: [spike(run_folder(out, r)) for r in members]
                                            for label in ("nnrnn", GAMMA_ONE, GAMMA_HELD)
                                            if (members := done(out, group(runs, setting, "hidden", label)))},
                                           bptt, scope=where))
    return claims


def ptb_gap_claims(out: Path, runs: list[dict], settings: list[str]) -> list:
    """The gap from nnRNN to expRNN at T_PTB = 150 against 300 (§4.2), when the grid has both."""
    by_bptt = {bptt_of(runs, s): s for s in settings if setting_task_of(runs, s) == "ptb"}
    if not {150, 300} <= set(by_bptt):
        return []
    where = "; ".join(f"{column_words(c)}: {scope(runs, by_bptt[300], c)}" for c in COLUMNS
                      if scope(runs, by_bptt[300], c))
    return gap_claims(results(out, runs, by_bptt[150]), results(out, runs, by_bptt[300]), scope=where)




def gamma_section(out: Path, runs: list[dict], settings: list[str]) -> list[str]:
    ptb = [s for s in settings if setting_task_of(runs, s) == "ptb" and held_gamma(runs, s)]
    if not ptb:
        return []
    bptts = {s: next(r["options"]["bptt"] for r in runs if r["setting"] == s) for s in ptb}
    tables = {s: results(out, runs, s)["hidden"] for s in ptb}
    accuracy = {s: results(out, runs, s, "accuracy", "test")["hidden"] for s in ptb}
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
                 + " | ".join(converged_table(out, runs, s)[GAMMA_ONE].show(3, failed="did not converge")
                              if tables[s].get(GAMMA_ONE) else "not finished" for s in ptb) + " |")
    lines += ["", f"A run \"did not converge\" here: {not_converged()} (the paper's Table 7 counts such runs as "
              "failed without a definition; docs/design.md). Each run's test bpc, its first and best validation bpc "
              "and its largest training gradient norm over its median:", ""]
    key, split, _, _ = task_class("ptb").reported
    for s in ptb:
        for label in ("nnrnn", GAMMA_ONE, GAMMA_HELD):
            members = sorted(done(out, group(runs, s, "hidden", label)), key=lambda r: r["seed"])
            cells = [f"seed {r['seed']}: " + _per_run(run_folder(out, r), key, split) for r in members]
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
    curve = [r[key] for r in read_metrics(folder) if r.get("split") == "valid" and key in r and math.isfinite(r[key])]
    shown = "diverged" if value is None else f"{value:.3f}"
    if curve:
        shown += f" (validation {curve[0]:.2f} first, {min(curve):.2f} best"
        shown += "" if ratio is None else f"; largest gradient norm {ratio:.3g}× its median"
        shown += ")"
    return shown + ("" if converged(folder) else ", did not converge")



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
    :func:`.verdicts.theory_claims` takes them; the figures and the claims share one computation of each ensemble and
    curve (the caches of :mod:`nnrnn.analysis.theory`)."""
    figures.mkdir(parents=True, exist_ok=True)
    plots.figure1b(figures / "figure1b.png")
    plots.figure1c(figures / "figure1c.png")
    plots.figure_proposition1(figures / "proposition1.png")
    _, fits = plots.figure_proposition2(figures / "proposition2.png")
    return (theory.transient_numbers(), theory.fisher_memory_numbers(), theory.table3(), theory.proposition1_numbers(),
            theory.proposition2_numbers(fits=fits))


def theory_section(figures: Path, claims: list | None = None, numbers: tuple | None = None) -> list[str]:
    """The theory's section: Table 3, the figures of §3 and the Propositions, and the claims of §3 judged on their
    numbers (:func:`.verdicts.theory_claims`; ``numbers`` from :func:`theory_numbers`, made here when not given).
    With a list ``claims`` the theory's claims are appended to it (for the report's claim table) and the section holds
    none; without, the section ends with their own table."""
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


def regenerate(path: Path, out: Path, data_dir=None) -> Path:
    """The report of the compact data at ``path``, written into ``out`` from that data alone (``data_dir``: where
    the MNIST and PTB files are here, for the data section's counts)."""
    data = json.loads(Path(path).read_text())
    runs = materialize(data, out, data_dir)
    return write_report(Path(out), data["scale"], runs, date=data["date"], analysis=data["analysis"])
