"""The command line: one-line errors with exit code 2, presets, train and eval."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHARED

from nnrnn.training import config as config_module
from nnrnn.training.runlog import read_metrics

REPO = Path(__file__).resolve().parents[1]


def nnrnn(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("NNRNN_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "nnrnn", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


@pytest.mark.parametrize("args, needle", [
    (["train", "mnist"], "psmnist"),
    (["train", "copy", "--model", "rwkv"], "nnrnn"),
    (["train", "copy", "--preset", "fast"], "paper-params"),
    (["train", "copy", "--hidden", "0"], "hidden"),
    (["train", "copy", "--lr", "-0.1"], "lr"),
    (["train", "copy", "--steps", "0"], "steps"),
    (["train", "copy", "--hidden", "ten"], "--hidden"),
    (["train", "psmnist", "--data-dir", "/nonexistent/mnist"], "nnrnn data fetch"),
    (["eval", "/nonexistent/run"], "no checkpoint"),
    (["frobnicate"], "invalid choice"),
])
@pytest.mark.subprocess
def test_user_errors_are_one_line_exit_2(args, needle, tmp_path):
    result = nnrnn(*args, cwd=tmp_path)  # a default --out (runs/TASK-MODEL) lands there, not in the checkout
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert needle in lines[0]


@pytest.mark.subprocess
def test_presets_lists_the_paper_tables():
    result = nnrnn("presets")
    assert result.returncode == 0
    assert "paper-params" in result.stdout and "ptb-300" in result.stdout
    assert "lr_orth=1e-06" in result.stdout  # nnRNN on copy, supplementary Table 4
    # the beyond grid's delay-initialised nnRNN is a variant, not a model: the listing says how to train it
    assert "nnrnn delay (a variant: --model nnrnn with these options)" in result.stdout
    assert "t_init=delay:0.02" in result.stdout


@pytest.mark.subprocess
def test_kernels_says_which_loops_run_and_why_not():
    result = nnrnn("kernels")
    assert result.returncode == 0, result.stderr
    assert "compiled recurrence loops:" in result.stdout and "oneDNN products:" in result.stdout
    off = subprocess.run([sys.executable, "-m", "nnrnn", "kernels"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO), "NNRNN_CPP": "0"})
    assert "compiled recurrence loops: no, Python loops instead (NNRNN_CPP=0)" in off.stdout


@pytest.mark.subprocess
@pytest.mark.parametrize("delay", [0.1, 0.3, 0.5])
def test_ctrl_c_during_start_up_is_one_line_and_exit_130(delay):
    """SIGINT while `nnrnn` is still starting (importing torch, building the parser): no traceback."""
    import signal
    import time
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("NNRNN_DEBUG", None)
    process = subprocess.Popen([sys.executable, "-m", "nnrnn", "kernels"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(delay)
    if process.poll() is not None:
        process.communicate()
        pytest.skip(f"nnrnn kernels finished within {delay} s, before the signal")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (process.returncode, err)
    assert err == "nnrnn: interrupted\n", err


@pytest.mark.parametrize("value, raises", [("0", False), ("false", False), ("off", False), ("no", False),
                                           ("", False), ("1", True), ("yes", True)])
def test_nnrnn_debug_0_reads_as_off(monkeypatch, capsys, value, raises):
    from nnrnn import cli
    from nnrnn.errors import UserError
    monkeypatch.setenv("NNRNN_DEBUG", value)
    if raises:
        with pytest.raises(UserError, match="unknown preset 'fast'"):
            cli.main(["presets", "fast"])
    else:
        assert cli.main(["presets", "fast"]) == 2
        assert capsys.readouterr().err == "nnrnn: error: unknown preset 'fast'; choose one of paper, paper-params, beyond\n"


@pytest.mark.subprocess
def test_import_nnrnn_leaves_torch_for_first_use():
    code = ("import sys, nnrnn; assert 'torch' not in sys.modules; "
            "from nnrnn import create, MODELS; assert 'nnrnn' in MODELS and nnrnn.errors.UserError; "
            "assert 'parametrizations' in dir(nnrnn) and not hasattr(nnrnn, 'nonexistent'); print('ok')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.stdout.strip() == "ok", result.stderr


@pytest.mark.subprocess
def test_train_then_eval_then_resume_into_changed_config(tmp_path):
    out = tmp_path / "run"
    result = nnrnn("train", "copy", "--hidden", "8", "--T", "5", "--steps", "4", "--eval-every", "2",
                   "--no-progress", "--out", str(out))
    assert result.returncode == 0, result.stderr
    final = json.loads(result.stdout.strip().splitlines()[-1])
    evaluated = nnrnn("eval", str(out))
    assert evaluated.returncode == 0
    assert json.loads(evaluated.stdout) == final["test"]
    again = nnrnn("train", "copy", "--hidden", "8", "--out", str(out))
    assert again.returncode == 2 and "--resume" in again.stderr
    changed = nnrnn("train", "copy", "--hidden", "16", "--out", str(out), "--resume")
    assert changed.returncode == 2 and "hidden" in changed.stderr


@pytest.mark.subprocess
def test_corrupt_checkpoint_is_one_line(tmp_path):
    bad = tmp_path / "x.pt"
    bad.write_bytes(b"\x00" * 100)
    result = nnrnn("eval", str(bad))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.subprocess
def test_analyze_a_run_folder(tmp_path):
    out = tmp_path / "run"
    assert nnrnn("train", "copy", "--hidden", "8", "--T", "5", "--steps", "4", "--log-every", "2",
                 "--no-progress", "--out", str(out)).returncode == 0
    result = nnrnn("analyze", str(out), "--no-gradients")
    assert result.returncode == 0, result.stderr
    for name in ("schur.png", "spectrum.png", "summary.json", "gradient_norm_training.png"):
        assert (out / "analysis" / name).is_file(), name


@pytest.mark.subprocess
def test_output_into_a_reader_that_stops_early_is_no_error():
    """`nnrnn presets | head -1`: the rest of the output has nowhere to go; that is no traceback."""
    command = f"{sys.executable} -m nnrnn presets | head -1"
    result = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120)
    assert result.stdout.startswith("paper") and result.stderr == "", result.stderr


NNRNN = Path(sys.executable).with_name("nnrnn")


@pytest.mark.subprocess
@pytest.mark.skipif(not NNRNN.is_file(), reason="the nnrnn command is not installed beside this Python")
@pytest.mark.skipif(not (SHARED / "ptb" / "ptb.char.valid.txt").is_file(), reason="shared data not found")
@pytest.mark.parametrize("task", ["copy", "psmnist", "ptb"])
def test_installed_command_trains_each_task_with_the_paper_preset(task, tmp_path):
    """`nnrnn train TASK --preset paper` at the paper's sizes (128, 512, 1024 units), two updates."""
    data = ["--data-dir", str(SHARED)]  # --data-dir only where the task reads files: elsewhere it is refused
    extra = {"copy": [], "psmnist": ["--eval-batch-size", "1000", *data], "ptb": ["--eval-batch-size", "4000", *data]}[task]
    result = subprocess.run([str(NNRNN), "train", task, "--preset", "paper", "--steps", "2", "--no-progress",
                             "--out", str(tmp_path / "run"), *extra],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    config = config_module.read_config(tmp_path / "run" / "config.json")
    assert config["preset"] == "paper" and config["hidden"] == {"copy": 128, "psmnist": 512, "ptb": 1024}[task]
    assert {r["split"] for r in read_metrics(tmp_path / "run")} >= {"train", "valid"}


@pytest.mark.subprocess
@pytest.mark.skipif(not NNRNN.is_file(), reason="the nnrnn command is not installed beside this Python")
def test_installed_command_runs_a_reproduction_and_writes_its_report(tmp_path):
    result = subprocess.run([str(NNRNN), "reproduce", "--scale", "smoke", "--tasks", "copy", "--models", "nnrnn",
                             "lstm", "--out", str(tmp_path / "repro")], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = (tmp_path / "repro" / "report.md").read_text()
    assert "| nnRNN |" in report and "| LSTM |" in report and "The paper's claims at this scale" in report


@pytest.mark.subprocess
@pytest.mark.skipif(not NNRNN.is_file(), reason="the nnrnn command is not installed beside this Python")
def test_installed_command_runs_the_readmes_torchrun_line(tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    result = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node=2", "-m", "nnrnn", "train", "copy",
                             "--batch-size", "8", "--hidden", "8", "--T", "5", "--steps", "4", "--no-progress",
                             "--out", str(tmp_path / "ddp")], capture_output=True, text=True, timeout=600,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert read_metrics(tmp_path / "ddp")[-1]["split"] == "test"
