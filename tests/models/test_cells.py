"""The models with their own cells (nnrnn/models/cells.py): coRNN, LEM, LRU, minGRU.  Their equations against the
papers' written out here, each parallel scan against its loop in float64 (values and gradients, 1e-10), their
states, packed batches, parameter counts and the arguments they refuse.  torch.nn.RNN's contract for them is in
tests/models/test_dropin.py (MODERN)."""
from __future__ import annotations

import cmath
import math

import pytest
import torch
from torch.nn import functional as F
from torch.nn.utils.rnn import pack_padded_sequence

import nnrnn
from nnrnn.models import lru as lru_module
from nnrnn.models import mingru as mingru_module
from nnrnn.models import nnlru as nnlru_module
from nnrnn.models.cells import CellModel, use_scan
from nnrnn.models.lru import lru_loop, lru_scan
from nnrnn.models.mingru import mingru_loop, mingru_scan

MODERN = [name for name, cls in nnrnn.MODELS.items() if issubclass(cls, CellModel)]
D64 = torch.float64


def make(name, input_size=3, hidden_size=5, **options):
    torch.manual_seed(0)
    return nnrnn.create(name, input_size, hidden_size, dtype=D64, **options)


# --------------------------------------------------------------------------- the papers' equations, one unit at a time

def test_cornn_implicit_is_its_papers_implicit_explicit_step():
    model = make("cornn", 2, 3, dt=0.3, gamma=1.5, epsilon=2.0, damping="implicit")
    x, y0, z0 = torch.randn(1, 1, 2, dtype=D64), torch.randn(1, 1, 3, dtype=D64), torch.randn(1, 1, 3, dtype=D64)
    out, (y1, z1) = model(x, (y0, z0))
    w, v, b = model.weight_hh_l0.detach(), model.weight_ih_l0.detach(), model.bias_ih_l0.detach()
    for i in range(3):  # z_1 = z_0 + Δt (tanh(W y_0 + 𝒲 z_0 + V u + b) − γ y_0 − ε z_1), y_1 = y_0 + Δt z_1
        drive = sum(w[i, j] * y0[0, 0, j] + w[i, 3 + j] * z0[0, 0, j] for j in range(3)) + \
            sum(v[i, j] * x[0, 0, j] for j in range(2)) + b[i]
        z = (z0[0, 0, i] + 0.3 * (math.tanh(drive) - 1.5 * y0[0, 0, i])) / (1 + 0.3 * 2.0)
        assert abs(z1[0, 0, i].item() - z.item()) < 1e-12
        assert abs(y1[0, 0, i].item() - (y0[0, 0, i] + 0.3 * z).item()) < 1e-12
    assert torch.equal(out[0], y1[0])


def released_cornn(x, y, z, layer, dt, gamma, epsilon):
    """tk-rusch/coRNN's coRNNCell.forward (psMNIST/network.py, adding/model.py), transcribed: one nn.Linear of
    [u, z, y] (its order), z ← z + Δt(tanh(linear) − γ y − ε z), y ← y + Δt z; ``layer`` (weight, bias) its
    nn.Linear's.  Returns the y of every step and the last (y, z)."""
    weight, bias = layer
    ys = []
    for u in x:
        z = z + dt * (torch.tanh(F.linear(torch.cat((u, z, y), 1), weight, bias)) - gamma * y - epsilon * z)
        y = y + dt * z
        ys.append(y)
    return torch.stack(ys), y, z


def as_released_layer(model):
    """The model's parameters as the code's one nn.Linear of [u, z, y]: weight [V, 𝒲, W], bias b."""
    n = model.hidden_size
    w = model.weight_hh_l0
    return torch.cat([model.weight_ih_l0, w[:, n:], w[:, :n]], 1), model.bias_ih_l0


