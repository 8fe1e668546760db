"""A run's log: ``metrics.jsonl`` (one JSON object per logged point), TensorBoard scalars, and ``curves.png``.

Every record has ``step`` (updates done) and ``split`` ("train", "valid" or "test"), then the task's
metrics (loss, accuracy, bpc), ``grad_norm`` and ``lr`` for training points, or an ``event``.
"""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

from . import checkpoint, outcome, runfolder, runlock
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


def after_earlier_event_files(directory: Path) -> None:
    """Wait, at most a second, until a new TensorBoard event file in ``directory`` sorts after every earlier one.
    TensorBoard reads a run's event files in name order and hides an earlier file's points from a later file's
    purge step on; the names start with the second each file was made in, then a counter that is not zero-padded
    (9 sorts after 10), so a writer made within the same second as an earlier one (a resume in one process) could
    be read first and lose its points."""
    seconds = [int(p.name.split(".")[3]) for p in directory.glob("events.out.tfevents.*")
               if p.name.split(".")[3].isdigit()]
    if seconds and max(seconds) >= int(time.time()):
        time.sleep(max(seconds) + 1 - time.time())


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
            after_earlier_event_files(folder / runfolder.TENSORBOARD)
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


def metrics_text(record: dict) -> str:
    """A record's metrics as a person reads them: ``loss 0.0934, accuracy 0.2``."""
    return ", ".join(f"{key} {value:.4g}" for key, value in record.items()
                     if key in ("loss", "accuracy", "bpc") and isinstance(value, (int, float)))


def validation_line(step: int, total: int, train: dict | None, valid: dict, best: float | None, monitor: str,
                    lr: float) -> str:
    """The line printed after each validation: where the run is, its latest training and validation metrics,
    the best validation score so far (the one best.pt holds) and the learning rate."""
    parts = [f"update {step}/{total}"]
    if train is not None:
        parts.append(f"train {metrics_text(train)}")
    parts.append(f"valid {metrics_text(valid)}")
    if best is not None:
        parts.append(f"best {monitor} {best:.4g}")
    parts.append(f"lr {lr:.3g}")
    return "[nnrnn] " + " | ".join(parts)


def summary_lines(folder: Path, monitor: tuple[str, str], data: str | None = None) -> list[str]:
    """The closing summary of a run, from its metrics.jsonl: the last validation, the best one by the task's
    ``monitor`` (metric, "min" or "max"), the test score (of best.pt), the ``data`` it was measured on (how much of
    the official files, :meth:`~nnrnn.tasks.base.Task.data_seen`), and the run folder's files."""
    folder = Path(folder)
    records = read_metrics(folder)
    metric, mode = monitor
    valid = [r for r in records if r["split"] == "valid" and isinstance(r.get(metric), (int, float))]
    test = next((r for r in reversed(records) if r["split"] == "test"), None)
    step = max((r["step"] for r in records), default=0)
    lines = [f"[nnrnn] finished at update {step}"]
    if valid:
        lines[0] += f": last validation {metrics_text(valid[-1])}"
    finite = [r for r in valid if math.isfinite(r[metric])]
    if finite:
        best = (min if mode == "min" else max)(finite, key=lambda r: r[metric])
        lines.append(f"[nnrnn] best validation {metric} {best[metric]:.4g} at update {best['step']}")
    if test is not None:
        lines.append(f"[nnrnn] test {metrics_text(test)} (the best validation's checkpoint)")
    if data:
        lines.append(f"[nnrnn] data: {data}")
    files = [(runfolder.CURVES, "training and validation curves"), (runfolder.METRICS, "every logged point"),
             (runfolder.CHECKPOINTS, "best.pt (best validation), last.pt (for --resume)"),
             (runfolder.TENSORBOARD, f"tensorboard --logdir {folder / runfolder.TENSORBOARD}"),
             (runfolder.CONFIG, "every option"), (runfolder.OUTCOME, "learned, did not learn or diverged, and why"),
             (runfolder.MECHANISM, "what training made of the recurrent matrix")]
    lines.append(f"[nnrnn] run folder {folder}:")
    lines += [f"[nnrnn]   {name}{'/' if (folder / name).is_dir() else ''}: {what}" for name, what in files
              if (folder / name).exists()]
    return lines


