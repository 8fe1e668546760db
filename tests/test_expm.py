"""The skew-symmetric exponential (nnrnn/parametrizations/expm.py) against torch.linalg.matrix_exp in float64."""
import math

import pytest
import torch

from nnrnn.parametrizations.expm import (THETA_MAX, expm_skew, paterson_stockmeyer_plan, plan,
                                         spectral_norm_from_square, taylor_degree)
from nnrnn.parametrizations.orthogonal import cayley_, henaff_, skew


def generator(n, kind, norm2, dtype=torch.float64, seed=0):
    """A skew-symmetric matrix of spectral norm ``norm2``: dense Gaussian, or 2×2 rotation blocks."""
    torch.manual_seed(seed)
    if kind == "dense":
        a = skew(torch.randn(n, n, dtype=torch.float64))
    else:
        a = torch.zeros(n, n, dtype=torch.float64)
        i = torch.arange(0, n - 1, 2)
        s = torch.rand(len(i), dtype=torch.float64) * 2 - 1
        a[i, i + 1], a[i + 1, i] = s, -s
    if norm2 == 0 or not a.any():  # n = 1: the only skew-symmetric matrix is 0
        return torch.zeros_like(a).to(dtype)
    return (a * (norm2 / torch.linalg.matrix_norm(a, 2))).to(dtype)


def orthogonality_error(p):
    p = p.detach().double()
    return (p.T @ p - torch.eye(p.shape[0], dtype=torch.float64)).abs().max().item()


@pytest.mark.parametrize("kind", ["dense", "blocks"])
@pytest.mark.parametrize("norm2", [0.0, 1e-3, 0.3, 1.0, 2.5, math.pi, 7.0])
@pytest.mark.parametrize("n", [1, 2, 5, 48])
def test_float64_value_and_gradient_match_torch(kind, norm2, n):
    a = generator(n, kind, norm2).requires_grad_(True)
    g = torch.randn(n, n, dtype=torch.float64)
    ours = expm_skew(a)
    ref = torch.linalg.matrix_exp(a)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-13)
    got, = torch.autograd.grad(ours, a, g)
    want, = torch.autograd.grad(ref, a, g)
    torch.testing.assert_close(got, want, rtol=1e-11, atol=1e-12)


def test_float64_gradcheck():
    x = torch.randn(6, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: expm_skew(skew(x)), (x,))


@pytest.mark.parametrize("kind", ["dense", "blocks"])
@pytest.mark.parametrize("norm2", [0.05, 0.5, 1.5, math.pi])
def test_float32_value_and_gradient_are_accurate(kind, norm2):
    """float32 against the float64 result: value to 2e-6, gradient to 2e-6 relative (Frobenius)."""
    a64 = generator(96, kind, norm2).requires_grad_(True)
    g = torch.randn(96, 96, dtype=torch.float64) * 10
    ref = torch.linalg.matrix_exp(a64)
    ref_grad, = torch.autograd.grad(ref, a64, g)
    a32 = a64.detach().float().requires_grad_(True)
    p = expm_skew(a32)
    grad, = torch.autograd.grad(p, a32, g.float())
    assert (p.double() - ref).abs().max().item() < 2e-6
    assert ((grad.double() - ref_grad).norm() / ref_grad.norm()).item() < 2e-6


@pytest.mark.parametrize("n", [512, 1024])
@pytest.mark.parametrize("case", ["dense pi", "cayley + dense"])
def test_float32_orthogonal_at_paper_sizes(n, case):
    """‖PᵀP − I‖_max ≤ 2e-6 at the paper's psMNIST and PTB sizes, for a dense generator of spectral
    norm π and for a Cayley-initialised one after a training-like dense perturbation; torch's float32
    matrix_exp misses this by 5-10× on the same matrices."""
    if case == "dense pi":
        a = generator(n, "dense", math.pi)
    else:
        torch.manual_seed(1)
        a = skew(cayley_(torch.zeros(n, n, dtype=torch.float64))) + 0.3 * skew(torch.randn(n, n, dtype=torch.float64)) / math.sqrt(n)
    with torch.no_grad():
        assert orthogonality_error(expm_skew(a.float())) <= 2e-6


