"""The non-normal LRU (nnrnn/models/nnlru.py): its scan against its loop in float64 (values and gradients, 1e-10),
the LRU it is with T = 0, the delay line it is with Λ = 0 and T the shift, its T (start, shape, penalty), and the
Fisher memory of its linear part.  torch.nn.RNN's contract for it is in tests/models/test_dropin.py (MODERN) and
test_cells.py."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

import nnrnn
from nnrnn.models import lru
from nnrnn.analysis.linear import fisher_memory_of, linear_part, real_form
from nnrnn.analysis.fisher import fisher_memory_curve
from nnrnn.analysis.proposition1 import delay_line_fmc
from nnrnn.models import nnlru as nnlru_module
from nnrnn.models.nnlru import nnlru_loop, nnlru_scan, transition

D64 = torch.float64


def make(name="nnlru", input_size=3, hidden_size=5, **options):
    torch.manual_seed(0)
    return nnrnn.create(name, input_size, hidden_size, dtype=D64, **options)


def random_transition(n, generator):
    """M of a random stable A = Λ + T (|λ| in [0.6, 0.95], T of entries about 0.3)."""
    radius = torch.rand(n, dtype=D64, generator=generator) * 0.35 + 0.6
    angle = torch.rand(n, dtype=D64, generator=generator) * 2 * math.pi
    tr, ti = (0.3 * torch.randn(n, n, dtype=D64, generator=generator).triu(1) for _ in range(2))
    return transition(radius * torch.cos(angle), radius * torch.sin(angle), tr, ti)


def values_and_gradients(run, b, m):
    b, m = b.detach().clone().requires_grad_(), m.detach().clone().requires_grad_()
    out = run(b, m)
    (out * torch.randn(out.shape, dtype=D64, generator=torch.Generator().manual_seed(1))).sum().backward()
    return out.detach(), b.grad, torch.zeros_like(m) if m.grad is None else m.grad  # T = 1: M unused


@pytest.mark.parametrize("steps", [1, 2, 3, 8, 37, 100])
def test_scan_equals_its_loop_in_float64_values_and_gradients(steps):
    generator = torch.Generator().manual_seed(steps)
    m = random_transition(4, generator)
    b = torch.randn(steps, 3, 8, dtype=D64, generator=generator)
    want = values_and_gradients(nnlru_loop, b, m)
    got = values_and_gradients(nnlru_scan, b, m)
    for a, w in zip(got, want):
        assert (a - w).abs().max() <= 1e-10 * max(1.0, w.abs().max().item())


@pytest.mark.parametrize("steps", [1, 13, 64])
def test_the_layers_scan_and_loop_agree_with_a_state_given_in_values_and_gradients(steps):
    model = make(num_layers=2, bidirectional=True, t_init="delay:0.7")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("t_"):
                p.add_(0.2 * torch.randn_like(p))
    x, h0 = torch.randn(steps, 3, 3, dtype=D64), torch.randn(4, 3, 10, dtype=D64)
    results = {}
    for implementation in ("scan", "loop"):
        model.implementation = implementation
        model.zero_grad()
        h = h0.clone().requires_grad_()
        out, h_n = model(x, h)
        (out.sum() + h_n.pow(2).sum()).backward()
        results[implementation] = [out, h_n, h.grad] + [p.grad for p in model.parameters()]
    for a, w in zip(results["scan"], results["loop"]):
        torch.testing.assert_close(a, w, rtol=0, atol=1e-10 * max(1.0, w.abs().max().item()))


def test_auto_takes_the_scan_on_a_cpu_only_at_and_below_its_measured_crossover(monkeypatch):
    """Where the compiled loop does not run (here NNRNN_CPP=0; tests/models/test_fused_cells.py tests it)."""
    from nnrnn.kernels import policy as kernel_policy
    monkeypatch.setenv("NNRNN_CPP", "0")
    kernel_policy.reset()
    model = nnrnn.create("nnlru", 3, 4)
    ran = []
    for kind in ("scan", "loop"):
        original = getattr(nnlru_module, f"nnlru_{kind}")
        monkeypatch.setattr(nnlru_module, f"nnlru_{kind}", lambda *a, _f=original, _k=kind: ran.append(_k) or _f(*a))
    fits = nnlru_module.CPU_SCAN_CROSSOVER // model.state_width
    model(torch.randn(5, fits, 3))
    assert set(ran) == {"scan"}
    ran.clear()
    model(torch.randn(5, fits + 1, 3))
    assert ran == ["loop"]


def test_with_t_zero_it_is_the_lru_with_the_same_parameters():
    lru = make("lru", 3, 6, num_layers=2, bidirectional=True, state_size=4, r_min=0.3)
    model = make("nnlru", 3, 6, num_layers=2, bidirectional=True, state_size=4, r_min=0.3)
    torch.manual_seed(5)
    lru.reset_parameters()  # not the draw the nnlru made: the copy below is what makes them equal
    missing, unexpected = model.load_state_dict(lru.state_dict(), strict=False)
    assert unexpected == [] and set(missing) == {n for n, _ in model.named_parameters() if n.startswith("t_")}
    assert all(p.abs().max() == 0 for n, p in model.named_parameters() if n.startswith("t_"))
    x, h0 = torch.randn(20, 2, 3, dtype=D64), torch.randn(4, 2, 8, dtype=D64)
    for implementation in ("scan", "loop"):
        model.implementation = lru.implementation = implementation
        out, h_n = model(x, h0)
        want, want_h = lru(x, h0)
        torch.testing.assert_close(out, want, rtol=0, atol=1e-12)
        torch.testing.assert_close(h_n, want_h, rtol=0, atol=1e-12)


@pytest.mark.parametrize("implementation", ["scan", "loop"])
def test_with_lambda_zero_and_t_the_shift_it_holds_the_last_n_projected_inputs(implementation):
    n, steps = 5, 12
    model = make("nnlru", 2, 3, state_size=n, t_init="delay:1.0")
    model.implementation = implementation
    with torch.no_grad():
        model.nu_log_l0.fill_(50.0)  # |λ| = exp(−e^50) = 0: Λ = 0
        model.b_real_l0[:-1].zero_()  # the input enters through the last coordinate alone
        model.b_imag_l0[:-1].zero_()
    assert model.eigenvalues().abs().max() == 0
    torch.testing.assert_close(model.triangular(), torch.diag_embed(torch.ones(n - 1, dtype=D64), 1).to(
        torch.complex128))
    x = torch.randn(steps, 4, 2, dtype=D64)
    states = []
    for t in range(1, steps + 1):
        states.append(model(x[:t])[1][0])  # h_n: [Re s_t, Im s_t]
    v = torch.nn.functional.layer_norm(x @ model.weight_ih_l0.t() + model.bias_ih_l0, (3,), model.norm_weight_l0,
                                       model.norm_bias_l0, eps=lru.NORM_EPS)
    gamma = torch.exp(model.gamma_log_l0[-1])
    projected = torch.complex(v @ model.b_real_l0[-1], v @ model.b_imag_l0[-1]) * gamma  # (T, B)
    for t, h in enumerate(states):
        s = torch.complex(*h.detach().chunk(2, -1))  # (B, n)
        for k in range(n):  # coordinate n−1−k holds the input of k steps ago, or 0 before the start
            want = projected[t - k] if t - k >= 0 else torch.zeros_like(projected[0])
            torch.testing.assert_close(s[:, n - 1 - k], want.detach(), rtol=0, atol=1e-12)


def test_t_starts_as_asked_strictly_upper_and_its_eigenvalues_stay_lambdas():
    model = make("nnlru", 3, 6, t_init="delay:0.5")
    t = model.triangular()
    assert torch.equal(t, torch.diag_embed(torch.full((5,), 0.5, dtype=D64), 1).to(torch.complex128))
    with torch.no_grad():
        model.t_real_l0.normal_()
        model.t_imag_l0.normal_()
    t = model.triangular()
    assert torch.equal(t, t.triu(1)) and t.abs().sum() > 0
    eigenvalues = torch.linalg.eigvals(model.transition_matrix()).detach()
    want = model.eigenvalues().detach()
    assert torch.equal(torch.diagonal(model.transition_matrix()).detach(), want)
    assert all((eigenvalues - w).abs().min() < 1e-6 for w in want)
    assert torch.equal(make("nnlru", 3, 6).triangular(), torch.zeros(6, 6, dtype=torch.complex128))


@pytest.mark.parametrize("t_init", ["zero", "delay:0", "delay:-1", "delay", 1.0])
def test_a_bad_t_init_is_refused_by_name(t_init):
    with pytest.raises(ValueError, match="t_init must be 'zeros' or 'delay:ALPHA'"):
        nnrnn.create("nnlru", 3, 4, t_init=t_init)


def test_the_penalty_is_the_nnrnns_decay_on_t_over_every_cell():
    model = make("nnlru", 3, 4, num_layers=2, t_init="delay:0.5")
    t_norms = sum(model.triangular(layer).abs().pow(2).sum() for layer in range(2))
    torch.testing.assert_close(model.regularization(0.3, 0.1), 0.05 * t_norms.real, rtol=1e-12, atol=0)
    model.regularization(0.0, 0.1).backward()
    torch.testing.assert_close(model.t_real_l1.grad, 0.1 * model.t_real_l1.detach())
    with pytest.raises(ValueError, match="t_decay must be zero or a positive finite number"):
        model.regularization(0.0, -1.0)


def test_parameter_count_counts_t_above_the_diagonal_twice():
    assert (nnrnn.parameter_count("nnlru", 3, 8, state_size=5) ==
            nnrnn.parameter_count("lru", 3, 8, state_size=5) + 5 * 4)


# --------------------------------------------------------------------------- the Fisher memory of its linear part

def test_the_real_form_acts_as_the_complex_matrix():
    a = torch.randn(4, 4, dtype=torch.complex128).numpy()
    s = torch.randn(4, dtype=torch.complex128).numpy()
    got = real_form(a) @ np.concatenate([s.real, s.imag])
    np.testing.assert_allclose(got, np.concatenate([(a @ s).real, (a @ s).imag]), rtol=0, atol=1e-12)


def test_fisher_memory_of_the_delay_line_is_ganguli_s_closed_form():
    n = 6
    model = make("nnlru", 2, 3, state_size=n, t_init="delay:1.0")
    with torch.no_grad():
        model.nu_log_l0.fill_(50.0)
        model.b_real_l0[:-1].zero_()
        model.b_imag_l0[:-1].zero_()
        model.b_imag_l0[-1].zero_()
    a, b = linear_part(model)
    assert np.array_equal(a, np.diag(np.ones(n - 1), 1))
    memory = fisher_memory_of(model, steps=n, signal=np.eye(3)[0])
    signal = np.abs(b[-1, 0]) ** 2  # the input enters along coordinate n−1 with gain |γ B_{n−1,0}|
    # Ganguli's closed form is for a unit input; J scales with |u|²
    np.testing.assert_allclose(memory.curve, signal * delay_line_fmc(1.0, n), rtol=1e-9)


def test_fisher_memory_of_a_trained_shape_is_the_theorys_on_its_real_form():
    model = make("nnlru", 3, 4, t_init="delay:0.4", r_min=0.5, r_max=0.9)
    a, b = linear_part(model)
    direction = np.array([0.3, -1.0, 0.5, 2.0])
    u = b @ direction
    want = fisher_memory_curve(real_form(a), 10, np.concatenate([u.real, u.imag]))
    np.testing.assert_allclose(fisher_memory_of(model, steps=10, signal=direction).curve, want, rtol=1e-12)


def test_the_input_statistics_give_the_direction_of_most_input_variance():
    model = make("nnlru", 3, 4)
    x = torch.randn(50, 8, 3, dtype=D64)
    memory = fisher_memory_of(model, steps=5, inputs=x)
    assert memory.curve.shape == (5,) and np.all(memory.curve > 0)
    with pytest.raises(ValueError, match="signal must have 4 entries"):
        fisher_memory_of(model, steps=5, signal=np.ones(3))


def test_nnrnn_trains_and_analyzes_an_nnlru_run(tmp_path, capsys):
    from helpers import TINY

    from nnrnn_cli import command as cli
    run = tmp_path / "run"
    assert cli.main(["train", "copy", "--model", "nnlru", "--steps", "3", "--t-init", "delay:0.5", "--t-decay",
                     "1e-4", "--out", str(run), *TINY]) == 0
    assert cli.main(["analyze", str(run)]) == 0
    summary = json.loads((run / "analysis" / "summary.json").read_text())
    assert summary["model"] == "NonNormalLRU" and summary["files"] == ["nnlru.png", "summary.json"]
    assert 0 < summary["spectral_radius"] < 1 and summary["fisher_memory_total"] > 0
    assert summary["departure_from_normality"] > 0  # the delay start: T ≠ 0
    assert (run / "analysis" / "nnlru.png").stat().st_size > 0
    assert "fisher_memory_total" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["lru", "nnlru"])
def test_a_state_of_the_wrong_width_is_refused_naming_the_lrus_own_width(name):
    """The LRU's state is [Re s, Im s], 2·state_size wide: the error says so (it said hidden_size, the width a
    torch.nn.RNN user would then give)."""
    model = nnrnn.create(name, 3, 4, state_size=3)
    with pytest.raises(ValueError, match=r"\(1, 2, 6\) \(num_layers \* num_directions, batch, 2 \* state_size"):
        model(torch.randn(5, 2, 3), torch.zeros(1, 2, 4))
    assert model(torch.randn(5, 2, 3), torch.zeros(1, 2, 6))[1].shape == (1, 2, 6)


@pytest.mark.parametrize("name", ["lru", "nnlru"])
def test_stepping_without_grad_derives_the_recurrence_once_and_never_stale(name, monkeypatch):
    """One token at a time under no_grad (generation) keeps Λ (and the nnLRU's transition M) while no parameter
    changed; after an optimizer step, and after a write through ``.data`` followed by a mode switch, each step gives
    what a model loaded from the same state gives; nothing kept is saved or copied."""
    import copy

    from helpers import steps_match_a_loaded_twin

    from nnrnn.models import base
    derived = []

    def counting(cache, key, tensors, compose):
        return base.kept(cache, key, tensors, lambda: derived.append(key) or compose())
    monkeypatch.setattr(lru, "kept", counting)
    monkeypatch.setattr(nnlru_module, "kept", counting)
    torch.manual_seed(3)
    options = {"t_init": "delay:0.5"} if name == "nnlru" else {}  # a T that is not zero
    model = nnrnn.create(name, 3, 4, num_layers=2, **options).eval()
    x = torch.randn(1, 2, 3)

    with torch.no_grad():
        h = None
        for _ in range(3):
            _, h = model(x, h)
    assert len(derived) == 2 * (2 if name == "nnlru" else 1)  # per layer: Λ (and M), once for three steps
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model(torch.randn(4, 2, 3))[0].pow(2).sum().backward()
    optimizer.step()
    steps_match_a_loaded_twin(model, nnrnn.create(name, 3, 4, num_layers=2).eval(), x)
    model.nu_log_l1.data.mul_(0.5)  # moves no version counter: a mode switch drops what was kept
    model.train().eval()
    steps_match_a_loaded_twin(model, nnrnn.create(name, 3, 4, num_layers=2).eval(), x)
    assert copy.deepcopy(model)._kept == {} and set(model.state_dict()) == set(dict(model.named_parameters()))
