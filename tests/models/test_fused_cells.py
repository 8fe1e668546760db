"""The gated and oscillator cells' compiled time loops (models/fused_cells.py, kernels/csrc/cell_loops.cpp), and the
LRU's, the non-normal LRU's and minGRU's linear recurrences, against their Python loops: gradcheck in float64,
float32 within the non-gated loops' 1e-5, and the models (stacks, bidirectional layers, packed and batch-first
input, state noise for the linear ones) with the compiled loops on and off."""
import shutil

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence

import nnrnn
from nnrnn.kernels import extension
from nnrnn.kernels import policy as kernel_policy
from nnrnn.kernels.operations import choose_cells
from nnrnn.kernels.settings import COMPILED, TORCH
from nnrnn.models import fused_cells
from nnrnn.models.cornn import cornn_loop
from nnrnn.models.gru import gru_reference
from nnrnn.models.lem import lem_loop
from nnrnn.models.lru import lru_loop
from nnrnn.models.mingru import mingru_compiled, mingru_loop
from nnrnn.models.nnlru import nnlru_loop
from nnrnn.models.nnrnn_complex import complex_reference


# (name, options) of every model whose loop the compiled cell loops run
CELL_MODELS = [("gru", {}), ("nngru", {}), ("nngru", {"schur_gates": True}), ("cornn", {}),
               ("cornn", {"damping": "implicit"}), ("lem", {"dt": 0.5}), ("nnrnn-complex", {}),
               ("nnrnn-complex", {"nonlinearity": None})]
CORNN = {"dt": 0.3, "gamma": 0.7, "epsilon": 1.5}  # Δt ε < 1, larger steps than the defaults: every term counts


def relative_error(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def tensors(dtype, seed, *shapes, scale=0.4):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(dtype).requires_grad_()
            for shape in shapes]


def gru_case(dtype, steps=4, batch=3, n=5, inputs=2, bias=True, seed=0):
    """(compiled, reference, arguments): both map the arguments to every step's state."""
    x, h0, w_ih, w_hh, b_ih, b_hh = tensors(dtype, seed, (steps, batch, inputs), (batch, n), (3 * n, inputs),
                                            (3 * n, n), (3 * n,), (3 * n,))
    if not bias:
        b_ih = b_hh = None
    return (lambda *a: fused_cells.GRULoop.apply(*a), lambda *a: gru_reference(*a[:4], *a[4:])[0],
            (x, h0, w_ih, w_hh, b_ih, b_hh))


def cornn_case(dtype, damping, steps=4, batch=3, n=5, inputs=2, bias=True, seed=0):
    x, s0, w_ih, w_hh, b = tensors(dtype, seed, (steps, batch, inputs), (batch, 2 * n), (n, inputs), (n, 2 * n), (n,))
    b = b if bias else None
    constants = (CORNN["dt"], CORNN["gamma"], CORNN["epsilon"])

    def compiled(x, s0, w_ih, w_hh, b):
        return fused_cells.CoRNNLoop.apply(x, s0, w_ih, w_hh, b, *constants, damping == "implicit")

    def reference(x, s0, w_ih, w_hh, b):
        return torch.cat(cornn_loop(x, s0[:, :n], s0[:, n:], w_ih, w_hh, b, *constants, damping), -1)
    return compiled, reference, (x, s0, w_ih, w_hh, b)


def lem_case(dtype, steps=4, batch=3, n=5, inputs=2, bias=True, seed=0):
    x, s0, w_ih, w_hh, w_zy, b = tensors(dtype, seed, (steps, batch, inputs), (batch, 2 * n), (4 * n, inputs),
                                         (3 * n, n), (n, n), (4 * n,), scale=0.6)
    b = b if bias else None

    def compiled(*a):
        return fused_cells.LEMLoop.apply(*a, 0.5)

    def reference(x, s0, w_ih, w_hh, w_zy, b):
        return torch.cat(lem_loop(x, s0[:, :n], s0[:, n:], w_ih, w_hh, w_zy, b, 0.5), -1)
    return compiled, reference, (x, s0, w_ih, w_hh, w_zy, b)


