"""The skew-symmetric exponential (nnrnn/parametrizations/expm.py) against torch.linalg.matrix_exp in float64."""
import math

import pytest
import torch

from nnrnn.kernels import policy as kernel_policy
from nnrnn.parametrizations.expm import (MAX_SQUARINGS, NORM_SAFETY, THETA_MAX, expm_skew, fixed_plan,
                                         paterson_stockmeyer_plan, plan, spectral_norm_from_square, squarings,
                                         taylor_degree)
from nnrnn.parametrizations.orthogonal import cayley_, henaff_, skew
from nnrnn.parametrizations.unitary import expm_skew_hermitian


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


@pytest.fixture(params=["fixed", "read"])
def each_plan(request, monkeypatch):
    """Both plans (nnrnn.kernels.fixed_exponential_plan): the fixed one GPUs run, the one read on the host."""
    monkeypatch.setenv("NNRNN_EXPM_PLAN", request.param)
    kernel_policy.reset()  # the policy reads the environment once
    return request.param


@pytest.fixture
def fixed(monkeypatch):
    monkeypatch.setenv("NNRNN_EXPM_PLAN", "fixed")
    kernel_policy.reset()  # the policy reads the environment once


def orthogonality_error(p):
    p = p.detach().double()
    return (p.T @ p - torch.eye(p.shape[0], dtype=torch.float64)).abs().max().item()


@pytest.mark.parametrize("kind", ["dense", "blocks"])
@pytest.mark.parametrize("norm2", [0.0, 1e-3, 0.3, 1.0, 2.5, math.pi, 7.0])
@pytest.mark.parametrize("n", [1, 2, 5, 48])
def test_float64_value_and_gradient_match_torch(kind, norm2, n, each_plan):
    a = generator(n, kind, norm2).requires_grad_(True)
    g = torch.randn(n, n, dtype=torch.float64)
    ours = expm_skew(a)
    ref = torch.linalg.matrix_exp(a)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-13)
    got, = torch.autograd.grad(ours, a, g)
    want, = torch.autograd.grad(ref, a, g)
    torch.testing.assert_close(got, want, rtol=1e-11, atol=1e-12)


def test_float64_gradcheck(each_plan):
    x = torch.randn(6, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: expm_skew(skew(x)), (x,))


@pytest.mark.parametrize("kind", ["dense", "blocks"])
@pytest.mark.parametrize("norm2", [0.05, 0.5, 1.5, math.pi])
def test_float32_value_and_gradient_are_accurate(kind, norm2, each_plan):
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
def test_float32_orthogonal_at_paper_sizes(n, case, each_plan):
    """‖PᵀP − I‖_max ≤ 2e-6 at the paper's psMNIST and PTB sizes, for a dense generator of spectral
    norm π and for a Cayley-initialised one after a training-like dense perturbation; torch's float32
    matrix_exp misses this by 5-10× on the same matrices."""
    if case == "dense pi":
        a = generator(n, "dense", math.pi)
    else:
        torch.manual_seed(1)
        a = (skew(cayley_(torch.zeros(n, n, dtype=torch.float64)))
             + 0.3 * skew(torch.randn(n, n, dtype=torch.float64)) / math.sqrt(n))
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


def test_zero_generator_gives_identity_and_zero_gradient(each_plan):
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


def test_scaling_only_above_theta_max_and_more_terms_in_float64():
    def s(theta):
        return int(squarings(torch.tensor(theta)))
    assert s(0.0) == 0 and s(THETA_MAX) == 0 and s(THETA_MAX * 1.01) == 1 and s(math.pi) == 1
    assert s(THETA_MAX * 2 ** MAX_SQUARINGS) == MAX_SQUARINGS and s(1e6) == MAX_SQUARINGS
    assert fixed_plan(torch.float64)[0] > fixed_plan(torch.float32)[0]


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
            est = float(spectral_norm_from_square(a @ a))
            assert 0.9 * norm2 <= est <= norm2 + 1e-12
    block = torch.tensor([[0.0, 0.7], [-0.7, 0.0]], dtype=torch.float64)
    assert float(spectral_norm_from_square(block @ block)) == pytest.approx(0.7, rel=1e-12)
    assert float(spectral_norm_from_square(torch.zeros(3, 3))) == 0.0


