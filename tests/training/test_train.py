"""nnrnn.training.train: the training loop: what the optimizer groups hold, that the penalty and lr_orth act in the real
loop, validation, best checkpoints, skipped updates, the plateau stop, signals, several processes, and exact resume
(in process, after kill -9 and after SIGTERM).  References come from the paper or from an independent
computation, never from the module under test."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from helpers import TINY as TINY_ARGV
from helpers import (
    UNDRAWN,
    copy_config,
    fake_ptb,
    nan_losses_at,
    on_training_losses,
    one_line,
    parameters,
    run_cli,
    script_validation,
    snapshot,
    spy_states,
    undraw,
    with_network,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from nnrnn.training import checkpoint
from nnrnn.training import config as config_module
from nnrnn.training import evaluation
from nnrnn_cli import command as nnrnn_cli
from nnrnn import errors as errors_module
from nnrnn.training import network as network_module
from nnrnn.training import runlog as runlog_module
from nnrnn.training import train as trainer
from nnrnn.training.config import check_resumable, resolve_config
from conftest import SHARED, needs_mnist
from nnrnn.errors import OptionError, TrainingDiverged, UserError
from nnrnn.training.evaluation import evaluate_checkpoint
from nnrnn.training.interrupt import StopRequested
from nnrnn.training.network import load_model
from nnrnn.training.runlog import read_metrics
from nnrnn.training.train import make_optimizer, train

REPO = Path(__file__).resolve().parents[2]


TINY = {"task": "copy", "model": "nnrnn", "hidden": 16, "T": 5, "batch_size": 8, "log_every": 2,
        "eval_every": 4, "progress": False, "lr": 1e-2}


pytestmark = pytest.mark.usefixtures("undrawn_figures")  # what is trained and written, not the drawing


def tiny(tmp_path, name="run", **options):
    return resolve_config({**TINY, "out": str(tmp_path / name), **options})


def cli(*args, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-m", "nnrnn", *args], capture_output=True, text=True, env=env,
                          cwd=kwargs.pop("cwd", None), timeout=kwargs.pop("timeout", 300), **kwargs)


def model_params(path):
    return checkpoint.load(path)["model"]


def test_run_folder_contents(tmp_path):
    result = train(tiny(tmp_path, steps=8))
    folder = tmp_path / "run"
    for name in ("config.json", "metrics.jsonl", "checkpoints/last.pt", "checkpoints/best.pt", "curves.png"):
        assert (folder / name).is_file(), name
    assert list((folder / "tensorboard").iterdir())
    records = read_metrics(folder)
    assert {r["split"] for r in records} == {"train", "valid", "test"}
    assert all("loss" in r and "accuracy" in r for r in records)
    assert [r["step"] for r in records if r["split"] == "train"] == [2, 4, 6, 8]
    config = json.loads((folder / "config.json").read_text())
    assert config["hidden"] == 16 and config["lr"] == 1e-2 and config["optimizer"] == "rmsprop"
    assert result["test"] == evaluate_checkpoint(folder / "checkpoints" / "best.pt")
    assert result["valid"] == [r for r in records if r["split"] == "valid"][-1]  # the last validation
    assert evaluate_checkpoint(folder / "checkpoints" / "best.pt", split="valid") != result["test"]


def test_preset_then_explicit_flags():
    config = resolve_config({"task": "copy", "model": "nnrnn", "lr": 0.01}, "paper")
    assert config["preset"] == "paper"  # recorded in the run's config.json
    assert config["hidden"] == 128 and config["lr_orth"] == 1e-6 and config["delta"] == 1e-4
    assert config["lr"] == 0.01 and config["init"] == "henaff"
    assert resolve_config({"task": "copy", "model": "exprnn"}, "paper-params")["hidden"] == 176
    assert resolve_config({"task": "ptb", "model": "nnrnn", "bptt": 300}, "paper")["lr_orth"] == 6e-5


@pytest.mark.parametrize("bad, message", [({"hidden": 0}, "hidden"), ({"lr": -1.0}, "lr"),
                                          ({"steps": 0}, "steps"), ({"model": "rwkv"}, "nnrnn"),
                                          ({"task": "mnist"}, "psmnist")])
def test_bad_options_name_the_option(bad, message):
    with pytest.raises(ValueError, match=message):
        resolve_config({**TINY, **bad})


def test_resume_after_interruption_is_exact(tmp_path):
    """Stopping after update 8 and resuming gives the metrics and weights of one uninterrupted run."""
    train(tiny(tmp_path, "whole", steps=12, checkpoint_every=2))
    part = tiny(tmp_path, "part", steps=12, checkpoint_every=2)
    calls = []

    def stop_at_six(step, record):
        calls.append(step)
        if step == 8:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(part, on_eval=stop_at_six)
    saved = checkpoint.load(tmp_path / "part" / "checkpoints" / "last.pt")
    assert saved["step"] == 8
    train(part, resume=True)
    whole, resumed = read_metrics(tmp_path / "whole"), read_metrics(tmp_path / "part")
    assert whole == resumed
    a, b = model_params(tmp_path / "whole/checkpoints/last.pt"), model_params(tmp_path / "part/checkpoints/last.pt")
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("model", ["nnrnn", "lstm", "lru"])
def test_a_run_with_state_noise_resumes_exactly_and_scores_its_checkpoints_again(tmp_path, model):
    """--state-noise draws in training and evaluation: a run stopped after update 6 and resumed gives the metrics
    and weights of one uninterrupted run, its checkpoints score what they scored in training, and the noise acts
    (a noiseless run differs); for a model on the fused loops, one on its reference loop, one on its scan."""
    options = {"model": model, "steps": 12, "checkpoint_every": 2, "eval_every": 2, "state_noise": 0.5,
               "num_layers": 2}
    train(tiny(tmp_path, "whole", **options))

    def stop_at_six(step, record):
        if step == 6:
            raise KeyboardInterrupt
    part = tiny(tmp_path, "part", **options)
    with pytest.raises(KeyboardInterrupt):
        train(part, on_eval=stop_at_six)
    assert checkpoint.load(tmp_path / "part" / "checkpoints" / "last.pt")["step"] == 6
    train(part, resume=True)
    whole, resumed = read_metrics(tmp_path / "whole"), read_metrics(tmp_path / "part")
    assert whole == resumed
    a, b = model_params(tmp_path / "whole/checkpoints/last.pt"), model_params(tmp_path / "part/checkpoints/last.pt")
    assert all(torch.equal(a[k], b[k]) for k in a)
    valid = [r for r in whole if r["split"] == "valid"]
    best = min(valid, key=lambda r: r["loss"])
    assert evaluate_checkpoint(tmp_path / "whole/checkpoints/best.pt", split="valid")["loss"] == best["loss"]
    assert [r for r in whole if r["split"] == "test"][0]["loss"] == \
        evaluate_checkpoint(tmp_path / "whole/checkpoints/best.pt")["loss"]
    train(tiny(tmp_path, "quiet", **{**options, "state_noise": 0.0}))
    assert read_metrics(tmp_path / "quiet") != whole


@pytest.mark.subprocess
def test_kill_9_then_resume_matches_uninterrupted(tmp_path, undrawn_figures):
    """A real SIGKILL of a training process at an arbitrary moment, then --resume (the README's line).  Only the
    killed run needs a process of its own: the whole run and the resume run here, none draws its curves."""
    common = ["train", "copy", "--hidden", "16", "--T", "5", "--batch-size", "8", "--steps", "300",
              "--log-every", "10", "--eval-every", "50", "--checkpoint-every", "10", "--no-progress", "--seed", "3"]
    assert nnrnn_cli.main([*common, "--out", str(tmp_path / "whole")]) == 0
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    script = UNDRAWN + "import sys\nfrom nnrnn_cli.command import main\nsys.exit(main(sys.argv[1:]))\n"
    proc = subprocess.Popen([sys.executable, "-c", script, *common, "--out", str(tmp_path / "killed")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last = tmp_path / "killed" / "checkpoints" / "last.pt"
    deadline = time.time() + 120
    while not last.exists() and time.time() < deadline:  # killed right after its first checkpoint, so that on a
        time.sleep(0.01)                                   # fast host too the kill lands well before the end
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    step = checkpoint.load(last)["step"]
    assert 0 < step < 300, "the kill should land mid-run"
    assert nnrnn_cli.main([*common, "--out", str(tmp_path / "killed"), "--resume"]) == 0
    assert read_metrics(tmp_path / "whole") == read_metrics(tmp_path / "killed")
    # what the run measured of its V when it ended (nnrnn.analysis.mechanism), to the last digit
    assert (tmp_path / "whole" / "mechanism.json").read_bytes() == (tmp_path / "killed" / "mechanism.json").read_bytes()
    a, b = model_params(tmp_path / "whole/checkpoints/last.pt"), model_params(last)
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.subprocess
def test_sigterm_saves_a_checkpoint(tmp_path):
    args = ["train", "copy", "--hidden", "16", "--T", "5", "--steps", "100000", "--no-progress",
            "--checkpoint-every", "100000", "--eval-every", "100000", "--out", str(tmp_path / "run")]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "nnrnn", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (tmp_path / "run" / "metrics.jsonl").exists() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM
    assert "--resume" in err and "Traceback" not in err
    assert checkpoint.load(tmp_path / "run" / "checkpoints" / "last.pt")["step"] > 0


def test_refuses_to_overwrite_and_resume_mismatch(tmp_path):
    train(tiny(tmp_path, steps=2))
    with pytest.raises(UserError, match="--resume"):
        train(tiny(tmp_path, steps=2))
    with pytest.raises(UserError, match="hidden"):
        train(tiny(tmp_path, steps=4, hidden=32), resume=True)
    with pytest.raises(UserError, match="holds no nnrnn run"):
        train(tiny(tmp_path, "fresh", steps=2), resume=True)


def test_an_option_the_saved_run_did_not_have_takes_its_default_on_resume(tmp_path):
    """A run saved before an option existed resumes with the option's default (which keeps the earlier
    behaviour); the option given with another value is refused, naming it."""
    config = tiny(tmp_path, steps=2)
    saved = {k: v for k, v in config.items() if k != "clip"}
    check_resumable(saved, config, tmp_path)
    with pytest.raises(UserError, match="option clip was None and is now 0.5"):
        check_resumable(saved, {**config, "clip": 0.5}, tmp_path)


def test_divergence_stops_and_keeps_last_good_checkpoint(tmp_path):
    config = tiny(tmp_path, steps=50, lr=1e30, max_bad_steps=3, checkpoint_every=1, eval_every=1,
                  model="rnn", nonlinearity="relu")
    with pytest.raises(TrainingDiverged, match="diverged"):
        train(config)
    saved = checkpoint.load(tmp_path / "run" / "checkpoints" / "last.pt")
    assert all(torch.isfinite(v).all() for v in saved["model"].values())
    assert any(r.get("event") == "skipped update" for r in read_metrics(tmp_path / "run"))


def test_corrupt_and_foreign_checkpoints(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(UserError, match="not a readable nnrnn checkpoint"):
        checkpoint.load(bad)
    foreign = tmp_path / "foreign.pt"
    torch.save({"state_dict": {}}, foreign)
    with pytest.raises(UserError, match="another program"):
        checkpoint.load(foreign)
    train(tiny(tmp_path, steps=2))
    truncated = tmp_path / "trunc.pt"
    data = (tmp_path / "run/checkpoints/last.pt").read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError):
        checkpoint.load(truncated)


def test_load_model_for_analysis(tmp_path):
    train(tiny(tmp_path, steps=2))
    net, config = load_model(tmp_path / "run")
    assert config["model"] == "nnrnn"
    assert net.rnn.recurrent_matrix().shape == (16, 16)


def test_load_model_takes_the_best_checkpoint_of_a_folder_else_the_last(tmp_path):
    train(tiny(tmp_path, steps=2))
    folder = tmp_path / "run" / "checkpoints"
    last = checkpoint.load(folder / "last.pt")
    last["model"]["readout.bias"] = last["model"]["readout.bias"] + 1.0  # tell the two files apart
    checkpoint.save(folder / "last.pt", last)
    best_bias = model_params(folder / "best.pt")["readout.bias"]
    assert torch.equal(load_model(tmp_path / "run")[0].readout.bias, best_bias)
    (folder / "best.pt").unlink()
    assert torch.equal(load_model(tmp_path / "run")[0].readout.bias, last["model"]["readout.bias"])


@pytest.mark.subprocess
def test_two_processes_match_one(tmp_path, monkeypatch):
    """torchrun with 2 CPU processes (gloo) reaches the parameters of 1 process on the same global batch, for
    rnn and for exprnn (its rebase), each launch training both (one launch each: a start is most of its time).
    The one process is this one, running the same script; no process draws its curves (not what is checked)."""
    script = tmp_path / "run.py"
    script.write_text(
        UNDRAWN
        + "import sys\nfrom nnrnn.training.config import resolve_config\nfrom nnrnn.training.train import train\n"
        "from nnrnn.training import distributed\n"
        "from nnrnn.tasks.copy import CopyTask\n"
        # update 3's last sequence, in rank 1's half, holds a NaN: one process skips that update, so two must
        "batch = CopyTask.train_batch\n"
        "def poisoned(self, step):\n"
        "    b = batch(self, step)\n"
        "    if step == 2:\n        b.inputs[0, -1, 0] = float('nan')\n"
        "    return b\n"
        "CopyTask.train_batch = poisoned\n"
        "for model in ('rnn', 'exprnn'):\n"
        f"    train(resolve_config({{**{TINY!r}, 'model': model, 'out': f'{{sys.argv[1]}}/{{model}}', 'steps': 6}}))\n"
        "distributed.cleanup()\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    import matplotlib.figure

    from nnrnn.tasks.copy import CopyTask
    for owner, name in ((CopyTask, "train_batch"), (matplotlib.figure.Figure, "savefig"),
                        (matplotlib.figure.Figure, "tight_layout")):
        monkeypatch.setattr(owner, name, getattr(owner, name))  # the script's patches are undone after the test
    monkeypatch.setattr(sys, "argv", [str(script), str(tmp_path / "one")])
    exec(compile(script.read_text(), str(script), "exec"), {"__name__": "__main__"})
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                          "--standalone", str(script), str(tmp_path / "two")],
                         env=env, capture_output=True, timeout=300)
    assert two.returncode == 0, two.stderr.decode()[-2000:]
    for model in ("rnn", "exprnn"):
        single, pair = tmp_path / "one" / model, tmp_path / "two" / model
        a, b = model_params(single / "checkpoints/last.pt"), model_params(pair / "checkpoints/last.pt")
        for key in a:
            torch.testing.assert_close(a[key], b[key], rtol=1e-4, atol=1e-5, msg=f"{model} {key}")
        assert [r["step"] for r in read_metrics(pair)] == [r["step"] for r in read_metrics(single)]
        assert [r["step"] for r in read_metrics(pair) if r.get("event") == "skipped update"] == [3], model


def test_resume_refuses_a_checkpoint_from_another_model(tmp_path):
    train(tiny(tmp_path, "a", steps=2))
    train(tiny(tmp_path, "b", steps=2, model="exprnn"))
    (tmp_path / "a/checkpoints/last.pt").write_bytes((tmp_path / "b/checkpoints/last.pt").read_bytes())
    with pytest.raises(UserError, match="exprnn"):
        train(tiny(tmp_path, "a", steps=4), resume=True)


def test_check_inputs_stops_on_nan(tmp_path, monkeypatch):
    from nnrnn.tasks.copy import CopyTask, make_batch

    def poisoned(T, batch_size, gen):
        inputs, targets = make_batch(T, batch_size, gen)
        inputs[0, 0, 0] = float("nan")
        return inputs, targets
    monkeypatch.setattr(CopyTask, "make_batch", staticmethod(poisoned))
    with pytest.raises(UserError, match="NaN or Inf"):
        train(tiny(tmp_path, steps=2, check_inputs=True))


def test_optimizer_groups_hold_each_parameter_once_at_its_learning_rate(tmp_path):
    config = copy_config(tmp_path, lr=3e-3, lr_orth=2e-5)
    _, net = network_module.build(config)
    optimizer = make_optimizer(config, net)
    groups = {g["name"]: g for g in optimizer.param_groups}
    generator = net.rnn.parametrizations.weight_hh_l0.original
    assert [p is generator for p in groups["orthogonal"]["params"]] == [True] and groups["orthogonal"]["lr"] == 2e-5
    rest = {id(p) for p in groups["default"]["params"]}
    assert rest == {id(p) for p in net.parameters() if p is not generator} and groups["default"]["lr"] == 3e-3
    assert isinstance(optimizer, torch.optim.RMSprop) and optimizer.defaults["alpha"] == config["alpha"]
    assert make_optimizer({**config, "alpha": 0.9}, net).defaults["alpha"] == 0.9
    adam = make_optimizer({**config, "optimizer": "adam", "betas": [0.8, 0.95]}, net)
    assert isinstance(adam, torch.optim.Adam) and adam.defaults["betas"] == (0.8, 0.95)
    assert [(g["name"], g["lr"], len(g["params"])) for g in adam.param_groups] == \
        [(g["name"], g["lr"], len(g["params"])) for g in optimizer.param_groups]


def test_the_penalty_acts_on_gamma_and_t_in_the_training_loop(tmp_path, monkeypatch):
    """δ Σ(1 - γ)² and t_decay‖T‖²/2 in the trainer's loss: with γ = 0.5 and a large δ every γ moves up in
    the first update; with a large t_decay every entry of T moves toward 0 (RMSprop's first step has the
    sign of the gradient, which these penalties dominate)."""
    torch.manual_seed(0)
    t0 = torch.randn(8, 8).tril(-1)

    def edit(net):
        net.rnn.schur_form.gamma.fill_(0.5)
        net.rnn.schur_form.lower.copy_(t0)
    with_network(monkeypatch, edit)
    train(copy_config(tmp_path, steps=1, delta=1e4, t_decay=1e4, lr=1e-3))
    after = parameters(tmp_path / "run")
    gamma, lower = (after["rnn.parametrizations.weight_hh_l0.0.gamma"],
                    after["rnn.parametrizations.weight_hh_l0.0.lower"])
    assert torch.all(gamma > 0.5)
    moved = lower[t0 != 0]
    assert torch.all(moved.abs() < t0[t0 != 0].abs())


def test_the_orthogonal_generator_trains_at_lr_orth(tmp_path):
    train(copy_config(tmp_path, steps=3, lr=1e-2, lr_orth=1e-7))
    start = parameters(tmp_path / "run")
    config = copy_config(tmp_path, name="init", steps=1, lr=1e-12, lr_orth=1e-12)
    _, net = network_module.build(config)  # the same seed: the initial parameters of the run above
    initial = net.state_dict()
    generator = "rnn.parametrizations.weight_hh_l0.original"
    moved = (start[generator] - initial[generator]).abs().max().item()
    assert 0 < moved < 3 * 1e-7 * 10 * 1.01  # RMSprop moves at most lr / sqrt(1 - α) per update: α = 0.99 → 10 lr
    assert (start["rnn.weight_ih_l0"] - initial["rnn.weight_ih_l0"]).abs().max().item() > 1e-3


def test_resume_restores_the_carried_ptb_state_and_the_schedule(tmp_path, monkeypatch):
    """PTB carries the hidden state across segments and halves the learning rate on a plateau: a run stopped
    after 3 updates and resumed to 6 ends with the parameters, learning rates and metrics of a run of 6."""
    data = fake_ptb(tmp_path / "ptb")
    scores = {"whole": iter([3.0, 3.1, 2.9, 3.2, 2.8, 3.3, 9, 9]), "split": iter([3.0, 3.1, 2.9, 3.2, 2.8, 3.3, 9, 9])}
    which = {"run": "whole"}
    real_evaluate = evaluation.evaluate

    def scripted(net, task, split, device):
        metrics = real_evaluate(net, task, split, device)
        return {**metrics, "bpc": next(scores[which["run"]]) if split == "valid" else metrics["bpc"]}
    monkeypatch.setattr(evaluation, "evaluate", scripted)
    options = dict(task="ptb", model="nnrnn", hidden=8, batch_size=4, bptt=7, eval_every=1, log_every=1,
                   eval_batch_size=2, lr_schedule="plateau", progress=False, data_dir=str(data))
    train(resolve_config({**options, "steps": 6, "out": str(tmp_path / "whole")}))
    which["run"] = "split"
    train(resolve_config({**options, "steps": 3, "out": str(tmp_path / "split")}))
    saved = checkpoint.load(tmp_path / "split" / "checkpoints" / "last.pt")
    assert saved["state"] is not None and saved["state"].abs().sum() > 0  # a carried state was saved
    train(resolve_config({**options, "steps": 6, "out": str(tmp_path / "split")}), resume=True)
    a, b = parameters(tmp_path / "whole"), parameters(tmp_path / "split")
    assert all(torch.equal(a[k], b[k]) for k in a)
    lrs = lambda run: [r["lr"] for r in read_metrics(tmp_path / run) if r["split"] == "train"]
    assert lrs("whole") == lrs("split") and len(set(lrs("whole"))) > 1  # the schedule fired, identically


def test_last_checkpoint_holds_the_state_carried_into_the_next_segment(tmp_path):
    data = fake_ptb(tmp_path / "ptb")
    config = resolve_config(dict(task="ptb", model="exprnn", hidden=8, batch_size=4, bptt=7, steps=3, eval_every=3,
                                 eval_batch_size=2, progress=False, data_dir=str(data), out=str(tmp_path / "r")))
    train(config)
    saved = checkpoint.load(tmp_path / "r" / "checkpoints" / "last.pt")
    assert saved["state"].shape == (1, 4, 8)  # (layers, streams, hidden): carried into update 4


@pytest.mark.parametrize("mode, first, better, worse", [("max", 0.5, 0.5 + 1e-9, 0.4), ("min", 2.0, 2.0 - 1e-9, 2.5)])
def test_the_plateau_schedule_halves_every_rate_after_a_validation_not_strictly_better(mode, first, better, worse):
    """The authors' PTB rule: any strict improvement keeps the rates, however small; an equal or worse score
    halves lr and lr_orth, however small lr_orth already is."""
    p, q = nn.Parameter(torch.zeros(1)), nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.RMSprop([{"params": [p], "lr": 1e-3}, {"params": [q], "lr": 1e-8}])
    task = SimpleNamespace(name="copy", monitor=("loss", mode), steps_per_epoch=None)
    assert trainer.make_schedule({"lr_schedule": "none"}, optimizer, task) is None
    schedule = trainer.make_schedule({"lr_schedule": "plateau"}, optimizer, task)
    rates = lambda: [group["lr"] for group in optimizer.param_groups]  # noqa: E731
    for score, expected in ((first, [1e-3, 1e-8]), (better, [1e-3, 1e-8]), (better, [5e-4, 5e-9]),
                            (worse, [2.5e-4, 2.5e-9])):
        schedule.step(score)
        assert rates() == expected, score


def test_the_step_schedule_divides_every_rate_by_ten_after_every_given_number_of_epochs():
    p, q = nn.Parameter(torch.zeros(1)), nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([{"params": [p], "lr": 1e-3}, {"params": [q], "lr": 1e-5}])
    task = SimpleNamespace(name="psmnist", monitor=("accuracy", "max"), steps_per_epoch=3)
    schedule = trainer.make_schedule({"lr_schedule": "step", "lr_step_epochs": 2}, optimizer, task)
    rates = []
    for _ in range(13):  # as the trainer does: the rate of update k + 1 is set after update k
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert rates == pytest.approx([1e-3] * 6 + [1e-4] * 6 + [1e-5])  # after epochs 2 and 4 (updates 6 and 12)
    assert optimizer.param_groups[1]["lr"] == pytest.approx(1e-7)  # every group's rate, divided twice
    assert trainer.make_schedule({"lr_schedule": "step", "lr_step_epochs": None}, optimizer, task).step_size == 300


def test_the_step_schedule_is_refused_before_anything_is_written_where_it_cannot_act(tmp_path):
    from nnrnn.training.config import resolve_config
    with pytest.raises(OptionError, match="lr_schedule step counts epochs, and copy draws fresh batches"):
        resolve_config({"task": "copy", "lr_schedule": "step", "out": str(tmp_path / "run")})
    with pytest.raises(OptionError, match="lr_step_epochs needs lr_schedule step"):
        resolve_config({"task": "psmnist", "lr_step_epochs": 3})
    assert not (tmp_path / "run").exists()
    assert resolve_config({"task": "psmnist", "lr_schedule": "step"})["lr_step_epochs"] is None  # 100 epochs


def test_training_stops_after_the_asked_number_of_halvings_and_stays_stopped(tmp_path, monkeypatch, capsys):
    scores = iter([3.0, 3.1, 2.9, 3.0, 3.0, 2.0, 1.0, 0.5, 9.0])  # halvings after validations 2, 4 and 5
    monkeypatch.setattr(evaluation, "evaluate", lambda net, task, split, device: {"loss": next(scores)})
    config = copy_config(tmp_path, steps=40, lr=1e-3, lr_schedule="plateau", stop_after_halvings=3)
    train(config)
    records = read_metrics(tmp_path / "run")
    stop = next(r for r in records if r.get("event") == "stopped")
    assert stop == {"step": 5, "split": "train", "event": "stopped", "reason": "learning rates halved 3 times"}
    assert records[-1]["split"] == "test" and records[-1]["step"] == 5
    assert checkpoint.load(tmp_path / "run" / "checkpoints" / "last.pt")["step"] == 5
    before = (tmp_path / "run" / "metrics.jsonl").read_text()
    capsys.readouterr()
    train(config, resume=True)  # nothing more to train
    assert (tmp_path / "run" / "metrics.jsonl").read_text() == before
    assert "already stopped after 3 halvings of the learning rate; nothing to train" in capsys.readouterr().out
    with pytest.raises(ValueError, match="stop_after_halvings needs lr_schedule plateau"):
        copy_config(tmp_path, stop_after_halvings=2)


def test_dynamic_trivialization_trains_and_resumes_exactly(tmp_path):
    # 7 updates, a rebase after updates 3 and 6: a rule off by one or inverted counts 3 or 5
    whole = copy_config(tmp_path, "whole", steps=7, rebase_every=3, model="exprnn")
    train(whole)
    train(copy_config(tmp_path, "split", steps=4, rebase_every=3, model="exprnn"))
    train(copy_config(tmp_path, "split", steps=7, rebase_every=3, model="exprnn"), resume=True)
    a, b = parameters(tmp_path / "whole"), parameters(tmp_path / "split")
    assert ("rnn.parametrizations.weight_hh_l0.0.base" in a
            and int(a["rnn.parametrizations.weight_hh_l0.0.rebases"]) == 2)
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="--rebase-every applies to exprnn, nnrnn, not to lstm"):
        copy_config(tmp_path, model="lstm", rebase_every=1)


def test_resuming_with_the_metrics_file_gone_starts_a_new_one(tmp_path):
    runlog_module.MetricsLog(tmp_path, resume_step=4).close()  # no metrics.jsonl: nothing to keep, no error
    assert (tmp_path / "metrics.jsonl").read_text() == ""


def test_interrupted_names_the_signal_and_the_checkpoint_and_exits_as_a_shell_would(tmp_path):
    import pickle
    import signal
    error = errors_module.Interrupted(signal.SIGTERM, tmp_path / "last.pt")
    assert str(error) == f"stopped by signal SIGTERM; checkpoint saved to {tmp_path / 'last.pt'}"
    assert error.exit_code == 128 + 15 and error.advice == "continue with --resume"
    copy = pickle.loads(pickle.dumps(errors_module.Interrupted(signal.SIGINT, tmp_path, "run it again")))
    assert (copy.signum, copy.path, copy.advice, copy.exit_code) == (signal.SIGINT, tmp_path, "run it again", 130)


def test_a_signal_during_training_is_recorded_and_the_handlers_are_restored():
    import signal
    before = signal.getsignal(signal.SIGTERM)
    with StopRequested() as stop:
        assert stop.signal is None
        os.kill(os.getpid(), signal.SIGTERM)  # handled at the next bytecode: the process does not end
        assert stop.signal == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


def test_ctrl_c_while_a_finished_run_is_scored_says_how_to_go_on_and_resume_scores_it(tmp_path, capsys, monkeypatch):
    config = copy_config(tmp_path, steps=4, log_every=2, eval_every=2)
    whole = train(copy_config(tmp_path, "whole", steps=4, log_every=2, eval_every=2))
    real = evaluation.evaluate

    def interrupted_at_test(net, task, split, *args, **kwargs):
        if split == "test":
            raise KeyboardInterrupt
        return real(net, task, split, *args, **kwargs)
    monkeypatch.setattr(evaluation, "evaluate", interrupted_at_test)
    with pytest.raises(errors_module.Interrupted) as stopped:
        train(config)
    assert stopped.value.exit_code == 130 and stopped.value.path == Path(config["out"]) / "checkpoints" / "last.pt"
    assert stopped.value.advice == "continue with --resume"  # the CLI prints it, as for a stop during training
    monkeypatch.setattr(evaluation, "evaluate", real)
    assert train(config, resume=True)["test"] == whole["test"]


def test_resuming_a_finished_run_returns_what_the_run_returned(tmp_path):
    config = copy_config(tmp_path, steps=4, log_every=2, eval_every=2)
    first = train(config)
    assert set(first) == {"valid", "test"} and set(first["test"]) == {"loss", "accuracy"}
    assert first["valid"]["step"] == 4
    assert train(config, resume=True) == first  # read back from metrics.jsonl this time
    assert trainer.result(tmp_path / "no-metrics-yet", main=True) == {"valid": None}
    assert trainer.result(tmp_path / "run", main=False) == {}  # other ranks report nothing


def test_on_end_is_called_when_the_run_ends_before_its_outcome_is_written(tmp_path):
    """train()'s run-end hook (with which `nnrnn train` and the grids write mechanism.json): not called for a run
    stopped; called once when it ends, before outcome.json (a grid counts a run with an outcome as finished), a
    record of an earlier ending removed first; again when a resume finds the run finished; and for a divergence."""
    calls = []

    def on_end(folder):
        folder = Path(folder)
        calls.append((folder, (folder / "outcome.json").exists(), (folder / "mechanism.json").exists()))

    def stop(step, record):
        raise KeyboardInterrupt
    config = copy_config(tmp_path, steps=4, log_every=2, eval_every=2)
    with pytest.raises(KeyboardInterrupt):
        train(config, on_eval=stop, on_end=on_end)
    assert calls == []
    (tmp_path / "run" / "mechanism.json").write_text("{}")  # measured at an earlier ending: out of date
    train(config, resume=True, on_end=on_end)
    assert calls == [(tmp_path / "run", False, False)] and (tmp_path / "run" / "outcome.json").is_file()
    train(config, resume=True, on_end=on_end)  # finished already: it ends again
    assert len(calls) == 2
    diverging = tiny(tmp_path, "diverged", steps=50, lr=1e30, max_bad_steps=3, checkpoint_every=1, eval_every=1,
                     model="rnn", nonlinearity="relu")
    with pytest.raises(TrainingDiverged):
        train(diverging, on_end=on_end)
    assert calls[2] == (tmp_path / "diverged", False, False)


def test_synthetic_tasks_validate_every_250_updates_unless_told(tmp_path):
    copy = network_module.build_task(copy_config(tmp_path))
    assert config_module.evaluation_interval(copy_config(tmp_path, eval_every=None), copy) == 250
    assert config_module.evaluation_interval(copy_config(tmp_path, eval_every=7), copy) == 7


def test_epochs_train_that_many_passes_over_the_training_segments(tmp_path):
    data = fake_ptb(tmp_path / "ptb")
    config = resolve_config(dict(task="ptb", model="exprnn", hidden=8, batch_size=32, bptt=50, eval_batch_size=8,
                                 epochs=2, log_every=1, progress=False, data_dir=str(data),
                                 out=str(tmp_path / "run")))
    per_epoch = network_module.build_task(config).steps_per_epoch
    assert 1 < per_epoch < 20
    train(config)
    records = read_metrics(tmp_path / "run")
    assert [r["step"] for r in records if r["split"] == "train"] == list(range(1, 2 * per_epoch + 1))
    assert [r["step"] for r in records if r["split"] == "valid"] == [per_epoch, 2 * per_epoch]  # once per epoch


def test_best_checkpoint_holds_the_lowest_validation_loss(tmp_path, monkeypatch):
    script_validation(monkeypatch, "loss", [0.5, 0.3, 0.4, 0.3])  # a later tie does not replace the first
    train(copy_config(tmp_path, steps=4, eval_every=1))
    best = checkpoint.load(tmp_path / "run" / "checkpoints" / "best.pt")
    assert best["step"] == 2 and best["valid"]["loss"] == 0.3


def test_best_checkpoint_holds_the_highest_score_where_higher_is_better(tmp_path, monkeypatch):
    from nnrnn.tasks.copy import CopyTask
    monkeypatch.setattr(CopyTask, "monitor", ("accuracy", "max"))  # as psMNIST's
    script_validation(monkeypatch, "accuracy", [0.5, 0.7, 0.6, 0.7])
    train(copy_config(tmp_path, steps=4, eval_every=1))
    best = checkpoint.load(tmp_path / "run" / "checkpoints" / "best.pt")
    assert best["step"] == 2 and best["valid"]["accuracy"] == 0.7  # a later tie does not replace it


def test_max_bad_steps_counts_non_finite_updates_in_a_row_from_the_first(tmp_path, monkeypatch):
    nan_losses_at(monkeypatch, {0, 2})  # never two in a row: training goes on past both
    train(copy_config(tmp_path, "apart", steps=4, max_bad_steps=2, eval_every=4))
    records = read_metrics(tmp_path / "apart")
    assert [r for r in records if "event" in r] == [{"step": step, "split": "train", "event": "skipped update",
                                                     "reason": "non-finite loss or gradient"} for step in (1, 3)]
    # updates 1 and 3 were skipped: their windows are empty, so they log no training record
    assert [r["step"] for r in records if r["split"] == "train" and "event" not in r] == [2, 4]
    nan_losses_at(monkeypatch, {0, 1})
    with pytest.raises(TrainingDiverged, match="2 non-finite losses or gradients in a row at update 2; "
                                        "no checkpoint had been written yet"):
        train(copy_config(tmp_path, "row", steps=4, max_bad_steps=2, eval_every=4))
    nan_losses_at(monkeypatch, {2, 3})
    last = tmp_path / "later" / "checkpoints" / "last.pt"
    with pytest.raises(TrainingDiverged,
                       match=f"in a row at update 4; the last good checkpoint is {re.escape(str(last))};"):
        train(copy_config(tmp_path, "later", steps=6, max_bad_steps=2, eval_every=2))
    assert checkpoint.load(last)["step"] == 2


def test_the_logged_gradient_norm_is_the_mean_over_the_window_before_clipping(tmp_path, monkeypatch):
    norms, clip = [], nn.utils.clip_grad_norm_

    def spy(parameters, max_norm, *args, **kwargs):
        norms.append(float(clip(parameters, max_norm, *args, **kwargs)))
        return torch.tensor(norms[-1])
    monkeypatch.setattr(nn.utils, "clip_grad_norm_", spy)
    train(copy_config(tmp_path, steps=4, log_every=2, eval_every=4, clip=1e-3, lr=1e-2, lr_orth=1e-3))
    records = [r for r in read_metrics(tmp_path / "run") if r["split"] == "train"]
    assert [sorted(r) for r in records] == [["accuracy", "grad_norm", "loss", "lr", "split", "step"]] * 2
    assert [r["lr"] for r in records] == [1e-2, 1e-2]  # the main group's rate, not lr_orth
    logged = [r["grad_norm"] for r in records]
    assert len(norms) == 4 and min(norms) > 1e-3  # the norms before clipping, not the clip value
    assert logged == pytest.approx([(norms[0] + norms[1]) / 2, (norms[2] + norms[3]) / 2], rel=1e-6)


def test_the_optimizer_steps_on_the_gradient_clipped_to_the_clip_option(tmp_path, monkeypatch):
    """RMSprop's first steps hardly depend on the gradient's scale, so the trained weights do not show the clip
    threshold: the gradient the optimizer is handed does."""
    norms, step = [], torch.optim.RMSprop.step

    def spy(self, *args, **kwargs):
        grads = [p.grad for group in self.param_groups for p in group["params"] if p.grad is not None]
        norms.append(float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))))
        return step(self, *args, **kwargs)
    monkeypatch.setattr(torch.optim.RMSprop, "step", spy)
    train(copy_config(tmp_path, steps=3, eval_every=3, clip=1e-3))
    assert norms == pytest.approx([1e-3] * 3, rel=1e-4)  # every gradient here is far above 1e-3 before clipping


@pytest.mark.parametrize("other, message", [({"task": "adding"}, "nnrnn run on adding .* not the 'copy' task"),
                                            ({"hidden": 6}, "with 6 hidden units, not the 8 hidden")])
def test_resume_refuses_a_checkpoint_of_another_task_or_size(tmp_path, other, message):
    """config.json is the run's own; only last.pt was replaced (copied from another run)."""
    train(copy_config(tmp_path, "a", steps=2))
    train(copy_config(tmp_path, "b", steps=2, **other))
    (tmp_path / "a/checkpoints/last.pt").write_bytes((tmp_path / "b/checkpoints/last.pt").read_bytes())
    with pytest.raises(UserError, match=message):
        train(copy_config(tmp_path, "a", steps=4), resume=True)