def complex_case(dtype, steps=4, batch=3, n=5, inputs=2, bias=True, seed=0):
    """The complex nnRNN's recurrence on [Re h, Im h] (``inputs`` unused: it takes the projection)."""
    projected, h0, v_real, v_imag, b = tensors(dtype, seed, (steps, batch, 2 * n), (batch, 2 * n), (n, n), (n, n),
                                               (n,))
    b = b if bias else None

    def reference(projected, h0, v_real, v_imag, b):
        return complex_reference(projected, h0, torch.complex(v_real, v_imag), b)
    return (lambda *a: fused_cells.ComplexLoop.apply(*a), reference, (projected, h0, v_real, v_imag, b))


def lru_case(dtype, steps=4, batch=3, n=5, inputs=2, bias=True, seed=0):
    """The LRU's recurrence on [Re s, Im s] against its Python loop, s_0 folded into the first step as the model's
    reference path folds it (``inputs`` and ``bias`` unused: it takes the projection, and has no bias)."""
    b, s0, lr, li = tensors(dtype, seed, (steps, batch, 2 * n), (batch, 2 * n), (n,), (n,), scale=0.5)

    def reference(b, s0, lr, li):
        br, bi, sr, si = b[..., :n], b[..., n:], s0[:, :n], s0[:, n:]
        br = torch.cat([br[:1] + lr * sr - li * si, br[1:]])
        bi = torch.cat([bi[:1] + lr * si + li * sr, bi[1:]])
        return torch.cat(lru_loop(br, bi, lr, li), -1)
    return (lambda *a: fused_cells.DiagonalLoop.apply(*a), reference, (b, s0, lr, li))


def nnlru_case(dtype, steps=4, batch=3, n=5, inputs=2, bias=True, seed=0):
    """The non-normal LRU's z_t = M z_{t-1} + b_t (M dense, 2n × 2n, spectral radius about 0.8) against its Python
    loop, z_0 folded into the first step as the model's reference path folds it."""
    b, z0, m = tensors(dtype, seed, (steps, batch, 2 * n), (batch, 2 * n), (2 * n, 2 * n))
    with torch.no_grad():
        m.mul_(2 / (2 * n) ** 0.5)

    def reference(b, z0, m):
        return nnlru_loop(torch.cat([b[:1] + z0 @ m.t(), b[1:]]), m)
    return (lambda *a: fused_cells.DenseLinearLoop.apply(*a), reference, (b, z0, m))


def mingru_case(dtype, steps=4, batch=3, n=5, inputs=2, bias=True, seed=0):
    """minGRU's layer from its projections, with state noise when ``bias``: mingru_compiled against mingru_loop.
    The candidates on both sides of g's seam at 0 (k + ½ above, σ(k) below)."""
    gate, candidate, h0, noise = tensors(dtype, seed, (steps, batch, n), (steps, batch, n), (batch, n),
                                         (steps, batch, n), scale=1.0)
    if not bias:
        return (lambda *a: mingru_compiled(*a), lambda *a: mingru_loop(*a), (gate, candidate, h0))
    return (lambda *a: mingru_compiled(*a), lambda *a: mingru_loop(*a), (gate, candidate, h0, noise))


CASES = {"gru": gru_case, "nnrnn-complex": complex_case,
         "cornn-explicit": lambda *a, **k: cornn_case(*a, "explicit", **k),
         "cornn-implicit": lambda *a, **k: cornn_case(*a, "implicit", **k), "lem": lem_case,
         "lru": lru_case, "nnlru": nnlru_case, "mingru": mingru_case}


def leaves(args):
    return [t for t in args if isinstance(t, torch.Tensor) and t.requires_grad]


@pytest.fixture(autouse=True)
def loops():
    """The compiled loops; a failure where a C++ compiler exists (they must build there), else a skip."""
    if extension.recurrence_loops() is None:
        if shutil.which("c++") or shutil.which("g++"):
            pytest.fail(f"the C++ loops did not build: {extension.loops_unavailable_reason()}")
        pytest.skip("no C++ compiler here, so no compiled loops")
    return extension.recurrence_loops()