@pytest.mark.parametrize("dt, gamma, epsilon", [(0.076, 0.4, 8.0), (0.06, 66.0, 15.0), (0.3, 1.5, 5.0)])
def test_cornn_explicit_is_the_released_codes_step_in_values_and_gradients(dt, gamma, epsilon):
    model = make("cornn", 2, 4, dt=dt, gamma=gamma, epsilon=epsilon)  # explicit: the default
    assert model.damping == "explicit"
    x = torch.randn(7, 3, 2, dtype=D64)
    y0, z0 = torch.randn(1, 3, 4, dtype=D64), torch.randn(1, 3, 4, dtype=D64)
    probe = torch.randn(7, 3, 4, dtype=D64)
    out, (y_n, z_n) = model(x, (y0, z0))
    ((out * probe).sum() + z_n.sum()).backward()
    got = [p.grad.clone() for p in (model.weight_ih_l0, model.weight_hh_l0, model.bias_ih_l0)]
    model.zero_grad()
    ys, y, z = released_cornn(x, y0[0], z0[0], as_released_layer(model), dt, gamma, epsilon)
    ((ys * probe).sum() + z.sum()).backward()
    want = [p.grad for p in (model.weight_ih_l0, model.weight_hh_l0, model.bias_ih_l0)]
    torch.testing.assert_close(out, ys, rtol=0, atol=1e-12)
    torch.testing.assert_close((y_n[0], z_n[0]), (y, z), rtol=0, atol=1e-12)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dt, gamma, epsilon", [(0.076, 0.4, 8.0), (0.06, 66.0, 15.0)])
def test_cornn_explicit_is_the_implicit_step_reparametrised(dt, gamma, epsilon):
    # the code at (Δt, γ, ε) outputs what the paper's step outputs at (aΔt, γ, aε), 𝒲 scaled by a, its velocity
    # z/a, a = 1/√(1 − Δt ε) (docs/design.md): 1.60 at psMNIST's values, 3.16 at adding's
    a = (1 - dt * epsilon) ** -0.5
    explicit = make("cornn", 2, 4, dt=dt, gamma=gamma, epsilon=epsilon, damping="explicit")
    implicit = make("cornn", 2, 4, dt=a * dt, gamma=gamma, epsilon=a * epsilon, damping="implicit")
    with torch.no_grad():
        implicit.weight_hh_l0[:, 4:] *= a
    x = torch.randn(50, 3, 2, dtype=D64)
    y0, z0 = torch.randn(1, 3, 4, dtype=D64), torch.randn(1, 3, 4, dtype=D64)
    out_e, (y_e, z_e) = explicit(x, (y0, z0))
    out_i, (y_i, z_i) = implicit(x, (y0, z0 / a))
    torch.testing.assert_close(out_i, out_e, rtol=0, atol=1e-12)
    torch.testing.assert_close(z_i, z_e / a, rtol=0, atol=1e-12)
    unscaled = make("cornn", 2, 4, dt=dt, gamma=gamma, epsilon=epsilon, damping="implicit")
    assert (unscaled(x, (y0, z0))[0] - out_e).abs().max() > 1e-3  # the two steps at the same numbers differ


def test_lem_is_its_papers_step():
    model = make("lem", 2, 3, dt=0.7)
    x, y0, z0 = torch.randn(1, 1, 2, dtype=D64), torch.randn(1, 1, 3, dtype=D64), torch.randn(1, 1, 3, dtype=D64)
    _, (y1, z1) = model(x, (y0, z0))
    v, b = model.weight_ih_l0.chunk(4), model.bias_ih_l0.chunk(4)  # [V_2; V_1; V_y; V_z]
    w = model.weight_hh_l0.chunk(3)  # [W_2; W_1; W_z]
    u, y, z = x[0, 0], y0[0, 0], z0[0, 0]
    dt_y = 0.7 * torch.sigmoid(w[0] @ y + v[0] @ u + b[0])
    dt_z = 0.7 * torch.sigmoid(w[1] @ y + v[1] @ u + b[1])
    z_new = (1 - dt_z) * z + dt_z * torch.tanh(w[2] @ y + v[3] @ u + b[3])
    y_new = (1 - dt_y) * y + dt_y * torch.tanh(model.weight_zy_l0 @ z_new + v[2] @ u + b[2])
    torch.testing.assert_close(z1[0, 0], z_new, rtol=0, atol=1e-12)
    torch.testing.assert_close(y1[0, 0], y_new, rtol=0, atol=1e-12)


