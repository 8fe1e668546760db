"""nnrnn.training.runlog: metrics.jsonl, TensorBoard and the learning-curve figure."""
import sys
import time

import pytest
from helpers import copy_config, one_line, run_cli, tensorboard_scalars

from nnrnn.training import checkpoint
from nnrnn.training import runlog as runlog_module
from nnrnn.errors import UserError
from nnrnn.training.runlog import read_metrics
from nnrnn.training.train import train


@pytest.fixture(autouse=True)
def event_files_unordered():
    """This file reads TensorBoard's event files: its runs wait for the next second, as nnrnn's do (conftest's
    fixture of this name skips the wait elsewhere)."""


def test_tensorboard_holds_every_logged_scalar_at_its_step(tmp_path):
    train(copy_config(tmp_path, steps=8, log_every=2, eval_every=4))
    records = read_metrics(tmp_path / "run")
    expected = {}
    for r in records:
        for key, value in r.items():
            if key not in ("step", "split") and isinstance(value, (int, float)):
                expected.setdefault(f"{r['split']}/{key}", []).append((r["step"], value))
    assert {"train/loss", "train/lr", "valid/loss", "test/loss"} <= set(expected)
    scalars = tensorboard_scalars(tmp_path / "run")
    assert set(scalars) == set(expected)  # "step" and "split" are the coordinates, not scalars
    for tag, points in expected.items():
        assert [s for s, _ in scalars[tag]] == [s for s, _ in points], tag
        assert [v for _, v in scalars[tag]] == pytest.approx([v for _, v in points], rel=1e-6), tag