@pytest.mark.parametrize("steps", [1, 3])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", list(CASES))
def test_gradcheck_float64(case, bias, steps):
    """The hand-written backward against finite differences of the same compiled loop, in float64."""
    compiled, _, args = CASES[case](torch.float64, steps=steps, bias=bias)
    assert torch.autograd.gradcheck(compiled, args, eps=1e-6, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("case", list(CASES))
def test_float64_equals_the_python_loop(case):
    compiled, reference, args = CASES[case](torch.float64, steps=6, seed=3)
    out_c, out_r = compiled(*args), reference(*args)
    assert relative_error(out_c, out_r) <= 1e-12
    weights = torch.randn(out_c.shape, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    for gc, gr in zip(torch.autograd.grad((out_c * weights).sum(), leaves(args)),
                      torch.autograd.grad((out_r * weights).sum(), leaves(args))):
        assert relative_error(gc, gr) <= 1e-12


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", list(CASES))
def test_float32_matches_the_python_loop(case, bias):
    """Outputs and every gradient within 1e-5 relative, as the non-gated loops against their reference; a loss
    on every step through a batch-first view, so that the incoming gradient is not contiguous."""
    compiled, reference, args = CASES[case](torch.float32, steps=30, batch=4, n=16, inputs=3, bias=bias, seed=1)
    out_c, out_r = compiled(*args), reference(*args)
    assert relative_error(out_c, out_r) <= 1e-5
    weights = torch.randn(out_c.transpose(0, 1).shape, generator=torch.Generator().manual_seed(2))
    grads_c = torch.autograd.grad((out_c.transpose(0, 1) * weights).sum(), leaves(args))
    grads_r = torch.autograd.grad((out_r.transpose(0, 1) * weights).sum(), leaves(args))
    for gc, gr in zip(grads_c, grads_r):
        assert relative_error(gc, gr) <= 1e-5


def test_large_steps_take_torchs_threaded_product_and_match():
    """With more than one thread, a step of B·N·K ≥ 2²¹ goes to torch's addmm: the same results."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        compiled, reference, args = gru_case(torch.float32, steps=3, batch=64, n=128, inputs=3, seed=7)
        out_c, out_r = compiled(*args), reference(*args)
        assert relative_error(out_c, out_r) <= 1e-5
        grads_c = torch.autograd.grad(out_c.sum(), leaves(args))
        grads_r = torch.autograd.grad(out_r.sum(), leaves(args))
        for gc, gr in zip(grads_c, grads_r):
            assert relative_error(gc, gr) <= 1e-5
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("case", list(CASES))
def test_double_backward_is_refused(case):
    compiled, _, args = CASES[case](torch.float64)
    grads = torch.autograd.grad(compiled(*args).pow(2).sum(), leaves(args), create_graph=True)
    with pytest.raises(RuntimeError, match="first-order backward"):
        grads[0].sum().backward()


# ----------------------------------------------------------------------------- the choice


def test_the_policy_chooses_the_compiled_loops_for_float32_on_the_cpu_only(monkeypatch):
    like = torch.zeros(1)
    assert choose_cells(like, "gru") == COMPILED
    assert choose_cells(like.double(), "gru") == TORCH
    monkeypatch.setenv("NNRNN_CPP", "0")
    kernel_policy.reset()
    assert choose_cells(like, "gru") == TORCH
    decisions = dict((name, choice) for name, choice, _ in kernel_policy.policy("cpu").describe())
    assert decisions["cells gru"] == TORCH


def run_model(model, inputs, hx=None):
    """Outputs, final states and every parameter's gradient of a loss on both."""
    out, h = model(inputs, hx)
    out = out.data if isinstance(out, torch.nn.utils.rnn.PackedSequence) else out
    states = h if isinstance(h, tuple) else (h,)
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(9))
    loss = (out * weights).sum() + sum((s * s).sum() for s in states)
    params = [p for p in model.parameters() if p.requires_grad]
    return out, states, torch.autograd.grad(loss, params)


def count_calls(monkeypatch, name):
    calls = []
    original = getattr(fused_cells, name)
    monkeypatch.setattr(fused_cells, name, lambda *a, **k: calls.append(1) or original(*a, **k))
    return calls


COMPILED_FUNCTION = {"gru": "gru_compiled", "nngru": "gru_compiled", "cornn": "cornn_compiled", "lem": "lem_compiled",
                     "nnrnn-complex": "complex_compiled"}


@pytest.mark.parametrize("layout", ["padded", "packed", "batch_first"])
@pytest.mark.parametrize("name,options", CELL_MODELS)
def test_models_match_their_python_loops(name, options, layout, monkeypatch):
    """Two layers, bidirectional, with states given: the compiled loops (counted: every cell runs them) against the
    Python loops (NNRNN_CPP=0), within 1e-5."""
    torch.manual_seed(0)
    model = nnrnn.MODELS[name](3, 8, num_layers=2, bidirectional=True, batch_first=layout == "batch_first",
                               **options)
    if name == "nnrnn-complex":  # not at its initial γ = 1, T = 0, b = 0: every part of its Jacobian counts
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(torch.randn_like(parameter) * 0.1)
    x = torch.randn(7, 3, 3)
    lengths = torch.tensor([7, 5, 2])
    inputs = {"padded": x, "packed": pack_padded_sequence(x, lengths), "batch_first": x.transpose(0, 1)}[layout]
    hx = torch.randn(4, 3, 16 if name == "nnrnn-complex" else 8) * 0.5  # the complex one's [Re h, Im h]
    if name in ("cornn", "lem"):  # (y_0, z_0), torch.nn.LSTM's form
        hx = (hx, torch.randn(4, 3, 8) * 0.5)
    calls = count_calls(monkeypatch, COMPILED_FUNCTION[name])
    out_c, states_c, grads_c = run_model(model, inputs, hx)
    assert len(calls) == 4  # every layer and direction
    monkeypatch.setenv("NNRNN_CPP", "0")
    kernel_policy.reset()
    out_p, states_p, grads_p = run_model(model, inputs, hx)
    assert len(calls) == 4
    assert relative_error(out_c, out_p) <= 1e-5
    for a, b in zip(states_c, states_p):
        assert relative_error(a, b) <= 1e-5
    for a, b in zip(grads_c, grads_p):
        assert relative_error(a, b) <= 1e-5


@pytest.mark.parametrize("name", ["gru", "nngru"])
def test_the_gru_runs_torchs_kernel_where_asked_or_where_the_compiled_loop_does_not_run(name, monkeypatch):
    model = nnrnn.MODELS[name](3, 8)
    assert model.implementation == "auto"
    calls = count_calls(monkeypatch, "gru_compiled")
    x = torch.randn(5, 2, 3)
    auto, _ = model(x)
    assert len(calls) == 1
    model.implementation = "torch"
    kernel, _ = model(x)
    assert len(calls) == 1
    assert relative_error(auto, kernel) <= 1e-5
    model.implementation = "auto"
    model.double()(x.double())
    assert len(calls) == 1  # float64: torch's kernel


@pytest.mark.parametrize("name,options", CELL_MODELS)
def test_empty_inputs_take_the_python_loop(name, options):
    model = nnrnn.MODELS[name](3, 4, **options)
    out, _ = model(torch.randn(3, 0, 3))
    assert out.shape == (3, 0, 8 if name == "nnrnn-complex" else 4)


@pytest.mark.parametrize("name,options", CELL_MODELS)
def test_inference_without_autograd_matches(name, options):
    model = nnrnn.MODELS[name](3, 8, **options)
    x = torch.randn(6, 2, 3)
    with torch.no_grad():
        out_c, _ = model(x)
    out_g, _ = model(x)
    assert torch.equal(out_c, out_g.detach())


def test_the_loops_sigma_and_tanh_match_torchs_over_the_float_range(loops):
    """The compiled loops' own σ and tanh (vectorised, not ATen's): a GRU step from h_0 = 0 with no recurrent
    weights saves r = σ(x_r), z = σ(x_z) and n = tanh(x_n), compared with torch's across the float range, at
    the extremes, and for NaN."""
    values = torch.cat([torch.linspace(-100, 100, 2001), torch.logspace(-30, 1, 100), -torch.logspace(-30, 1, 100),
                        torch.tensor([0.0, -0.0, 0.625, -0.625, 87.3, -87.3, 88.3, -88.3, 1e30, -1e30,
                                      float("inf"), float("-inf"), float("nan")])])
    n = values.numel()
    xp = values.repeat(3).view(1, 1, 3 * n).contiguous()
    h, gates = torch.empty(1, 1, n), torch.empty(1, 1, 4 * n)
    loops.gru_forward(xp, torch.zeros(1, n), torch.zeros(n, 3 * n), torch.empty(0), h, gates)
    for got, want in ((gates[0, 0, :n], torch.sigmoid(values)), (gates[0, 0, n:2 * n], torch.sigmoid(values)),
                      (gates[0, 0, 3 * n:], torch.tanh(values))):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-37, equal_nan=True)


