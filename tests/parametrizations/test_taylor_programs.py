"""The Taylor programs (nnrnn/parametrizations/taylor_programs.py) against the series and the reference evaluation."""
import math
from fractions import Fraction

import pytest
import torch

from nnrnn.kernels import policy as kernel_policy
from nnrnn.parametrizations import expm
from nnrnn.parametrizations import taylor_programs as tp
from nnrnn.parametrizations.orthogonal import skew


@pytest.fixture(autouse=True)
def read_plan(monkeypatch):
    """The plan read on the host, the one that runs the programs (GPUs run the fixed plan)."""
    monkeypatch.setenv("NNRNN_EXPM_PLAN", "read")
    kernel_policy.reset()


def dense(n, norm2, dtype=torch.float64, seed=0):
    a = skew(torch.randn(n, n, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)))
    return (a * (norm2 / torch.linalg.matrix_norm(a, 2))).to(dtype)


def assert_taylor(program, degree):
    """The program's polynomial, expanded exactly from its float64 coefficients, is T_degree to 1e-15 relative."""
    coefficients = tp.taylor_coefficients(program, Fraction)
    assert len(coefficients) >= degree + 1
    for k, c in enumerate(coefficients):
        want = Fraction(1, math.factorial(k)) if k <= degree else Fraction(0)
        assert abs(c - want) <= Fraction(1, 10 ** 15) * Fraction(1, math.factorial(min(k, degree))), (k, float(c))


@pytest.mark.parametrize("m", sorted(tp.PROGRAMS))
def test_each_program_computes_the_taylor_polynomial_of_its_degree(m):
    assert tp.PROGRAMS[m].degree == m
    assert_taylor(tp.PROGRAMS[m], m)


def test_the_programs_need_fewer_products_than_paterson_stockmeyer():
    assert {m: p.products for m, p in tp.PROGRAMS.items()} == {1: 0, 2: 1, 4: 2, 8: 3}
    assert expm.paterson_stockmeyer_plan(8)[0] == 4


@pytest.mark.parametrize("m", range(1, 20))
def test_paterson_stockmeyer_as_a_program(m):
    """The reference evaluation written as a program: the same polynomial, the same products."""
    q = tp.paterson_stockmeyer_block(m)
    program = tp.paterson_stockmeyer(m, q)
    assert_taylor(program, m)
    assert (program.products, max(q, 1)) == expm.paterson_stockmeyer_plan(m)


@pytest.mark.parametrize("program", list(tp.PROGRAMS.values()) + [tp.paterson_stockmeyer(13, 3)],
                         ids=lambda p: f"degree {p.degree}, block {p.block}")
@pytest.mark.parametrize("s", [0, 1, 3])
def test_the_adjoint_is_the_derivative_of_the_computed_exponential(program, s):
    """exponential_adjoint, with the forward's factors kept and formed again, against autograd through exponential
    itself (float64), and gradcheck."""
    x = dense(7, 0.8, seed=2).requires_grad_(True)
    eye = torch.eye(7, dtype=torch.float64)
    weight = torch.randn(7, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    p = tp.exponential(program, s, x, x @ x, eye)[0]
    want, = torch.autograd.grad(p, x, weight)
    with torch.no_grad():
        p, matrices, squares, factors = tp.exponential(program, s, x, x @ x, eye)
        kept = tp.exponential_adjoint(program, weight, matrices, squares, factors)
        formed_again = tp.exponential_adjoint(program, weight, matrices, squares)  # what a compiled record does
    torch.testing.assert_close(kept, want, rtol=0, atol=1e-13)
    torch.testing.assert_close(formed_again, want, rtol=0, atol=1e-13)
    assert torch.autograd.gradcheck(lambda x: tp.exponential(program, s, x, x @ x, eye)[0], (x,))


@pytest.mark.parametrize("norm2", [0.0, 1e-3, 0.3, 1.0, 2.5, math.pi, 7.0])
def test_float64_against_the_reference_evaluation(norm2, monkeypatch):
    """expm_skew by the programs and by Paterson–Stockmeyer (REFERENCE_EVALUATION): values to 1e-13, gradients
    to 1e-11."""
    a = dense(40, norm2).requires_grad_(True)
    weight = torch.randn(40, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    results = []
    for reference in (False, True):
        monkeypatch.setattr(expm, "REFERENCE_EVALUATION", reference)
        p = expm.expm_skew(a)
        results.append((p, torch.autograd.grad(p, a, weight)[0]))
    torch.testing.assert_close(results[0][0], results[1][0], rtol=0, atol=1e-13)
    torch.testing.assert_close(results[0][1], results[1][1], rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_plan_never_costs_more_than_the_reference_and_keeps_its_squarings_range(dtype):
    tolerance = expm.unit_roundoff(dtype) / 2
    for k in range(-60, 25):
        theta = 10 ** (k / 20)
        reference = expm.plan(theta, dtype)
        s, program = tp.plan(theta, expm.THETA_MAX, tolerance, expm.taylor_degree, reference)
        s_min = max(0, math.ceil(math.log2(theta / expm.THETA_MAX))) if theta > expm.THETA_MAX else 0
        assert s_min <= s <= s_min + 2
        assert program.degree >= expm.taylor_degree(theta / 2 ** s, tolerance)
        assert program.products + s <= expm.paterson_stockmeyer_plan(reference[1])[0] + reference[0]


def test_fewer_products_at_the_initial_generator_norm(monkeypatch):
    """At ‖A‖₂ = 1 (a Cayley-initialised nnRNN's) in float32: 4 products forward and 8 backward, where the
    reference takes 5 and 10."""
    counts = {}
    real = tp.matmul

    def counting(*args):
        counts[key] += 1
        return real(*args)

    monkeypatch.setattr(tp, "matmul", counting)
    monkeypatch.setattr(expm, "matmul", counting)
    for key in (False, True):
        monkeypatch.setattr(expm, "REFERENCE_EVALUATION", key)
        counts[key] = 0
        a = dense(32, 1.0, dtype=torch.float32).requires_grad_(True)
        expm.expm_skew(a).backward(torch.ones(32, 32))
    assert counts == {False: 12, True: 15}


@pytest.mark.parametrize("norm2", [1.0, 2.0, math.pi])
def test_float32_at_least_as_accurate_as_the_reference(norm2, monkeypatch):
    """n = 256, dense A: the programs' squarings of P − I keep ‖PᵀP − I‖ no larger than the reference's (within
    rounding noise, 1.5×) and within 1e-6."""
    a = dense(256, norm2, dtype=torch.float32, seed=4)
    errors = []
    for reference in (False, True):
        monkeypatch.setattr(expm, "REFERENCE_EVALUATION", reference)
        p = expm.expm_skew(a).double()
        errors.append((p.T @ p - torch.eye(256, dtype=torch.float64)).abs().max().item())
    assert errors[0] <= 1e-6 and errors[0] <= 1.5 * errors[1], errors