def test_mingru_is_its_papers_step():
    model = make("mingru", 2, 3)
    x, h0 = torch.randn(2, 1, 2, dtype=D64), torch.randn(1, 1, 3, dtype=D64)
    out, _ = model(x, h0)
    gate, cand = (x @ model.weight_ih_l0.t() + model.bias_ih_l0).chunk(2, -1)
    h = h0[0, 0]
    for t in range(2):
        z = 1 / (1 + torch.exp(-gate[t, 0]))
        g = torch.where(cand[t, 0] >= 0, cand[t, 0] + 0.5, 1 / (1 + torch.exp(-cand[t, 0])))
        h = (1 - z) * h + z * g
        torch.testing.assert_close(out[t, 0], h, rtol=0, atol=1e-12)


def test_lru_is_its_papers_block_in_complex_arithmetic():
    model = make("lru", 2, 3, state_size=4)
    x = torch.randn(3, 1, 2, dtype=D64)
    h0 = torch.randn(1, 1, 8, dtype=D64)
    out, h_n = model(x, h0)
    p = {k.removesuffix("_l0"): v.detach() for k, v in model.named_parameters()}
    lam = [cmath.exp(-math.exp(a) + 1j * math.exp(b)) for a, b in zip(p["nu_log"].tolist(), p["theta_log"].tolist())]
    gamma = torch.exp(p["gamma_log"]).tolist()
    s = [complex(h0[0, 0, j].item(), h0[0, 0, 4 + j].item()) for j in range(4)]
    for t in range(3):
        u = p["weight_ih"] @ x[t, 0] + p["bias_ih"]
        v = (u - u.mean()) / torch.sqrt(u.var(unbiased=False) + 1e-6) * p["norm_weight"] + p["norm_bias"]
        bv = [complex((p["b_real"][j] @ v).item(), (p["b_imag"][j] @ v).item()) for j in range(4)]
        s = [lam[j] * s[j] + gamma[j] * bv[j] for j in range(4)]
        y = torch.tensor([sum((complex(p["c_real"][i, j], p["c_imag"][i, j]) * s[j]).real for j in range(4))
                          for i in range(3)], dtype=D64) + p["d"] * v
        gelu = 0.5 * y * (1 + torch.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y ** 3)))  # jax.nn.gelu's
        a, g = (p["glu_weight"] @ gelu + p["glu_bias"]).chunk(2)
        torch.testing.assert_close(out[t, 0], u + a * torch.sigmoid(g), rtol=0, atol=1e-10)
    torch.testing.assert_close(h_n[0, 0], torch.tensor([z.real for z in s] + [z.imag for z in s], dtype=D64),
                               rtol=0, atol=1e-12)


def test_lru_dense_layers_start_as_flaxs_dense():
    """lecun_normal: a normal of variance 1/fan_in truncated at ±2 of its own scale; biases zero."""
    torch.manual_seed(0)
    model = nnrnn.create("lru", 300, 200, num_layers=2)
    for name, fan_in in (("weight_ih_l0", 300), ("weight_ih_l1", 200), ("glu_weight_l0", 200)):
        w = getattr(model, name).detach().double()
        assert abs(w.var().item() * fan_in - 1) < 0.02, name  # 60,000 or more draws
        assert w.abs().max().item() <= 2 * fan_in ** -0.5 / lru_module.TRUNCATED_STD + 1e-6
    for name in ("bias_ih_l0", "bias_ih_l1", "glu_bias_l0"):
        assert torch.equal(getattr(model, name).detach(), torch.zeros_like(getattr(model, name)))