def read_metrics(folder: Path) -> list[dict]:
    """The records of a run folder's metrics.jsonl (see :func:`parse_lines`); [] when there is none."""
    path = runfolder.metrics_file(folder)
    return [record for _, record in parse_lines(path)] if path.exists() else []


def find_runs(folder: Path) -> list[Path]:
    """The run folders in ``folder`` (itself, or any folder below it, that holds config.json and metrics.jsonl),
    sorted by path."""
    folder = Path(folder)
    found, seen = set(), set()
    # linked folders followed (a grid's OUT/runs is a link to the folder its runs are shared in, reproduce --runs),
    # each real folder once, so that a link to a folder above it is no endless walk
    for where, folders, files in os.walk(folder, followlinks=True):
        real = os.path.realpath(where)
        if real in seen:
            folders[:] = []
            continue
        seen.add(real)
        if runfolder.METRICS in files and runfolder.config_file(where).is_file():
            found.add(Path(where))
    return sorted(found)


def _lock_held(folder: Path) -> bool:
    """Whether a process holds the run's lock (runlock.hold): it is training now."""
    try:
        import fcntl
        fd = os.open(folder / ".lock", os.O_RDONLY)
    except (ImportError, OSError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError as error:  # held; or a filesystem that cannot lock (no process can hold the lock there)
        return error.errno not in runlock.UNLOCKABLE
    finally:
        os.close(fd)


def run_summary(folder: Path, monitor_of) -> dict:
    """What ``nnrnn runs`` shows of a run folder: its task, model and hidden units (config.json), the updates
    logged, the best validation score and the test score (``monitor_of(task)``: the task's (metric, "min" or
    "max")), and its status: running, its outcome (learned, did not learn, diverged at an update:
    :mod:`nnrnn.training.outcome`), finished (a run older than outcomes), or stopped at an update (resumable
    with --resume)."""
    folder = Path(folder)
    try:
        config = json.loads(runfolder.config_file(folder).read_text())
    except (OSError, ValueError):
        config = {}
    if not isinstance(config, dict):  # one row saying so (nnrnn runs), not the end of the listing
        runfolder.read_config(runfolder.config_file(folder))  # raises its UserError naming the file
    records = read_metrics(folder)
    try:
        metric, mode = monitor_of(config.get("task"))
    except ValueError:  # a task this nnrnn does not know
        metric, mode = "loss", "min"
    valid = [r[metric] for r in records if r["split"] == "valid" and isinstance(r.get(metric), (int, float))]
    test = next((r for r in reversed(records) if r["split"] == "test"), None)
    saved = checkpoint.saved_step(runfolder.last_checkpoint(folder))  # it may be ahead of the log (--log-every)
    step = max([r["step"] for r in records] + [saved or 0])
    ended = outcome.read(folder)
    if _lock_held(folder):
        status = "running"
    elif ended is not None:  # learned, did not learn, diverged
        status = ended.name + (f" at update {step}" if ended.name == outcome.DIVERGED else "")
    elif outcome.finished(ended, records):
        status = "finished"  # a run made before outcomes were recorded
    else:
        status = f"stopped at {step}" if records or saved is not None else "not started"
    return {"task": config.get("task", "?"), "model": config.get("model", "?"), "hidden": config.get("hidden", "?"),
            "step": step, "metric": metric,
            "best": f"{metric} {(min if mode == 'min' else max)(valid):.4g}" if valid else "-",
            # the test score of the run as it ended: one logged before a resume for more updates is not its own
            "test": f"{metric} {test[metric]:.4g}" if test is not None and isinstance(test.get(metric), (int, float))
            and outcome.finished(ended, records) else "-",
            "status": status}


REFERENCE_STYLES = {"baseline": "--", "chance": ":"}  # gray lines, not data


def reference_labels(references: dict) -> dict:
    """{name: its legend text}: each value to 3 significant digits, trailing zeros kept (3.00, not 3), and to
    more where that many would print two different values alike (psMNIST's baseline 2.301 and chance 2.303)."""
    for digits in range(3, 8):
        labels = {name: f"{name} {value:#.{digits}g}".rstrip(".") for name, value in references.items()}
        if len({text.split()[-1] for text in labels.values()}) == len(set(references.values())):
            return labels
    return labels


def curves_figure(records: list[dict], references: dict | None = None, title: str | None = None):
    """A matplotlib Figure with one panel per metric logged (loss, accuracy, bpc, in that order): the
    training and validation points against updates, and on every panel the task's ``references``
    ({metric: {"baseline": value, "chance": value}}, :meth:`nnrnn.tasks.base.Task.references`) as gray lines, so
    that a curve far above chance reads as a failure however much it falls; None when no record holds a metric
    (e.g. every update so far was skipped as non-finite).  Accuracy is drawn on [0, 1], so that noise around
    chance does not look like a trend.  The loss and bpc axes are logarithmic where the positive values span more
    than a decade (copy: from the baseline 0.09 down to 1e-4), and a series of few points is drawn with markers,
    so that a single point shows."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    metrics = [m for m in ("loss", "accuracy", "bpc") if any(m in r for r in records)]
    if not metrics:
        return None
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        values = []
        for split in ("train", "valid"):
            points = [(r["step"], r[metric]) for r in records if r.get("split") == split and metric in r]
            if points:
                marker = "o" if split == "valid" or len(points) <= 20 else None
                ax.plot(*zip(*points), "-", marker=marker, label=split, markersize=3)
                values += [v for _, v in points if math.isfinite(v) and v > 0]
        drawn = {name: value for name, value in ((references or {}).get(metric) or {}).items()
                 if value is not None and name in REFERENCE_STYLES}
        for name, label in reference_labels(drawn).items():
            ax.axhline(drawn[name], color="gray", linestyle=REFERENCE_STYLES[name], label=label)
            values.append(drawn[name])
        if metric == "accuracy":
            ax.set_ylim(0, 1)
        elif values and max(values) > 10 * min(values):
            ax.set_yscale("log")
        ax.set_xlabel("update")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # updates are counted: no 29.5 under one point
        ax.set_ylabel(metric + (" (log scale)" if ax.get_yscale() == "log" else ""))
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def run_title(folder: Path) -> str | None:
    """The curves' title: task, model, hidden units and the run folder's name, from its config.json, and the run's
    outcome once it has one (learned, did not learn, diverged)."""
    ended = outcome.read(folder)
    said = f" ({ended.name})" if ended is not None else ""
    try:
        config = json.loads(runfolder.config_file(folder).read_text())
    except (OSError, ValueError):
        return Path(folder).name + said
    if not isinstance(config, dict):  # another structure: the folder's name alone
        return Path(folder).name + said
    name = "" if Path(folder).name == config.get("task") else f": {Path(folder).name}"  # not "copy, …: copy"
    return f"{config.get('task')}, {config.get('model')} with {config.get('hidden')} units{name}{said}"


def plot_curves(folder: Path, references: dict | None = None) -> Path | None:
    """curves.png in ``folder``: :func:`curves_figure` of its metrics.jsonl with the task's ``references``,
    titled by :func:`run_title`; None when there is nothing to plot."""
    fig = curves_figure(read_metrics(folder), references, run_title(folder))
    if fig is None:
        return None
    path = Path(folder) / runfolder.CURVES
    # the curves are drawn again from metrics.jsonl by the next --resume
    save_figure(fig, path, 120, "free some space, then continue with --resume (the run's checkpoints and metrics are "
                "unchanged)")
    return path


def save_figure(fig, path: Path, dpi: int, then: str) -> None:
    """``fig`` drawn into ``path`` whole or not at all (beside it, then renamed over it), and closed: a full disk
    leaves the previous figure, never a half-written one, and is one line ending with ``then``, what to do."""
    import matplotlib.pyplot as plt
    try:
        checkpoint.replace_whole(path, lambda tmp: fig.savefig(tmp, dpi=dpi))
    except OSError as error:
        raise UserError(f"cannot write {path} ({error.strerror}); {then}") from None
    finally:
        plt.close(fig)
