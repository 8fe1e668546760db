"""A run's kernel choices (nnrnn.kernels.policy): recorded in its checkpoints, taken back by a resume, so that a run
resumed in a process that would time the kernels differently is still exact, and named by ``nnrnn eval``."""
import pytest
import torch

from nnrnn.kernels import onednn
from nnrnn.kernels import policy as kernel_policy
from nnrnn.kernels import tuning as kernel_tuning
from nnrnn_cli import command as cli
from nnrnn.kernels.settings import ATEN, COMPILED, ONEDNN, TORCH
from nnrnn.training import checkpoint
from nnrnn.training.config import resolve_config
from nnrnn.training.runlog import read_metrics
from nnrnn.training.train import train

TINY = {"task": "copy", "model": "nnrnn", "hidden": 64, "T": 5, "batch_size": 8, "log_every": 2,
        "eval_every": 4, "progress": False, "lr": 1e-3, "steps": 12, "checkpoint_every": 2}
PRODUCTS = "products M64 K64 N64"  # composing V


pytestmark = pytest.mark.usefixtures("undrawn_figures")  # what is trained and written, not the drawing


def timing(monkeypatch, *fastest: str):
    """A fake timer by which the kernels ``fastest`` win their decisions, in a fresh policy with no timings cached
    (as in a new process on another host)."""
    times = {name: 1e-3 if name in fastest else 3e-3 for name in (COMPILED, ONEDNN, ATEN, TORCH)}
    monkeypatch.setattr(kernel_tuning, "timer", lambda name, call: times[name])
    monkeypatch.setattr(kernel_tuning, "cpu_seconds", lambda: None)  # a quiet machine: the timings are trusted
    kernel_tuning.cache_path().unlink(missing_ok=True)
    kernel_policy.reset()


def interrupted_then_resumed(tmp_path, monkeypatch, pin=True):
    part = resolve_config({**TINY, "out": str(tmp_path / "part")})
    timing(monkeypatch, ONEDNN)

    def stop_at_eight(step, record):
        if step == 8:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(part, on_eval=stop_at_eight)
    saved = checkpoint.load(tmp_path / "part" / "checkpoints" / "last.pt")
    assert saved["kernels"]["cpu/float32"][PRODUCTS] == ONEDNN
    timing(monkeypatch, TORCH, ATEN)  # this process would choose torch.mm, and other loops
    if not pin:
        monkeypatch.setattr(kernel_policy, "pin", lambda record: None)
    train(part, resume=True)
    return tmp_path / "part"


def test_a_resumed_run_uses_the_kernels_it_trained_with(tmp_path, monkeypatch, tuning):
    if onednn.kernel() is None:
        pytest.skip("no oneDNN kernel here: one kernel fewer to choose from")
    timing(monkeypatch, ONEDNN)
    train(resolve_config({**TINY, "out": str(tmp_path / "whole")}))
    part = interrupted_then_resumed(tmp_path, monkeypatch)
    assert kernel_policy.policy().decisions[PRODUCTS].choice == ONEDNN
    assert read_metrics(tmp_path / "whole") == read_metrics(part)
    a = checkpoint.load(tmp_path / "whole" / "checkpoints" / "last.pt")["model"]
    b = checkpoint.load(part / "checkpoints" / "last.pt")["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    # without the record, the resumed process would have chosen otherwise (so the check above can fail)
    interrupted_then_resumed(tmp_path / "unpinned", monkeypatch, pin=False)
    assert kernel_policy.policy().decisions[PRODUCTS].choice == TORCH


def test_eval_says_which_kernels_it_used(tmp_path, monkeypatch, tuning, capsys):
    if onednn.kernel() is None:
        pytest.skip("no oneDNN kernel here: one kernel fewer to choose from")
    timing(monkeypatch, ONEDNN)
    train(resolve_config({**TINY, "out": str(tmp_path / "run"), "steps": 4}))
    best = checkpoint.load(tmp_path / "run" / "checkpoints" / "best.pt")
    assert best["kernels"]["cpu/float32"][PRODUCTS] == ONEDNN
    timing(monkeypatch, TORCH)
    assert cli.main(["eval", str(tmp_path / "run"), "--split", "valid"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("kernels: ") and "as the run recorded them" in line
    assert f"{PRODUCTS} = onednn" in line and "exponential plan = read" in line
