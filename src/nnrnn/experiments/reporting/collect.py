"""What the reports read from a grid's run folders: each group of runs' final metric as a :class:`Stat`, copy's
time to solve, the gradient-norm spikes and convergence of single runs, how settled the curves are, and the learned
structure of the trained models (measured once per checkpoint and cached)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch

from ...analysis.mechanism import flat, read_record
from ...analysis.trained import angle_concentration, henrici_departure, matrix_summary, schur_links, schur_view
from ...tasks import task_class
from ...tasks.base import Reported
from ...training import outcome, runfolder
from ...training.config import resolve_config
from ...training.network import best_checkpoint, load_model
from ...training.train import lr_halvings
from ..planning.grid import COLUMNS, Grid, GridFolder, PlannedRun, diverged, finished, metric, metrics
from ..judging.paper import GAMMA_ONE
from ..judging.rules import COPY_LAST_VALID, rule
from ..judging.statistics import Stat, last_fifth_share

STRUCTURE = {"triangular_fraction": "triangular_fraction", "departure": "departure_from_normality_normalized",
             "mean_modulus": "mean_eigenvalue_modulus", "angle_concentration": "angle_concentration",
             "delay_line": "delay_line", "in_block": "in_block_mean", "in_block_to_link": "in_block_to_link",
             "mean_gamma": "mean_gamma_parameter"}



# what a run's saved configuration names that is the machine's, not the run's: where it wrote and read
HOST_OPTIONS = ("out", "data_dir")


def saved_config(folder: Path) -> dict | None:
    """The configuration the run in ``folder`` trained with, as the trainer saved it (its config.json), less
    :data:`HOST_OPTIONS`; None where it saved none (a run not started, or a folder written back from compact data
    that carried no configurations)."""
    try:
        saved = json.loads(runfolder.config_file(folder).read_text())
    except (OSError, ValueError):
        return None
    return {k: v for k, v in saved.items() if k not in HOST_OPTIONS} if isinstance(saved, dict) else None


def ran_config(grid: GridFolder, planned: PlannedRun) -> dict:
    """The resolved configuration of ``planned``'s run, which every settings table of a report reads (issue 67:
    a table printed what the plan meant, not what ran): its folder's saved configuration (:func:`saved_config`;
    the compact data carries it, :mod:`.compact`), else, for compact data written before it carried them, the run's
    options as planned resolved over its preset, as the trainer resolved them when it started."""
    saved = saved_config(grid.run_folder(planned))
    return saved if saved is not None else resolve_config(planned.options, planned.preset)


def labels(planned: list[PlannedRun], setting: str) -> list[str]:
    """The labels of a setting's runs in plan order (models first, then variants)."""
    return list(dict.fromkeys(r.label for r in planned if r.setting == setting))


def group(planned: list[PlannedRun], setting: str, column: str, label: str) -> list[PlannedRun]:
    return [r for r in planned if (r.setting, r.column, r.label) == (setting, column, label)]


def final_value(folder: Path, key: str, split: str) -> float | None:
    """The last logged ``key`` on ``split`` of a finished run; None for a run that diverged or has not
    finished."""
    if diverged(folder) or not finished(folder):
        return None
    values = [r[key] for r in metrics(folder) if r.get("split") == split and key in r]
    return values[-1] if values else None


def stat(grid: GridFolder, members: list[PlannedRun], key: str, split: str) -> Stat | None:
    """Mean ± s.e. of ``key`` over a group of runs; None when none has finished (a diverged run counts as
    failed)."""
    folders = [grid.run_folder(r) for r in members]
    if not any(finished(f) for f in folders):
        return None
    return Stat.of((final_value(f, key, split) for f in folders if finished(f)), label=members[0].label)


