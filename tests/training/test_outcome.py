"""A run's outcome (nnrnn.training.outcome): learned, did not learn or diverged, judged against the task's baseline
and chance, recorded in the run folder, printed as the run's last lines, shown by `nnrnn runs`, and a diverged run
stopped early with its own exit code."""
import json
import math

import pytest
from helpers import TINY, copy_config, script_validation

from nnrnn_cli import command as cli
from nnrnn.errors import TrainingDiverged
from nnrnn.tasks.copy import CopyTask
from nnrnn.training import outcome
from nnrnn.training.config import resolve_config
from nnrnn.training.runlog import read_metrics, run_title
from nnrnn.training.train import train


pytestmark = pytest.mark.usefixtures("undrawn_figures")  # what is trained and written, not the drawing


def run_cli(capsys, *argv):
    """``nnrnn *argv`` in this process: its exit code, stdout and stderr."""
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def valid(*losses):
    return [{"step": 10 * (i + 1), "split": "valid", "loss": loss} for i, loss in enumerate(losses)]


def outcome_of(records, baseline, chance, factor=outcome.DIVERGENCE_FACTOR, initial=None):
    limit = outcome.divergence_limit(baseline, chance, factor, initial)
    return outcome.from_records(records, baseline, chance, limit, factor)


def test_learned_means_at_least_ten_percent_below_the_baseline():
    assert outcome_of(valid(0.5, 0.089), baseline=0.1, chance=2.2).name == outcome.LEARNED
    assert outcome_of(valid(0.5, 0.091), baseline=0.1, chance=2.2).name == outcome.NOT_LEARNED
    # the best validation counts, not the last (best.pt holds the best)
    assert outcome_of(valid(0.05, 0.3), baseline=0.1, chance=2.2).name == outcome.LEARNED
    said = outcome_of(valid(1.047), baseline=1 / 6, chance=7 / 6)  # the adding run
    assert said.name == outcome.NOT_LEARNED and "528% above the baseline 0.1667" in said.reason


def test_answering_1_on_every_adding_sequence_is_not_learning_even_where_the_validation_set_favours_it():
    from nnrnn.tasks.adding import AddingTask
    task = AddingTask(seed=37, T=20)  # its 500 validation sequences: always answering 1 scores 0.148, 11% below 1/6
    targets = [t for b in task.eval_batches("valid") for t in b.targets.flatten().tolist()]
    constant = sum((t - 1) ** 2 for t in targets) / len(targets)
    assert constant < 0.9 / 6  # against 1/6 it would read as learned
    assert outcome_of(valid(constant), task.baseline, task.chance).name == outcome.NOT_LEARNED


def test_diverged_means_three_points_in_a_row_ten_times_above_baseline_chance_and_the_untrained_loss():
    assert outcome.divergence_limit(0.09, 2.2, 10) == pytest.approx(22.0)
    assert outcome.divergence_limit(0.09, 2.2, 10, initial=21.0) == pytest.approx(210.0)  # EURNN starts high
    assert outcome.divergence_limit(0.09, 2.2, 0) is None  # factor 0: only non-finite losses diverge
    assert outcome_of(valid(1.0, 22.1, 23, 24), 0.09, 2.2).name == outcome.DIVERGED
    assert outcome_of(valid(22.1, 23, 1.0, 24, 25), 0.09, 2.2).name == outcome.NOT_LEARNED  # spikes, then bad
    assert outcome_of(valid(1.0, 21.9, 21.9, 21.9), 0.09, 2.2).name == outcome.NOT_LEARNED  # bad, not diverged
    assert outcome_of(valid(1.0, 23, 24, 25), 0.09, 2.2, initial=3.0).name == outcome.NOT_LEARNED
    assert outcome_of(valid(1.0, math.inf), 0.09, 2.2).name == outcome.DIVERGED  # a non-finite last validation
    assert outcome_of(valid(1.0, 100.0, 100.0, 100.0), 0.09, 2.2, factor=100).name == outcome.NOT_LEARNED
    # psMNIST at the old default: losses far above chance (ln 10) however much they fell
    said = outcome_of(valid(2.4e7, 1e5, 8.8e3), math.log(10), math.log(10))
    assert said.name == outcome.DIVERGED and "the validation loss at update 30 is 8800, the last of 3" in said.reason


def test_a_run_that_learned_says_so_last_and_records_it(tmp_path, capsys, monkeypatch):
    script_validation(monkeypatch, "loss", [0.5, 0.01])
    train(copy_config(tmp_path, steps=4, eval_every=2))
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("[nnrnn] outcome: learned: best validation loss 0.01, ")
    saved = json.loads((tmp_path / "run" / "outcome.json").read_text())
    assert saved["name"] == "learned" and saved["baseline"] == pytest.approx(CopyTask(T=4).baseline)
    assert run_title(tmp_path / "run").endswith(": run (learned)")  # curves.png's title says it too
    (tmp_path / "run").rename(tmp_path / "copy")  # a folder named as its task: the name is said once
    assert run_title(tmp_path / "copy").startswith("copy, nnrnn with ") and ": copy" not in run_title(tmp_path / "copy")