@pytest.mark.parametrize("other, named", [(["--nonlinearity", "tanh"], "--nonlinearity 'tanh' there, None in"),
                                          (["--model", "exprnn"], "--model 'exprnn' there, 'nnrnn' in"),
                                          (["--hidden", "6"], "--hidden 6 there, 8 in"),
                                          (["--T", "5"], "--T 5 there, 3 in"),
                                          (["--lr", "0.01"], "--lr 0.01 there, 0.0005 in")])
def test_resume_from_the_command_line_refuses_another_runs_checkpoint_and_touches_nothing(capsys, tmp_path, other,
                                                                                          named):
    """A last.pt copied in from a run with other options: refused, naming them; config.json, metrics.jsonl and the
    checkpoint are left as they were (the issue's regression: a tanh last.pt resumed in a modReLU folder rewrote
    config.json to tanh over the other run's history)."""
    common = ["--steps", "2", "--hidden", "8", "--T", "3", "--batch-size", "2", "--no-progress"]
    assert run_cli(capsys, "train", "copy", "--out", tmp_path / "a", *common)[0] == 0
    assert run_cli(capsys, "train", "copy", "--out", tmp_path / "b", *common, *other)[0] == 0
    (tmp_path / "a/checkpoints/last.pt").write_bytes((tmp_path / "b/checkpoints/last.pt").read_bytes())
    before = snapshot(tmp_path / "a")
    one_line(*run_cli(capsys, "train", "copy", "--out", tmp_path / "a", "--resume", "--steps", "4"),
             "is another run's checkpoint", named)
    assert snapshot(tmp_path / "a") == before