def scored(task: str) -> Reported:
    """What a report's tables score ``task``'s runs by, under the rule SCORED_BY in force: the task's
    :attr:`~nnrnn.tasks.base.Task.reported` (the best checkpoint's test score), or, judged under the scoring before
    the rule, the task's :attr:`~nnrnn.tasks.base.Task.scored_before` where it has one (copy's last validation
    loss).  Every reader of a run's result goes through here."""
    cls = task_class(task)
    if rule("SCORED_BY") == COPY_LAST_VALID and cls.scored_before is not None:
        return cls.scored_before
    return cls.reported


def results(grid: Grid, setting: str, key: str | None = None, split: str | None = None) -> dict:
    """{column: {label: Stat or None}} of a setting's scored metric (:func:`scored`; or ``key`` on ``split``)."""
    task = setting_task_of(grid.planned, setting)
    default_key, default_split, _, _ = scored(task)
    key, split = key or default_key, split or default_split
    return {column: {label: stat(grid, group(grid.planned, setting, column, label), key, split)
                     for label in labels(grid.planned, setting) if group(grid.planned, setting, column, label)}
            for column in COLUMNS}


def setting_task_of(planned: list[PlannedRun], setting: str) -> str:
    return next(r.task for r in planned if r.setting == setting)


def updates_to_solve(folder: Path, threshold: float) -> float | None:
    """The first validation step after which every validation loss of the run stays below ``threshold``;
    None when the last one is not below it (or the run diverged)."""
    if diverged(folder):
        return None
    curve = [(r["step"], r["loss"]) for r in metrics(folder) if r.get("split") == "valid" and "loss" in r]
    if not curve or not curve[-1][1] < threshold:
        return None
    step = curve[-1][0]
    for s, loss in reversed(curve):
        if not loss < threshold:
            break
        step = s
    return float(step)


def copy_speed(grid: Grid, setting: str, baseline: float) -> dict:
    """{column: {label: Stat of updates until the loss stays below 10% of the baseline}} (a seed that never
    gets there counts as failed)."""
    speed = {}
    for column in COLUMNS:
        for label in labels(grid.planned, setting):
            members = [r for r in group(grid.planned, setting, column, label) if finished(grid.run_folder(r))]
            if members:  # read at validations eval_every updates apart: that is its resolution
                speed.setdefault(column, {})[label] = Stat.of(
                    (updates_to_solve(grid.run_folder(r), rule('SOLVED_SHARE') * baseline) for r in members),
                    resolution=members[0].options.get("eval_every", 0), label=label)
    return speed


def mechanism(grid: GridFolder, members: list[PlannedRun]) -> dict[str, Stat]:
    """{quantity: Stat over a group's finished runs} of their mechanism.json's first cell
    (:func:`nnrnn.analysis.mechanism.flat`); a run without the quantity (no record, or it does not apply) is among
    the Stat's failed."""
    records = [flat(read_record(grid.run_folder(r))) for r in done(grid, members)]
    return {key: Stat.of(record[key] for record in records) for key in flat(None)}


# --------------------------------------------------------------------------------------------- learned structure
def structure_of(folder: Path) -> dict | None:
    """The quantities :func:`nnrnn.verdicts.structure_claims` judges, for one trained model (its best
    checkpoint): nnRNN's trained Schur factors, the complex nnRNN's complex ones, and for any other model the
    real Schur form of its recurrent matrix (a gated model's candidate or cell matrix)."""
    if not best_checkpoint(folder).exists():
        return None
    net, _ = load_model(folder)
    layer = net.rnn
    if type(layer).COMPLEX_RECURRENCE:  # V = P (Λ + T) Pᴴ, complex
        with torch.no_grad():
            _, lam, t = (x.detach().to(torch.complex128).numpy() for x in layer.schur_factors())
            v = layer.recurrent_matrix().detach().to(torch.complex128).numpy()
        eig = np.linalg.eigvals(v)
        diag = np.diagonal(lam)
        links = schur_links(np.abs(t))  # every block 1×1: the first sub-diagonal is all links, nothing in a block
        return {"triangular_fraction": float(np.linalg.norm(t) / np.linalg.norm(lam + t)),
                "departure": henrici_departure(v)[1],
                "mean_modulus": float(np.abs(eig).mean()),
                "angle_concentration": angle_concentration(np.abs(np.angle(diag))),
                "delay_line": links["delay_line"], "in_block": links["in_block_mean"],
                "in_block_to_link": links["in_block_to_link"], "mean_gamma": float(np.abs(diag).mean())}
    summary = matrix_summary(schur_view(layer))
    return {quantity: summary.get(key, math.nan) for quantity, key in STRUCTURE.items()}


