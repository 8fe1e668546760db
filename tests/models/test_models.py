"""The recurrent models behind nnrnn.create, param_groups and the parameter matching.

Every non-gated model computes h_t = φ(V h_{t-1} + W_ih x_t + b) with V from
``recurrent_matrix()``; the checks below compare against that formula written
out as a Python loop, and against the documented structure of V (nnRNN's
Schur form, expRNN's exponential, EURNN's Givens layers).

Set NNRNN_TEST_DEVICE (e.g. "cuda") to run the same checks on another device.
"""
from __future__ import annotations

import copy
import math
import os
import re

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment
from torch import nn
from torch.func import functional_call

import nnrnn
from nnrnn.kernels import onednn
from nnrnn.kernels import policy as kernel_policy
from nnrnn.models.cells import CellModel
from nnrnn.parametrizations import schur, skew, triangular_mask

DEVICE = torch.device(os.environ.get("NNRNN_TEST_DEVICE", "cpu"))
NAMES = list(nnrnn.MODELS)
# their own cells (nnrnn/models/cells.py): tests/models/test_cells.py
MODERN = [n for n in NAMES if issubclass(nnrnn.MODELS[n], CellModel)]
# their own equations, not h_t = φ(V h_{t-1} + W_ih x_t + b) (tests/models/test_gru.py for the GRUs)
GATED = [n for n in NAMES if nnrnn.MODELS[n].GATES != 1]
# the complex nnRNN's state and outputs are [Re h, Im h], 2N wide: tests/models/test_complex.py has its versions
REAL_STATE = [n for n in NAMES if nnrnn.MODELS[n].REAL_FEATURES_PER_UNIT == 1 and n not in MODERN]
NON_GATED = [n for n in REAL_STATE if n not in GATED]


def make(name: str, input_size: int = 3, hidden_size: int = 5, **options) -> nn.Module:
    return nnrnn.create(name, input_size, hidden_size, **options).to(DEVICE)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


def modrelu(z, b):
    return torch.sign(z) * torch.relu(z.abs() + b)


def manual_loop(model, x, h0):
    """x (T, B, I), h0 (B, N) -> outputs (T, B, N): h_t = φ(V h_{t-1} + W_ih x_t + b), one step at a time."""
    v = model.recurrent_matrix()
    h = h0
    outs = []
    for x_t in x:
        z = h @ v.T + x_t @ model.weight_ih_l0.T
        if model.bias:
            z = z + model.bias_ih_l0
        if model.nonlinearity == "modrelu":
            h = modrelu(z, model.modrelu_bias_l0)
        elif model.nonlinearity == "tanh":
            h = torch.tanh(z)
        elif model.nonlinearity == "relu":
            h = torch.relu(z)
        else:
            h = z
        outs.append(h)
    return torch.stack(outs)


def assert_same_spectrum(actual, expected, atol):
    a = np.asarray(torch.as_tensor(actual).detach().cpu().to(torch.complex128))
    b = np.asarray(torch.as_tensor(expected).detach().cpu().to(torch.complex128))
    a, b = np.sort_complex(a), np.sort_complex(b)
    assert a.shape == b.shape
    rows, cols = linear_sum_assignment(np.abs(a[:, None] - b[None, :]))
    err = np.abs(a[rows] - b[cols]).max()
    assert err < atol, f"spectra differ by {err}:\n{a}\n{b}"