def test_without_tensorboard_the_metrics_file_is_still_written(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # `import` of it now raises ImportError
    log = runlog_module.MetricsLog(tmp_path, resume_step=None)
    log.log({"step": 1, "split": "train", "loss": 0.5})
    log.close()
    assert read_metrics(tmp_path) == [{"step": 1, "split": "train", "loss": 0.5}]
    assert not (tmp_path / "tensorboard").exists()


def test_tensorboard_after_a_resume_holds_what_one_uninterrupted_run_does(tmp_path):
    """The run stops after update 6 with its last checkpoint at 4: the resumed run logs 5 and 6 again, so
    TensorBoard must hide the first attempt's points after 4 (5 included), and keep those up to 4."""
    options = dict(steps=8, log_every=1, eval_every=2, checkpoint_every=4)
    train(copy_config(tmp_path, "whole", **options))

    def stop_after_six(step, record):
        if step == 6:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(copy_config(tmp_path, "part", **options), on_eval=stop_after_six)
    assert checkpoint.load(tmp_path / "part" / "checkpoints" / "last.pt")["step"] == 4
    train(copy_config(tmp_path, "part", **options), resume=True)
    assert read_metrics(tmp_path / "part") == read_metrics(tmp_path / "whole")
    assert tensorboard_scalars(tmp_path / "part") == tensorboard_scalars(tmp_path / "whole")



def test_a_resume_within_the_same_second_whose_event_file_counter_passes_ten_keeps_every_point(tmp_path, monkeypatch):
    """The case runlog.after_earlier_event_files exists for: the first attempt's event file is named with counter
    9 and the resume's, made within the same second, with 10, which sorts before it; without the wait TensorBoard
    reads the resume's file first and the first attempt's purge hides the resumed points.  A clock that moves only
    when slept on makes "within the same second" certain."""
    from tensorboard.summary.writer import event_file_writer
    options = dict(steps=8, log_every=1, eval_every=2, checkpoint_every=4)
    train(copy_config(tmp_path, "whole", **options))

    class Clock:  # the time module as the event file's name and the wait read it
        now = float(int(time.time()))

        def time(self):
            return self.now

        def sleep(self, seconds):
            self.now += max(0.0, seconds)

    clock = Clock()
    monkeypatch.setattr(runlog_module, "time", clock)
    monkeypatch.setattr(event_file_writer, "time", clock)
    monkeypatch.setattr(event_file_writer, "_global_uid", event_file_writer.AtomicCounter(9))

    def stop_after_six(step, record):
        if step == 6:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(copy_config(tmp_path, "part", **options), on_eval=stop_after_six)
    train(copy_config(tmp_path, "part", **options), resume=True)
    names = sorted(p.name for p in (tmp_path / "part" / "tensorboard").glob("events.out.tfevents.*"))
    assert [name.rsplit(".", 1)[-1] for name in names] == ["9", "10"]  # read in the order they were written
    assert tensorboard_scalars(tmp_path / "part") == tensorboard_scalars(tmp_path / "whole")


def test_curves_show_each_metric_for_train_and_valid_and_the_references_on_every_panel():
    records = [{"step": 2, "split": "train", "loss": 0.9, "accuracy": 0.1},
               {"step": 4, "split": "train", "loss": 0.7, "accuracy": 0.3},
               {"step": 4, "split": "valid", "loss": 0.8, "accuracy": 0.2},
               {"step": 5, "split": "train", "event": "skipped update"},
               {"step": 6, "split": "test", "loss": 0.1, "accuracy": 0.9}]
    references = {"loss": {"baseline": 0.095, "chance": 2.197}, "accuracy": {"baseline": 0.125, "chance": 0.111}}
    fig = runlog_module.curves_figure(records, references)
    loss, accuracy = fig.axes
    assert [ax.get_ylabel() for ax in fig.axes] == ["loss (log scale)", "accuracy"]  # no bpc: no bpc panel
    assert all(ax.get_xlabel() == "update" for ax in fig.axes)
    fig.canvas.draw()
    assert all(float(tick).is_integer() for ax in fig.axes for tick in ax.get_xticks())  # updates are whole
    lines = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in loss.get_lines()}
    assert lines["train"] == ([2, 4], [0.9, 0.7]) and lines["valid"] == ([4], [0.8])
    assert list(lines["baseline 0.0950"][1]) == [0.095, 0.095] and "test" not in lines
    assert list(lines["chance 2.20"][1]) == [2.197, 2.197]
    # a single validation point must show: validation as small dots on a line, and so a short training series
    styles = {line.get_label(): (line.get_linestyle(), line.get_marker(), line.get_markersize())
              for line in loss.get_lines()}
    assert styles["train"] == ("-", "o", 3) and styles["valid"] == ("-", "o", 3)
    long = [{"step": s, "split": "train", "loss": 1.0 / s} for s in range(1, 30)]
    assert runlog_module.curves_figure(long).axes[0].get_lines()[0].get_marker() == "None"  # a line is enough
    from matplotlib.colors import to_rgba
    baseline = next(line for line in loss.get_lines() if line.get_label().startswith("baseline"))
    assert baseline.get_linestyle() == "--" and to_rgba(baseline.get_color()) == to_rgba("gray")  # not data
    chance = next(line for line in loss.get_lines() if line.get_label().startswith("chance"))
    assert chance.get_linestyle() == ":" and to_rgba(chance.get_color()) == to_rgba("gray")
    assert loss.xaxis.get_gridlines()[0].get_alpha() == 0.3  # a faint grid
    lines = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in accuracy.get_lines()}
    assert lines == {"train": ([2, 4], [0.1, 0.3]), "valid": ([4], [0.2]), "baseline 0.125": ([0, 1], [0.125, 0.125]),
                     "chance 0.111": ([0, 1], [0.111, 0.111])}
    assert accuracy.get_ylim() == (0, 1)  # noise near chance must not look like a trend
    assert [t.get_text() for t in loss.get_legend().get_texts()] == ["train", "valid", "baseline 0.0950", "chance 2.20"]
    assert fig.get_size_inches()[0] > fig.get_size_inches()[1]  # panels side by side
    ptb = runlog_module.curves_figure([{"step": 1, "split": "valid", "loss": 2.0, "bpc": 2.9}])
    assert [ax.get_ylabel() for ax in ptb.axes] == ["loss", "bpc"]
    assert runlog_module.curves_figure([{"step": 1, "split": "train", "event": "skipped update"}]) is None
    # references that 3 digits would print alike (psMNIST's loss: baseline 2.301, chance ln 10 = 2.303) get more
    psmnist = runlog_module.curves_figure([{"step": 1, "split": "valid", "loss": 2.0}],
                                          {"loss": {"baseline": 2.3012, "chance": 2.302585}})
    assert [line.get_label() for line in psmnist.axes[0].get_lines()][1:] == ["baseline 2.301", "chance 2.303"]
    assert runlog_module.reference_labels({"baseline": 3.0}) == {"baseline": "baseline 3.00"}  # not "3"
    import matplotlib.pyplot as plt
    plt.close("all")


