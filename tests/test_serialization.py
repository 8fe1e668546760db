"""nnrnn/serialization.py: whole models load with torch's default ``weights_only=True``, whatever the import order,
and a parametrization class gets on the allow-list (and under ``lr_orth``) by being defined; the allow-list holds
module classes and the rebuild function only, and a crafted file cannot make that function build something else."""
from __future__ import annotations

import collections
import io
import pickle
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn

import nnrnn
from nnrnn.parametrizations.registration import Parametrization, _rebuild, register


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], check=False, capture_output=True, text=True, timeout=120)


# the ways a program can come to have both nnrnn and torch imported before it loads a saved model
IMPORT_ORDERS = {
    "nnrnn, then torch": "import nnrnn\nimport torch",
    "torch, then nnrnn": "import torch\nimport nnrnn",
    "a model module first": "import nnrnn.models.nnrnn\nimport torch",
    "the serialization module first": "import nnrnn.serialization\nimport torch",
    "the trainer first": "import torch\nimport nnrnn.training.train",
    "from nnrnn import a name": "from nnrnn import create\nimport torch",
}


@pytest.mark.subprocess
@pytest.mark.parametrize("order", IMPORT_ORDERS)
def test_a_plain_torch_load_reads_a_saved_model_in_every_import_order(order, tmp_path):
    torch.manual_seed(0)
    model = nnrnn.create("nnrnn", 3, 5).eval()
    x = torch.randn(4, 2, 3)
    torch.save({"input": x, "output": model(x)[0].detach()}, tmp_path / "expected.pt")
    torch.save(model, tmp_path / "model.pt")
    code = (f"import sys\n{IMPORT_ORDERS[order]}\n"
            "expected, model = torch.load(sys.argv[1]), torch.load(sys.argv[2])\n"
            "assert torch.equal(model(expected['input'])[0], expected['output'])\n"
            # torch's allow-list holds every model class whichever module came first (with "the serialization
            # module first", this is the check that it imports first in a fresh process)
            "import nnrnn\nassert set(nnrnn.MODELS.values()) <= set(torch.serialization.get_safe_globals())\n"
            "print('loaded')")
    done = _run(code, str(tmp_path / "expected.pt"), str(tmp_path / "model.pt"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["loaded"]


@pytest.mark.subprocess
def test_import_nnrnn_leaves_how_python_imports_as_torch_leaves_it():
    """No finder of nnrnn's on sys.meta_path: torch's import, and a probe for it, are Python's own."""
    code = ("import sys, importlib.util\nimport {0}\n"
            "print([type(f).__module__ + '.' + type(f).__qualname__ for f in sys.meta_path])\n"
            "print(importlib.util.find_spec('torch').loader.exec_module.__module__)")
    alone, beside = _run(code.format("torch")), _run(code.format("nnrnn"))
    assert alone.returncode == 0 and beside.returncode == 0, alone.stderr[-2000:] + beside.stderr[-2000:]
    assert beside.stdout == alone.stdout and "nnrnn" not in beside.stdout


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


# --------------------------------------------------------------------------- loading with weights_only=True

LOAD_IN_A_FRESH_PROCESS = textwrap.dedent("""
    import sys, torch, nnrnn
    expected = torch.load(sys.argv[1])           # plain tensors
    x = expected.pop("input")
    for key, want in expected.items():
        model = torch.load(sys.argv[2] + key + ".pt").eval()   # torch's default: weights_only=True
        with torch.no_grad():
            assert torch.equal(model(x)[0], want), key
    print("loaded", len(expected))
""")


def test_whole_models_load_with_the_default_weights_only_in_a_process_that_only_imported_nnrnn(tmp_path):
    variants = {name: (name, {}) for name in nnrnn.MODELS}
    variants.update({"nnrnn-dynamic": ("nnrnn", {"dynamic": True}), "exprnn-dynamic": ("exprnn", {"dynamic": True})})
    x = torch.randn(4, 2, 3)
    expected = {"input": x}
    for key, (name, options) in variants.items():
        torch.manual_seed(0)
        model = nnrnn.create(name, 3, 5, num_layers=2, bidirectional=True, **options)
        model(x)[0].sum().backward()  # a trained-looking state: gradients and torch's RNN caches filled
        torch.save(model, tmp_path / f"m-{key}.pt")
        with torch.no_grad():
            expected[key] = model.eval()(x)[0]
    torch.save(expected, tmp_path / "expected.pt")
    done = subprocess.run([sys.executable, "-c", LOAD_IN_A_FRESH_PROCESS, str(tmp_path / "expected.pt"),
                           str(tmp_path / "m-")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["loaded", str(len(variants))]


class _Crafted:
    """Pickles as a call of nnrnn's rebuild function with arguments a file could hold."""

    def __init__(self, *arguments):
        self.arguments = arguments

    def __reduce__(self):
        return _rebuild, self.arguments


@pytest.mark.parametrize("arguments", [
    (collections.OrderedDict, {}, []),                                            # not a module class
    (nn.Linear, {"_modules": {}}, ["weight"]),                                     # nothing parametrized
    (nn.Linear, {"_modules": {"parametrizations": nn.ModuleDict()}}, ["weight"]),  # names not its own
    (nn.Linear, {"_modules": {"parametrizations": nn.ModuleDict()}}, "weight"),    # not a list of names
], ids=["not-a-module", "no-parametrizations", "foreign-name", "names-not-a-list"])
def test_a_crafted_file_cannot_make_the_rebuild_function_build_something_else(arguments):
    buffer = io.BytesIO()
    torch.save(_Crafted(*arguments), buffer)
    buffer.seek(0)
    with torch.serialization.safe_globals([nn.Linear]), pytest.raises((pickle.UnpicklingError, TypeError, ValueError)):
        torch.load(buffer)
    with pytest.raises((TypeError, ValueError)):
        _rebuild(*arguments)


def test_the_allow_list_holds_module_classes_and_the_rebuild_function_only():
    allowed = set(nnrnn.serialization.safe_globals())
    assert allowed <= set(torch.serialization.get_safe_globals())
    assert all(isinstance(g, type) and issubclass(g, nn.Module) for g in allowed - {_rebuild, set})
    assert set in allowed  # a module's state holds sets, which torch 2.4.1 loads with weights_only only when told