def test_spectral_norm_estimate_does_not_depend_on_the_global_random_state():
    """Its start vectors are fixed, so the scaling chosen, and so P, repeat bit for bit."""
    a = generator(40, "dense", 1.3)
    estimates = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        estimates.append(spectral_norm_from_square(a @ a))
    assert torch.equal(estimates[0], estimates[1])


def test_rejects_what_it_cannot_exponentiate():
    with pytest.raises(ValueError, match="square"):
        expm_skew(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="square"):
        expm_skew(torch.zeros(3, 3, dtype=torch.long))


@pytest.mark.parametrize("s, m, q", [(0, 1, 1), (0, 2, 2), (0, 3, 2), (0, 5, 2), (1, 6, 2), (0, 6, 3), (0, 9, 3),
                                     (0, 11, 3), (2, 14, 3), (0, 4, 4), (0, 16, 4), (1, 19, 4), (3, 23, 4)])
def test_every_plan_evaluates_the_truncated_series_and_its_exact_derivative(monkeypatch, fixed, s, m, q):
    """Whatever the degree m, block size q and scaling s, P = (Σ_{k≤m} (A/2^s)^k / k!)^(2^s) and the gradient is that
    polynomial's exact derivative: both against the series written out term by term (float64, autograd).
    A has norm 1.5, so that every term, the top block's included, is well above rounding."""
    from nnrnn.parametrizations import expm
    monkeypatch.setattr(expm, "fixed_plan", lambda dtype: (m, q))
    monkeypatch.setattr(expm, "squarings", lambda theta: torch.tensor(float(s), dtype=theta.dtype))
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


def test_the_custom_ops_agree_with_their_fake_kernels_and_autograd(each_plan):
    """What torch.compile and torch.export rely on (torch.library.opcheck): each op's fake kernel gives the
    real outputs' shapes and dtypes, the autograd registration is complete, and the recorded products and
    the scaling's exponent carry no gradient."""
    from nnrnn.parametrizations import expm
    a = generator(6, "dense", 1.0, dtype=torch.float32).requires_grad_(True)
    for op, args in ((expm.expm_skew_op, (a.detach(),)), (expm.expm_skew_recorded_op, (a,))):
        results = torch.library.opcheck(op, args)
        assert set(results.values()) == {"SUCCESS"}, results
    p, products, plan_ = expm.expm_skew_recorded_op(a)
    assert p.requires_grad and not products.requires_grad and not plan_.requires_grad
    results = torch.library.opcheck(expm.expm_skew_adjoint_op, (torch.randn(6, 6), products, plan_))
    assert set(results.values()) == {"SUCCESS"}, results


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm2, s", [(1e-3, 0), (0.5, 0), (3.0, 1), (12.0, 3)])
def test_the_recorded_op_has_a_fixed_length_and_the_eager_gradient(dtype, norm2, s, each_plan):
    """The stack of products the compiled backward reuses has record_capacity(dtype) slots whatever A is
    (a data-dependent length would break a default torch.compile graph) and the backward that reuses it
    gives eager's gradient exactly, with either plan; the fixed plan's record is its scaling exponent."""
    from nnrnn.parametrizations import expm
    a = generator(9, "dense", norm2, dtype=dtype, seed=3).requires_grad_(True)
    p, products, plan_ = expm.expm_skew_recorded_op(a)
    assert products.shape == (expm.record_capacity(dtype), 9, 9)
    assert plan_.shape == ((1,) if each_plan == "fixed" else (6,))
    assert int(plan_[0]) == s or each_plan == "read"
    weight = torch.randn(9, 9, dtype=dtype, generator=torch.Generator().manual_seed(2))
    got, = torch.autograd.grad(p, a, weight)
    want, = torch.autograd.grad(expm._ExpmSkew.apply(a), a, weight)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_record_capacity_is_the_most_any_plan_keeps(dtype):
    """Over ‖A‖₂ from 1e-4 to 1e3 the read plan's record (X … X^q with X² at least, the Horner steps, the
    first squaring's input) never exceeds record_capacity, nor does the fixed plan's (every squaring's input)."""
    from nnrnn.parametrizations import expm
    kept = []
    for k in range(-80, 61):
        s, m, q = plan(10 ** (k / 20), dtype)
        kept.append(max(q, 2) + expm._horner_steps(m, q) + min(s, 1))
    m, q = fixed_plan(dtype)
    kept.append(max(q, 2) + expm._horner_steps(m, q) + MAX_SQUARINGS)
    assert max(kept) == expm.record_capacity(dtype)


