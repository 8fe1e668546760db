"""A run's log: ``metrics.jsonl`` (one JSON object per logged point), TensorBoard scalars, and ``curves.png``.

Every record has ``step`` (updates done) and ``split`` ("train", "valid" or "test"), then the task's
metrics (loss, accuracy, bpc), ``grad_norm`` and ``lr`` for training points, or an ``event``.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import checkpoint, runfolder
from ..errors import UserError


def parse_lines(path: Path) -> list[tuple[str, dict]]:
    """(line, record) for every record of a metrics.jsonl.  A last line cut short (by a kill or a full disk
    during its write) is dropped: the run logs it again when it resumes.  Any other unreadable line is a
    UserError naming the file and the line."""
    try:
        lines = Path(path).read_text().split("\n")
    except UnicodeDecodeError:
        raise UserError(f"{path} is not a metrics file (it is not text); restore it or start a new run") from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            if number == len(lines):
                break
            raise UserError(f"{path} line {number} is not a JSON record ({error.msg}); restore the file or delete "
                            f"that line") from None
        if not (isinstance(record, dict) and isinstance(record.get("step"), int) and "split" in record):
            raise UserError(f"{path} line {number} is not a metrics record (it needs a step and a split); restore "
                            f"the file or delete that line")
        out.append((line + "\n", record))
    return out


class MetricsLog:
    """Appends JSON lines to metrics.jsonl and mirrors scalars to TensorBoard."""

    def __init__(self, folder: Path, resume_step: int | None):
        self.path = runfolder.metrics_file(folder)
        if resume_step is None:
            self.path.write_text("")
        else:  # drop points logged after the checkpoint: the resumed run logs them again
            kept = [line for line, record in parse_lines(self.path) if record["step"] <= resume_step] \
                if self.path.exists() else []
            checkpoint.atomic_write(self.path, lambda f: f.write("".join(kept).encode()))
        self.file = self.path.open("a")
        self.writer = None
        try:
            from torch.utils.tensorboard import SummaryWriter
            # TensorBoard hides earlier event files' points at purge_step and after: on resume, those after
            # the checkpoint (logged again); in a new run, all of an attempt that died before its first checkpoint
            purge = 0 if resume_step is None else resume_step + 1
            self.writer = SummaryWriter(str(folder / runfolder.TENSORBOARD), purge_step=purge)
        except ImportError:  # TensorBoard is optional for library users
            pass

    def log(self, record: dict) -> None:
        try:
            self.file.write(json.dumps(record) + "\n")
            self.file.flush()
        except OSError as error:
            raise UserError(f"cannot write {self.path} ({error.strerror}); free some space or fix the folder, then "
                            f"continue with --resume (the last checkpoint is unchanged)") from None
        if self.writer is not None:
            for key, value in record.items():
                if key != "step" and isinstance(value, (int, float)):  # the split is a string, part of the tag
                    self.writer.add_scalar(f"{record['split']}/{key}", value, record["step"])

    def close(self) -> None:
        self.file.close()
        if self.writer is not None:
            self.writer.close()


def read_metrics(folder: Path) -> list[dict]:
    """The records of a run folder's metrics.jsonl (see :func:`parse_lines`); [] when there is none."""
    path = runfolder.metrics_file(folder)
    return [record for _, record in parse_lines(path)] if path.exists() else []


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
    path = Path(folder) / runfolder.CURVES
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