def learned_structure(grid: Grid, tasks: tuple[str, ...], column: str = "hidden", label: str = "nnrnn") -> dict:
    """{task: {quantity: Stat over every seed}} of ``label``'s trained models in ``column``, in the first setting of
    each of ``tasks`` (the paper's analysed tasks, :data:`nnrnn.experiments.judging.paper.ANALYSED`); measured once
    per checkpoint (cached in ``OUT/analysis/structure.json``)."""
    cache_path = grid.structure
    cache = json.loads(cache_path.read_text()) if cache_path.is_file() else {}
    learned = {}
    for task in tasks:
        setting = next((r.setting for r in grid.planned if r.task == task), None)
        members = [r for r in group(grid.planned, setting, column, label) if finished(grid.run_folder(r))] \
            if setting else []
        per_seed = []
        for r in members:
            folder = grid.run_folder(r)
            checkpoints = folder / runfolder.CHECKPOINTS
            stamp = str(checkpoints.stat().st_mtime) if checkpoints.exists() else ""
            entry = cache.get(folder.name)
            # an entry measured by older code lacks a quantity (or measured it differently): measure again
            if not entry or entry.get("stamp") != stamp or entry.get("quantities") != sorted(STRUCTURE):
                entry = {"stamp": stamp, "quantities": sorted(STRUCTURE), "values": structure_of(folder)}
                cache[folder.name] = entry
            if entry["values"]:
                per_seed.append({**entry["values"], "triangle_per_entry": triangle_per_entry(
                    entry["values"].get("triangular_fraction"), r.hidden)})
        if per_seed:
            learned[task] = {q: Stat.of(v[q] for v in per_seed) for q in (*STRUCTURE, "triangle_per_entry")}
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    cache_path.write_text(json.dumps(cache, indent=1))
    return learned