# ----------------------------------------------------------------------------- the linear recurrences in their models

LINEAR = {"lru": "DiagonalLoop", "nnlru": "DenseLinearLoop", "mingru": "MinGRULoop"}


def count_applies(monkeypatch, name):
    calls = []
    function = getattr(fused_cells, name)
    original = function.apply
    monkeypatch.setattr(function, "apply", staticmethod(lambda *a: calls.append(1) or original(*a)))
    return calls


@pytest.mark.parametrize("noise", [0.0, 0.1])
@pytest.mark.parametrize("layout", ["padded", "packed", "batch_first"])
@pytest.mark.parametrize("name", list(LINEAR))
def test_linear_recurrences_match_their_python_paths_in_their_models(name, layout, noise, monkeypatch):
    """Two layers, bidirectional, states given, with and without state noise (the same draws: the generator reset
    before each run): the compiled loop (counted: every cell runs it) against the model's scan or loop
    (NNRNN_CPP=0), outputs, final states and every parameter's gradient within 1e-5."""
    torch.manual_seed(0)
    options = {"t_init": "delay:0.5"} if name == "nnlru" else {}  # a T that is not zero
    model = nnrnn.MODELS[name](3, 6, num_layers=2, bidirectional=True, batch_first=layout == "batch_first",
                               state_noise=noise, **options)
    x = torch.randn(9, 3, 3)
    lengths = torch.tensor([9, 6, 2])
    inputs = {"padded": x, "packed": pack_padded_sequence(x, lengths), "batch_first": x.transpose(0, 1)}[layout]
    hx = torch.randn(4, 3, model.state_width) * 0.5
    calls = count_applies(monkeypatch, LINEAR[name])
    torch.manual_seed(1)
    out_c, states_c, grads_c = run_model(model, inputs, hx)
    assert len(calls) == 4  # every layer and direction
    monkeypatch.setenv("NNRNN_CPP", "0")
    kernel_policy.reset()
    torch.manual_seed(1)
    out_p, states_p, grads_p = run_model(model, inputs, hx)
    assert len(calls) == 4
    assert relative_error(out_c, out_p) <= 1e-5
    for a, b in zip(states_c, states_p):
        assert relative_error(a, b) <= 1e-5
    for a, b in zip(grads_c, grads_p):
        assert relative_error(a, b) <= 1e-5