def test_resume_from_the_command_line_refuses_another_tasks_checkpoint(capsys, tmp_path):
    common = ["--steps", "2", "--hidden", "8", "--T", "3", "--batch-size", "2", "--no-progress"]
    assert run_cli(capsys, "train", "copy", "--out", tmp_path / "a", *common)[0] == 0
    assert run_cli(capsys, "train", "adding", "--out", tmp_path / "b", *common)[0] == 0
    (tmp_path / "a/checkpoints/last.pt").write_bytes((tmp_path / "b/checkpoints/last.pt").read_bytes())
    before = snapshot(tmp_path / "a")
    for argv in (["train", "copy"], ["train", "adding"]):  # the folder's task, or the checkpoint's
        one_line(*run_cli(capsys, *argv, "--out", tmp_path / "a", "--resume", "--steps", "4"), "task")
    assert snapshot(tmp_path / "a") == before


def test_skipped_updates_are_counted_across_a_resume(tmp_path, monkeypatch):
    nan_losses_at(monkeypatch, {0, 2, 4})  # never two in a row, but 3 in all: more than --max-bad-steps 2
    train(copy_config(tmp_path, steps=4, max_bad_steps=2, eval_every=2))  # 2 skipped: allowed
    with pytest.raises(TrainingDiverged, match=r"3 of the 6 updates had a non-finite loss or gradient and were skipped "
                                        r"\(more than --max-bad-steps 2\)"):
        train(copy_config(tmp_path, steps=6, max_bad_steps=2, eval_every=2), resume=True)