def test_henaff_generators_are_rotations():
    """exp of a Henaff generator is a block rotation by each block's angle (angles up to π)."""
    x = henaff_(torch.zeros(64, 64))
    p = expm_skew(skew(x))
    angles = -x[torch.arange(1, 64, 2), torch.arange(0, 63, 2)].double()
    for i, s in enumerate(angles.tolist()):
        block = p[2 * i:2 * i + 2, 2 * i:2 * i + 2].double()
        want = torch.tensor([[math.cos(s), math.sin(s)], [-math.sin(s), math.cos(s)]], dtype=torch.float64)
        torch.testing.assert_close(block, want, rtol=0, atol=1e-6)
    assert orthogonality_error(p) < 1e-6


def test_zero_generator_gives_identity_and_zero_gradient():
    a = torch.zeros(5, 5, requires_grad=True)
    p = expm_skew(a)
    assert torch.equal(p, torch.eye(5))
    grad, = torch.autograd.grad(p, a, torch.zeros(5, 5))
    assert torch.equal(grad, torch.zeros(5, 5))


def test_taylor_degree_bounds_the_tail():
    """m is the smallest degree whose tail Σ_{k>m} θ^k/k! (summed here term by term) is ≤ the tolerance."""
    for theta in (0.01, 0.3, 1.0, 2.0, 3.5):
        for tol in (2.0 ** -25, 2.0 ** -54):
            m = taylor_degree(theta, tol)
            tail = sum(theta ** k / math.factorial(k) for k in range(m + 1, m + 60))
            before = sum(theta ** k / math.factorial(k) for k in range(m, m + 60))
            assert tail <= tol * 1.001 and before > tol


def test_plan_scales_only_above_theta_max_and_needs_more_terms_in_float64():
    assert plan(THETA_MAX, torch.float32)[0] == 0
    assert plan(THETA_MAX * 1.01, torch.float32)[0] >= 1
    assert plan(1.0, torch.float64)[1] > plan(1.0, torch.float32)[1]
    s, m, q = plan(math.pi, torch.float32)
    assert math.pi / 2 ** s <= THETA_MAX and paterson_stockmeyer_plan(m)[1] == q


def test_paterson_stockmeyer_costs():
    # degree 8 in 4 products (X², X³, then 2 steps of Horner in X³), degree 16 in 6
    assert paterson_stockmeyer_plan(8)[0] == 4
    assert paterson_stockmeyer_plan(16)[0] == 6
    assert paterson_stockmeyer_plan(1) == (0, 1)


def test_spectral_norm_estimate():
    """A lower estimate of ‖A‖₂, close from below, above and below 1, and exact where every vector is a
    singular vector (a single rotation block) and at zero."""
    for kind in ("dense", "blocks"):
        for norm2 in (2.0, 0.5):
            a = generator(200, kind, norm2)
            est = spectral_norm_from_square(a @ a)
            assert 0.9 * norm2 <= est <= norm2 + 1e-12
    block = torch.tensor([[0.0, 0.7], [-0.7, 0.0]], dtype=torch.float64)
    assert spectral_norm_from_square(block @ block) == pytest.approx(0.7, rel=1e-12)
    assert spectral_norm_from_square(torch.zeros(3, 3)) == 0.0


def test_spectral_norm_estimate_does_not_depend_on_the_global_random_state():
    """Its start vectors are fixed, so the degree chosen, and so P, repeat bit for bit."""
    a = generator(40, "dense", 1.3)
    estimates = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        estimates.append(spectral_norm_from_square(a @ a))
    assert estimates[0] == estimates[1]


def test_rejects_what_it_cannot_exponentiate():
    with pytest.raises(ValueError, match="square"):
        expm_skew(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="square"):
        expm_skew(torch.zeros(3, 3, dtype=torch.long))


@pytest.mark.parametrize("s, m, q", [(0, 1, 1), (0, 2, 2), (0, 3, 2), (0, 5, 2), (1, 6, 2), (0, 6, 3), (0, 9, 3),
                                     (0, 11, 3), (2, 14, 3), (0, 4, 4), (0, 16, 4), (1, 19, 4)])