@pytest.mark.parametrize("name", list(LINEAR))
def test_linear_recurrences_run_their_python_paths_where_asked_or_in_float64(name, monkeypatch):
    """``implementation = "scan"`` or ``"loop"`` runs that reference, and float64 runs the Python path (its scan or
    loop): the compiled loop only for "auto" in float32."""
    model = nnrnn.MODELS[name](3, 4)
    calls = count_applies(monkeypatch, LINEAR[name])
    x = torch.randn(5, 2, 3)
    auto, _ = model(x)
    assert len(calls) == 1
    for implementation in ("scan", "loop"):
        model.implementation = implementation
        assert relative_error(model(x)[0], auto) <= 1e-5
        assert len(calls) == 1
    model.implementation = "auto"
    model.double()(x.double())
    assert len(calls) == 1


def test_the_policy_chooses_the_linear_recurrences_compiled_loops_as_the_cells(monkeypatch):
    like = torch.zeros(1)
    for name in LINEAR:
        assert choose_cells(like, name) == COMPILED
        assert choose_cells(like.double(), name) == TORCH
    monkeypatch.setenv("NNRNN_CPP", "0")
    kernel_policy.reset()
    assert all(choose_cells(like, name) == TORCH for name in LINEAR)


@pytest.mark.parametrize("name", list(LINEAR))
def test_linear_recurrences_of_empty_inputs_take_the_python_path(name, monkeypatch):
    calls = count_applies(monkeypatch, LINEAR[name])
    model = nnrnn.MODELS[name](3, 4)
    out, _ = model(torch.randn(3, 0, 3))
    assert out.shape == (3, 0, 4) and not calls


@pytest.mark.parametrize("name", list(LINEAR))
def test_linear_recurrences_without_autograd_match(name):
    """Inference (no graph) runs the same compiled forward as training."""
    model = nnrnn.MODELS[name](3, 8)
    x = torch.randn(6, 2, 3)
    with torch.no_grad():
        out_c, _ = model(x)
    out_g, _ = model(x)
    assert torch.equal(out_c, out_g.detach())
