"""nnrnn/serialization.py: whole models load with torch's default ``weights_only=True``, whatever the import order,
and a parametrization class gets on the allow-list (and under ``lr_orth``) by being defined."""
from __future__ import annotations

import io
import subprocess
import sys

import pytest
import torch

import nnrnn
from nnrnn.parametrizations.registration import Parametrization, register


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], check=False, capture_output=True, text=True, timeout=120)


@pytest.mark.subprocess
def test_a_process_that_imports_nnrnn_before_torch_loads_a_saved_model_with_a_plain_torch_load(tmp_path):
    torch.manual_seed(0)
    model = nnrnn.create("nnrnn", 3, 5).eval()
    x = torch.randn(4, 2, 3)
    torch.save({"input": x, "output": model(x)[0].detach()}, tmp_path / "expected.pt")
    torch.save(model, tmp_path / "model.pt")
    code = ("import sys, nnrnn; assert 'torch' not in sys.modules\n"
            "import torch\n"
            "expected, model = torch.load(sys.argv[1]), torch.load(sys.argv[2])\n"
            "assert torch.equal(model(expected['input'])[0], expected['output'])\n"
            "print('loaded')")
    done = _run(code, str(tmp_path / "expected.pt"), str(tmp_path / "model.pt"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["loaded"]


@pytest.mark.subprocess
def test_the_serialization_module_imports_first_in_a_fresh_process():
    done = _run("import nnrnn.serialization, torch; print(len(nnrnn.serialization.safe_globals()) > 0)")
    assert done.returncode == 0, done.stderr[-2000:]


class _Cayley(Parametrization):
    """A parametrization the package does not know: Q = (I - A)⁻¹(I + A), A = X - Xᵀ."""

    def forward(self, x):
        a = x - x.T
        eye = torch.eye(x.shape[0], dtype=x.dtype)
        return torch.linalg.solve(eye - a, eye + a)


def test_a_new_parametrization_class_is_trained_under_lr_orth_and_loads_with_weights_only():
    model = nnrnn.create("rnn", 3, 4)
    register(model, "weight_hh_l0", _Cayley(), "test")
    generator = model.parametrizations.weight_hh_l0.original
    groups = {group["name"]: group for group in nnrnn.param_groups(model, lr=1e-3, lr_orth=1e-4)}
    assert [id(p) for p in groups["orthogonal"]["params"]] == [id(generator)]
    assert groups["orthogonal"]["lr"] == 1e-4 and all(p is not generator for p in groups["default"]["params"])
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)  # weights_only=True, torch's default
    assert isinstance(loaded.parametrizations.weight_hh_l0[0], _Cayley)
    assert torch.equal(loaded.weight_hh_l0, model.weight_hh_l0)