def probe_norms(folder: GridFolder, task: str) -> list[float] | None:
    """‖∂L/∂h_t‖, t = 1..T, of the gradient probe of ``task``'s first nnRNN seed (its analysis,
    ``OUT/analysis/TASK/summary.json``: :func:`nnrnn.analysis.trained.gradient_propagation`); None without it."""
    summary = folder.probe(task)
    try:
        norms = json.loads(summary.read_text())["gradient"]["norms"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return [float(v) for v in norms]


def triangle_per_entry(fraction: float | None, n: int) -> float | None:
    """T's root-mean-square entry over Λ's, from ``fraction`` = ‖T‖/‖Θ‖ of an N-unit Schur form: T has N(N−1)/2
    entries (its strict lower triangle) and Λ 4·⌊N/2⌋ + N mod 2 (its 2×2 and 1×1 blocks), with ‖Λ‖ read as
    √(‖Θ‖² − ‖T‖²).  Unlike ‖T‖/‖Θ‖, which grows with N for entries of one size, it compares trained models of
    different N like with like."""
    if fraction is None or not math.isfinite(fraction) or not 0 <= fraction < 1 or n < 2:
        return None
    entries_t, entries_lambda = n * (n - 1) / 2, 4 * (n // 2) + n % 2
    return fraction / math.sqrt(1 - fraction ** 2) * math.sqrt(entries_lambda / entries_t)


def bptt_of(planned: list[PlannedRun], setting: str) -> int:
    return next(r.options["bptt"] for r in planned if r.setting == setting)



def done(grid: GridFolder, members: list[PlannedRun]) -> list[PlannedRun]:
    return [r for r in members if finished(grid.run_folder(r))]


def spike(folder: Path, skip: float = 0.0) -> float | None:
    """A run's largest training gradient norm (before clipping) after the first ``skip`` share of its logged
    updates, over the median of all of them; None when it diverged or logged no gradient norm."""
    if diverged(folder):
        return None
    norms = np.array([r["grad_norm"] for r in metrics(folder) if r.get("split") == "train" and "grad_norm" in r],
                     dtype=float)
    norms = norms[np.isfinite(norms)]
    if not norms.size or not np.median(norms) > 0:
        return None
    return float(norms[int(skip * norms.size):].max() / np.median(norms))



def converged(folder: Path, key: str) -> bool:
    """Whether a run's validation ``key`` (a metric whose lower values are better) fell clearly below its first
    value (the trainer's rule LEARNED): what the paper's Table 7 calls converged."""
    if diverged(folder):
        return False
    curve = [r[key] for r in metrics(folder) if r.get("split") == "valid" and key in r and math.isfinite(r[key])]
    return bool(curve) and outcome.clearly_below(min(curve), curve[0], rule('LEARNED'))  # the trainer's rule


def converged_table(grid: Grid, setting: str) -> dict:
    """The fixed-hidden-units test bpc of a setting, with γ = 1 over the runs that converged only (the others
    count as failed), as the paper reads its Table 7."""
    table = dict(results(grid, setting)["hidden"])
    members = done(grid, group(grid.planned, setting, "hidden", GAMMA_ONE))
    if members:
        key, split, _, _ = scored(setting_task_of(grid.planned, setting))
        table[GAMMA_ONE] = Stat.of(final_value(grid.run_folder(r), key, split)
                                   if converged(grid.run_folder(r), key) else None for r in members)
    return table


def held_gamma(planned: list[PlannedRun], setting: str) -> bool:
    """Whether a setting has runs of nnRNN with γ held (supplementary Table 7)."""
    return any(r.options.get("fixed_gamma") is not None for r in planned if r.setting == setting)



def early_stat(grid: GridFolder, members: list[PlannedRun], key: str, share: float = 0.25) -> Stat | None:
    """The validation ``key`` at the first validation after ``share`` of each run's training (a measure of
    learning speed for tasks without a solved threshold)."""
    values = []
    for r in members:
        folder = grid.run_folder(r)
        if not finished(folder):
            continue
        curve = [(x["step"], x[key]) for x in metrics(folder) if x.get("split") == "valid" and key in x]
        if diverged(folder) or not curve:
            values.append(None)
            continue
        last = curve[-1][0]
        values.append(next(v for step, v in curve if step >= share * last))
    return Stat.of(values) if values else None



def convergence(grid: GridFolder, members: list[PlannedRun], task: str) -> dict:
    """How settled a group of runs is: the validation metric's change over the last 20% of the updates relative
    to its whole change (0: flat; mean over seeds), and how many times the learning rate was halved."""
    key = metric(task)
    shares, halvings = [], []
    for planned in members:
        records = metrics(grid.run_folder(planned))
        curve = [(r["step"], r[key]) for r in records
                 if r.get("split") == "valid" and key in r and math.isfinite(r[key])]
        if len(curve) >= 5:  # over the last fifth of the updates (statistics.last_fifth_share)
            shares.append(last_fifth_share(curve))
        lrs = [r["lr"] for r in records if r.get("split") == "train" and "lr" in r]
        if lrs:
            halvings.append(lr_halvings(lrs[0], lrs[-1]))
    return {"last_fifth_share": float(np.mean(shares)) if shares else math.nan,
            "halvings": (min(halvings), max(halvings)) if halvings else None}