def test_a_run_that_did_not_learn_says_so_in_its_last_lines_and_in_runs(tmp_path, capsys):
    for name in ("r", "r2"):
        code, out, _ = run_cli(capsys, "train", "copy", "--steps", "2", "--out", tmp_path / name, *TINY)
        assert code == 0  # it ran as asked; the outcome is in its last lines, not an error
    lines = out.strip().splitlines()
    assert "[nnrnn] outcome: DID NOT LEARN: best validation loss" in lines[-3]
    assert "the model did not learn" in lines[-2] and "--preset paper" in lines[-2]
    assert outcome.read(tmp_path / "r2").name == outcome.NOT_LEARNED
    code, table, _ = run_cli(capsys, "runs", tmp_path)
    assert code == 0 and table.count("did not learn") == 2 and "finished" not in table, table
    code, out, _ = run_cli(capsys, "train", "copy", "--preset", "paper", "--steps", "2", "--out", tmp_path / "p", *TINY)
    advice = out.strip().splitlines()[-2]  # a run of the paper's preset is not told to start from it
    assert code == 0 and advice.startswith("[nnrnn] the model did not learn: train longer") and "preset" not in advice


def test_a_run_far_above_chance_is_stopped_early_recorded_and_exits_3(tmp_path, capsys):
    code, out, err = run_cli(capsys, "train", "copy", "--model", "rnn", "--lr", "0.05", "--steps", "200",
                             "--log-every", "5", "--out", tmp_path / "r", *TINY)
    assert code == outcome.DIVERGED_EXIT_CODE == 3 and len(err.strip().splitlines()) == 1
    assert "training diverged: the training loss at update 15 is " in err and "--divergence-factor" in err
    assert out.strip().splitlines()[-1].startswith("[nnrnn] outcome: DIVERGED: the training loss at update 15 is")
    assert max(r["step"] for r in read_metrics(tmp_path / "r")) == 15  # stopped early, not after 200 updates
    assert outcome.read(tmp_path / "r").name == outcome.DIVERGED
    assert "diverged at update 15" in run_cli(capsys, "runs", tmp_path)[1]


def test_three_validation_losses_in_a_row_far_above_chance_end_the_run_and_two_do_not(tmp_path, monkeypatch):
    script_validation(monkeypatch, "loss", [1e3, 1e3, 0.5, 1e3, 1e3, 0.5])  # spikes: the run goes on
    train(copy_config(tmp_path, "spikes", steps=6, eval_every=1, log_every=6))
    assert outcome.read(tmp_path / "spikes").name != outcome.DIVERGED
    script_validation(monkeypatch, "loss", [1e3, 1e3, 1e3])
    with pytest.raises(TrainingDiverged, match=r"the validation loss at update 3 is 1000, the last of 3 logged "
                                               r"losses in a row above [0-9.]+ \(10 times the largest"):
        train(copy_config(tmp_path, steps=6, eval_every=1, log_every=6))
    assert max(r["step"] for r in read_metrics(tmp_path / "run")) == 3
    assert outcome.read(tmp_path / "run").name == outcome.DIVERGED


def test_a_resumed_run_counts_on_from_its_checkpoint_and_is_judged_again(tmp_path, monkeypatch):
    script_validation(monkeypatch, "loss", [1e3, 1e3, 1e3])
    with pytest.raises(TrainingDiverged):
        train(copy_config(tmp_path, steps=5, eval_every=1, log_every=5))
    script_validation(monkeypatch, "loss", [1e3, 0.01, 0.01])  # the checkpoint after update 2 had counted 2
    with pytest.raises(TrainingDiverged, match="at update 3 is 1000"):
        train(copy_config(tmp_path, steps=5, eval_every=1, log_every=5), resume=True)
    script_validation(monkeypatch, "loss", [0.01, 0.01, 0.01])
    train(copy_config(tmp_path, steps=5, eval_every=1, log_every=5), resume=True)
    assert outcome.read(tmp_path / "run").name == outcome.LEARNED


def test_a_grid_run_marked_diverged_by_an_older_nnrnn_reads_as_diverged(tmp_path):
    (tmp_path / "DIVERGED").write_text("training diverged: 20 non-finite losses\n")
    assert outcome.read(tmp_path).name == outcome.DIVERGED
    assert outcome.read(tmp_path / "nothing") is None


@pytest.mark.parametrize("task", ["copy", "adding", "psmnist", "ptb"])
def test_each_tasks_default_learns_beyond_its_baseline_at_a_small_size(task, tmp_path):
    """`nnrnn train TASK` at its defaults (nnRNN, the task's default learning rates), shortened to the small sizes
    of benchmarks/defaults_learn.py --small; the benchmark shows the same at the default sizes.  At the one rate
    every task had before (1e-3), psMNIST diverged and adding ended far above its baseline."""
    import sys
    from pathlib import Path

    from conftest import SHARED
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from defaults_learn import SMALL
    options = {"task": task, "progress": False, "out": str(tmp_path / task), **SMALL[task]}
    if task in ("psmnist", "ptb"):
        if not (SHARED / {"psmnist": "mnist", "ptb": "ptb"}[task]).is_dir():
            pytest.skip("the shared data is not here")
        options["data_dir"] = str(SHARED)
    train(resolve_config(options))
    ended = outcome.read(tmp_path / task)
    assert ended.name == outcome.LEARNED, ended.reason


def test_the_divergence_factor_option_moves_the_limit_and_0_leaves_only_non_finite_losses(tmp_path, monkeypatch):
    script_validation(monkeypatch, "loss", [1e3, 1e3, 1e3])
    train(copy_config(tmp_path, "wide", steps=3, eval_every=1, log_every=3, divergence_factor=1e4))  # 1000 < limit
    assert outcome.read(tmp_path / "wide").name == outcome.NOT_LEARNED
    script_validation(monkeypatch, "loss", [1e3, 1e3, 1e3])
    train(copy_config(tmp_path, "off", steps=3, eval_every=1, log_every=3, divergence_factor=0))
    assert outcome.read(tmp_path / "off").name == outcome.NOT_LEARNED