def test_resume_refuses_ptb_data_that_changed_since_the_checkpoint(tmp_path):
    data = fake_ptb(tmp_path / "ptb")
    options = dict(task="ptb", model="exprnn", hidden=8, batch_size=4, bptt=7, eval_batch_size=2, eval_every=2,
                   progress=False, data_dir=str(data), out=str(tmp_path / "run"))
    train(resolve_config({**options, "steps": 2}))
    with (data / "ptb.char.valid.txt").open("a") as f:  # the training text is now longer
        f.write("a b c d e f g h\n" * 50)
    with pytest.raises(UserError, match="trained on different PTB data"):
        train(resolve_config({**options, "steps": 4}), resume=True)


def test_a_checkpoint_from_before_skipped_updates_were_saved_resumes_with_none_skipped(tmp_path, monkeypatch):
    train(copy_config(tmp_path, steps=4, eval_every=2))
    last = tmp_path / "run" / "checkpoints" / "last.pt"
    saved = checkpoint.load(last)
    del saved["skipped"]
    checkpoint.save(last, saved)
    nan_losses_at(monkeypatch, {0, 2})  # the resumed run's 1st and 3rd updates: 2 skipped, not more than 2
    train(copy_config(tmp_path, steps=8, max_bad_steps=2, eval_every=2), resume=True)
    assert [r["step"] for r in read_metrics(tmp_path / "run") if r.get("event") == "skipped update"] == [5, 7]