def test_every_plan_evaluates_the_truncated_series_and_its_exact_derivative(monkeypatch, s, m, q):
    """Whatever (s, m, q) the plan picks, P = (Σ_{k≤m} (A/2^s)^k / k!)^(2^s) and the gradient is that
    polynomial's exact derivative: both against the series written out term by term (float64, autograd).
    A has norm 1.5, so that every term, the top block's included, is well above rounding."""
    from nnrnn.parametrizations import expm
    monkeypatch.setattr(expm, "plan", lambda theta, dtype: (s, m, q))
    a = generator(7, "dense", 1.5, seed=3).requires_grad_(True)
    x = a / 2 ** s
    term, want = torch.eye(7, dtype=torch.float64), torch.eye(7, dtype=torch.float64)
    for k in range(1, m + 1):
        term = term @ x / k
        want = want + term
    for _ in range(s):
        want = want @ want
    weight = torch.randn(7, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    got = expm_skew(a)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-13)
    grad_got, = torch.autograd.grad(got, a, weight)
    grad_want, = torch.autograd.grad(want, a, weight)
    torch.testing.assert_close(grad_got, grad_want, rtol=0, atol=1e-13)


def test_the_custom_ops_agree_with_their_fake_kernels_and_autograd():
    """What torch.compile and torch.export rely on (torch.library.opcheck): each op's fake kernel gives the
    real outputs' shapes and dtypes (the plan is float64), the autograd registration is complete, and the
    recorded products and plan carry no gradient."""
    from nnrnn.parametrizations import expm
    a = generator(6, "dense", 1.0, dtype=torch.float32).requires_grad_(True)
    for op, args in ((expm.expm_skew_op, (a.detach(),)), (expm.expm_skew_recorded_op, (a,))):
        results = torch.library.opcheck(op, args)
        assert set(results.values()) == {"SUCCESS"}, results
    p, products, plan_ = expm.expm_skew_recorded_op(a)
    assert p.requires_grad and not products.requires_grad and not plan_.requires_grad
    assert plan_.dtype == torch.float64
    results = torch.library.opcheck(expm.expm_skew_adjoint_op, (torch.randn(6, 6), products, plan_))
    assert set(results.values()) == {"SUCCESS"}, results


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm2", [1e-3, 0.5, 3.0, 20.0])  # up to 4 squarings
def test_the_recorded_op_has_a_fixed_length_and_the_eager_gradient(dtype, norm2):
    """The stack of products the compiled backward reuses has record_capacity(dtype) slots whatever the plan
    (a data-dependent length would break a default torch.compile graph), holds every Horner step, and the
    backward that squares again from the first squaring's input gives eager's gradient exactly."""
    from nnrnn.parametrizations import expm
    a = generator(9, "dense", norm2, dtype=dtype, seed=3).requires_grad_(True)
    _, record = expm._evaluate(a.detach())
    scale, m, q, powers, steps, squares = record
    assert len(steps) == expm._horner_steps(m, q)
    assert len(powers) - 1 + len(steps) + min(len(squares), 1) <= expm.record_capacity(dtype)
    p, products, plan_ = expm.expm_skew_recorded_op(a)
    assert products.shape == (expm.record_capacity(dtype), 9, 9)
    assert plan_[-1].item() == len(squares) and (norm2 < 20 or len(squares) >= 2)
    weight = torch.randn(9, 9, dtype=dtype, generator=torch.Generator().manual_seed(2))
    got, = torch.autograd.grad(p, a, weight)
    want, = torch.autograd.grad(expm._ExpmSkew.apply(a), a, weight)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_record_capacity_is_the_most_any_plan_keeps(dtype):
    """Over ‖A‖₂ from 1e-4 to 1e3, the matrices a record keeps for the compiled backward (X … X^q with X² at
    least, the Horner steps, the first squaring's input) never exceed record_capacity, and some plan needs all
    of it."""
    from nnrnn.parametrizations import expm
    kept = []
    for k in range(-80, 61):
        s, m, q = plan(10 ** (k / 20), dtype)
        kept.append(max(q, 2) + expm._horner_steps(m, q) + min(s, 1))
    assert max(kept) == expm.record_capacity(dtype)