def test_every_generator_costs_the_same_products_in_the_fixed_plan(monkeypatch, fixed):
    """The products run do not depend on A's values (what CUDA graph capture and a fullgraph compile need):
    the same count for A = 0 and for A that needs every squaring, forward and backward."""
    from nnrnn.parametrizations import expm
    calls = []
    real = expm.matmul
    monkeypatch.setattr(expm, "matmul", lambda *args: calls.append(1) or real(*args))
    counts = []
    for norm2 in (0.0, 1e-9, 1.0, THETA_MAX * 2 ** MAX_SQUARINGS / NORM_SAFETY * 0.99):
        calls.clear()
        a = generator(16, "dense", norm2, dtype=torch.float32).requires_grad_(True)
        p = expm_skew(a)
        assert orthogonality_error(p) < 1e-5
        p.backward(torch.randn(16, 16))
        counts.append(len(calls))
    assert len(set(counts)) == 1, counts


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_fixed_plan_gives_nan_beyond_its_squarings_not_a_wrong_matrix(dtype, fixed):
    """Beyond ‖A‖₂ ≈ THETA_MAX·2^MAX_SQUARINGS the fixed degree is no longer accurate: P is NaN, so training
    stops as diverged instead of going on with a matrix that is not exp(A)."""
    limit = THETA_MAX * 2 ** MAX_SQUARINGS / NORM_SAFETY
    inside = expm_skew(generator(12, "dense", limit * 0.98, dtype=dtype))
    torch.testing.assert_close(inside.double(), torch.linalg.matrix_exp(generator(12, "dense", limit * 0.98)),
                               rtol=0, atol=1e-4 if dtype == torch.float32 else 1e-11)
    assert expm_skew(generator(12, "dense", limit * 1.1, dtype=dtype)).isnan().all()


def test_the_empty_matrix_has_the_empty_exponential():
    a = torch.zeros(0, 0, dtype=torch.float64, requires_grad=True)
    p = expm_skew(a)
    assert p.shape == (0, 0) and p.dtype == torch.float64 and p.requires_grad


def rule_degree(eps: float) -> tuple[int, int]:
    """The module docstring's rule, in exact rational arithmetic and by brute force: m ≥ 1 the smallest
    degree whose tail Σ_{k>m} THETA_MAX^k/k! is at most half the unit roundoff, evaluated with the q that needs
    the fewest products, (q − 1) + ⌊m/q⌋ − [q | m]."""
    from fractions import Fraction
    tolerance = Fraction(eps) / 4
    terms = [Fraction(1)]
    while len(terms) < 80:
        terms.append(terms[-1] * Fraction(THETA_MAX) / len(terms))
    m = max(1, next(m for m in range(80) if sum(terms[m + 1:]) <= tolerance))
    return m, min(((q - 1) + m // q - (m % q == 0), q) for q in range(2, m + 1))[1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_degree_follows_its_rule(dtype):
    assert fixed_plan(dtype) == rule_degree(torch.finfo(dtype).eps)


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


def test_taylor_degree_at_the_small_end():
    """θ = 0 needs no term beyond the constant; θ = 1e-5 needs the linear one (θ ≈ 1e-5 > 2^-25, θ²/2 below)."""
    assert taylor_degree(0.0, 2.0 ** -25) == 0
    assert taylor_degree(1e-5, 2.0 ** -25) == 1
    assert taylor_degree(1e-5, 2.0 ** -54) == 3  # θ³/6 ≈ 1.7e-16 > 2^-54 ≈ 5.6e-17, θ⁴/24 below


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_norm_that_overflows_gives_nan_not_a_wrong_matrix(dtype, each_plan):
    """A finite A whose square overflows (‖A‖₂ ~ 1e200 in float64, 1e30 in float32) has no estimate of ‖A‖₂:
    both plans give NaN, as the fixed one does past its squarings, rather than I + A (not orthogonal)."""
    huge = 1e200 if dtype == torch.float64 else 1e30
    a = torch.zeros(3, 3, dtype=dtype)
    a[1, 0], a[0, 1] = huge, -huge
    assert expm_skew(a).isnan().all()


def test_a_skew_hermitian_norm_that_overflows_gives_nan(each_plan):
    """The complex nnRNN's exponential likewise: NaN, not I + A, where ‖A‖₂ cannot be estimated."""
    a = torch.zeros(3, 3, dtype=torch.complex128)
    a[1, 0], a[0, 1] = 1e200, -1e200
    assert expm_skew_hermitian(a).isnan().all()
