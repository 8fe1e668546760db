"""The reports' figures: learning curves and training gradient norms, mean ± s.e. over seeds, per setting."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np

from ..models import MODELS, PAPER_MODELS
from ..tasks import task_class
from .collect import group, labels, setting_task_of
from .grid import COLUMNS, Grid, PlannedRun, metric, metrics
from .rules import rule
from .words import column_words, name, title


def line_style(label: str, planned: list[PlannedRun]) -> tuple[str, str]:
    """A label's colour and line style, the same in every figure of a report: solid for the paper's models and dashed
    for the others, and within each the 10-colour cycle by the label's place among the grid's labels of that style
    (models in nnrnn's order, then variants), counted over the whole grid, not one setting, where a model missing
    from the setting would shift every colour after it.  So no two of up to 10 models of each style look alike."""
    paper = label in PAPER_MODELS
    known = list(MODELS)
    ordered = sorted(dict.fromkeys([r.label for r in planned] + [label]),
                     key=lambda m: known.index(m) if m in known else len(known))  # stable: variants as planned
    same_style = [m for m in ordered if (m in PAPER_MODELS) == paper]
    return f"C{same_style.index(label) % 10}", "-" if paper else "--"


def baseline_axis(ax, task: str, baseline: float, lowest: float) -> None:
    """A loss panel's baseline line (and copy's "solved" line), on a log scale from the best curve up to just above
    the baseline: the vanilla RNN's spikes (up to 1e12) are cut off so that the region the claims are about can be
    read."""
    ax.axhline(baseline, color="gray", linestyle=":", label="baseline")
    bottom = max(1e-5, lowest / 3) if math.isfinite(lowest) else 1e-5
    if task == "copy":
        solved = rule('SOLVED_SHARE') * baseline
        ax.axhline(solved, color="gray", linestyle="-.", lw=0.8, label="10% of baseline")
        bottom = min(bottom, solved / 2)  # the line a solved run crosses stays in view
    ax.set_yscale("log")
    ax.set_ylim(bottom, 3 * baseline)


def learning_curves(grid: Grid, setting: str, path: Path, baseline: float | None,
                    gradients: bool = False) -> Path:
    """The validation metric (or, with ``gradients``, the training gradient norm) against the update, mean ±
    s.e. over seeds, one panel per column."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    task = setting_task_of(grid.planned, setting)
    key, split = ("grad_norm", "train") if gradients else (metric(task), "valid")
    columns = [c for c in COLUMNS if any(r.setting == setting and r.column == c for r in grid.planned)]
    # one column of a large field (the modern grid) gets a wider panel, to hold its legend
    width = max(5.2 * len(columns), 9.0 if len(labels(grid.planned, setting)) > 10 else 0)
    fig, axes = plt.subplots(1, len(columns), figsize=(width, 4.0), sharey=True, squeeze=False,
                             layout="constrained")  # makes room for the (wrapped) title, unlike tight_layout
    axes = axes[0]
    lowest = math.inf
    for ax, column in zip(axes, columns):
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
            mean = values.mean(0)
            if np.isfinite(mean).any():  # a model whose every seed diverged at every step has no lowest point
                lowest = min(lowest, float(np.nanmin(mean)))
            se = values.std(0, ddof=1) / math.sqrt(len(values)) if len(values) > 1 else np.zeros_like(mean)
            color, style = line_style(label, grid.planned)
            ax.plot(steps, mean, style, color=color, label=f"{name(label)} (N={members[0].hidden})")
            ax.fill_between(steps, mean - se, mean + se, color=color, alpha=0.2)
        if gradients:
            ax.set_yscale("log")
        elif baseline is not None:  # a loss with a no-memory baseline: copy, adding
            baseline_axis(ax, task, baseline, lowest)
        ax.set_title(column_words(column), fontsize=10)
        ax.set_xlabel("update")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            if len(labels(grid.planned, setting)) > 10:  # a large field: beside the axes, covering no curve
                ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
            else:
                ax.legend(fontsize=7.5, loc="best")
    quantity = "training gradient norm (before clipping)" if gradients else task_class(task).curve_axis
    axes[0].set_ylabel(quantity)
    clipped = " (axis cut at 3× the baseline)" if baseline is not None and not gradients else ""
    heading = f"{title(grid.planned, setting)}: {quantity}, mean ± s.e. over seeds{clipped}"
    fig.suptitle(textwrap.fill(heading, width=int(11 * fig.get_figwidth())), fontsize=10.5)  # ~11 characters/inch
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path