def test_the_progress_bar_counts_updates_from_where_a_resumed_run_starts(tmp_path, capsys, monkeypatch):
    train(copy_config(tmp_path, "redirected", steps=2, eval_every=2, progress=True))
    captured = capsys.readouterr()  # output not on a terminal: no bar, whose carriage returns would pile up
    assert "\r" not in captured.err + captured.out and "[nnrnn] update 2/2 | " in captured.out
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # as on a terminal
    train(copy_config(tmp_path, steps=4, eval_every=2, progress=True))
    err = capsys.readouterr().err
    assert "4/4" in err and re.search(r"[0-9?]upd/s", err.split("4/4")[-1])  # "4/4 [00:00<00:00, 21.3upd/s, …]"
    final = err.rstrip().split("\r")[-1]  # what the bar shows at the end: one count per update, 4 of 4
    assert "4/4" in final and re.search(r"loss=\d+\.\d{4}\]", final)  # and the last logged training loss
    train(copy_config(tmp_path, steps=6, eval_every=2, progress=True), resume=True)
    err = capsys.readouterr().err
    assert "4/6" in err and "6/6" in err and "0/6" not in err and "1/6" not in err
    train(copy_config(tmp_path, "quiet", steps=2, progress=False))
    assert "2/2" not in capsys.readouterr().err