def test_lru_starts_in_its_ring_with_the_gamma_normalisation():
    model = nnrnn.create("lru", 3, 64, r_min=0.5, r_max=0.8, max_phase=math.pi / 10)
    lam = model.eigenvalues().detach().to(torch.complex128)
    assert lam.abs().min() >= 0.5 - 1e-6 and lam.abs().max() <= 0.8 + 1e-6
    assert lam.angle().min() >= 0 and lam.angle().max() <= math.pi / 10 + 1e-6
    torch.testing.assert_close(torch.exp(model.gamma_log_l0).double(), torch.sqrt(1 - lam.abs() ** 2), rtol=1e-5,
                               atol=1e-6)


# --------------------------------------------------------------------------- each scan equals its loop

def _values_and_gradients(run, inputs):
    inputs = [t.detach().clone().requires_grad_() for t in inputs]
    outputs = run(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    weights = [torch.randn(o.shape, dtype=D64, generator=torch.Generator().manual_seed(i)) for i, o in
               enumerate(outputs)]
    sum((o * w).sum() for o, w in zip(outputs, weights)).backward()
    return [o.detach() for o in outputs], [torch.zeros_like(t) if t.grad is None else t.grad for t in inputs]


@pytest.mark.parametrize("steps", [1, 2, 3, 8, 37, 100])
def test_lru_scan_equals_its_loop_in_float64(steps):
    torch.manual_seed(steps)
    radius, angle = torch.rand(6, dtype=D64) * 0.2 + 0.79, torch.rand(6, dtype=D64) * 2 * math.pi
    inputs = [torch.randn(steps, 4, 6, dtype=D64), torch.randn(steps, 4, 6, dtype=D64), radius * torch.cos(angle),
              radius * torch.sin(angle)]
    want, want_grad = _values_and_gradients(lru_loop, inputs)
    got, got_grad = _values_and_gradients(lru_scan, inputs)
    for a, b in zip(got + got_grad, want + want_grad):
        assert (a - b).abs().max() <= 1e-10 * max(1.0, b.abs().max().item())


@pytest.mark.parametrize("steps", [1, 2, 7, 100])
def test_mingru_scan_equals_its_loop_in_float64(steps):
    torch.manual_seed(steps)
    inputs = [torch.randn(steps, 4, 6, dtype=D64) * 2, torch.randn(steps, 4, 6, dtype=D64) * 2,
              torch.randn(4, 6, dtype=D64)]  # h_0 of either sign: it enters linearly
    want, want_grad = _values_and_gradients(mingru_loop, inputs)
    got, got_grad = _values_and_gradients(mingru_scan, inputs)
    for a, b in zip(got + got_grad, want + want_grad):
        assert (a - b).abs().max() <= 1e-10 * max(1.0, b.abs().max().item())


@pytest.mark.parametrize("name", ["lru", "mingru"])
def test_the_models_scan_and_loop_agree_through_the_whole_layer(name):
    model = make(name, 3, 5, num_layers=2, bidirectional=True)
    x = torch.randn(50, 3, 3, dtype=D64)
    model.implementation = "scan"
    want = model(x)[0]
    model.implementation = "loop"
    torch.testing.assert_close(model(x)[0], want, rtol=0, atol=1e-12)
    model.implementation = "fused"
    with pytest.raises(ValueError, match="implementation must be one of auto, scan, loop; got 'fused'"):
        model(x)


@pytest.mark.parametrize("name, module", [("lru", lru_module), ("mingru", mingru_module)])
def test_auto_takes_the_scan_on_a_cpu_only_below_its_measured_crossover(name, module, monkeypatch):
    """Where the compiled loop does not run (here NNRNN_CPP=0; tests/models/test_fused_cells.py tests it)."""
    from nnrnn.kernels import policy as kernel_policy
    monkeypatch.setenv("NNRNN_CPP", "0")
    kernel_policy.reset()
    model = nnrnn.create(name, 3, 8)
    assert model.implementation == "auto"
    ran = []
    for kind in ("scan", "loop"):
        original = getattr(module, f"{name}_{kind}")
        monkeypatch.setattr(module, f"{name}_{kind}", lambda *a, _f=original, _k=kind: ran.append(_k) or _f(*a))
    width = model.state_width
    small, large = module.CPU_SCAN_CROSSOVER // width, module.CPU_SCAN_CROSSOVER // width + 1
    model(torch.randn(5, small, 3))
    assert set(ran) == {"scan"}  # (the LRU's scan calls itself, once per level)
    ran.clear()
    model(torch.randn(5, large, 3))
    assert ran == ["loop"]


@pytest.mark.parametrize("name, module", [("lru", lru_module), ("nnlru", nnlru_module)])
def test_auto_takes_the_path_the_kernel_policy_chose(name, module, monkeypatch, tuning):
    """The model does not decide: where the policy times the two (float32 on the CPU, NNRNN_TUNE on) and the timer
    finds the loop faster at a size where the fixed rule says the scan, the model runs its loop, and the decision
    is the policy's, under the model's kind; where the timer finds the scan faster above the crossover, the scan.
    A run's record pins it as any kernel choice.  The choice of the Python paths, where the compiled loop does not
    run (here NNRNN_CPP=0)."""
    from nnrnn.kernels import policy as kernel_policy
    from nnrnn.kernels import tuning as kernel_tuning
    monkeypatch.setenv("NNRNN_CPP", "0")
    kernel_policy.reset()
    monkeypatch.setattr(kernel_tuning, "cpu_seconds", lambda: None)  # a quiet machine
    model = nnrnn.create(name, 3, 4)
    ran = []
    for kind in ("scan", "loop"):
        original = getattr(module, f"{name}_{kind}")
        monkeypatch.setattr(module, f"{name}_{kind}", lambda *a, _f=original, _k=kind: ran.append(_k) or _f(*a))
    small, large = 2, module.CPU_SCAN_CROSSOVER // model.state_width + 1
    times = {"scan": 2e-3, "loop": 1e-3}
    monkeypatch.setattr(kernel_tuning, "timer", lambda candidate, call: call() or times[candidate])
    model(torch.randn(5, small, 3))  # timed here (the LRU's scan calls itself, once per level)
    ran.clear()
    model(torch.randn(5, small, 3))
    assert ran == ["loop"]
    made = kernel_policy.policy().decisions[f"scan {name} T4 B2 W{model.state_width}"]
    assert made.choice == "loop" and "thresholds: scan" in made.reason
    times.update(scan=1e-3, loop=3e-3)
    model(torch.randn(5, large, 3))
    ran.clear()
    model(torch.randn(5, large, 3))
    assert set(ran) == {"scan"}
    record = kernel_policy.record()
    kernel_policy.reset()
    kernel_policy.pin(record)
    monkeypatch.setattr(kernel_tuning, "timer", lambda candidate, call: pytest.fail("timed, where pinned"))
    ran.clear()
    model(torch.randn(5, small, 3))
    assert ran == ["loop"]


def test_with_tuning_off_auto_keeps_the_fixed_rule_whatever_a_timing_would_say(monkeypatch):
    """NNRNN_TUNE=0 (the suite's setting): nothing is timed and the fixed rule decides, today's: the scan at and
    below the model's crossover of batch × state width on a CPU (test_auto_takes_the_scan_on_a_cpu_only_below_its_
    measured_crossover), and the scan off the CPU."""
    from nnrnn.kernels import policy as kernel_policy
    from nnrnn.kernels import tuning as kernel_tuning
    monkeypatch.setenv("NNRNN_TUNE", "0")
    kernel_policy.reset()
    monkeypatch.setattr(kernel_tuning, "timer", lambda candidate, call: pytest.fail("timed with NNRNN_TUNE=0"))
    for name in ("lru", "nnlru"):
        model = nnrnn.create(name, 3, 4)
        fits = model.SCANNED.crossover // model.state_width
        assert use_scan("auto", torch.zeros(5, fits, 3), model.state_width, model.SCANNED)
        assert not use_scan("auto", torch.zeros(5, fits + 1, 3), model.state_width, model.SCANNED)
        assert use_scan("auto", torch.zeros(5, 4096, 3, device="meta"), model.state_width, model.SCANNED)
    assert kernel_policy.record() == {}  # nothing timed, nothing for a run to pin


# --------------------------------------------------------------------------- states, packed batches, counts

@pytest.mark.parametrize("name", MODERN)
def test_packed_sequences_match_per_sequence_runs(name):
    model = make(name, num_layers=2, bidirectional=True)
    x, lengths = torch.randn(6, 3, 3, dtype=D64), torch.tensor([4, 6, 2])
    out, h_n = model(pack_padded_sequence(x, lengths, enforce_sorted=False))
    padded, _ = torch.nn.utils.rnn.pad_packed_sequence(out)
    for b, length in enumerate(lengths.tolist()):
        alone, h_alone = model(x[:length, b:b + 1])
        torch.testing.assert_close(padded[:length, b:b + 1], alone, rtol=0, atol=1e-12)
        for got, want in zip(h_n if isinstance(h_n, tuple) else (h_n,), h_alone if isinstance(h_alone, tuple)
                             else (h_alone,)):
            torch.testing.assert_close(got[:, b:b + 1], want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["cornn", "lem"])
def test_a_two_vector_state_is_given_and_returned_as_torch_lstms_pair(name):
    model = make(name, num_layers=2)
    x = torch.randn(4, 2, 3, dtype=D64)
    out, (y_n, z_n) = model(x)
    assert y_n.shape == z_n.shape == (2, 2, 5) and torch.equal(out[-1], y_n[-1])  # the output is y
    with pytest.raises(TypeError, match=r"hx must be a tuple \(y_0, z_0\)"):
        model(x, y_n)
    with pytest.raises(ValueError, match=r"z_0 must have shape \(2, 2, 5\)"):
        model(x, (y_n, z_n[:1]))


@pytest.mark.parametrize("name, options", [("cornn", {}), ("lem", {}), ("mingru", {}), ("lru", {}),
                                           ("lru", {"state_size": 7}), ("mingru", {"bias": False}),
                                           ("cornn", {"bias": False})])
def test_parameter_count_is_the_models_own(name, options):
    for layers, bidirectional in ((1, False), (2, True)):
        model = nnrnn.create(name, 3, 5, layers, bidirectional=bidirectional, **options)
        counted = nnrnn.parameter_count(name, 3, 5, 2, num_layers=layers, bidirectional=bidirectional, **options)
        read_out = 2 * 5 * (2 if bidirectional else 1) + 2
        assert counted == sum(p.numel() for p in model.parameters()) + read_out


@pytest.mark.parametrize("name, options, error, message", [
    ("cornn", {"dt": 0}, ValueError, "dt must be a positive finite number; got 0"),
    ("cornn", {"gamma": "1"}, TypeError, "gamma must be a positive number; got '1'"),
    ("cornn", {"epsilon": math.inf}, ValueError, "epsilon must be a positive finite number"),
    ("cornn", {"damping": "semi"}, ValueError, "damping must be 'explicit' or 'implicit'; got 'semi'"),
    ("lem", {"dt": -1.0}, ValueError, "dt must be a positive finite number; got -1.0"),
    ("lru", {"r_min": 0.9, "r_max": 0.5}, ValueError, "r_min and r_max must satisfy 0 <= r_min < r_max <= 1"),
    ("lru", {"r_max": 1.5}, ValueError, "r_min and r_max must satisfy"),
    ("lru", {"state_size": 0}, ValueError, "state_size must be a positive int or None; got 0"),
    ("lru", {"max_phase": 0}, ValueError, "max_phase must be a positive finite number"),
])
def test_own_arguments_are_refused_naming_them(name, options, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        nnrnn.create(name, 3, 4, **options)


@pytest.mark.parametrize("name", MODERN)
def test_every_parameter_trains(name):
    model = nnrnn.create(name, 3, 5, num_layers=2)
    out, h_n = model(torch.randn(6, 2, 3))
    out.pow(2).mean().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
