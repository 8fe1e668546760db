"""A run's log: ``metrics.jsonl`` (one JSON object per logged point), TensorBoard scalars, and ``curves.png``.

Every record has ``step`` (updates done) and ``split`` ("train", "valid" or "test"), then the task's
metrics (loss, accuracy, bpc), ``grad_norm`` and ``lr`` for training points, or an ``event``.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import checkpoint


class MetricsLog:
    """Appends JSON lines to metrics.jsonl and mirrors scalars to TensorBoard."""

    def __init__(self, folder: Path, resume_step: int | None):
        self.path = folder / "metrics.jsonl"
        if resume_step is None:
            self.path.write_text("")
        else:  # drop points logged after the checkpoint: the resumed run logs them again
            kept = [line for line in self._lines() if json.loads(line)["step"] <= resume_step]
            checkpoint.atomic_write(self.path, lambda f: f.write("".join(kept).encode()))
        self.file = self.path.open("a")
        self.writer = None
        try:
            from torch.utils.tensorboard import SummaryWriter
            # TensorBoard hides earlier event files' points at purge_step and after: on resume, those after
            # the checkpoint (logged again); in a new run, all of an attempt that died before its first checkpoint
            purge = 0 if resume_step is None else resume_step + 1
            self.writer = SummaryWriter(str(folder / "tensorboard"), purge_step=purge)
        except ImportError:  # TensorBoard is optional for library users
            pass

    def _lines(self):
        return [line for line in self.path.read_text().splitlines(keepends=True) if line.strip()] \
            if self.path.exists() else []

    def log(self, record: dict) -> None:
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        if self.writer is not None:
            for key, value in record.items():
                if key != "step" and isinstance(value, (int, float)):  # the split is a string, part of the tag
                    self.writer.add_scalar(f"{record['split']}/{key}", value, record["step"])

    def close(self) -> None:
        self.file.close()
        if self.writer is not None:
            self.writer.close()


def read_metrics(folder: Path) -> list[dict]:
    path = Path(folder) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def curves_figure(records: list[dict], baseline: float | None = None):
    """A matplotlib Figure with one panel per metric logged (loss, accuracy, bpc, in that order): the
    training and validation points against updates, and the task's baseline on the loss panel;
    None when no record holds a metric (e.g. every update so far was skipped as non-finite)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    metrics = [m for m in ("loss", "accuracy", "bpc") if any(m in r for r in records)]
    if not metrics:
        return None
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.2), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for split, style in (("train", "-"), ("valid", "o-")):
            points = [(r["step"], r[metric]) for r in records if r.get("split") == split and metric in r]
            if points:
                ax.plot(*zip(*points), style, label=split, markersize=3)
        if metric == "loss" and baseline is not None:
            ax.axhline(baseline, color="gray", linestyle="--", label="baseline")
        ax.set_xlabel("update")
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    return fig


def plot_curves(folder: Path, baseline: float | None = None) -> Path | None:
    """curves.png in ``folder``: :func:`curves_figure` of its metrics.jsonl; None when there is nothing to plot."""
    fig = curves_figure(read_metrics(folder), baseline)
    if fig is None:
        return None
    import matplotlib.pyplot as plt
    path = Path(folder) / "curves.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