def test_the_empty_matrix_has_the_empty_exponential():
    a = torch.zeros(0, 0, dtype=torch.float64, requires_grad=True)
    p = expm_skew(a)
    assert p.shape == (0, 0) and p.dtype == torch.float64 and p.requires_grad


def rule_plan(theta: float, eps: float) -> tuple[int, int, int]:
    """The module docstring's rule, in exact rational arithmetic and by brute force: for s = s_min … s_min + 2
    squarings (s_min the fewest with θ/2^s ≤ THETA_MAX), m ≥ 1 the smallest degree whose tail
    Σ_{k>m} (θ/2^s)^k/k! is at most half the unit roundoff, evaluated with the q that needs the fewest
    products, (q − 1) + ⌊m/q⌋ − [q | m]; the plan with the fewest products + squarings, then the fewest
    squarings."""
    from fractions import Fraction
    tolerance = Fraction(eps) / 4
    s_min = 0
    while Fraction(theta) / 2 ** s_min > THETA_MAX:
        s_min += 1
    plans = []
    for s in range(s_min, s_min + 3):
        x = Fraction(theta) / 2 ** s
        terms = [Fraction(1)]
        while len(terms) < 80:
            terms.append(terms[-1] * x / len(terms))
        m = next(m for m in range(80) if sum(terms[m + 1:]) <= tolerance)
        m = max(1, m)
        products, q = (0, 1) if m == 1 else min(((q - 1) + m // q - (m % q == 0), q) for q in range(2, m + 1))
        plans.append((products + s, s, m, q))
    _, s, m, q = min(plans)
    return s, m, q


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_plan_follows_its_rule(dtype):
    eps = torch.finfo(dtype).eps
    for theta in [0.0, 1e-9] + [10 ** (k / 8) for k in range(-40, 13)]:
        assert plan(theta, dtype) == rule_plan(theta, eps), theta


def test_paterson_stockmeyer_costs_counted_by_hand():
    # degree 2: X² is the one product; degree 4: X², then (c₂I + c₃X + c₄X²)·X² is the second
    assert paterson_stockmeyer_plan(2) == (1, 2)
    assert paterson_stockmeyer_plan(4) == (2, 2)


@pytest.mark.parametrize("scale", [0.0, 1e-9])
def test_a_generator_at_or_near_zero_costs_no_matrix_product(monkeypatch, scale):
    """exp(A) = I + A to rounding: what the exponential costs right after a rebase (see OrthogonalFactor)."""
    from nnrnn.parametrizations import expm
    calls = []
    real = expm.matmul
    monkeypatch.setattr(expm, "matmul", lambda *args: calls.append(1) or real(*args))
    a = (generator(16, "dense", 1.0, dtype=torch.float32) * scale).requires_grad_(True)
    p = expm_skew(a)
    p.backward(torch.randn(16, 16))
    assert not calls
    torch.testing.assert_close(p, torch.eye(16) + a, rtol=0, atol=0)


def test_a_generator_whose_one_norm_hides_a_degree_one_plan_gives_i_plus_a():
    """‖A‖₁ asks for degree 2 while the 2-norm allows degree 1: the series path, not the shortcut, returns
    I + A, and its gradient is the incoming one."""
    a = generator(64, "dense", 1.5e-4, dtype=torch.float32)
    assert plan(float(a.abs().sum(0).max()), torch.float32)[1] >= 2
    assert plan(1.1 * 1.5e-4, torch.float32)[1] == 1
    a.requires_grad_(True)
    p = expm_skew(a)
    torch.testing.assert_close(p, torch.eye(64) + a, rtol=0, atol=0)
    g = torch.randn(64, 64)
    torch.testing.assert_close(torch.autograd.grad(p, a, g)[0], g, rtol=0, atol=0)


def test_taylor_degree_at_the_small_end():
    """θ = 0 needs no term beyond the constant; θ = 1e-5 needs the linear one (θ ≈ 1e-5 > 2^-25, θ²/2 below)."""
    assert taylor_degree(0.0, 2.0 ** -25) == 0
    assert taylor_degree(1e-5, 2.0 ** -25) == 1
    assert taylor_degree(1e-5, 2.0 ** -54) == 3  # θ³/6 ≈ 1.7e-16 > 2^-54 ≈ 5.6e-17, θ⁴/24 below