def test_independent_batches_start_from_a_zero_state_and_ptb_segments_carry_it(tmp_path, monkeypatch):
    calls = spy_states(monkeypatch)
    train(copy_config(tmp_path, "copy", steps=3, eval_every=3))
    assert [state for state, _ in calls] == [None, None, None]
    calls.clear()
    data = fake_ptb(tmp_path / "ptb")
    train(resolve_config(dict(task="ptb", model="exprnn", hidden=8, batch_size=4, bptt=7, eval_batch_size=2,
                              steps=3, eval_every=3, progress=False, data_dir=str(data),
                              out=str(tmp_path / "ptb-run"))))
    assert calls[0][0] is None
    for (_, returned), (passed, _) in zip(calls, calls[1:]):  # the last state, cut from its graph
        assert torch.equal(passed, returned) and not passed.requires_grad


def test_an_update_with_a_finite_loss_but_a_non_finite_gradient_is_skipped(tmp_path, monkeypatch):
    def inf_gradient_once(net):
        seen = {"n": 0}

        def hook(grad):
            seen["n"] += 1
            return grad * float("inf") if seen["n"] == 2 else grad
        net.readout.weight.register_hook(hook)
    with_network(monkeypatch, inf_gradient_once)
    train(copy_config(tmp_path, steps=3, eval_every=3))
    records = read_metrics(tmp_path / "run")
    assert [r["step"] for r in records if r.get("event") == "skipped update"] == [2]
    assert all(torch.isfinite(v).all() for v in parameters(tmp_path / "run").values())


def test_a_signal_mid_update_checkpoints_that_update_then_stops_and_resume_continues_exactly(tmp_path, monkeypatch):
    import signal
    options = dict(steps=6, log_every=1, eval_every=2, checkpoint_every=100)  # no regular checkpoint before 6
    train(copy_config(tmp_path, "whole", **options))

    def sigterm_in_third_update(i, loss):
        if i == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return loss
    on_training_losses(monkeypatch, sigterm_in_third_update)
    with pytest.raises(errors_module.Interrupted) as stopped:
        train(copy_config(tmp_path, "part", **options))
    last = tmp_path / "part" / "checkpoints" / "last.pt"
    assert (stopped.value.signum, stopped.value.path) == (signal.SIGTERM, last)
    assert checkpoint.load(last)["step"] == 3  # the update it arrived in was finished and saved
    assert [r["step"] for r in read_metrics(tmp_path / "part")] == [1, 2, 2, 3]
    monkeypatch.undo()
    train(copy_config(tmp_path, "part", **options), resume=True)
    assert read_metrics(tmp_path / "part") == read_metrics(tmp_path / "whole")
    a, b = parameters(tmp_path / "whole"), parameters(tmp_path / "part")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_checkpoints_are_written_every_checkpoint_every_updates_and_at_the_end(tmp_path, monkeypatch):
    saves, save = [], checkpoint.save

    def spy(path, obj):
        saves.append((Path(path).name, obj["step"]))
        save(path, obj)
    monkeypatch.setattr(checkpoint, "save", spy)
    script_validation(monkeypatch, "loss", [0.5, 0.4])
    train(copy_config(tmp_path, "every4", steps=6, eval_every=3, checkpoint_every=4))
    assert saves == [("best.pt", 3), ("last.pt", 4), ("best.pt", 6), ("last.pt", 6)]
    saves.clear()
    script_validation(monkeypatch, "loss", [0.5, 0.6])
    train(copy_config(tmp_path, "default", steps=6, eval_every=3))  # by default, at every validation
    assert saves == [("best.pt", 3), ("last.pt", 3), ("last.pt", 6)]


def test_on_eval_sees_every_validation_record_as_logged(tmp_path):
    calls = []
    train(copy_config(tmp_path, steps=5, eval_every=2), on_eval=lambda step, record: calls.append((step, record)))
    valid = [r for r in read_metrics(tmp_path / "run") if r["split"] == "valid"]
    assert [step for step, _ in calls] == [2, 4, 5] and [record for _, record in calls] == valid


