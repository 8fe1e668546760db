"""--stop-when-solved F: a run stops once its validation loss is below F × the task's baseline at two validations in
a row, its outcome records the update, and a run interrupted between the two validations and resumed stops exactly
where the uninterrupted one does (the memory grid's runs, nnrnn.experiments.grids.memory, rely on all three)."""
import pytest
from helpers import copy_config, script_validation

from nnrnn.errors import OptionError
from nnrnn.tasks.copy import baseline_loss
from nnrnn.training import outcome
from nnrnn.training.config import resolve_config
from nnrnn.training.runlog import read_metrics
from nnrnn.training.train import train

pytestmark = pytest.mark.usefixtures("undrawn_figures")

LOW, HIGH = 0.05 * baseline_loss(4), 0.5 * baseline_loss(4)  # below and above 0.1 × copy's baseline at T = 4
# one low validation alone (update 2) does not stop the run; two in a row (updates 4 and 5) do
SCRIPT = [HIGH, LOW, HIGH, LOW, LOW, LOW, LOW, LOW]


def solving(tmp_path, name):
    return copy_config(tmp_path, name, steps=8, eval_every=1, log_every=1, stop_when_solved=0.1)


def test_a_run_stops_at_the_second_validation_in_a_row_below_the_threshold(tmp_path, monkeypatch):
    script_validation(monkeypatch, "loss", list(SCRIPT))
    train(solving(tmp_path, "run"))
    ended = outcome.read(tmp_path / "run")
    assert (ended.name, ended.solved_at) == (outcome.LEARNED, 5) and "solved at update 5" in ended.reason
    assert max(r["step"] for r in read_metrics(tmp_path / "run")) == 5
    assert outcome.finished(ended, read_metrics(tmp_path / "run"))
    script_validation(monkeypatch, "loss", list(SCRIPT))  # without the option the same run trains to its end
    train(copy_config(tmp_path, "plain", steps=8, eval_every=1, log_every=1))
    assert outcome.read(tmp_path / "plain").solved_at is None
    assert max(r["step"] for r in read_metrics(tmp_path / "plain")) == 8


def test_a_run_killed_after_its_first_low_validation_resumes_to_the_same_stop(tmp_path, monkeypatch):
    script_validation(monkeypatch, "loss", list(SCRIPT))
    train(solving(tmp_path, "whole"))
    script_validation(monkeypatch, "loss", list(SCRIPT))

    def killed_at_four(step, record):
        if step == 4:  # after update 4's low validation and its checkpoint, before update 5's
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(solving(tmp_path, "part"), on_eval=killed_at_four)
    assert outcome.read(tmp_path / "part") is None
    script_validation(monkeypatch, "loss", SCRIPT[4:])
    train(solving(tmp_path, "part"), resume=True)
    assert read_metrics(tmp_path / "part") == read_metrics(tmp_path / "whole")
    assert outcome.read(tmp_path / "part").solved_at == 5
    train(solving(tmp_path, "part"), resume=True)  # solved: nothing more to train
    assert read_metrics(tmp_path / "part") == read_metrics(tmp_path / "whole")
    assert outcome.read(tmp_path / "part").solved_at == 5


@pytest.mark.parametrize("bad", [0, 1.5, -0.1, float("nan")])
def test_the_threshold_is_a_share_of_the_baseline(bad):
    with pytest.raises(OptionError, match="stop_when_solved"):
        resolve_config({"task": "copy", "model": "nnrnn", "stop_when_solved": bad})
