"""The reports' figures: learning curves (mean ± s.e. over seeds, with the task's reference line) and training
gradient norms (median over seeds), per setting, in one colour and line style per label (its model class's or its
variant's, :mod:`..judging.labels`)."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np

from ...tasks import task_class
from ...training.network import build_task
from ...training.runlog import save_figure
from .collect import group, labels, setting_task_of
from ..planning.grid import AGAIN, COLUMNS, Grid, PlannedRun, metric, metrics
from ..judging.rules import rule
from ..judging.labels import line_style as labels_style
from ..judging.words import column_words, name, title


def line_style(label: str, planned: list[PlannedRun]) -> tuple[str, object]:
    """A label's colour and matplotlib line style, the same in every figure and every report: its model class's or
    its variant's (:func:`..judging.labels.line_style`; ``planned`` is kept for the grids' figures that pass it)."""
    return labels_style(label)


GRADIENT_HEADROOM = 10.0  # a gradient panel's top: this many times its highest median, on a log axis


def reference(planned: list[PlannedRun], setting: str) -> tuple[float, str] | None:
    """The reference line of a setting whose curves are not a loss (the loss tasks' baselines are
    :func:`.sections.memoryless_baseline`'s): psMNIST's chance accuracy (a uniform guess over the classes, 10%) and
    PTB's unigram model of the training text the runs saw (the entropy of its character frequencies, in bits per
    character, :meth:`nnrnn.tasks.ptb.PTB.references`): its task's ``reference_line``; None for a task without one."""
    task = setting_task_of(planned, setting)
    kind = task_class(task).reference_line
    if kind is None:
        return None
    first = next(r for r in planned if r.setting == setting)
    value = build_task(first.options).references()[metric(task)][kind[0]]
    return value, kind[1].format(value)


def reference_line(ax, task: str, baseline: float | None, other: tuple[float, str] | None) -> None:
    """A panel's gray reference line: a loss task's no-memory ``baseline`` (the mean over the seeds' own evaluation
    sequences, labelled with its value), or ``other`` (:func:`reference`)."""
    if baseline is not None:
        ax.axhline(baseline, color="gray", linestyle=":",
                   label=f"baseline {baseline:.4f} ({task_class(task).baseline_words})")
    elif other is not None:
        ax.axhline(other[0], color="gray", linestyle=":", label=other[1])


FEW_POINTS = 20  # a line of this many points or fewer is drawn with markers: a line of one point shows nothing
SHOWN_ABOVE = 1.5  # a cut loss axis reaches this many times the highest of the curves' lowest points


def baseline_axis(ax, task: str, baseline: float, lowest: float, floor: float = 0.0) -> None:
    """A loss panel's baseline line (and, for a task solved by its baseline, copy, the "solved" line), on a log scale
    from the best curve up to just above the baseline: the vanilla RNN's spikes (up to 1e12) are cut off so that the
    region the claims are about can be read.  The top reaches above ``floor``, the highest of the curves' lowest
    points, so that every curve shows (a short grid's curves, the smoke scale's, are all above 3× the baseline)."""
    reference_line(ax, task, baseline, None)
    bottom = max(1e-5, lowest / 3) if math.isfinite(lowest) else 1e-5
    if task_class(task).solved_by_baseline:
        solved = rule('SOLVED_SHARE') * baseline
        ax.axhline(solved, color="gray", linestyle="-.", lw=0.8, label="10% of baseline")
        bottom = min(bottom, solved / 2)  # the line a solved run crosses stays in view
    ax.set_yscale("log")
    ax.set_ylim(bottom, max(3 * baseline, SHOWN_ABOVE * floor if math.isfinite(floor) else 0.0))