def test_the_test_split_is_scored_with_the_best_parameters_and_the_curves_get_the_references(tmp_path, monkeypatch):
    from nnrnn.tasks.copy import CopyTask
    plotted = []
    monkeypatch.setattr(trainer, "plot_curves", lambda folder, references=None: plotted.append((folder, references)))
    script_validation(monkeypatch, "loss", [0.2, 0.5])  # the best validation is the first
    result = train(copy_config(tmp_path, steps=2, eval_every=1))
    folder = tmp_path / "run"
    test = read_metrics(folder)[-1]
    assert test["split"] == "test" and test["step"] == 2
    best = evaluation.evaluate_checkpoint(folder / "checkpoints" / "best.pt")
    assert {k: v for k, v in test.items() if k not in ("step", "split")} == best == result["test"]
    assert best != evaluation.evaluate_checkpoint(folder / "checkpoints" / "last.pt")
    # when training ends, and again titled with the run's outcome
    assert plotted == [(folder, CopyTask(T=4, batch_size=4).references())] * 2


def test_a_run_whose_last_validation_is_not_finite_fails_and_an_earlier_one_does_not(tmp_path, monkeypatch):
    script_validation(monkeypatch, "loss", [float("nan"), 0.5])
    assert train(copy_config(tmp_path, "recovered", steps=2))["valid"]["loss"] == 0.5
    script_validation(monkeypatch, "loss", [0.5, float("inf")])
    with pytest.raises(TrainingDiverged, match="training diverged: the validation loss after update 2 is inf"):
        train(copy_config(tmp_path, "diverged", steps=2))
    assert checkpoint.load(tmp_path / "diverged" / "checkpoints" / "best.pt")["step"] == 1


def test_a_fixed_gamma_and_a_delay_t_init_train_and_reload(tmp_path):
    """--fixed-gamma: γ stays G in every checkpoint and in the reloaded model while the rest trains;
    --t-init delay:α: the run starts from T = α S (the first checkpoint differs from it, the config says it)."""
    config = tiny(tmp_path, steps=4, checkpoint_every=2, fixed_gamma=0.958, t_init="delay:0.5", triangular="block")
    train(config)
    state = model_params(tmp_path / "run" / "checkpoints" / "last.pt")
    gammas = [v for k, v in state.items() if k.endswith(".gamma")]
    assert gammas and all(torch.equal(g, torch.full_like(g, 0.958)) for g in gammas)
    model, saved = load_model(tmp_path / "run")
    assert saved["fixed_gamma"] == 0.958 and saved["t_init"] == "delay:0.5"
    form = model.rnn.schur_form
    assert form.fixed_gamma == 0.958 and all("gamma" not in k for k, _ in model.named_parameters())
    t = form.triangular_factor().detach()
    assert torch.all(t[torch.arange(2, 16, 2), torch.arange(1, 15, 2)] != 0.5)  # trained away from the init
    assert torch.all(t[torch.arange(1, 16, 2), torch.arange(0, 15, 2)] == 0)  # "block": in-block entries held


# --------------------------------------------------------------------------- resume takes the run's own options

def test_resume_takes_the_runs_own_options_and_changes_only_what_may_change(capsys, tmp_path):
    run = tmp_path / "run"
    assert run_cli(capsys, "train", "copy", "--preset", "paper", "--steps", "2", "--eval-every", "1",
                   "--hidden", "8", "--T", "3", "--no-progress", "--out", run)[0] == 0
    saved = json.loads((run / "config.json").read_text())
    # the README's line: no preset, no sizes given again
    assert run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "3")[0] == 0
    config = json.loads((run / "config.json").read_text())
    assert config == {**saved, "steps": 3}
    assert run_cli(capsys, "train", "copy", "--out", run, "--resume", "--preset", "paper", "--epochs", "1")[0] != 0
    for argv, expected in ((["--lr", "0.5"], f"--lr was {saved['lr']} and is now 0.5"),
                           (["--hidden", "16"], "--hidden was 8 and is now 16"),
                           (["--preset", "paper-params"], "--preset was 'paper' and is now 'paper-params'"),
                           (["--model", "rnn"], "--model was 'nnrnn' and is now 'rnn'")):
        one_line(*run_cli(capsys, "train", "copy", "--out", run, "--resume", *argv), *expected)
    one_line(*run_cli(capsys, "train", "adding", "--out", run, "--resume"), "--task was 'copy' and is now 'adding'")



def test_a_steps_run_resumes_with_epochs_and_back(capsys, tmp_path):
    from conftest import HAS_MNIST, SHARED
    if not HAS_MNIST:
        pytest.skip("shared MNIST not found")
    run = tmp_path / "run"
    common = ["--hidden", "4", "--batch-size", "500", "--eval-batch-size", "1000", "--no-progress"]
    assert run_cli(capsys, "train", "psmnist", "--model", "rnn", "--steps", "2", "--data-dir", SHARED,
                   "--out", run, *common)[0] == 0
    assert run_cli(capsys, "train", "psmnist", "--out", run, "--resume", "--epochs", "1")[0] == 0
    assert json.loads((run / "config.json").read_text())["steps"] is None
    assert checkpoint.load(run / "checkpoints" / "last.pt")["step"] == 16  # 8,000 images / 500



@needs_mnist
def test_the_closing_lines_say_how_much_of_the_official_data_the_test_score_is_on(capsys, tmp_path):
    common = ["--model", "rnn", "--hidden", "4", "--steps", "1", "--batch-size", "500", "--eval-batch-size", "1000",
              "--no-progress"]
    assert nnrnn_cli.main(["train", "psmnist", "--data-dir", str(SHARED), "--out", str(tmp_path / "p"), *common]) == 0
    lines = capsys.readouterr().out.splitlines()
    test_line = next(i for i, line in enumerate(lines) if line.startswith("[nnrnn] test "))
    assert lines[test_line + 1].startswith("[nnrnn] data: MNIST from ") and \
        lines[test_line + 1].endswith("8,000 train / 1,000 valid / 1,000 test (all from the official test set)")
    assert nnrnn_cli.main(["train", "copy", "--T", "5", "--out", str(tmp_path / "c"), *common[:6], "--no-progress"]) \
        == 0
    assert "[nnrnn] data:" not in capsys.readouterr().out  # generated data: nothing to say


def test_resume_without_config_json_uses_the_checkpoints_configuration(capsys, finished, tmp_path):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "config.json").unlink()
    assert run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "5")[0] == 0
    assert checkpoint.load(run / "checkpoints" / "last.pt")["step"] == 5



def test_a_best_checkpoint_in_place_of_the_last_is_named(capsys, finished, tmp_path):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    shutil.copy(run / "checkpoints" / "best.pt", run / "checkpoints" / "last.pt")
    before = snapshot(run)
    one_line(*run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "6"),
             "is not a run's last checkpoint")
    assert snapshot(run) == before



# --------------------------------------------------------------------------- results are part of the run

def test_a_non_finite_test_score_fails_the_run_and_eval(capsys, tmp_path, monkeypatch):
    real = evaluation.evaluate

    def nan_test(net, task, split, device):
        metrics = real(net, task, split, device)
        return {**metrics, "loss": float("nan")} if split == "test" else metrics
    monkeypatch.setattr(evaluation, "evaluate", nan_test)
    one_line(*run_cli(capsys, "train", "copy", "--steps", "2", "--out", tmp_path / "r", *TINY_ARGV),
             "the test loss of", "is nan", exit_code=3)
    one_line(*run_cli(capsys, "eval", tmp_path / "r"), "the test loss", "is nan", exit_code=3)



# --------------------------------------------------------------------------- a kill at any moment resumes exactly