def test_plot_curves_writes_the_figure_of_the_metrics_file(tmp_path, monkeypatch):
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "split": "train", "loss": 1.0}\n')
    drawn = []
    real = runlog_module.curves_figure
    (tmp_path / "config.json").write_text('{"task": "copy", "model": "nnrnn", "hidden": 8}')
    monkeypatch.setattr(runlog_module, "curves_figure", lambda records, references=None, title=None:
                        drawn.append((references, title)) or real(records, references, title))
    path = runlog_module.plot_curves(tmp_path, {"loss": {"baseline": 0.5}})
    png = path.read_bytes()
    assert path == tmp_path / "curves.png" and png[:8] == b"\x89PNG\r\n\x1a\n"
    # titled with task, model and run
    assert drawn == [({"loss": {"baseline": 0.5}}, f"copy, nnrnn with 8 units: {tmp_path.name}")]
    # one 4.2 × 3.4 in panel per metric, at 120 dpi: readable in a browser without scaling
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (504, 408)
    assert runlog_module.plot_curves(tmp_path / "no-run-here") is None


def test_the_tensorboard_writer_is_closed_when_training_ends(tmp_path, monkeypatch):
    from torch.utils.tensorboard import SummaryWriter
    closed, real_close = [], SummaryWriter.close

    def close(self):
        closed.append(self.log_dir)
        real_close(self)
    monkeypatch.setattr(SummaryWriter, "close", close)
    train(copy_config(tmp_path, steps=2, eval_every=2))
    assert closed == [str(tmp_path / "run" / "tensorboard")]  # its thread and file released, once


def test_a_new_run_hides_the_tensorboard_points_of_an_attempt_that_died_before_its_first_checkpoint(tmp_path):
    from nnrnn.training.runfolder import MARKER
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / MARKER).write_text("")  # an earlier attempt claimed the folder, logged, then was killed
    attempt = runlog_module.MetricsLog(folder, resume_step=None)
    attempt.log({"step": 1, "split": "train", "loss": 99.0})
    attempt.close()
    with pytest.raises(UserError, match="already holds a run; pass --resume"):  # its metrics are not thrown away
        train(copy_config(tmp_path, steps=2, eval_every=2))
    train(copy_config(tmp_path, steps=2, eval_every=2), resume=True)  # no checkpoint: from the beginning
    assert 99.0 not in [v for _, v in tensorboard_scalars(folder)["train/loss"]]
    assert tensorboard_scalars(folder)["train/loss"] == [
        (r["step"], pytest.approx(r["loss"])) for r in read_metrics(folder) if r["split"] == "train"]


@pytest.mark.parametrize("corrupt, expected", [("truncated", None), ("middle", "line 2 is not a JSON record"),
                                               ("not a record", "line 1 is not a metrics record")])
def test_a_damaged_metrics_file(corrupt, expected, capsys, finished, tmp_path):
    """A last line cut short (a kill or a full disk during its write) is dropped on resume; another damaged line
    is named with the file and its number."""
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    lines = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    text = {"truncated": "".join(lines) + lines[1][:20], "middle": lines[0] + lines[1][:20] + "\n" + "".join(lines[2:]),
            "not a record": "[1, 2]\n" + "".join(lines[1:])}[corrupt]
    (run / "metrics.jsonl").write_text(text)
    code, err = run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "6")
    if expected is None:
        assert code == 0, err
        assert [r["step"] for r in read_metrics(run) if r["split"] == "test"][-1] == 6
    else:
        one_line(code, err, str(run / "metrics.jsonl"), expected)