def learning_curves(grid: Grid, setting: str, path: Path, baseline: float | None,
                    gradients: bool = False) -> Path:
    """The validation metric against the update, mean ± s.e. over seeds, one panel per column, with the reference
    line of its task (``baseline``, a loss task's no-memory loss; else :func:`reference`); or, with ``gradients``,
    the training gradient norm, the median over seeds with the band from the lowest to the highest seed, on an axis
    cut at :data:`GRADIENT_HEADROOM` × the highest median, so that one seed's spike (nnRNN's copy runs reach 1e7)
    neither moves a line nor squashes the others against the axis."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    task = setting_task_of(grid.planned, setting)
    columns = [c for c in COLUMNS if any(r.setting == setting and r.column == c for r in grid.planned)]
    other = None if gradients or baseline is not None else reference(grid.planned, setting)
    # one column of a large field (the modern grid) gets a wider panel, to hold its legend
    width = max(5.2 * len(columns), 9.0 if len(labels(grid.planned, setting)) > 10 else 0)
    fig, axes = plt.subplots(1, len(columns), figsize=(width, 4.0), sharey=True, squeeze=False,
                             layout="constrained")  # makes room for the (wrapped) title, unlike tight_layout
    axes = axes[0]
    lowest, highest, floor = math.inf, 0.0, 0.0
    for ax, column in zip(axes, columns):
        low, high, deepest = _panel(ax, grid, setting, column, gradients)
        lowest, highest, floor = min(lowest, low), max(highest, high), max(floor, deepest)
        if gradients:
            ax.set_yscale("log")
        elif baseline is not None:  # a loss with a no-memory baseline: copy, adding
            baseline_axis(ax, task, baseline, lowest, floor)
        else:
            reference_line(ax, task, None, other)
        ax.set_title(column_words(column), fontsize=10)
        ax.set_xlabel("update")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # updates are counted, as on a run's curves.png
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            if len(labels(grid.planned, setting)) > 10:  # a large field: beside the axes, covering no curve
                ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), handlelength=4)
            else:
                ax.legend(fontsize=7.5, loc="best", handlelength=4)
    if gradients and 0 < highest < math.inf:
        axes[0].set_ylim(top=GRADIENT_HEADROOM * highest)  # shared: every panel
    quantity = "training gradient norm (before clipping)" if gradients else task_class(task).curve_axis
    axes[0].set_ylabel(quantity)
    if gradients:
        summary = (f"median over seeds, band from the lowest to the highest seed, axis cut at "
                   f"{GRADIENT_HEADROOM:g}× the highest median")
    else:
        cut = baseline is not None and not SHOWN_ABOVE * floor > 3 * baseline  # else raised to show every curve
        summary = "mean ± s.e. over seeds" + (" (axis cut at 3× the baseline)" if cut else "")
    heading = f"{title(grid.planned, setting)}: {quantity}, {summary}"
    fig.suptitle(textwrap.fill(heading, width=int(11 * fig.get_figwidth())), fontsize=10.5)  # ~11 characters/inch
    save_whole(fig, path)
    return path


def save_whole(fig, path: Path) -> None:
    """``fig`` drawn into ``path`` whole or not at all (into a private folder beside it, under its own name, then
    renamed over it), and closed: a full disk leaves the previous figure and is one line ending with how the grid
    goes on."""
    save_figure(fig, path, 130, f"the previous {Path(path).name}, if any, is unchanged; free some space, then {AGAIN}")


def _panel(ax, grid: Grid, setting: str, column: str, gradients: bool) -> tuple[float, float, float]:
    """One column's curves, every label of the setting in its style; the lowest and highest point of its lines, and
    the highest of each line's lowest point."""
    task = setting_task_of(grid.planned, setting)
    key, split = ("grad_norm", "train") if gradients else (metric(task), "valid")
    lowest, highest, floor = math.inf, 0.0, 0.0
    for label in labels(grid.planned, setting):
        members = group(grid.planned, setting, column, label)
        curves = [[(r["step"], r[key]) for r in metrics(grid.run_folder(m))
                   if r.get("split") == split and key in r] for m in members]
        curves = [c for c in curves if c]
        if not curves:
            continue
        n = min(len(c) for c in curves)
        steps = np.array([p[0] for p in curves[0][:n]])
        values = np.array([[p[1] for p in c[:n]] for c in curves], dtype=float)
        centre, low, high = _spread(values, gradients)
        if np.isfinite(centre).any():  # a model whose every seed diverged at every step has no lowest point
            lowest = min(lowest, float(np.nanmin(centre)))
            highest = max(highest, float(np.nanmax(centre)))
            floor = max(floor, float(np.nanmin(centre)))
        color, style = line_style(label, grid.planned)
        ax.plot(steps, centre, color=color, linestyle=style, label=f"{name(label)} (N={members[0].units})",
                marker="o" if len(steps) <= FEW_POINTS else None, markersize=3)
        ax.fill_between(steps, low, high, color=color, alpha=0.1 if gradients else 0.2)
    return lowest, highest, floor


def _spread(values: np.ndarray, robust: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(line, band's bottom, band's top) over the seeds (rows): mean ± s.e., or with ``robust`` the median and the
    lowest and highest seed (a median of 3 seeds moves with none of them alone)."""
    if robust:
        return np.median(values, 0), values.min(0), values.max(0)
    mean = values.mean(0)
    se = values.std(0, ddof=1) / math.sqrt(len(values)) if len(values) > 1 else np.zeros_like(mean)
    return mean, mean - se, mean + se
