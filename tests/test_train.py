"""The training loop: run folders, resume after a kill, signals, divergence, distributed."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from nnrnn import checkpoint
from nnrnn.errors import UserError
from nnrnn.train import check_resume, evaluate_checkpoint, load_model, read_metrics, resolve_config, train

REPO = Path(__file__).resolve().parents[1]
TINY = {"task": "copy", "model": "nnrnn", "hidden": 16, "T": 5, "batch_size": 8, "log_every": 2,
        "eval_every": 4, "progress": False, "lr": 1e-2}


def tiny(tmp_path, name="run", **options):
    return resolve_config({**TINY, "out": str(tmp_path / name), **options})


def cli(*args, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
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
                                          ({"steps": 0}, "steps"), ({"model": "gru"}, "nnrnn"),
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


def test_kill_9_then_resume_matches_uninterrupted(tmp_path):
    """A real SIGKILL of a training process at an arbitrary moment, then --resume."""
    common = ["train", "copy", "--hidden", "16", "--T", "5", "--batch-size", "8", "--steps", "300",
              "--log-every", "10", "--eval-every", "50", "--checkpoint-every", "10", "--no-progress", "--seed", "3"]
    assert cli(*common, "--out", str(tmp_path / "whole")).returncode == 0
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "nnrnn", *common, "--out", str(tmp_path / "killed")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last = tmp_path / "killed" / "checkpoints" / "last.pt"
    deadline = time.time() + 120
    while not last.exists() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    step = checkpoint.load(last)["step"]
    assert 0 < step < 300, "the kill should land mid-run"
    resumed = cli(*common, "--out", str(tmp_path / "killed"), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert read_metrics(tmp_path / "whole") == read_metrics(tmp_path / "killed")
    a, b = model_params(tmp_path / "whole/checkpoints/last.pt"), model_params(last)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_sigterm_saves_a_checkpoint(tmp_path):
    args = ["train", "copy", "--hidden", "16", "--T", "5", "--steps", "100000", "--no-progress",
            "--checkpoint-every", "100000", "--eval-every", "100000", "--out", str(tmp_path / "run")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
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
    with pytest.raises(UserError, match="no checkpoint"):
        train(tiny(tmp_path, "fresh", steps=2), resume=True)



def test_resume_refuses_an_option_the_saved_run_did_not_have(tmp_path):
    """An option present on one side only (a run saved by a release without it) counts as changed."""
    config = tiny(tmp_path, steps=2)
    saved = {k: v for k, v in config.items() if k != "lr"}
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text(json.dumps(saved))
    with pytest.raises(UserError, match="option lr was None"):
        check_resume(tmp_path / "run", config)
    assert check_resume(tmp_path / "run", saved) == saved


def test_divergence_stops_and_keeps_last_good_checkpoint(tmp_path):
    config = tiny(tmp_path, steps=50, lr=1e30, max_bad_steps=3, checkpoint_every=1, eval_every=1,
                  model="rnn", nonlinearity="relu")
    with pytest.raises(UserError, match="diverged"):
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


@pytest.mark.parametrize("model", ["rnn", "exprnn"])
def test_two_processes_match_one(tmp_path, model):
    """torchrun with 2 CPU processes (gloo) reaches the parameters of 1 process on the same global batch."""
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\nfrom nnrnn.train import resolve_config, train\nfrom nnrnn import distributed\n"
        "from nnrnn.tasks.copy import CopyTask\n"
        # update 3's last sequence, in rank 1's half, holds a NaN: one process skips that update, so two must
        "batch = CopyTask.train_batch\n"
        "def poisoned(self, step):\n"
        "    b = batch(self, step)\n"
        "    if step == 2:\n        b.inputs[0, -1, 0] = float('nan')\n"
        "    return b\n"
        "CopyTask.train_batch = poisoned\n"
        f"c = resolve_config({{**{TINY!r}, 'model': {model!r}, 'out': sys.argv[1], 'steps': 6}})\n"
        "train(c)\ndistributed.cleanup()\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    one = subprocess.run([sys.executable, str(script), str(tmp_path / "one")], env=env, capture_output=True)
    assert one.returncode == 0, one.stderr
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                          "--standalone", str(script), str(tmp_path / "two")],
                         env=env, capture_output=True, timeout=300)
    assert two.returncode == 0, two.stderr.decode()[-2000:]
    a, b = model_params(tmp_path / "one/checkpoints/last.pt"), model_params(tmp_path / "two/checkpoints/last.pt")
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=1e-4, atol=1e-5)
    assert [r["step"] for r in read_metrics(tmp_path / "two")] == [r["step"] for r in read_metrics(tmp_path / "one")]
    assert [r["step"] for r in read_metrics(tmp_path / "two") if r.get("event") == "skipped update"] == [3]


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