# the figure is built but not drawn (helpers.UNDRAWN, as the undrawn_figures fixture does): drawing curves.png is
# most of a small run's time, and what is checked here is the state a resume continues from
# one process imports torch and nnrnn once (an import is most of a killed run's time) and forks a fresh process
# per kill: each child is a whole training process of its own, dies by os._exit(137) as a SIGKILL leaves it, and
# its exit status comes back on a line of the server's stdout; the server itself runs no torch op, so a fork is safe
KILL = UNDRAWN + r"""
import json, os, signal, sys, traceback
import torch
from nnrnn.training import checkpoint, evaluation, network, runlog, train as trainer


def killed(config, phase, at):
    calls = {"n": 0}

    def dies(real, when=lambda *a, **k: True):
        def wrapped(*args, **kwargs):
            if when(*args, **kwargs):
                calls["n"] += 1
                if calls["n"] == at:
                    if phase == "checkpoint":  # killed half way through writing: a partial temporary file stays
                        args[0].parent.mkdir(parents=True, exist_ok=True)
                        (args[0].parent / f".{args[0].name}.killed.tmp").write_bytes(b"PK" + bytes(200))
                    os._exit(137)
            return real(*args, **kwargs)
        return wrapped

    if phase == "start-up":
        network.build_network = dies(network.build_network)
    elif phase == "training":
        trainer.update = dies(trainer.update)
    elif phase == "checkpoint":
        checkpoint.atomic_write = dies(checkpoint.atomic_write, lambda path, write: path.name == "last.pt")
    elif phase in ("validation", "test"):
        evaluation.evaluate = dies(evaluation.evaluate,
                                   lambda net, task, split, device: split == phase.replace("validation", "valid"))
    elif phase == "plotting":
        trainer.plot_curves = dies(trainer.plot_curves)
    trainer.train(config)
    print("finished without a kill")


for line in sys.stdin:
    config, phase, at, log = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            with open(log, "w") as out:
                os.dup2(out.fileno(), 1)
                os.dup2(out.fileno(), 2)
            signal.alarm(300)  # a child that hangs dies of SIGALRM instead of hanging the test
            killed(config, phase, at)
            code = 0
        except BaseException:
            traceback.print_exc()  # os._exit below would leave the log without the reason
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


PHASES = {"start-up": 1, "training": 9, "checkpoint": 3, "validation": 3, "test": 1, "plotting": 2}



@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whole") / "run"
    config = resolve_config({"task": "copy", "model": "nnrnn", "hidden": 8, "T": 3, "batch_size": 2, "steps": 12,
                             "eval_every": 4, "log_every": 2, "checkpoint_every": 2, "progress": False, "seed": 5,
                             "out": str(folder)})
    with pytest.MonkeyPatch.context() as patch:
        undraw(patch)
        train(config)
    return config


@pytest.fixture(scope="module")
def killer():
    """The KILL server: ``kill(config, phase, at, log)`` runs one training process killed at call ``at`` of
    ``phase`` and gives its exit status (its output in ``log``)."""
    server = subprocess.Popen([sys.executable, "-c", KILL], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO / "src")})

    def kill(config, phase, at, log):
        server.stdin.write(json.dumps([config, phase, at, str(log)]) + "\n")
        server.stdin.flush()
        return int(server.stdout.readline() or "-1")
    yield kill
    server.stdin.close()
    server.wait(timeout=60)


@pytest.mark.subprocess
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(phase=st.sampled_from(sorted(PHASES)), data=st.data())
def test_a_kill_at_any_moment_of_any_phase_then_resume_is_an_uninterrupted_run(phase, data, uninterrupted, killer,
                                                                               tmp_path_factory, undrawn_figures):
    at = data.draw(st.integers(1, PHASES[phase]), label="the kill at this call of the phase")
    folder = tmp_path_factory.mktemp("killed") / "run"
    config = {**uninterrupted, "out": str(folder)}
    log = folder.parent / "killed.log"
    assert killer(config, phase, at, log) == 137, log.read_text() if log.exists() else "the server died"
    assert nnrnn_cli.main(["train", "copy", "--out", str(folder), "--resume"]) == 0  # the README's line
    whole = Path(uninterrupted["out"])
    assert read_metrics(folder) == read_metrics(whole)
    for name in ("last.pt", "best.pt"):
        a = checkpoint.load(whole / "checkpoints" / name)["model"]
        b = checkpoint.load(folder / "checkpoints" / name)["model"]
        assert all(torch.equal(a[k], b[k]) for k in a), name
    assert (folder / "curves.png").is_file()



def test_the_resume_line_reads_last_pt_once_and_continues_as_one_run(tmp_path, monkeypatch):
    """`nnrnn train ... --resume` takes the run's options and its state from one reading of last.pt."""
    argv = ["train", "copy", *TINY_ARGV, "--eval-every", "2", "--seed", "3"]
    assert nnrnn_cli.main([*argv, "--steps", "6", "--out", str(tmp_path / "whole")]) == 0
    assert nnrnn_cli.main([*argv, "--steps", "4", "--out", str(tmp_path / "run")]) == 0
    reads, load = [], checkpoint.load
    monkeypatch.setattr(checkpoint, "load", lambda path, *a, **k: reads.append(Path(path).name) or load(path, *a, **k))
    assert nnrnn_cli.main(["train", "copy", "--steps", "6", "--out", str(tmp_path / "run"), "--resume"]) == 0
    assert reads.count("last.pt") == 2, reads  # once for the resume, once for mechanism.json when the run ends
    a, b = (checkpoint.load(tmp_path / name / "checkpoints" / "last.pt")["model"] for name in ("whole", "run"))
    assert all(torch.equal(a[k], b[k]) for k in a)


@needs_mnist
def test_a_step_schedule_run_logs_the_rate_each_update_used_and_divides_it_after_each_span_of_epochs(tmp_path):
    from nnrnn.training.config import resolve_config
    config = resolve_config({"task": "psmnist", "model": "rnn", "hidden": 4, "batch_size": 2000, "epochs": 2,
                             "lr_schedule": "step", "lr_step_epochs": 1, "lr": 1e-3, "log_every": 1,
                             "eval_every": 100, "eval_batch_size": 1000, "data_dir": str(SHARED), "progress": False,
                             "out": str(tmp_path / "run")})
    trainer.train(config)
    rates = [r["lr"] for r in map(json.loads, (tmp_path / "run" / "metrics.jsonl").read_text().splitlines())
             if r.get("split") == "train" and "lr" in r]
    per_epoch = len(rates) // 2
    assert per_epoch >= 2 and rates == pytest.approx([1e-3] * per_epoch + [1e-4] * per_epoch)


def test_a_signal_during_a_long_update_or_a_second_signal_stops_at_once(tmp_path, monkeypatch):
    """An update that runs for minutes (a huge stack) made SIGTERM wait for it: past the grace, and on a second
    signal, the run stops at once on its last checkpoint."""
    import signal
    from nnrnn.training import interrupt
    last = tmp_path / "last.pt"
    with StopRequested(last) as stop:
        stop.updating(True)
        os.kill(os.getpid(), signal.SIGTERM)  # a short update so far: recorded, the update goes on
        assert stop.signal == signal.SIGTERM
        with pytest.raises(errors_module.Interrupted) as again:
            os.kill(os.getpid(), signal.SIGINT)  # a second signal: at once
        assert again.value.path == last and again.value.signum == signal.SIGINT
    with StopRequested(last) as stop:
        stop.updating(True)
        monkeypatch.setattr(interrupt, "GRACE_S", 0.0)
        time.sleep(0.01)
        with pytest.raises(errors_module.Interrupted):
            os.kill(os.getpid(), signal.SIGTERM)  # an update past the grace: at once
    with StopRequested(last) as stop:
        stop.updating(False)
        os.kill(os.getpid(), signal.SIGTERM)  # between updates: the loop checkpoints first
        assert stop.signal == signal.SIGTERM


def test_a_run_whose_output_is_not_a_terminal_says_its_duration_and_its_pace(tmp_path, capsys, monkeypatch):
    """Redirected (a batch job's log), no bar shows: the run printed nothing until its first validation, and never
    how long it would take."""
    from nnrnn.training import pace
    monkeypatch.setattr(pace, "EVERY_S", 0.0)  # a line after every update past the estimate
    train(tiny(tmp_path, steps=14, eval_every=14, progress=True))
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[nnrnn] ")]
    estimate = next(i for i, line in enumerate(lines) if line.startswith("[nnrnn] 14 updates: about "))
    assert "timed on updates 2-11" in lines[estimate]
    assert [line.split(" | ")[0] for line in lines[estimate + 1:estimate + 3]] == ["[nnrnn] update 12/14",
                                                                                   "[nnrnn] update 13/14"]
    assert re.fullmatch(r"\[nnrnn\] update 12/14 \| loss [\d.]+ \| about \d+ s left", lines[estimate + 1])
