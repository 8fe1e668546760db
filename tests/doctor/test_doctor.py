"""``nnrnn doctor`` on the CPU: its quick version passes and prints every row, and a broken device path, a
resume that loses state or a check that crashes makes it fail."""
import os
import re
from pathlib import Path

import pytest
import torch

from helpers import FakeGraphs
from nnrnn.training import checkpoint, step
from nnrnn.doctor import checks, command, resume, workload
from nnrnn_cli.command import main, make_parser
from nnrnn.models import MODELS as ALL_MODELS
from nnrnn.models import PAPER_MODELS as MODELS  # what doctor runs by default
from nnrnn.models.cells import CellModel
from nnrnn.models import fused

SHARED = Path(os.environ.get("NNRNN_SHARED_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")


@pytest.fixture
def no_curves(monkeypatch):
    """The trainer draws no curves.png: the resume check compares parameters, never the figure, and two drawings
    per run are nine tenths of a 4-update run's time (the figure is checked by test_train.py and test_figures.py)."""
    from nnrnn.training import train as trainer
    monkeypatch.setattr(trainer, "plot_curves", lambda folder, references=None: None)


def rows(output: str) -> dict:
    """(check, model, task) -> result, from the printed table."""
    table = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 5 and cells[0] not in ("check", "---"):
            table[tuple(cells[:3])] = cells[3]
    return table


def passing_doctor(capsys, data_head, *options) -> tuple[str, dict]:
    """The output and rows of ``nnrnn doctor --device cpu OPTIONS``, which passed, with parity for every model on
    every task."""
    code = main(["doctor", *options, "--device", "cpu", "--data-dir", str(data_head)])
    out = capsys.readouterr().out
    table = rows(out)
    assert code == 0, out
    for task in workload.TASKS:
        for model in MODELS:
            assert table[("parity", model, task)] == "ok"
    return out, table


def test_quick_doctor_passes_with_a_row_for_every_model_and_task(capsys, no_curves, data_head):
    out, table = passing_doctor(capsys, data_head, "--quick")
    for model in MODELS:
        assert table[("save/load/resume", model, "copy")] == "ok"
        assert table[("autocast bf16", model, "copy")] == "ok"
    for task in ("adding", "psmnist", "ptb"):
        assert table[("save/load/resume", "nnrnn", task)] == "ok" or \
            table[("save/load/resume", "nnrnn", task)].startswith("skipped (no data")
    assert table[("torch.compile", "nnrnn", "copy")] == "ok"
    assert table[("ddp, 2 processes", "nnrnn", "copy")] == "skipped (--quick)"
    timed = {k: v for k, v in table.items() if k[0] == "update time"}
    assert {k[1] for k in timed} == {"torch.nn.RNN", "torch.nn.GRU", "torch.nn.LSTM", *MODELS}
    # the toy sizes' ratios say so: they alarmed (nnrnn 8.5× RNN under load) without saying they are not the paper's
    toy = r"[\d.]+× RNN, [\d.]+× GRU, [\d.]+× LSTM \(toy size, not the paper's\)"
    assert all(re.fullmatch(toy, v) for v in timed.values())
    assert table[("update time", "torch.nn.RNN", f"psmnist {workload.QUICK_SIZES['psmnist']}")].startswith("1.00× RNN")
    assert "0 failed" in out


def test_a_wrong_gradient_on_the_float32_path_fails_parity_and_the_exit_code(monkeypatch, capsys, no_curves):
    real = fused._backward

    def wrong(grad_h, h, *args):  # float64 (the reference) stays right, as a device-only bug would
        grads = real(grad_h, h, *args)
        if h.dtype == torch.float32 and grads[4] is not None:
            grads[4] = grads[4] * 1.01
        return grads
    monkeypatch.setattr(fused, "_backward", wrong)
    code = main(["doctor", "--quick", "--device", "cpu", "--models", "rnn,lstm", "--tasks", "copy", "--no-timing"])
    table = rows(capsys.readouterr().out)
    assert code == 1
    assert table[("parity", "rnn", "copy")] == "FAIL"
    assert table[("parity", "lstm", "copy")] == "ok"  # torch's LSTM: not the broken loops


def test_a_resume_that_drops_the_optimizer_state_fails(monkeypatch, no_curves):
    real = checkpoint.load

    def forgetful(path, map_location="cpu"):
        payload = real(path, map_location=map_location)
        if "optimizer" in payload:
            payload["optimizer"]["state"] = {}
        return payload
    monkeypatch.setattr(checkpoint, "load", forgetful)
    row = resume.check_resume("nnrnn", "copy", torch.device("cpu"), workload.QUICK)
    assert row.result == "FAIL", row


def test_a_crashing_check_is_a_failed_row_not_a_traceback(monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("expected a torch.ByteTensor, but got torch.cuda.ByteTensor")
    monkeypatch.setattr(command, "check_resume", crash)
    found = command.run_checks(torch.device("cpu"), ("rnn",), ("copy",), quick=True, timing=False)
    resume = [r for r in found if r.check == "save/load/resume"]
    assert [r.result for r in resume] == ["FAIL"] and "ByteTensor" in resume[0].detail


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_full_doctor_passes_on_the_cpu_at_its_check_sizes(capsys, no_curves, data_head):
    """Every check at its full size (DDP with two gloo processes, inductor's compile), the paper-size timing out."""
    _, table = passing_doctor(capsys, data_head, "--no-timing")
    for task in workload.TASKS:
        for model in MODELS:
            resume = table[("save/load/resume", model, task)]
            assert resume == "ok" or (task in ("psmnist", "ptb") and resume.startswith("skipped (no data")), resume
    for model in MODELS:
        assert table[("autocast bf16", model, "copy")] == "ok"
        assert table[("torch.compile", model, "copy")] == "ok"
        assert table[("cuda graph", model, "copy")] == "skipped (CUDA graphs need a CUDA device, not cpu)"
    assert table[("ddp, 2 processes", "nnrnn", "copy")] == "ok"


def test_the_cuda_graph_row_compares_replayed_updates_with_eager_ones(monkeypatch):
    graphs = FakeGraphs()
    monkeypatch.setattr(step, "GRAPHS", graphs)  # torch.cuda's graph API, on the CPU
    row = checks.check_cuda_graph("nnrnn", "ptb", torch.device("cpu"), workload.QUICK)
    assert row.result == "ok" and len(graphs.graphs) == 2 and graphs.replays, row
    captured_only = step.CapturedStep._replay

    def twice(self, number, carried):  # a replay that applies the optimizer's step twice: captured path only
        self.graphs[1].replay()
        return captured_only(self, number, carried)
    monkeypatch.setattr(step.CapturedStep, "_replay", twice)
    assert checks.check_cuda_graph("nnrnn", "copy", torch.device("cpu"), workload.QUICK).result == "FAIL"


def test_quick_compile_row_is_what_the_help_says():
    row = checks.check_compile("nnrnn", "copy", torch.device("cpu"), workload.QUICK, backend="eager")
    assert row.result == "ok" and row.detail.startswith("eager,")
    sub = next(a for a in make_parser()._actions if a.dest == "command").choices["doctor"].defined()
    quick = next(a for a in sub._actions if a.dest == "quick").help
    assert "eager backend" in quick and "no compile" not in quick


def test_a_gradient_ill_conditioned_where_it_is_taken_gets_its_float32_noise_as_tolerance():
    # the complex modReLU's phase z/|z| at small |z|: float32 rounding alone moves these gradients by ~1e-4
    row = checks.check_parity("nnrnn-complex", "copy", torch.device("cpu"), workload.FULL)
    assert row.result == "ok", row
    real = checks.check_parity("nnrnn", "copy", torch.device("cpu"), workload.FULL)
    assert "tolerance 1.0e-04" in real.detail  # well conditioned: the fixed tolerance


@pytest.mark.parametrize("args, needle", [
    (["doctor", "--models", "rwkv"], "--models"),
    (["doctor", "--tasks", "mnist"], "--tasks"),
    (["doctor", "--device", "tpu"], "--device"),
    (["doctor", "--rounds", "0"], "--rounds"),
])
def test_doctor_user_errors_exit_2(args, needle, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_doctor_on_cuda_without_cuda_is_a_user_error(capsys):
    assert main(["doctor", "--device", "cuda"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


@pytest.mark.parametrize("task", ["psmnist", "ptb"])
def test_a_resume_row_without_data_names_the_folder_searched_and_the_fix(task, tmp_path):
    row = resume.check_resume("nnrnn", task, torch.device("cpu"), workload.QUICK, data_dir=tmp_path)
    assert row.result.startswith("skipped (no data") and str(tmp_path) in row.result
    assert f"nnrnn data fetch {'mnist' if task == 'psmnist' else task}" in row.result and "--data-dir" in row.result


@pytest.mark.parametrize("model", [name for name, cls in ALL_MODELS.items() if issubclass(cls, CellModel)])
def test_parity_of_a_model_with_its_own_cell_compares_its_parameters(model):
    """coRNN, LEM, LRU and minGRU have no single V: parity compares losses, gradients and every parameter."""
    row = checks.check_parity(model, "adding", torch.device("cpu"), workload.QUICK)
    assert row.result == "ok", row.detail
    assert "final V" not in row.detail and "final parameters" in row.detail


def test_the_doctor_has_a_size_for_every_task_and_reads_ptb_from_its_class():
    from nnrnn.tasks import TASKS, task_class
    from nnrnn.training.network import DEFAULT_EMBEDDING
    assert set(workload.QUICK.T) == set(workload.FULL.T) == set(TASKS) == set(workload.TASKS)
    assert workload.PAPER_SIZES["ptb"][3] == DEFAULT_EMBEDDING
    ptb = workload.synthetic_task("ptb", 5, 2)
    assert ptb.output_size == task_class("ptb").vocab_size
    assert int(ptb.train_batch(0).inputs.max()) < ptb.output_size