def documented_spectrum(model):
    """γ_i e^{±iθ_i} for i < n // 2, and +γ_last for odd n."""
    form = model.schur_form
    n = model.hidden_size
    theta = form.theta.detach().cpu().double()
    gamma = form.gamma.detach().cpu().double()
    z = gamma[: n // 2] * torch.exp(1j * theta)
    eig = torch.cat([z, z.conj()])
    if n % 2:
        eig = torch.cat([eig, gamma[n // 2:].to(torch.complex128)])
    return eig


def eigvals(v):
    return torch.linalg.eigvals(v.detach().cpu().double())


def orth_error(v):
    eye = torch.eye(v.shape[-1], dtype=v.dtype, device=v.device)
    return (v.T @ v - eye).norm().item()


def assert_nnrnn_structure(model, atol=1e-5, eig_atol=1e-4):
    """V = P (Λ + T) Pᵀ, P orthogonal, T strictly lower triangular; with triangular="block", T is zero inside
    the 2×2 blocks and the spectrum is γ e^{±iθ}; with "strict", the spectrum is that of Λ + T."""
    n = model.hidden_size
    p, lam, t = model.schur_factors()
    v = model.recurrent_matrix()
    torch.testing.assert_close(v, p @ (lam + t) @ p.T, atol=atol, rtol=0)
    assert orth_error(p) < 10 * atol
    assert torch.linalg.det(p.detach().double()).item() == pytest.approx(1.0, abs=1e-4)
    assert torch.equal(t, t.tril(-1)), "T is not strictly lower triangular"
    idx = torch.arange(0, n - 1, 2)
    block = model.schur_form.triangular == "block"
    if block:
        assert torch.all(t[idx + 1, idx] == 0), "T is non-zero inside a 2×2 block"
    form = model.schur_form
    for i in range(n // 2):
        g, th = form.gamma[i].item(), form.theta[i].item()
        expected = torch.tensor([[g * math.cos(th), -g * math.sin(th)], [g * math.sin(th), g * math.cos(th)]],
                                dtype=lam.dtype, device=lam.device)
        torch.testing.assert_close(lam[2 * i:2 * i + 2, 2 * i:2 * i + 2], expected, atol=1e-6, rtol=1e-6)
    blocks = torch.block_diag(*[lam[2 * i:2 * i + 2, 2 * i:2 * i + 2] for i in range(n // 2)],
                              *([lam[-1:, -1:]] if n % 2 else []))
    assert torch.equal(lam, blocks), "Λ is not block diagonal"
    if n % 2:
        assert lam[-1, -1] == form.gamma[-1]
    assert_same_spectrum(eigvals(v), documented_spectrum(model) if block else eigvals(lam + t), atol=eig_atol)


def params(model):
    return {k: p.detach().clone() for k, p in model.named_parameters()}


# --------------------------------------------------------------------------- registry

def test_registry_and_create():
    assert set(nnrnn.models.PAPER_MODELS) <= set(NAMES)
    for name in NAMES:
        model = nnrnn.create(name, 3, 4)
        assert isinstance(model, nnrnn.MODELS[name])
        assert model.input_size == 3 and model.hidden_size == 4


def test_every_model_class_states_its_own_display_name_and_line_style():
    """What a report calls a model and how its figures draw it are the class's own (no default in Traits, and no
    subclass inherits its parent's: rnn-orth's are not rnn's), no two models sharing a name, a colour or a dash."""
    for name in NAMES:
        cls = nnrnn.MODELS[name]
        assert "DISPLAY_NAME" in vars(cls) and "LINE_STYLE" in vars(cls), name
    assert len({nnrnn.MODELS[n].DISPLAY_NAME for n in NAMES}) == len(NAMES)
    assert len({nnrnn.MODELS[n].LINE_STYLE[0] for n in NAMES}) == len(NAMES)
    assert len({str(nnrnn.MODELS[n].LINE_STYLE[1]) for n in NAMES}) == len(NAMES)


def test_a_models_published_figures_are_its_classs_own():
    """What a model's paper printed is its class's (rnn-orth's are not rnn's, although it subclasses it): each a
    Published on a task nnrnn has, with its scale and source, and no class lists one task and measure twice."""
    from nnrnn.models.published import Published
    from nnrnn.tasks import TASKS
    for name in NAMES:
        cls = nnrnn.MODELS[name]
        assert all(cls.PUBLISHED is not vars(base).get("PUBLISHED") for base in cls.__mro__[1:]
                   if cls.PUBLISHED), name
        assert all(isinstance(p, Published) and p.task in TASKS and p.scale and p.source for p in cls.PUBLISHED)
        assert len({(p.task, p.measure) for p in cls.PUBLISHED}) == len(cls.PUBLISHED), name
    assert nnrnn.MODELS["rnn-orth"].PUBLISHED != nnrnn.MODELS["rnn"].PUBLISHED
    assert [p.value for p in nnrnn.MODELS["nnrnn"].PUBLISHED if p.task == "ptb"] == [1.47]  # the paper's Table 1


def test_unknown_model_name_lists_valid_names():
    with pytest.raises(ValueError) as info:
        nnrnn.create("rwkv", 3, 4)
    for name in NAMES:
        assert name in str(info.value)
    assert "rwkv" in str(info.value)


# --------------------------------------------------------------------------- shapes

T, B, I, N = 4, 3, 2, 5


def initial_state(name, batch, unbatched=False):
    shape = (1, N) if unbatched else (1, batch, N)
    if name == "lstm":
        return (randn(*shape), randn(*shape))
    return randn(*shape)


@pytest.mark.parametrize("with_hx", [False, True], ids=["no_hx", "hx"])
@pytest.mark.parametrize("mode", ["time_first", "batch_first", "unbatched"])
@pytest.mark.parametrize("name", REAL_STATE)
def test_forward_shapes(name, mode, with_hx):
    torch.manual_seed(0)
    model = make(name, I, N, batch_first=(mode == "batch_first"))
    if mode == "time_first":
        x, out_shape, h_shape = randn(T, B, I), (T, B, N), (1, B, N)
    elif mode == "batch_first":
        x, out_shape, h_shape = randn(B, T, I), (B, T, N), (1, B, N)
    else:
        x, out_shape, h_shape = randn(T, I), (T, N), (1, N)
    hx = initial_state(name, B, mode == "unbatched") if with_hx else None
    out, h_n = model(x, hx)
    assert out.shape == out_shape and out.dtype == x.dtype and out.device == x.device
    states = h_n if name == "lstm" else (h_n,)
    if name == "lstm":
        assert isinstance(h_n, tuple) and len(h_n) == 2
    for s in states:
        assert s.shape == h_shape
    # h_n is the last output
    last = out[:, -1] if mode == "batch_first" else out[-1]
    torch.testing.assert_close(states[0].reshape(last.shape), last)
    if with_hx:  # hx is used: a zero state gives a different result
        out0, _ = model(x)
        assert not torch.allclose(out, out0)


@pytest.mark.parametrize("name", REAL_STATE)
def test_batch_first_and_unbatched_agree_with_time_first(name):
    torch.manual_seed(0)
    model = make(name, I, N)
    x = randn(T, B, I)
    hx = initial_state(name, B)
    out, h_n = model(x, hx)
    model.batch_first = True
    out_bf, h_bf = model(x.transpose(0, 1), hx)
    torch.testing.assert_close(out_bf, out.transpose(0, 1))
    torch.testing.assert_close(h_bf, h_n)
    model.batch_first = False
    h1 = tuple(h[:, 1] for h in hx) if name == "lstm" else hx[:, 1]
    out_u, h_u = model(x[:, 1], h1)
    torch.testing.assert_close(out_u, out[:, 1], atol=1e-6, rtol=1e-5)
    h_u = h_u[0] if name == "lstm" else h_u
    torch.testing.assert_close(h_u, (h_n[0] if name == "lstm" else h_n)[:, 1], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", NON_GATED)
def test_output_is_the_documented_recurrence(name):
    torch.manual_seed(1)
    model = make(name, I, N)
    with torch.no_grad():  # make every term matter
        model.bias_ih_l0.normal_()
    x, h0 = randn(T, B, I), randn(1, B, N)
    out, h_n = model(x, h0)
    ref = manual_loop(model, x, h0[0])
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(h_n[0], ref[-1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("nonlinearity", ["modrelu", "tanh", "relu", None])
def test_nnrnn_matches_a_manual_loop(nonlinearity):
    torch.manual_seed(2)
    model = make("nnrnn", 3, 6, nonlinearity=nonlinearity)
    with torch.no_grad():  # a non-normal V with |γ| ≠ 1
        model.schur_form.lower.normal_(0, 0.3)
        model.schur_form.gamma.uniform_(0.8, 1.1)
        model.bias_ih_l0.normal_()
    x, h0 = randn(7, 2, 3), randn(1, 2, 6)
    out, h_n = model(x, h0)
    # the loop uses V = P (Λ + T) Pᵀ composed here, not the model's own weight_hh
    p, lam, t = model.schur_factors()
    v = p @ (lam + t) @ p.T
    h = h0[0]
    for step, x_t in enumerate(x):
        z = h @ v.T + x_t @ model.weight_ih_l0.T + model.bias_ih_l0
        h = {"modrelu": lambda z: modrelu(z, model.modrelu_bias_l0), "tanh": torch.tanh, "relu": torch.relu,
             None: lambda z: z}[nonlinearity](z)
        torch.testing.assert_close(out[step], h, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(h_n[0], h, atol=1e-5, rtol=1e-5)


def test_linear_nnrnn_is_exactly_linear():
    torch.manual_seed(3)
    model = make("nnrnn", 3, 6, nonlinearity=None, bias=False).double()
    assert model.bias is False and not hasattr(model, "bias_ih_l0") and not hasattr(model, "modrelu_bias_l0")
    assert {k for k, _ in model.named_parameters()} == {
        "weight_ih_l0", "parametrizations.weight_hh_l0.original", "parametrizations.weight_hh_l0.0.theta",
        "parametrizations.weight_hh_l0.0.gamma", "parametrizations.weight_hh_l0.0.lower"}
    with torch.no_grad():
        model.schur_form.lower.normal_(0, 0.5)
        model.schur_form.gamma.uniform_(0.5, 1.2)
    x, h0 = randn(5, 2, 3, dtype=torch.float64), randn(1, 2, 6, dtype=torch.float64)
    out, h_n = model(x, h0)
    v, w = model.recurrent_matrix(), model.weight_ih_l0
    h = h0[0]
    for step, x_t in enumerate(x):
        h = h @ v.T + x_t @ w.T
        torch.testing.assert_close(out[step], h, atol=1e-12, rtol=1e-12)
    # closed form: h_T = V^T h_0 + Σ_t V^{T-t} W x_t
    closed = h0[0] @ torch.linalg.matrix_power(v, 5).T
    for step, x_t in enumerate(x):
        closed = closed + x_t @ w.T @ torch.linalg.matrix_power(v, 4 - step).T
    torch.testing.assert_close(h_n[0], closed, atol=1e-10, rtol=1e-10)
    # linear in the input: f(2x, 2h0) = 2 f(x, h0)
    out2, _ = model(2 * x, 2 * h0)
    torch.testing.assert_close(out2, 2 * out, atol=1e-12, rtol=1e-12)


# --------------------------------------------------------------------------- nnRNN structure

@pytest.mark.parametrize("init", ["henaff", "cayley", "random"])
@pytest.mark.parametrize("n", [6, 7])
def test_nnrnn_fresh_structure(init, n):
    torch.manual_seed(4)
    model = make("nnrnn", 3, n, init=init)
    form = model.schur_form
    assert form.theta.shape == (n // 2,) and form.gamma.shape == ((n + 1) // 2,)
    assert torch.all(form.gamma == 1)
    assert torch.all(form.lower == 0)
    assert torch.all((form.theta >= 0) & (form.theta <= 2 * math.pi))
    assert_nnrnn_structure(model)
    # γ = 1 and T = 0: V is orthogonal and every eigenvalue has modulus 1
    assert orth_error(model.recurrent_matrix()) < 1e-5
    torch.testing.assert_close(eigvals(model.recurrent_matrix()).abs(), torch.ones(n, dtype=torch.float64),
                               atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", ["nnrnn", "exprnn"])
@pytest.mark.parametrize("init", ["henaff", "cayley", "random"])
def test_initial_eigenvalues_have_modulus_one_and_generators_their_structure(name, init):
    torch.manual_seed(5)
    n = 8
    model = make(name, 3, n, init=init)
    eig = eigvals(model.recurrent_matrix())
    torch.testing.assert_close(eig.abs(), torch.ones(n, dtype=torch.float64), atol=1e-5, rtol=0)
    a = skew(model.parametrizations.weight_hh_l0.original.detach())
    torch.testing.assert_close(a, -a.T)
    block_mask = torch.block_diag(*[torch.ones(2, 2, device=a.device)] * (n // 2)).bool()
    if init in ("henaff", "cayley"):
        assert torch.all(a[~block_mask] == 0), "generator is not 2×2 block diagonal"
        s = a[torch.arange(0, n, 2), torch.arange(1, n, 2)]
        assert torch.all(s != 0)
        if init == "henaff":
            assert torch.all(s.abs() <= math.pi)
        else:
            assert torch.all((s < 0) & (s > -1))
    else:
        assert (a[~block_mask].abs() > 1e-6).any(), "random init should give a dense generator"
    if name == "exprnn":  # V = exp(A), so its eigenvalues are e^{±i s_i}
        if init != "random":
            z = torch.exp(1j * s.cpu().double())
            assert_same_spectrum(eig, torch.cat([z, z.conj()]), atol=1e-5)


@pytest.mark.parametrize("name,options", [("rnn-orth", {}), ("rnn-orth", {"init": "henaff"}),
                                          ("rnn-orth", {"init": "cayley"}), ("eurnn", {})])
def test_other_orthogonal_models_start_with_unit_modulus_eigenvalues(name, options):
    torch.manual_seed(6)
    model = make(name, 3, 7, **options)
    v = model.recurrent_matrix()
    assert orth_error(v) < 1e-5
    torch.testing.assert_close(eigvals(v).abs(), torch.ones(7, dtype=torch.float64), atol=1e-5, rtol=0)


@pytest.mark.parametrize("triangular", ["strict", "block"])
@pytest.mark.parametrize("n", [8, 7])
def test_nnrnn_keeps_its_schur_form_through_training(n, triangular):
    torch.manual_seed(7)
    model = make("nnrnn", 3, n, init="henaff", triangular=triangular)
    opt = torch.optim.RMSprop(nnrnn.param_groups(model, lr=1e-2, lr_orth=1e-3))
    before = params(model)
    x, target = randn(6, 4, 3), randn(6, 4, n)
    for _ in range(5):
        opt.zero_grad()
        out, _ = model(x)
        loss = (out - target).pow(2).mean() + model.regularization(delta=0.5, t_decay=1e-3)
        loss.backward()
        for name, p in model.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, f"no gradient for {name}"
        opt.step()
    after = params(model)
    for name in before:
        assert not torch.equal(before[name], after[name]), f"{name} did not change"
    form = model.schur_form
    mask = triangular_mask(n, triangular, device=DEVICE)
    assert torch.all(form.triangular_factor()[mask] != 0), "every free entry of T should have moved"
    assert torch.all(form.triangular_factor()[~mask] == 0)
    assert torch.all(form.gamma != 1)
    # the generator of P moved off its block-diagonal initialisation
    a = skew(model.parametrizations.weight_hh_l0.original.detach())
    assert torch.all(a.tril(-1)[triangular_mask(n, "block", device=DEVICE)] != 0)

    assert_nnrnn_structure(model, atol=1e-5, eig_atol=1e-3)
    # the same factors composed in float64: the spectrum is exactly γ e^{±iθ} (+γ_last) for "block"
    model64 = copy.deepcopy(model).double()
    assert_nnrnn_structure(model64, atol=1e-12, eig_atol=1e-8)
    assert not torch.allclose(model64.recurrent_matrix() @ model64.recurrent_matrix().T,
                              torch.eye(n, dtype=torch.float64, device=DEVICE), atol=1e-3), "V should be non-normal now"


def test_nnrnn_odd_size_last_block():
    torch.manual_seed(8)
    model = make("nnrnn", 2, 7).double()
    form = model.schur_form
    with torch.no_grad():
        form.gamma.copy_(torch.tensor([0.9, 1.1, 0.95, 0.7], dtype=torch.float64))
        form.lower.normal_(0, 0.3)
    p, lam, t = model.schur_factors()
    assert lam[6, 6].item() == pytest.approx(0.7)
    assert torch.all(lam[6, :6] == 0) and torch.all(lam[:6, 6] == 0)
    assert torch.all(t[6, :6] != 0)  # the last row of T is free (no in-block entry)
    assert torch.all(t[:, 6] == 0)
    eig = eigvals(model.recurrent_matrix())
    assert (eig - 0.7).abs().min() < 1e-8, f"+γ_last = 0.7 missing from {eig}"
    assert_nnrnn_structure(model, atol=1e-12, eig_atol=1e-8)


@pytest.mark.parametrize("triangular", ["strict", "block"])
def test_nnrnn_regularization_by_hand(triangular):
    """δ Σ(1 - γ)² + (t_decay/2)‖T‖²: the paper's δ penalty, and a gradient t_decay·T on T, which is what
    the authors' code gets from RMSprop's weight_decay=t_decay on T."""
    torch.manual_seed(9)
    model = make("nnrnn", 3, 6, triangular=triangular)
    assert model.regularization(2.0, 3.0).item() == 0.0
    with torch.no_grad():
        model.schur_form.gamma.copy_(torch.tensor([0.5, 1.5, 1.1]))
        model.schur_form.lower.normal_()  # the upper triangle too; it is not part of T
    lower = model.schur_form.lower.detach()
    in_block = {(1, 0), (3, 2), (5, 4)} if triangular == "block" else set()
    t_sq = sum(lower[i, j].item() ** 2 for i in range(6) for j in range(i) if (i, j) not in in_block)
    expected = 2.0 * (0.25 + 0.25 + 0.01) + 3.0 / 2 * t_sq
    reg = model.regularization(delta=2.0, t_decay=3.0)
    assert reg.item() == pytest.approx(expected, rel=1e-5)
    assert model.regularization(2.0, 0.0).item() == pytest.approx(2.0 * 0.51, rel=1e-5)
    reg.backward()
    torch.testing.assert_close(model.schur_form.gamma.grad,
                               -2 * 2.0 * (1 - model.schur_form.gamma.detach()))
    free = torch.tensor([[i > j and (i, j) not in in_block for j in range(6)] for i in range(6)])
    torch.testing.assert_close(model.schur_form.lower.grad, torch.where(free, 3.0 * lower, torch.zeros_like(lower)))


def test_nnrnn_strict_in_block_entry_moves_the_eigenvalues():
    """With the paper's strict T, t in block i gives [[γc, -γs], [γs + t, γc]], eigenvalues γc ± sqrt(-γs(γs+t))."""
    model = make("nnrnn", 2, 2, triangular="strict").double()
    g, th, t = 0.9, 0.7, 0.25
    with torch.no_grad():
        model.schur_form.gamma.fill_(g)
        model.schur_form.theta.fill_(th)
        model.schur_form.lower.zero_()
        model.schur_form.lower[1, 0] = t
    c, s = g * math.cos(th), g * math.sin(th)
    root = complex(-s * (s + t)) ** 0.5
    assert_same_spectrum(eigvals(model.recurrent_matrix()), torch.tensor([c + root, c - root], dtype=torch.complex128),
                         atol=1e-10)
    block = make("nnrnn", 2, 2, triangular="block").double()
    with torch.no_grad():
        block.schur_form.lower[1, 0] = t  # masked out: no effect
    assert torch.all(block.schur_form.triangular_factor() == 0)


@pytest.mark.parametrize("name", [n for n in NAMES if not nnrnn.MODELS[n].SCHUR_FORM])
def test_regularization_is_zero_for_the_other_models(name):
    reg = make(name).regularization(1.0, 1.0)
    assert reg.shape == () and reg.item() == 0.0


def test_regularization_without_arguments_is_zero():
    """Both coefficients default to 0, so a bare call adds nothing, even away from γ = 1 and T = 0."""
    model = make("nnrnn", 3, 6)
    with torch.no_grad():
        model.schur_form.gamma.fill_(0.5)
        model.schur_form.lower.fill_(0.3)
    assert model.regularization().item() == 0.0
    assert model.regularization(1.0, 0.0).item() > 0 and model.regularization(0.0, 1.0).item() > 0


def test_random_orthogonal_init_reaches_both_components_of_the_orthogonal_group():
    """rnn-orth's "random" is torch.nn.init.orthogonal_, Haar over O(N): det V = −1 as often as +1, where
    the exponential of a skew matrix ("cayley", "henaff") is always a rotation."""
    signs = set()
    for seed in range(16):
        torch.manual_seed(seed)
        signs.add(round(torch.linalg.det(make("rnn-orth", 2, 6).recurrent_matrix().double()).item()))
    assert signs == {-1, 1}
    torch.manual_seed(0)
    v = make("rnn-orth", 2, 64, init="cayley", dtype=torch.float64).recurrent_matrix().detach()
    assert (v.T @ v - torch.eye(64, dtype=torch.float64)).abs().max() < 1e-12  # drawn and composed in float64


def test_dynamic_nnrnn_has_a_base_in_every_cell_and_inference_sees_it_move():
    model = make("nnrnn", 3, 6, num_layers=2, dynamic=True).eval()
    assert [form.dynamic for form in model.schur_forms()] == [True, True]
    x = randn(4, 2, 3)
    with torch.no_grad():
        before = model(x)[0]
        form = model.schur_form
        rotation = torch.linalg.matrix_exp(skew(randn(6, 6)))
        form.base.copy_(rotation)  # moved in place, as rebase_ does: the cached V must not be reused
        after = model(x)[0]
        fresh = copy.deepcopy(model)(x)[0]
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after, fresh)


def test_nnrnn_generator_argument_is_reproducible():
    a = make("nnrnn", 2, 6, generator=torch.Generator().manual_seed(11), init="random")
    b = make("nnrnn", 2, 6, generator=torch.Generator().manual_seed(11), init="random")
    torch.testing.assert_close(a.recurrent_matrix(), b.recurrent_matrix())


@pytest.mark.parametrize("name", REAL_STATE)
def test_state_dict_round_trip_and_deepcopy(name):
    torch.manual_seed(12)
    model = make(name)
    if name == "nnrnn":
        with torch.no_grad():
            model.schur_form.lower.normal_()
    x = randn(4, 2, 3)
    out, _ = model(x)
    fresh = make(name)
    fresh.load_state_dict(model.state_dict())
    torch.testing.assert_close(fresh(x)[0], out)
    torch.testing.assert_close(copy.deepcopy(model)(x)[0], out)


# --------------------------------------------------------------------------- gradients

@pytest.mark.parametrize("name,n", [("nnrnn", 5), ("exprnn", 4), ("eurnn", 6)])
def test_gradcheck_wrt_input_state_and_parameters(name, n):
    torch.manual_seed(13)
    model = make(name, 3, n).double()
    if name == "nnrnn":
        with torch.no_grad():
            model.schur_form.lower.normal_(0, 0.3)
            model.schur_form.gamma.uniform_(0.8, 1.1)
    names = [k for k, _ in model.named_parameters()]
    values = tuple(p.detach().clone().requires_grad_() for _, p in model.named_parameters())
    x = randn(3, 2, 3, dtype=torch.float64).requires_grad_()
    h0 = randn(1, 2, n, dtype=torch.float64).requires_grad_()

    def f(x, h0, *values):
        return functional_call(model, dict(zip(names, values)), (x, h0))

    # every input really reaches the output (else gradcheck would pass vacuously)
    out, h_n = f(x, h0, *values)
    grads = torch.autograd.grad(out.sum() + h_n.pow(2).sum(), (x, h0) + values)
    for k, g in zip(["input", "hx"] + names, grads):
        assert g.abs().sum() > 0, f"no gradient reaches {k}"
    assert torch.autograd.gradcheck(f, (x, h0) + values)


def test_exprnn_stays_orthogonal_through_training():
    torch.manual_seed(14)
    n = 16
    model = make("exprnn", 3, n, init="cayley")
    v0 = model.recurrent_matrix().detach().clone()
    opt = torch.optim.RMSprop(nnrnn.param_groups(model, lr=1e-2, lr_orth=1e-2))
    x, target = randn(5, 4, 3), randn(5, 4, n)
    worst = 0.0
    for _ in range(50):
        opt.zero_grad()
        out, _ = model(x)
        (out - target).pow(2).mean().backward()
        opt.step()
        worst = max(worst, orth_error(model.recurrent_matrix().detach()))
    assert worst < 1e-5
    v = model.recurrent_matrix().detach()
    assert (v - v0).norm() > 0.5, "the learning rate should be large enough to move V"
    assert torch.linalg.det(v.double()).item() == pytest.approx(1.0, abs=1e-5)


def givens_product(model):
    """V built by hand from the EURNN docstring: layer ℓ rotates (0,1),(2,3),… (ℓ even) or (1,2),(3,4),… (ℓ odd)."""
    n = model.hidden_size
    v = torch.eye(n, dtype=torch.float64)
    for layer in range(model.capacity):
        odd = layer % 2 == 1
        angles = (model.odd_angles_l0 if odd else model.even_angles_l0)[layer // 2].detach().cpu().double()
        g = torch.eye(n, dtype=torch.float64)
        for k, a in enumerate(range(1 if odd else 0, n - 1, 2)):
            c, s = torch.cos(angles[k]), torch.sin(angles[k])
            g[a, a], g[a, a + 1], g[a + 1, a], g[a + 1, a + 1] = c, -s, s, c
        v = g @ v
    return v


@pytest.mark.parametrize("n", [5, 6])
@pytest.mark.parametrize("capacity", [1, 2, 3, 4, None, "n"])
def test_eurnn_is_a_rotation_for_any_angles(n, capacity):
    torch.manual_seed(15)
    capacity = n if capacity == "n" else capacity
    model = make("eurnn", 2, n, capacity=capacity)
    expected_capacity = max(2, n // 2) if capacity is None else capacity
    assert model.capacity == expected_capacity
    n_angles = (expected_capacity + 1) // 2 * (n // 2) + expected_capacity // 2 * ((n - 1) // 2)
    assert model.even_angles_l0.numel() + model.odd_angles_l0.numel() == n_angles
    for scale in (1.0, 10.0):
        with torch.no_grad():
            model.even_angles_l0.uniform_(-scale, scale)
            model.odd_angles_l0.uniform_(-scale, scale)
        v = model.recurrent_matrix()
        assert orth_error(v) < 1e-5
        assert torch.linalg.det(v.detach().double()).item() == pytest.approx(1.0, abs=1e-5)
        torch.testing.assert_close(v.detach().cpu().double(), givens_product(model), atol=1e-5, rtol=0)


def test_eurnn_full_capacity_is_not_block_diagonal():
    torch.manual_seed(16)
    v = make("eurnn", 2, 6, capacity=6).recurrent_matrix().detach()
    assert (v.abs() > 1e-6).sum() > 6 * 4  # mixes every unit with every other


@pytest.mark.parametrize("init", ["xavier", "concat"])
def test_lstm_initialisation_reaches_every_layer_and_direction(init):
    """The paper's "xavier" (Glorot): each gate's input and recurrent blocks Glorot normal on their own, zero biases,
    all trained.  The release's "concat": each gate's [W_hh | W_ih] Glorot normal as one matrix, one trained bias
    per gate.  Every layer and direction is drawn so, not only the first."""
    torch.manual_seed(4)
    i, n = 16, 256
    model = nnrnn.create("lstm", i, n, num_layers=2, bidirectional=True, init=init)
    for suffix in ("_l0", "_l0_reverse", "_l1", "_l1_reverse"):
        weight_ih, weight_hh = getattr(model, "weight_ih" + suffix), getattr(model, "weight_hh" + suffix)
        inputs = weight_ih.shape[1]  # i in layer 0, 2n (both directions) in layer 1
        for gate_ih, gate_hh in zip(weight_ih.chunk(4), weight_hh.chunk(4)):
            if init == "xavier":
                stds = (gate_ih.std().item(), math.sqrt(2 / (n + inputs))), (gate_hh.std().item(), math.sqrt(1 / n))
            else:
                whole = torch.cat([gate_hh, gate_ih], 1).std().item()
                stds = ((whole, math.sqrt(2 / (2 * n + inputs))),)
            for got, want in stds:
                assert abs(got / want - 1) < 0.05, (suffix, got, want)
        bias_ih, bias_hh = getattr(model, "bias_ih" + suffix), getattr(model, "bias_hh" + suffix)
        assert torch.all(bias_hh == 0) and bias_hh.requires_grad == (init == "xavier"), suffix
        if init == "xavier":
            assert torch.all(bias_ih == 0), suffix
        else:
            assert 0 < bias_ih.abs().max() <= 1 / math.sqrt(inputs + n), suffix


def test_lstm_concat_initialisation_with_a_projection():
    """With proj_size, W_hh is 4N × P: each gate's [W_hh | W_ih] is N × (P + I)."""
    torch.manual_seed(5)
    model = nnrnn.create("lstm", 3, 8, proj_size=2, init="concat", dtype=torch.float64)
    assert model.weight_hh_l0.shape == (32, 2) and model.weight_hh_l0.dtype == torch.float64
    assert model(torch.randn(4, 1, 3, dtype=torch.float64))[0].shape == (4, 1, 2)


def test_eurnn_angles_start_uniform_over_the_whole_circle():
    """Jing et al.'s code draws every angle U(-π, π), the even and the odd layers alike."""
    torch.manual_seed(3)
    model = make("eurnn", 2, 64, capacity=64)
    for angles in (model.even_angles_l0, model.odd_angles_l0):
        assert -math.pi <= angles.min() < -3.0 and 3.0 < angles.max() <= math.pi
        assert abs(angles.mean().item()) < 0.2


def test_eurnn_repr_shows_a_capacity_given():
    assert nnrnn.create("eurnn", 3, 8, capacity=4).extra_repr() == "3, 8, nonlinearity='modrelu', capacity=4"
    assert nnrnn.create("eurnn", 3, 8).extra_repr() == "3, 8, nonlinearity='modrelu'"


def test_eurnn_bad_capacity():
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError):
            nnrnn.create("eurnn", 2, 4, capacity=bad)


# --------------------------------------------------------------------------- param_groups

def group_ids(groups):
    return [id(p) for g in groups for p in g["params"]]


@pytest.mark.parametrize("name", REAL_STATE)
def test_param_groups_cover_every_parameter_once(name):
    model = make(name)
    groups = nnrnn.param_groups(model, lr=1e-3, lr_orth=1e-4)
    ids = group_ids(groups)
    assert len(ids) == len(set(ids))
    assert set(ids) == {id(p) for p in model.parameters()}
    assert len(ids) == len(list(model.parameters()))
    orth = [g for g in groups if g["lr"] == 1e-4]
    default = [g for g in groups if g["lr"] == 1e-3]
    assert len(default) == 1
    if name in ("nnrnn", "exprnn"):
        assert len(groups) == 2 and len(orth) == 1
        assert [id(p) for p in orth[0]["params"]] == [id(model.parametrizations.weight_hh_l0.original)]
    elif name == "nngru":  # original0 holds the free gate blocks, original1 W_hn's generator
        assert len(groups) == 2 and len(orth) == 1
        assert [id(p) for p in orth[0]["params"]] == [id(model.parametrizations.weight_hh_l0.original1)]
    else:
        assert len(groups) == 1 and not orth
    opt = torch.optim.RMSprop(groups)  # usable as is
    assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in groups]


def test_param_groups_find_a_schur_generator_on_torch_rnn():
    rnn = schur(nn.RNN(3, 6), "weight_hh_l0")
    groups = nnrnn.param_groups(rnn, lr=1e-3, lr_orth=1e-5)
    orth = [g for g in groups if g["lr"] == 1e-5]
    assert [id(p) for p in orth[0]["params"]] == [id(rnn.parametrizations.weight_hh_l0.original)]
    assert set(group_ids(groups)) == {id(p) for p in rnn.parameters()}


@pytest.mark.parametrize("bad", [0, -1e-3, float("nan"), "0.1", None, True])
def test_param_groups_invalid_lr(bad):
    model = make("nnrnn")
    with pytest.raises(ValueError):
        nnrnn.param_groups(model, lr=bad, lr_orth=1e-3)
    with pytest.raises(ValueError):
        nnrnn.param_groups(model, lr=1e-3, lr_orth=bad)


# --------------------------------------------------------------------------- parameter matching

def test_hidden_size_for_reproduces_the_paper():
    """The fixed-parameter sizes of supplementary Tables 4-6, from the paper's budgets, counting parameters as
    the authors' code has them: no input bias for nnRNN and expRNN, one bias per LSTM gate, strict T."""
    copy = nnrnn.parameter_count("nnrnn", 10, 128, 9, bias=False)  # one-hot input of 10 symbols, 9 outputs
    assert 18_900 <= copy < 19_000  # "~18.9K"
    assert nnrnn.hidden_size_for("exprnn", copy, 10, 9, bias=False) == 176
    assert nnrnn.hidden_size_for("lstm", copy, 10, 9, init="concat") == 63
    psmnist = nnrnn.parameter_count("nnrnn", 1, 512, 10, bias=False)
    assert 268_000 <= psmnist < 269_000  # "~269K"
    assert nnrnn.hidden_size_for("exprnn", 269_000, 1, 10, bias=False) == 722
    assert nnrnn.hidden_size_for("lstm", 269_000, 1, 10, init="concat") == 257
    # PTB: 200-dimensional embedding of 51 symbols (50 characters and the end of line), "~1.32M"
    ptb = nnrnn.parameter_count("nnrnn", 200, 1024, 51, vocab_size=51, bias=False)
    assert 1_310_000 <= ptb < 1_325_000
    assert nnrnn.hidden_size_for("exprnn", 1_320_000, 200, 51, vocab_size=51, bias=False) == 1386
    assert nnrnn.hidden_size_for("lstm", 1_320_000, 200, 51, vocab_size=51) == 475
    # the embedding table counts: without it the budget buys a larger expRNN
    assert nnrnn.hidden_size_for("exprnn", 1_320_000, 200, 51, bias=False) > 1386


@pytest.mark.parametrize("name,target,i,o", [("nnrnn", 18900, 10, 9), ("rnn", 18900, 10, 9),
                                             ("lstm", 269000, 1, 10), ("eurnn", 5000, 3, 4)])
def test_hidden_size_for_is_the_closest(name, target, i, o):
    n = nnrnn.hidden_size_for(name, target, i, o)
    best = abs(nnrnn.parameter_count(name, i, n, o) - target)
    for m in (n - 1, n + 1):
        assert abs(nnrnn.parameter_count(name, i, m, o) - target) >= best


@pytest.mark.parametrize("name", ["rnn", "nnrnn", "eurnn"])
def test_hidden_size_for_matches_an_exhaustive_search(name):
    # the smallest budgets included: one entry buys the smallest network
    for target in (1, 50, 333, 1000, 4321):
        counts = {m: nnrnn.parameter_count(name, 2, m, 3) for m in range(1, 300)}
        expected = min(counts, key=lambda m: (abs(counts[m] - target), m))
        n = nnrnn.hidden_size_for(name, target, 2, 3)
        assert type(n) is int and n == expected


def test_hidden_size_for_invalid():
    for bad in (0, -5, 1.5, "100"):
        with pytest.raises(ValueError):
            nnrnn.hidden_size_for("rnn", bad, 1, 1)
    with pytest.raises(ValueError):
        nnrnn.hidden_size_for("rwkv", 1000, 1, 1)


def trainable(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


@pytest.mark.parametrize("name,options", [
    ("rnn", {}), ("rnn", {"bias": False}), ("rnn", {"nonlinearity": "tanh"}),
    ("rnn-orth", {"nonlinearity": None, "bias": False}),
    ("lstm", {}), ("lstm", {"bias": False}),
    ("eurnn", {}), ("eurnn", {"capacity": 3}), ("eurnn", {"capacity": 4}),
    ("eurnn", {"capacity": 7, "nonlinearity": "relu"}),
    ("rnn", {"num_layers": 2, "bidirectional": True}), ("lstm", {"num_layers": 2, "bidirectional": True}),
    ("eurnn", {"capacity": 2, "num_layers": 2, "bidirectional": True}),
])
def test_parameter_count_is_the_number_of_trainable_entries(name, options):
    for n in (1, 6, 7):
        model = nnrnn.create(name, 3, n, **options)
        assert nnrnn.parameter_count(name, 3, n, **options) == trainable(model)
        readout = nn.Linear(n * (2 if options.get("bidirectional") else 1), 4)
        assert nnrnn.parameter_count(name, 3, n, 4, **options) == trainable(model) + trainable(readout)


@pytest.mark.parametrize("n", [1, 2, 6, 7])
def test_parameter_count_of_constrained_models_counts_degrees_of_freedom(n):
    # expRNN: only the strict lower triangle of the generator is free
    model = nnrnn.create("exprnn", 3, n)
    unused = n * (n + 1) // 2
    assert nnrnn.parameter_count("exprnn", 3, n) == trainable(model) - unused
    # nnRNN: generator's strict lower triangle, T's free entries, θ, γ
    for triangular in ("strict", "block"):
        model = nnrnn.create("nnrnn", 3, n, triangular=triangular)
        free_t = int(triangular_mask(n, triangular).sum())
        unused = n * (n + 1) // 2 + (n * n - free_t)
        assert nnrnn.parameter_count("nnrnn", 3, n, triangular=triangular) == trainable(model) - unused


@pytest.mark.parametrize("name", ["exprnn", "nnrnn"])
def test_parameter_count_of_stacked_bidirectional_constrained_models(name):
    """Every layer and direction has its own constrained V: the count is the built model's trainable entries
    less the entries a constraint leaves unused, per cell, with each option at its default."""
    n = 5
    model = nnrnn.create(name, 3, n, num_layers=2, bidirectional=True)
    cells = 4
    unused = {"exprnn": n * (n + 1) // 2,
              "nnrnn": n * (n + 1) // 2 + n * n - int(triangular_mask(n, "strict").sum())}[name]
    assert nnrnn.parameter_count(name, 3, n, num_layers=2, bidirectional=True) == trainable(model) - cells * unused
    if name == "nnrnn":
        with pytest.raises(ValueError, match="triangular"):  # not counted as if it were "strict"
            nnrnn.parameter_count(name, 3, n, triangular="lower")


def test_schur_factors_of_each_layer_and_direction_compose_that_cells_v():
    torch.manual_seed(3)
    model = nnrnn.create("nnrnn", 3, 6, num_layers=2, bidirectional=True)
    with torch.no_grad():
        for key, p in model.named_parameters():
            p.add_(0.1 * torch.randn_like(p))  # every cell different from the others
    for layer in range(2):
        for direction in range(2):
            p, lam, t = model.schur_factors(layer, direction)
            torch.testing.assert_close(p @ (lam + t) @ p.T, model.recurrent_matrix(layer, direction),
                                       atol=1e-5, rtol=0)
    assert not torch.allclose(model.recurrent_matrix(1, 0), model.recurrent_matrix(0, 0))
    assert not torch.allclose(model.recurrent_matrix(0, 1), model.recurrent_matrix(0, 0))


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("name", REAL_STATE)
def test_wrong_input_size(name):
    model = make(name, 3, 7)
    for x in (randn(4, 2, 5), randn(4, 5)):
        with pytest.raises(ValueError) as info:
            model(x)
        msg = str(info.value)
        assert re.search(r"expected\D*\b3\b", msg) and re.search(r"got\D*\b5\b", msg), msg


@pytest.mark.parametrize("name", REAL_STATE)
def test_wrong_hx_shape(name):
    model = make(name, 3, 5)
    x = randn(4, 2, 3)
    bad_shapes = [(1, 3, 5), (1, 2, 6), (2, 5), (2, 1, 2, 5)]
    for shape in bad_shapes:
        hx = (randn(*shape), randn(*shape)) if name == "lstm" else randn(*shape)
        with pytest.raises(ValueError):
            model(x, hx)
    # unbatched input takes a (1, N) state, not a batched one
    hx = (randn(1, 1, 5), randn(1, 1, 5)) if name == "lstm" else randn(1, 1, 5)
    with pytest.raises(ValueError):
        model(randn(4, 3), hx)


@pytest.mark.parametrize("name", REAL_STATE)
def test_non_float_input(name):
    model = make(name, 3, 5)
    for dtype in (torch.long, torch.int32, torch.bool):
        with pytest.raises(TypeError):
            model(torch.zeros(4, 2, 3, dtype=dtype, device=DEVICE))


@pytest.mark.parametrize("name", REAL_STATE)
def test_bad_sizes(name):
    for bad in (0, -3):
        with pytest.raises(ValueError):
            nnrnn.create(name, 3, bad)
        with pytest.raises(ValueError):
            nnrnn.create(name, bad, 4)
    for bad in ("a", 2.5, True, None):
        with pytest.raises(TypeError):
            nnrnn.create(name, 3, bad)


@pytest.mark.parametrize("name", ["nnrnn", "exprnn", "rnn-orth"])
def test_bad_init(name):
    with pytest.raises(ValueError, match="henaff"):
        nnrnn.create(name, 3, 4, init="glorot")


@pytest.mark.parametrize("bad", ["False", 0, 1, None])
@pytest.mark.parametrize("name", ["nnrnn", "exprnn"])
def test_dynamic_takes_only_a_bool(name, bad):
    """``dynamic="False"`` (a flag read from text) was read by its truth value and turned the moving base on; a flag
    is True or False, as ``bidirectional`` is."""
    with pytest.raises(TypeError, match="dynamic must be True or False"):
        nnrnn.create(name, 3, 4, dynamic=bad)
    assert nnrnn.create(name, 3, 4, dynamic=True).dynamic is True


@pytest.mark.parametrize("name", NON_GATED)
def test_nonlinearity_option(name):
    with pytest.raises(ValueError):
        nnrnn.create(name, 3, 4, nonlinearity="sigmoid")
    assert nnrnn.create(name, 3, 4, nonlinearity="none").nonlinearity is None


def test_lstm_gate_blocks():
    """recurrent_matrix(layer, direction, gate) is the gate's N x N block of torch's weight_hh_l{k}[_reverse],
    rows in torch's order input, forget, cell, output; the default is the cell gate of layer 0, forward."""
    torch.manual_seed(0)
    model = nnrnn.create("lstm", 3, 6, num_layers=2, bidirectional=True)  # 6: chunk(5) would also give 4 blocks of 4
    for layer in (0, 1):
        for direction, suffix in ((0, ""), (1, "_reverse")):
            weight = getattr(model, f"weight_hh_l{layer}{suffix}")
            for index, gate in enumerate(("input", "forget", "cell", "output")):
                block = model.recurrent_matrix(layer, direction, gate=gate)
                assert block.shape == (6, 6)
                torch.testing.assert_close(block, weight[6 * index:6 * (index + 1)], rtol=0, atol=0)
    torch.testing.assert_close(model.recurrent_matrix(), model.weight_hh_l0[12:18], rtol=0, atol=0)
    with pytest.raises(ValueError, match="gate must be one of"):
        model.recurrent_matrix(gate="hidden")
    with pytest.warns(FutureWarning, match="recurrent_matrix"):  # the earlier order still works, with a warning
        torch.testing.assert_close(model.recurrent_matrix("forget", 1, 1), model.weight_hh_l1_reverse[6:12])
    assert torch.all(model.bias_ih_l0 == 0) and torch.all(model.bias_hh_l0 == 0)


# --------------------------------------------------------------------------- dtype / device

@pytest.mark.parametrize("name", REAL_STATE)
def test_double_precision(name):
    torch.manual_seed(17)
    model = make(name)
    x = randn(4, 2, 3)
    out32, _ = model(x)
    model.double()
    for p in model.parameters():
        assert p.dtype == torch.float64
    out64, h_n = model(x.double())
    assert out64.dtype == torch.float64
    torch.testing.assert_close(out64.float(), out32, atol=1e-5, rtol=1e-4)
    out64.sum().backward()
    if name != "lstm":
        assert model.recurrent_matrix().dtype == torch.float64
    if name == "nnrnn":
        assert model.schur_form.mask.dtype == torch.float64
        assert_nnrnn_structure(model, atol=1e-12, eig_atol=1e-8)
    if name == "exprnn":
        assert orth_error(model.recurrent_matrix()) < 1e-12



def test_a_uniform_scheme_takes_exactly_one_bound():
    from nnrnn.models.init import check_scheme
    assert check_scheme("input_init", "uniform:0.1") == "uniform:0.1"
    assert check_scheme("input_init", "uniform:0") == "uniform:0"  # A ≥ 0: U(-0, 0) is allowed
    for spec in ("uniform:0.1:2", "uniform:2:0.1", "uniform:"):
        with pytest.raises(ValueError, match="input_init must be one of"):
            check_scheme("input_init", spec)


def test_exprnn_is_static_unless_asked_and_builds_in_the_dtype_asked():
    static = nnrnn.create("exprnn", 3, 4)
    assert static.dynamic is False
    assert not hasattr(static.parametrizations.weight_hh_l0[0], "base")
    dynamic = nnrnn.create("exprnn", 3, 4, dynamic=True, num_layers=2)
    assert all(hasattr(dynamic.parametrizations[f"weight_hh_l{k}"][0], "base") for k in range(2))
    wide = nnrnn.create("exprnn", 3, 4, dtype=torch.float64)
    assert wide.parametrizations.weight_hh_l0.original.dtype == torch.float64


@pytest.mark.parametrize("name", list(nnrnn.MODELS))
def test_parameter_counts_are_ints(name):
    """Counts feed hidden_size_for and the tables of matched sizes: an int, never a float that equals one."""
    for hidden in (5, 6):
        assert type(nnrnn.parameter_count(name, 3, hidden, 2)) is int


def test_reset_parameters_puts_a_dynamic_exprnns_base_back_to_the_identity():
    from nnrnn.parametrizations import rebase_
    model = nnrnn.create("exprnn", 3, 6, dynamic=True)
    plist = model.parametrizations.weight_hh_l0
    with torch.no_grad():
        plist.original.normal_()
    rebase_(model)
    assert not torch.equal(plist[0].base, torch.eye(6))
    model.reset_parameters()
    assert torch.equal(plist[0].base, torch.eye(6))
    torch.testing.assert_close(model.weight_hh_l0.detach(), torch.linalg.matrix_exp(skew(plist.original.detach())))
    model.eval()  # inference composes V once; a rebase changes the factors, not V
    x = torch.randn(4, 2, 3)
    with torch.no_grad():
        before, _ = model(x)
        rebase_(model)
        after, _ = model(x)
    torch.testing.assert_close(after, before)


@pytest.mark.parametrize("name", NON_GATED)
def test_modrelu_bias_starts_uniform_in_plus_minus_one_hundredth(name):
    """expRNN's choice, which nnrnn takes for every modReLU model: b ~ U(-0.01, 0.01), modReLU close to the
    identity at the start; every layer and direction draws its own."""
    torch.manual_seed(0)
    model = nnrnn.create(name, 3, 512, num_layers=2, bidirectional=True)
    for suffix in model.cells:
        b = getattr(model, "modrelu_bias" + suffix)
        assert b.min() >= -0.01 and b.max() <= 0.01
        assert b.min() < -0.009 and b.max() > 0.009  # the whole interval is drawn from
        assert abs(b.mean().item()) < 0.002  # 512 draws: standard error 0.00026
    assert not torch.equal(model.modrelu_bias_l0, model.modrelu_bias_l1)


def test_cell_names_layer_zero_forward_by_default():
    model = nnrnn.create("nnrnn", 3, 4, num_layers=2, bidirectional=True)
    assert model.cell() == "_l0" and model.cell(1) == "_l1" and model.cell(1, 1) == "_l1_reverse"


def test_repr_lists_the_constructor_arguments_as_torch_rnn_does():
    """torch.nn.RNN's extra_repr, with the nonlinearity always shown (its default here is modReLU)."""
    assert nnrnn.create("nnrnn", 3, 4).extra_repr() == "3, 4, nonlinearity='modrelu'"
    full = dict(num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True)
    torch_repr = repr(torch.nn.RNN(3, 4, **full))  # RNN(3, 4, num_layers=2, bias=False, …)
    ours = nnrnn.create("rnn", 3, 4, nonlinearity="relu", **full).extra_repr()
    assert ours == ("3, 4, num_layers=2, nonlinearity='relu', bias=False, batch_first=True, dropout=0.5, "
                    "bidirectional=True")
    assert ours.replace(", nonlinearity='relu'", "") == torch_repr[len("RNN("):-1]


@pytest.mark.parametrize("name", nnrnn.models.PAPER_MODELS)
def test_every_parameter_takes_the_dtype_asked(name):
    model = nnrnn.create(name, 3, 4, num_layers=2, bidirectional=True, dtype=torch.float64)
    for pname, p in model.named_parameters():
        assert p.dtype == torch.float64, pname


def test_lstm_init_glorot_is_the_earlier_name_of_xavier():
    torch.manual_seed(0)
    with pytest.warns(FutureWarning, match="now called 'xavier'"):
        old = nnrnn.create("lstm", 3, 4, init="glorot")
    torch.manual_seed(0)
    new = nnrnn.create("lstm", 3, 4, init="xavier")
    assert old.init == "xavier"
    for (name, a), (_, b) in zip(old.named_parameters(), new.named_parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)


# --------------------------------------------------------------------------- nnRNN: fixed γ, t_init

def shift_by_hand(n, alpha, only_between_blocks):
    """α at (i+1, i) for every i, or only for odd i (the entries between two 2×2 blocks), written out."""
    t = np.zeros((n, n))
    for i in range(n - 1):
        if not only_between_blocks or i % 2 == 1:
            t[i + 1, i] = alpha
    return t


@pytest.mark.parametrize("n", [6, 7])
@pytest.mark.parametrize("gamma", [1.0, 0.958])
def test_fixed_gamma_stays_exactly_g_through_training_and_is_no_parameter(n, gamma):
    torch.manual_seed(4)
    model = make("nnrnn", 3, n, triangular="block", fixed_gamma=gamma)
    form = model.schur_form
    assert all("gamma" not in name for name, _ in model.named_parameters())
    opt = torch.optim.RMSprop(nnrnn.param_groups(model, lr=1e-2, lr_orth=1e-3))
    assert all(p is not form.gamma for g in opt.param_groups for p in g["params"])
    before = params(model)
    x, target = randn(6, 4, 3), randn(6, 4, n)
    for _ in range(4):
        opt.zero_grad()
        loss = (model(x)[0] - target).pow(2).mean() + model.regularization(delta=0.5, t_decay=1e-3)
        loss.backward()
        opt.step()
    assert all(not torch.equal(before[k], v) for k, v in params(model).items())  # everything else trained
    assert torch.equal(form.gamma, torch.full(((n + 1) // 2,), gamma, device=DEVICE))
    # V's eigenvalues, composed in float64 and computed by numpy: modulus G ("block" keeps the spectrum; G as
    # the float32 model holds it)
    v = copy.deepcopy(model).double().recurrent_matrix().detach().cpu().numpy()
    np.testing.assert_allclose(np.abs(np.linalg.eigvals(v)), np.full(n, float(np.float32(gamma))), rtol=0, atol=1e-9)


def test_fixed_gamma_is_not_penalised_and_refused_by_type():
    model = make("nnrnn", 3, 5, fixed_gamma=0.5)
    assert model.regularization(delta=3.0, t_decay=0.0).item() == 0.0  # (1 - 0.5)² would count 3 · 0.75
    with torch.no_grad():
        model.schur_form.lower.fill_(2.0)
    expected = 0.5 * 1e-2 * 4.0 * 10  # (t_decay / 2) ‖T‖²: 10 free entries of 2
    assert model.regularization(delta=3.0, t_decay=1e-2).item() == pytest.approx(expected, rel=1e-6)
    # G = 0 is allowed: Λ = 0, V = P T Pᵀ nilpotent, §3's Θ with d = 0
    nilpotent = make("nnrnn", 3, 6, fixed_gamma=0, t_init="delay:1.0").double()
    assert torch.all(torch.linalg.matrix_power(nilpotent.recurrent_matrix(), 6).abs() < 1e-12)
    for bad, error in ((-0.1, ValueError), (math.inf, ValueError), (math.nan, ValueError), (True, TypeError),
                       ("1", TypeError)):
        with pytest.raises(error, match="fixed_gamma"):
            make("nnrnn", 3, 5, fixed_gamma=bad)


def test_fixed_gamma_survives_state_dict_deepcopy_pickle_and_reset():
    import io
    import pickle
    torch.manual_seed(5)
    model = make("nnrnn", 3, 5, fixed_gamma=0.958)
    x = randn(4, 2, 3)
    out = model(x)[0]
    for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert torch.equal(other.schur_form.gamma, model.schur_form.gamma) and other.schur_form.fixed_gamma == 0.958
        torch.testing.assert_close(other(x)[0], out)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    fresh = make("nnrnn", 3, 5, fixed_gamma=0.958)
    fresh.load_state_dict(torch.load(buffer))
    torch.testing.assert_close(fresh(x)[0], out)
    model.reset_parameters()
    assert torch.equal(model.schur_form.gamma, torch.full((3,), 0.958, device=DEVICE))
    # a trained γ is not silently poured into a held one, even where only one entry differs
    other = make("nnrnn", 3, 5).state_dict()
    for gamma in (torch.ones(3), torch.tensor([0.958, 0.958, 1.0])):
        other["parametrizations.weight_hh_l0.0.gamma"] = gamma.to(DEVICE)
        with pytest.raises(RuntimeError, match="fixed_gamma=0.958"):
            fresh.load_state_dict(other)


def test_the_inference_cache_sees_a_fixed_gamma_buffer_change():
    model = make("nnrnn", 3, 4, fixed_gamma=1.0)
    with torch.no_grad():
        first = model.recurrent_matrix().clone()
        assert model.recurrent_matrix() is model.recurrent_matrix()  # cached while nothing changes
        model.schur_form.gamma.fill_(0.5)  # what load_state_dict of another held value does
        torch.testing.assert_close(model.recurrent_matrix(), 0.5 * first)  # T = 0: V = P Λ Pᵀ scales with γ


@pytest.mark.parametrize("n", [1, 2, 6, 7])
def test_parameter_count_with_a_fixed_gamma_leaves_gamma_out(n):
    for triangular in ("strict", "block"):
        model = nnrnn.create("nnrnn", 3, n, triangular=triangular, fixed_gamma=1.0)
        free_t = int(triangular_mask(n, triangular).sum())
        by_hand = 3 * n + n + n + n * (n - 1) // 2 + free_t + n // 2  # W_ih, b, modReLU b, P, T, θ
        assert nnrnn.parameter_count("nnrnn", 3, n, triangular=triangular, fixed_gamma=1.0) == by_hand
        assert by_hand == trainable(model) - n * (n + 1) // 2 - (n * n - free_t)
        assert nnrnn.parameter_count("nnrnn", 3, n, triangular=triangular) == by_hand + (n + 1) // 2
    budget = 5000
    size = nnrnn.hidden_size_for("nnrnn", budget, 3, 4, fixed_gamma=1.0)
    best = min(range(1, 200), key=lambda m: (abs(nnrnn.parameter_count("nnrnn", 3, m, 4, fixed_gamma=1.0) - budget), m))
    assert size == best


@pytest.mark.parametrize("n", [6, 7])
@pytest.mark.parametrize("triangular", ["strict", "block"])
def test_delay_t_init_puts_alpha_on_the_first_sub_diagonal(n, triangular):
    model = make("nnrnn", 3, n, triangular=triangular, t_init="delay:0.75")
    expected = shift_by_hand(n, 0.75, only_between_blocks=triangular == "block")
    np.testing.assert_array_equal(model.schur_form.triangular_factor().detach().cpu().numpy(), expected)
    assert torch.all(make("nnrnn", 3, n, triangular=triangular).schur_form.triangular_factor() == 0)  # the paper's
    # Λ + T as documented: Λ's blocks plus the shift; with "block" the spectrum stays γ e^{±iθ}
    p, lam, t = model.schur_factors()
    np.testing.assert_allclose((lam + t).detach().cpu().numpy() - lam.detach().cpu().numpy(), expected, atol=0)
    if triangular == "block":
        assert_nnrnn_structure(model)


def test_reset_parameters_redraws_the_t_init():
    torch.manual_seed(6)
    model = make("nnrnn", 3, 6, t_init="delay:1.5")
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-2)
    for _ in range(2):
        opt.zero_grad()
        model(randn(5, 2, 3))[0].pow(2).sum().backward()
        opt.step()
    assert not np.array_equal(model.schur_form.triangular_factor().detach().cpu().numpy(), shift_by_hand(6, 1.5, False))
    model.reset_parameters()
    np.testing.assert_array_equal(model.schur_form.triangular_factor().detach().cpu().numpy(),
                                  shift_by_hand(6, 1.5, False))


@pytest.mark.parametrize("bad", ["delay:x", "delay:-1", "delay:0", "delay:", "delay:nan", "delay:inf", "foo", "chain:1",
                                 "", None, 1.0])
def test_bad_t_init_is_a_value_error_naming_it(bad):
    with pytest.raises(ValueError, match="t_init must be 'zeros' or 'delay:ALPHA'"):
        make("nnrnn", 3, 4, t_init=bad)
    with pytest.raises(ValueError, match="t_init"):
        schur(nn.Linear(4, 4), t_init=bad)


# --------------------------------------------------------------------------- an update a GPU can capture whole
# On CUDA, an op that reads a tensor's value on the host waits for the GPU and cannot be captured in a CUDA
# graph; these are the ops that do (a boolean mask index goes through nonzero, bool(t) through is_nonzero or
# _local_scalar_dense), and the Python conversions that read a value without one of them.
HOST_READ_OPS = {"aten::_local_scalar_dense", "aten::item", "aten::nonzero", "aten::nonzero_numpy",
                 "aten::argwhere", "aten::equal", "aten::is_nonzero", "aten::allclose", "aten::masked_select",
                 "aten::unique_dim", "aten::_unique", "aten::_unique2", "aten::unique_consecutive",
                 "aten::repeat_interleave", "aten::_assert_async"}
MASK_INDEXING_OPS = {"aten::index", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_"}
HOST_READ_METHODS = {torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.numpy, torch.Tensor.__bool__,
                     torch.Tensor.__float__, torch.Tensor.__int__, torch.Tensor.__index__, torch.Tensor.cpu}


class HostReadError(AssertionError):
    pass


class RefuseHostReads(torch.overrides.TorchFunctionMode):
    """Raise HostReadError on any op or method that reads a tensor's value to the host."""

    def __enter__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        class Ops(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                name = func._schema.name
                masks = name in MASK_INDEXING_OPS and any(
                    isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in args[1])
                if name in HOST_READ_OPS or masks:
                    raise HostReadError(f"{name} reads a value to the host")
                return func(*args, **(kwargs or {}))

        self._ops = Ops()
        self._ops.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        return self._ops.__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in HOST_READ_METHODS:
            raise HostReadError(f"{func.__name__} reads a value to the host")
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("read", [lambda t: t.item(), lambda t: float(t.sum()), lambda t: bool(t.any()),
                                  lambda t: t.tolist(), lambda t: t[t > 0], lambda t: t.nonzero(),
                                  lambda t: torch.equal(t, t), lambda t: t.unique(),
                                  lambda t: t.index_put_((t > 0,), torch.tensor(0.0))])
def test_the_host_read_check_catches_each_kind_of_read(read):
    with pytest.raises(HostReadError), RefuseHostReads():
        read(torch.ones(3))


@pytest.mark.parametrize("name", NAMES)
def test_a_training_update_reads_nothing_to_the_host(name, monkeypatch):
    """Forward, backward and an RMSprop step of every model, two layers, in training mode: no op reads a
    value to the host, so on CUDA the update never waits for the GPU and can be captured in one graph.
    The exponential runs the plan it runs on a GPU (fixed, its scaling chosen on the device); on the CPU
    it reads ‖A‖₂, which costs nothing there."""
    monkeypatch.setenv("NNRNN_EXPM_PLAN", "fixed")
    kernel_policy.reset()  # the policy reads the environment once
    # oneDNN's kernel is checked once per process, on CPU tensors of its own, on first use: not part of an update
    # (the first test of a fresh worker would otherwise see its allclose)
    onednn.kernel()
    torch.manual_seed(0)
    model = make(name, 3, 6, num_layers=2)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    x = randn(5, 2, 3)
    for _ in range(2):  # the second update also reads the first's optimizer state
        with RefuseHostReads():
            out, h_n = model(x)
            h_n = h_n[0] if isinstance(h_n, tuple) else h_n  # the LSTM's (h_n, c_n)
            (out.pow(2).mean() + h_n.pow(2).mean()).backward()
            optimizer.step()
            optimizer.zero_grad()
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in NAMES if n != "lstm"])  # torch.nn.LSTM itself fails under allow_rnn
def test_fullgraph_compile_of_forward_and_backward(name, monkeypatch):
    """torch.compile(fullgraph=True) traces each model's forward, and AOTAutograd its backward, as one graph
    each (a graph break raises); the gradients are eager's.  torch.nn.GRU and LSTM are traced only with
    allow_rnn (a default compile runs them eagerly inside the compiled frame); torch 2.13.0 fails on
    torch.nn.LSTM itself there, so nnrnn's lstm, which is torch.nn.LSTM, is left out.  Compiled, the
    exponential runs its fixed plan, on every device; eager runs it here too, for the same rounding."""
    monkeypatch.setenv("NNRNN_EXPM_PLAN", "fixed")
    kernel_policy.reset()  # the policy reads the environment once
    torch.compiler.reset()
    torch.manual_seed(1)
    model = make(name, 3, 6)
    x = randn(4, 2, 3)

    def gradients(module):
        model.zero_grad(set_to_none=True)
        out, h_n = module(x)
        h_n = h_n[0] if isinstance(h_n, tuple) else h_n  # coRNN's and LEM's (y_n, z_n)
        (out.pow(2).mean() + h_n.sum()).backward()
        return {k: p.grad.clone() for k, p in model.named_parameters()}

    with torch._dynamo.config.patch(allow_rnn=True):
        got = gradients(torch.compile(model, fullgraph=True, backend="aot_eager"))
    want = gradients(model)
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=1e-4, atol=1e-6, msg=key)


@pytest.mark.slow
@pytest.mark.parametrize("name, kwargs", [("nnrnn", {}), ("exprnn", {"dynamic": True}), ("nngru", {}),
                                          ("nnrnn-complex", {})])
def test_a_compiled_model_does_not_recompile_after_its_first_update(name, kwargs):
    """Updates after the first (optimizer steps, expRNN's rebase) and an evaluation in between: Dynamo
    compiles again once for no_grad (its grad mode is guarded) and never after that."""
    from torch._dynamo.utils import counters
    torch.compiler.reset()
    counters.clear()
    torch.manual_seed(2)
    model = make(name, 3, 6, **kwargs)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-2)
    compiled = torch.compile(model, backend="aot_eager")
    x = randn(5, 2, 3)

    def update():
        out, _ = compiled(x)
        out.pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()

    with torch._dynamo.config.patch(allow_rnn=True):
        update()
        with torch.no_grad():
            compiled(x)
        graphs = counters["stats"]["unique_graphs"]
        with torch._dynamo.config.patch(error_on_recompile=True):
            for step in range(4):
                update()
                if name == "exprnn" and step == 1:
                    nnrnn.parametrizations.rebase_(model)
                with torch.no_grad():
                    compiled(x)
    assert counters["stats"]["unique_graphs"] == graphs and not counters["graph_break"]


# ------------------------------------------------------------------------- the whole model's penalty
def _moved(module: nn.Module) -> nn.Module:
    """``module`` with every parameter moved off its initial value (γ off 1, T off 0), so that penalties are
    not all zero."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=generator, dtype=p.real.dtype).to(p.dtype))
    return module


@pytest.mark.parametrize("name", list(nnrnn.MODELS))
def test_regularization_of_a_whole_model_is_its_layers_penalty(name):
    torch.manual_seed(0)
    layer = _moved(nnrnn.create(name, 3, 6, num_layers=2))
    model = nn.Sequential(nn.Linear(3, 3), nn.ModuleDict({"deep": nn.ModuleList([layer])}))
    whole = nnrnn.regularization(model, delta=0.3, t_decay=0.2)
    own = layer.regularization(0.3, 0.2)
    assert whole.shape == () and not whole.is_complex() and torch.allclose(whole, own.real, rtol=1e-6, atol=0)
    if name in ("nnrnn", "nngru", "nnrnn-complex"):
        assert whole > 0
        whole.backward()
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in layer.parameters())


def test_regularization_sums_nested_layers_and_schur_constrained_torch_modules():
    torch.manual_seed(0)
    first, second = _moved(nnrnn.NonNormalRNN(3, 6)), _moved(nnrnn.NonNormalRNN(6, 4))
    fused = nnrnn.parametrizations.schur(torch.nn.RNN(4, 8, nonlinearity="relu"), "weight_hh_l0")
    _moved(fused)
    model = nn.ModuleDict({"a": first, "b": nn.Sequential(second, nn.ModuleList([fused]))})
    expected = (first.regularization(1e-2, 1e-3) + second.regularization(1e-2, 1e-3)
                + fused.parametrizations.weight_hh_l0[0].regularization(1e-2, 1e-3))
    assert torch.allclose(nnrnn.regularization(model, delta=1e-2, t_decay=1e-3), expected, rtol=1e-6, atol=0)
    assert nnrnn.regularization(nn.Linear(2, 2), delta=1.0) == 0  # nothing constrained: zero, not an error
    with pytest.raises(ValueError, match="delta"):
        nnrnn.regularization(model, delta=-1.0)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        nnrnn.regularization(list(model.parameters()), delta=1.0)


# --------------------------------------------------------------------------- Orhan & Pitkow's chain initialisations

@pytest.mark.parametrize("name, blocks", [("rnn", 1), ("lstm", 4), ("gru", 3)])
@pytest.mark.parametrize("init", ["chain:1.02", "fbchain:0.04"])
def test_chain_inits_start_every_recurrent_block_as_the_authors_chain(name, blocks, init):
    n = 6
    model = nnrnn.create(name, 3, n, num_layers=2, init=init)
    kind, gain = init.split(":")
    want = torch.zeros(n, n)
    for i in range(n - 1):  # unit i feeds unit i + 1; the chain with feedback also feeds back with β
        want[i + 1, i] = float(gain) if kind == "chain" else 0.99
        if kind == "fbchain":
            want[i, i + 1] = float(gain)
    for suffix in ("_l0", "_l1"):
        for block in getattr(model, "weight_hh" + suffix).detach().chunk(blocks):
            assert torch.equal(block, want)
        assert getattr(model, "weight_ih" + suffix).abs().sum() > 0  # the input weights keep their own scheme
    with torch.no_grad():
        model.weight_hh_l0.zero_() if name == "rnn" else model.weight_hh_l0.normal_()
    model.reset_parameters()
    assert torch.equal(model.weight_hh_l0.detach().chunk(blocks)[0], want)


@pytest.mark.parametrize("name", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("init", ["chain", "chain:", "chain:x", "fbchain:inf", "delay:1"])
def test_a_chain_without_its_gain_is_refused_naming_the_form(name, init):
    with pytest.raises(ValueError, match="init must be one of|init must be 'xavier'") as raised:
        nnrnn.create(name, 3, 4, init=init)
    assert "chain:GAIN" in str(raised.value)


def test_the_chain_is_nilpotent_and_far_from_normal():
    v = nnrnn.create("rnn", 1, 8, init="chain:1.0").weight_hh_l0.detach().double()
    assert torch.equal(torch.linalg.matrix_power(v, 8), torch.zeros(8, 8, dtype=torch.float64))  # every eigenvalue 0
    assert not torch.allclose(v @ v.T, v.T @ v)


# --------------------------------------------------------------------------- the nnRNN without T (triangular="none")

def test_nnrnn_without_t_counts_t_out():
    n = 6
    strict, normal = (nnrnn.NonNormalRNN(3, n, triangular=t) for t in ("strict", "none"))
    # P's generator, θ and γ: T's n(n-1)/2 entries are gone
    assert nnrnn.NonNormalRNN.recurrent_parameter_count(n, triangular="none") == 15 + 3 + 3
    assert nnrnn.NonNormalRNN.parameter_count(3, n) - nnrnn.NonNormalRNN.parameter_count(3, n, triangular="none") \
        == n * (n - 1) // 2
    assert sum(p.numel() for p in strict.parameters()) - sum(p.numel() for p in normal.parameters()) == n * n
    assert set(strict.state_dict()) == set(normal.state_dict())  # T's storage is a buffer of zeros, not a parameter


@pytest.mark.parametrize("triangular", ["none", "strict"])
def test_nnrnn_without_t_stays_normal_after_updates(triangular):
    torch.manual_seed(0)
    n = 7
    model = nnrnn.NonNormalRNN(3, n, dtype=torch.float64, init="random", triangular=triangular)
    x, y = torch.randn(5, 8, 3, dtype=torch.float64), torch.randn(8, n, dtype=torch.float64)
    opt = torch.optim.Adam(nnrnn.param_groups(model, lr=1e-2, lr_orth=1e-2))
    for _ in range(5):
        opt.zero_grad()
        (model(x)[1][0] - y).pow(2).mean().add(model.regularization(delta=0.1, t_decay=1e-3)).backward()
        form = model.schur_form
        assert all(bool(p.grad.abs().sum() > 0)
                   for p in (model.parametrizations.weight_hh_l0.original, form.theta, form.gamma))
        opt.step()
    v = model.recurrent_matrix().detach()
    normal = torch.allclose(v @ v.T, v.T @ v, atol=1e-10, rtol=0)
    assert normal == (triangular == "none")  # with T trained, V leaves the normal matrices at once
    if triangular == "none":
        moduli = torch.linalg.eigvals(v).abs().sort().values
        gamma = form.gamma.detach()
        torch.testing.assert_close(moduli, torch.cat([gamma[:3].repeat_interleave(2), gamma[3:]]).sort().values,
                                   atol=1e-10, rtol=0)


def test_nnrnn_without_t_refuses_a_delay_t_init_naming_both_options():
    with pytest.raises(ValueError, match="t_init=.*triangular='none'"):
        nnrnn.NonNormalRNN(3, 4, triangular="none", t_init="delay:0.5")
