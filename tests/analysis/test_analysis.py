"""nnrnn.analysis: theory of §3 (Fisher memory, Table 3, Propositions 1 and 2) and model inspection."""
import json
import math
import warnings

import numpy as np
import pytest
import torch

import nnrnn
from nnrnn.analysis import (EXACT_TABLE3, PAPER_TABLE3, TABLE3_GRID, analyze_model, covariance_factor,
                            delay_line_fmc, fisher_memory, fisher_memory_curve, fisher_memory_from_rest,
                            fisher_memory_lower_bound,
                            fisher_memory_total, gradient_propagation, gram_schmidt_triangle, henrici_departure,
                            proposition2, proposition2_matrix, real_schur_lower, schur_example, schur_view, table3,
                            transients)


# ---------------------------------------------------------------------------------------------- theory
def test_schur_example_structure():
    th = schur_example(6, 1.05, 0.005, 0.2)
    assert th.shape == (6, 6) and th.dtype == np.float64
    assert np.all(np.diag(th) == 0.2)
    assert np.all(np.diag(th, -1) == 1.05)
    assert np.all(np.triu(th, 1) == 0)
    below = th[np.tril_indices(6, -2)]
    assert below.size == 10 and np.all(below == 0.005)
    assert np.all(schur_example(1, 1, 1, 0.3) == [[0.3]])
    with pytest.raises(ValueError):
        schur_example(0, 1, 0, 0)


@pytest.mark.parametrize("alpha", [0.81, 1.0, 1.21])
@pytest.mark.parametrize("noise", [1.0, 0.25])
def test_delay_line_matches_ganguli_closed_form(alpha, noise):
    n = 20
    delay = np.diag(np.full(n - 1, math.sqrt(alpha)), -1)  # gain sqrt(alpha) per link
    j = fisher_memory_curve(delay, n + 5, noise=noise)
    np.testing.assert_allclose(j[:n], delay_line_fmc(alpha, n, noise), rtol=1e-12)
    assert np.all(j[n:] == 0)  # nilpotent: Θᴺ = 0
    np.testing.assert_allclose(j[:n] * noise, delay_line_fmc(alpha, n, 1.0), rtol=1e-12)  # J ∝ 1/ε
    assert j[0] == pytest.approx(1 / noise)



def test_the_memory_from_rest_is_the_formula_with_the_noise_of_the_steps_taken():
    """J_L(k) = uᵀ(Θᵏ)ᵀ C_L⁻¹ Θᵏ u, C_L = ε Σ_{j<L} Θʲ(Θʲ)ᵀ, against C_L summed and solved directly for every L up
    to 9 (each way of joining the doubled blocks), and the stationary curve for a long L."""
    rng = np.random.default_rng(3)
    theta, u = 0.4 * rng.standard_normal((5, 5)), rng.standard_normal(5)
    for steps in range(1, 10):
        powers = [np.linalg.matrix_power(theta, j) for j in range(steps)]
        c = 0.3 * sum(p @ p.T for p in powers)
        direct = [u @ p.T @ np.linalg.solve(c, p @ u) for p in powers]
        np.testing.assert_allclose(fisher_memory_from_rest(theta, steps, u, 0.3), direct, rtol=1e-12)
    chain = 0.5 * np.eye(4) + np.diag([1.0] * 3, -1)
    np.testing.assert_allclose(fisher_memory_from_rest(chain, 3000)[:8], fisher_memory_curve(chain, 8), rtol=1e-12)
    # an orthogonal Θ has no stationary state; from rest C_L = εL I: J_L(k) = ‖u‖² / (εL)
    np.testing.assert_allclose(fisher_memory_from_rest(np.eye(3)[[1, 2, 0]], 7, [1.0, 1.0, 0.0], 0.5), 4 / 7,
                               rtol=1e-13)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="steps"):
            fisher_memory_from_rest(chain, bad)


def test_delay_line_closed_form_is_finite_for_large_k_and_exact_next_to_alpha_one():
    """αᵏ overflowed at α = 2, k ≳ 1024: NaN where the value tends to (α − 1)/α = 1/2.  The logarithmic form
    that replaces it must stay exact next to α = 1 (checked against 40 digits) and at α = 0."""
    import mpmath

    assert np.all(np.isfinite(delay_line_fmc(2.0, 2000)))
    assert delay_line_fmc(2.0, 2000)[-1] == pytest.approx(0.5, rel=1e-12)
    alpha = 1 + 1e-10
    with mpmath.workdps(40):
        a = mpmath.mpf(alpha)
        exact = [float(a ** k * (a - 1) / (a ** (k + 1) - 1)) for k in range(50)]
    np.testing.assert_allclose(delay_line_fmc(alpha, 50), exact, rtol=1e-12)
    np.testing.assert_array_equal(delay_line_fmc(0.0, 3, noise=0.5), [2.0, 0.0, 0.0])  # gain 0: J(0) = 1/ε only
    for bad in (math.nan, math.inf, -0.5):
        with pytest.raises(ValueError, match="alpha"):
            delay_line_fmc(bad, 3)
    with pytest.raises(ValueError, match="noise"):
        delay_line_fmc(0.5, 3, noise=0.0)

def direct_fisher_memory(theta, steps, noise=1.0):
    """J(k) = v_kᵀ C⁻¹ v_k, v_k = Θᵏ e₁, C = ε Σ_{j<N} Θʲ Θʲᵀ (Θ nilpotent: the sum is finite), float64."""
    n = theta.shape[0]
    powers = [np.linalg.matrix_power(theta, j) for j in range(max(n, steps))]
    c = noise * sum(p @ p.T for p in powers[:n])
    u = np.eye(n)[:, 0]
    return np.array([(powers[k] @ u) @ np.linalg.solve(c, powers[k] @ u) for k in range(steps)])


def qr_triangle(theta):
    """The unit-diagonal Gram–Schmidt triangle of Θ's columns, last to first, from numpy's QR: R's rows
    divided by their diagonal entries (which carry the signs and the norms), flipped back to lower
    triangular; Θ's zero last column adds the row and column of the identity."""
    n = theta.shape[0]
    r = np.linalg.qr(theta[:, : n - 1][:, ::-1], mode="r")
    unit = r / np.diag(r)[:, None]
    a = np.eye(n)
    a[: n - 1, : n - 1] = unit[::-1, ::-1]
    return a


def bound_by_hand(theta, alpha, steps, noise=1.0):
    n = theta.shape[0]
    sigma = np.linalg.svd(qr_triangle(theta), compute_uv=False)[0]
    k = np.arange(steps)
    fraction = 1 / (k + 1) if alpha == 1 else alpha ** k * (alpha - 1) / (alpha ** (k + 1) - 1)
    return np.where(k < n, fraction / sigma ** (2 * (n - 1)) / noise, 0.0)


@pytest.mark.parametrize("alpha", [0.8, 1.0, 1.2])
@pytest.mark.parametrize("noise", [1.0, 0.5])
def test_proposition1_bound_is_the_fisher_memory_of_the_delay_line(alpha, noise):
    n = 12
    delay = np.diag(np.full(n - 1, math.sqrt(alpha)), -1)
    bound = fisher_memory_lower_bound(delay, n + 3, noise=noise)
    direct = direct_fisher_memory(delay, n + 3, noise)
    np.testing.assert_allclose(bound[:n], direct[:n], rtol=1e-10)
    np.testing.assert_allclose(bound, fisher_memory_curve(delay, n + 3, noise=noise), rtol=1e-10, atol=0)
    assert np.all(bound[n:] == 0) and np.all(direct[n:] == 0)  # Θᴺ = 0
    np.testing.assert_array_equal(gram_schmidt_triangle(delay), np.eye(n))  # σ_max = 1


@pytest.mark.parametrize("alpha", [0.7, 1.0, 1.1])
@pytest.mark.parametrize("beta", [0.005, 0.05, 0.3])
def test_proposition1_bound_is_below_the_fisher_memory_with_beta(alpha, beta):
    n = 10
    for theta in (schur_example(n, math.sqrt(alpha), beta, 0.0),
                  np.tril(np.random.default_rng(3).uniform(-beta, beta, (n, n)), -2)
                  + np.diag(np.full(n - 1, math.sqrt(alpha)), -1)):
        bound = fisher_memory_lower_bound(theta, n + 2)
        np.testing.assert_allclose(bound, bound_by_hand(theta, alpha, n + 2), rtol=1e-10, atol=0)
        direct = direct_fisher_memory(theta, n)
        assert np.all(direct >= bound[:n] * (1 + 1e-9)), "J must stay above the bound once σ_max > 1"
        a = gram_schmidt_triangle(theta)
        np.testing.assert_allclose(a, qr_triangle(theta), atol=1e-12)
        delay = np.diag(np.full(n - 1, math.sqrt(alpha)), -1)
        np.testing.assert_allclose(delay @ a, theta, atol=1e-15)  # Θ = D A, as in the proof


def test_proposition1_bound_is_accurate_next_to_alpha_one():
    """α = 1 + 1e-13: the closed form α^k(α−1)/(α^{k+1}−1) cancels catastrophically, its limit is 1/(k+1)."""
    theta = np.diag(np.full(29, math.sqrt(1 + 1e-13)), -1)
    np.testing.assert_allclose(fisher_memory_lower_bound(theta, 30), 1 / np.arange(1, 31), rtol=1e-11)


@pytest.mark.parametrize("theta, message", [
    (np.eye(4) * 0.1 + np.diag(np.ones(3), -1), "strictly lower triangular"),
    (np.diag(np.ones(3), -1) + np.diag(np.ones(2), 2), "strictly lower triangular"),
    (np.diag([1.0, 1.0, 1.1], -1), "one positive value"),
    (np.diag(-np.ones(3), -1), "one positive value"),
    (np.zeros((4, 4)), "one positive value"),
    (np.zeros((1, 1)), "at least 2×2"),
    (np.zeros((3, 4)), "square"),
    (np.diag([1.0, np.nan], -1), "non-finite"),
])
def test_proposition1_refuses_a_theta_outside_its_hypotheses(theta, message):
    with pytest.raises(ValueError, match=message) as error:
        fisher_memory_lower_bound(theta, 3)
    assert "theta" in str(error.value)
    for steps in (-1, 2.0, True):
        with pytest.raises(ValueError, match="steps"):
            fisher_memory_lower_bound(np.diag(np.ones(3), -1), steps)
    with pytest.raises(ValueError, match="noise"):
        fisher_memory_lower_bound(np.diag(np.ones(3), -1), 3, noise=0.0)


def test_table3_d0_rows_within_one_percent_and_d02_rows_match_exact_reference():
    rows = table3(compare_lyapunov=False)
    assert [(r["alpha"], r["beta"], r["d"]) for r in rows] == list(TABLE3_GRID)
    for r, paper, exact in zip(rows, PAPER_TABLE3, EXACT_TABLE3):
        if r["d"] == 0:
            assert abs(r["j_tot"] / paper - 1) < 0.01, r
            assert r["steps"] == 100  # nilpotent: exactly N terms
        assert r["j_tot"] == pytest.approx(exact, rel=1e-6), r  # 80-digit reference


def test_lyapunov_and_sqrt_agree_on_well_conditioned_matrix_and_match_brute_force():
    rng = np.random.default_rng(1)
    v = rng.standard_normal((8, 8))
    v *= 0.8 / np.abs(np.linalg.eigvals(v)).max()
    u = rng.standard_normal(8)
    c = sum(np.linalg.matrix_power(v, k) @ np.linalg.matrix_power(v, k).T for k in range(400)) * 0.5
    brute = np.array([w @ np.linalg.solve(c, w) for w in (np.linalg.matrix_power(v, k) @ u for k in range(30))])
    for method in ("sqrt", "lyapunov"):
        np.testing.assert_allclose(fisher_memory_curve(v, 30, u, noise=0.5, method=method), brute, rtol=1e-8)
    fm = fisher_memory(v, None, u, noise=0.5)
    assert fm.total == pytest.approx(fisher_memory_total(v, u, noise=0.5, method="lyapunov"), rel=1e-9)
    long = fisher_memory_curve(v, 2000, u, noise=0.5).sum()
    assert fm.total == pytest.approx(long, rel=1e-10)
    assert fm.tail_bound <= 1e-12 * fm.total
    # Ganguli et al.: for a normal Θ the total Fisher memory over all unit inputs is N/ε, and J_tot(u) ≤ N/ε
    q, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    total_normal = sum(fisher_memory_total(0.9 * q, e, noise=2.0) for e in np.eye(8))
    assert total_normal == pytest.approx(8 / 2.0, rel=1e-8)


def test_mpmath_reference_agrees_with_sqrt():
    th = schur_example(6, 1.05, 0.005, 0.2)
    exact = fisher_memory(th, 20, method="mpmath", dps=40)
    fast = fisher_memory(th, 20)
    np.testing.assert_allclose(fast.curve, exact.curve, rtol=1e-10)
    assert fast.total == pytest.approx(exact.total, rel=1e-10)


@pytest.mark.parametrize("theta", [np.eye(3), 1.01 * np.array([[0.0, -1.0], [1.0, 0.0]]),
                                   np.array([[1.0, 0.0], [5.0, 0.3]]), np.diag([0.5, -1.2])])
def test_spectral_radius_at_least_one_raises(theta):
    for call in (lambda: fisher_memory_curve(theta, 5), lambda: fisher_memory_total(theta),
                 lambda: fisher_memory_curve(theta, 5, method="lyapunov")):
        with pytest.raises(ValueError, match="spectral radius"):
            call()



@pytest.mark.parametrize("method", ["sqrt", "lyapunov"])
@pytest.mark.parametrize("u", [[np.nan, 0.0, 0.0], [np.inf, 0.0, 0.0], [1j, 0.0, 0.0]])
def test_a_non_finite_or_complex_input_vector_is_refused_naming_it(u, method):
    """J(k) of a NaN input was NaN (curve) or a 'did not converge' error after a million steps (J_tot)."""
    for call in (lambda: fisher_memory_curve(0.5 * np.eye(3), 3, u, method=method),
                 lambda: fisher_memory_total(0.5 * np.eye(3), u, method=method)):
        with pytest.raises(ValueError, match="input_vector"):
            call()


def test_a_complex_theta_is_refused_naming_it():
    """float64 conversion dropped the imaginary part: the curve of 0.5i I came out as that of the zero matrix."""
    with pytest.raises(ValueError, match="theta must be real"):
        fisher_memory_curve(0.5j * np.eye(2), 3)


@pytest.mark.parametrize("noise", [math.inf, math.nan, 0.0, -1.0])
def test_a_noise_that_is_not_positive_and_finite_is_refused_naming_it(noise):
    """ε = inf was blamed on the spectral radius ('too close to 1') and gave a lower bound of zeros."""
    delay = np.diag(np.ones(3), -1)
    for call in (lambda: fisher_memory_curve(0.5 * np.eye(3), 3, noise=noise),
                 lambda: fisher_memory_total(0.5 * np.eye(3), noise=noise),
                 lambda: covariance_factor(0.5 * np.eye(3), noise),
                 lambda: fisher_memory_lower_bound(delay, 3, noise=noise)):
        with pytest.raises(ValueError, match="noise"):
            call()

def test_condition_number_grows_as_spectral_radius_approaches_one():
    conds = [covariance_factor(r * np.eye(5) + 0.5 * np.eye(5, k=-1)).cond for r in (0.5, 0.9, 0.99, 0.999)]
    assert all(b > 10 * a for a, b in zip(conds, conds[1:]))
    assert covariance_factor(0.99 * np.eye(4)).cond == pytest.approx(1.0)  # normal: C = ε/(1-ρ²) I


def test_lyapunov_method_warns_when_ill_conditioned():
    with pytest.warns(RuntimeWarning, match="ill-conditioned"):
        fisher_memory_curve(schur_example(100, 1.05, 0.0, 0.2), 5, method="lyapunov")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fisher_memory_curve(schur_example(100, 1.0, 0.0, 0.0), 5)  # nilpotent, well conditioned


def test_proposition2_degree_fit():
    for n in (2, 4, 6):
        r = proposition2(n, x=0.5, t_max=20_000)
        assert r.bound == n - 1
        assert r.degree <= n - 1 + 0.05
        assert r.degree == pytest.approx(n - 1, abs=0.05)
        assert r.is_polynomial and r.loglog_r2 > 0.9999 > r.semilog_r2
    a = proposition2_matrix(4, 0.3)
    assert np.all(np.diag(a) == 1) and np.all(np.tril(a, -1) == 0) and np.all(a[np.triu_indices(4, 1)] == 0.3)
    # the binomial evaluation used by proposition2 is exact
    r = proposition2(4, x=0.3, t_max=60, points=20)
    for t, m in zip(r.t, r.max_entry):
        assert m == pytest.approx(np.abs(np.linalg.matrix_power(a, int(t))).max(), rel=1e-12)



@pytest.mark.parametrize("kwargs, name", [
    ({"x": math.nan}, "x"), ({"x": math.inf}, "x"), ({"x": 0.0}, "x"),
    ({"n": 1}, "n"), ({"n": 3.0}, "n"), ({"t_max": 5}, "t_max"), ({"t_max": 1}, "t_max"),
    ({"points": 2}, "points"), ({"n": 60, "x": 4.0, "t_max": 10 ** 6}, "overflows"),
])
def test_proposition2_refuses_settings_it_cannot_fit_naming_them(kwargs, name):
    """A NaN or infinite x gave NaN fits, x = 0 an R² of NaN, t_max = 1 a LinAlgError from the fit, n = 3.0 a
    TypeError: each is now a ValueError that names its argument."""
    with pytest.raises(ValueError, match=name):
        proposition2(**{"n": 3, "x": 0.5, "t_max": 1000, **kwargs})


@pytest.mark.parametrize("kwargs, name", [({"n_init": 0}, "n_init"), ({"steps": -1}, "steps"),
                                          ({"steps": 2.0}, "steps")])
def test_transients_refuse_an_empty_ensemble_or_a_negative_horizon_naming_it(kwargs, name):
    """n_init = 0 gave NaN means (the mean of no initial conditions) and steps = -1 empty records, silently."""
    with pytest.raises(ValueError, match=name):
        transients(**{"theta": 0.5 * np.eye(3), "steps": 3, "n_init": 4, **kwargs})
    out = transients(np.array([[0.5]]), 2, n_init=3)  # N = 1: h_t = 0.5ᵗ h_0 with |h_0| = 1, one unit
    np.testing.assert_allclose(out["norm_mean"], [1.0, 0.5, 0.25])
    np.testing.assert_array_equal(out["unit_std_mean"], 0.0)

# ---------------------------------------------------------------------------------------------- models
def test_henrici_departure_zero_for_orthogonal_positive_for_triangular():
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((10, 10)))
    dep, rel = henrici_departure(q)
    assert dep < 1e-6 and rel < 1e-6
    tri = np.triu(np.random.default_rng(1).standard_normal((6, 6)))
    dep, rel = henrici_departure(tri)
    assert dep == pytest.approx(np.linalg.norm(np.triu(tri, 1)), rel=1e-8)  # eigenvalues = diagonal
    assert 0 < rel < 1


@pytest.mark.parametrize("seed", [0, 1])
def test_real_schur_is_lower_quasi_triangular_and_reconstructs(seed):
    v = np.random.default_rng(seed).standard_normal((9, 9))
    p, th = real_schur_lower(v)
    np.testing.assert_allclose(p @ th @ p.T, v, atol=1e-12)
    np.testing.assert_allclose(p.T @ p, np.eye(9), atol=1e-12)
    assert np.all(np.triu(th, 2) == 0)  # only the 2×2 blocks reach above the diagonal
    view = schur_view(v)
    np.testing.assert_allclose(view.Lambda + view.T, view.theta, atol=1e-15)
    assert np.all(np.triu(view.T) == 0)
    assert view.reconstruction_error < 1e-13
    lam = np.linalg.eigvals(v)
    assert sorted(view.moduli.round(8)) == sorted(np.abs(lam[lam.imag >= 0]).round(8))
    assert view.source == "scipy.linalg.schur"


def _nnrnn(hidden=16, seed=0):
    torch.manual_seed(seed)
    m = nnrnn.create("nnrnn", 3, hidden)
    with torch.no_grad():
        form = m.schur_form
        form.lower.normal_(0, 0.1)
        form.gamma.uniform_(0.9, 1.0)
    return m


def test_nnrnn_schur_view_uses_trained_factors():
    m = _nnrnn()
    view = schur_view(m)
    assert view.source == "parametrized"
    assert view.reconstruction_error < 1e-5
    np.testing.assert_allclose(view.gamma_parameters, m.schur_form.gamma.detach().numpy())
    dep, _ = henrici_departure(view.matrix)
    assert dep == pytest.approx(np.linalg.norm(view.T), rel=1e-4)  # departure = ‖T‖_F
    assert np.all(view.angles >= 0) and np.all(view.angles <= math.pi)


def test_gradient_propagation_is_the_total_derivative():
    torch.manual_seed(0)
    m = nnrnn.create("rnn", 2, 5, nonlinearity=None, bias=False).double()
    x = torch.randn(7, 3, 2, dtype=torch.float64)
    norms = gradient_propagation(m, x)  # L = ½ mean_b ‖h_T‖²  ->  ∂L/∂h_t = (V^{T-t})ᵀ h_T / B
    out, _ = m(x)
    v = m.recurrent_matrix().detach()
    h_t = out[-1].detach()
    expect = [float((h_t @ torch.linalg.matrix_power(v, 7 - t) / 3).norm()) for t in range(1, 8)]
    np.testing.assert_allclose(norms, expect, rtol=1e-10)


def test_analyze_model_writes_files_for_nnrnn(tmp_path):
    m = _nnrnn()
    summary = analyze_model(m, tmp_path)
    for name in ("spectrum.png", "schur.png", "gradients.png", "summary.json"):
        assert (tmp_path / name).stat().st_size > 1000, name
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved == summary
    assert saved["model"] == "NonNormalRNN" and saved["primary"] == "V"
    assert saved["mean_gamma"] == pytest.approx(float(m.schur_form.gamma.detach().mean()), rel=1e-6)
    for key in ("spectral_radius", "max_singular_value", "departure_from_normality",
                "departure_from_normality_normalized"):
        assert isinstance(saved[key], float) and saved[key] > 0
    assert len(saved["gradient"]["norms"]) == 100


def test_analyze_model_writes_files_for_lstm(tmp_path):
    torch.manual_seed(0)
    m = nnrnn.create("lstm", 3, 12)
    summary = analyze_model(m, tmp_path, batch=(torch.randn(10, 2, 3), torch.randn(10, 2, 12)))
    gates = ("input", "forget", "cell", "output")
    expected = {f"{kind}_{g}.png" for kind in ("spectrum", "schur") for g in gates} | {"gradients.png"}
    assert expected | {"summary.json"} == set(summary["files"])
    for name in expected:
        assert (tmp_path / name).stat().st_size > 1000, name
    assert summary["primary"] == "cell" and set(summary["matrices"]) == set(gates)
    assert summary["matrices"]["cell"]["schur_source"] == "scipy.linalg.schur"
    assert len(summary["gradient"]["norms"]) == 10


# ---------------------------------------------------------------------------------------------- CLI
def _parser():
    from nnrnn_cli.command import make_parser
    return make_parser()


def test_cli_theory_table3_json(capsys):
    args = _parser().parse_args(["theory", "table3", "--json"])
    assert args.handler(args) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 12 and rows[1]["paper"] == 5.19 and abs(rows[1]["rel_diff_paper"]) < 0.01
    args = _parser().parse_args(["theory", "table3"])
    assert args.handler(args) == 0
    assert "paper" in capsys.readouterr().out


def test_cli_theory_figures(tmp_path, capsys):
    args = _parser().parse_args(["theory", "figure1", "--out", str(tmp_path), "--n-init", "50"])
    assert args.handler(args) == 0
    args = _parser().parse_args(["theory", "prop2", "--out", str(tmp_path), "--n", "3", "5", "--t-max", "1000"])
    assert args.handler(args) == 0
    for name in ("figure1b.png", "figure1c.png", "proposition2.png"):
        assert (tmp_path / name).stat().st_size > 1000


def test_cli_theory_prop1(tmp_path, capsys):
    args = _parser().parse_args(["theory", "prop1", "--out", str(tmp_path), "--n", "8", "--alpha", "1.2",
                                 "--beta", "0.1", "--json"])
    assert args.handler(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["holds"] == {"delay": True, "beta": True} and (tmp_path / "proposition1.png").stat().st_size > 1000
    delay = np.diag(np.full(7, math.sqrt(1.2)), -1)
    np.testing.assert_allclose(out["curves"]["delay"]["J"], direct_fisher_memory(delay, 8), rtol=1e-10)
    np.testing.assert_allclose(out["curves"]["delay"]["bound"], out["curves"]["delay"]["J"], rtol=1e-10)
    assert out["curves"]["beta"]["sigma_max"] > 1
    args = _parser().parse_args(["theory", "prop1", "--out", str(tmp_path), "--n", "6"])
    assert args.handler(args) == 0 and "bound holds" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [(["--n", "1"], "--n must be >= 2"),
                                           (["--alpha", "0"], "--alpha must be a positive finite number"),
                                           (["--alpha", "nan"], "--alpha must be a positive finite number"),
                                           (["--beta", "-0.1"], "--beta must be a positive finite number"),
                                           (["--n", "2000", "--alpha", "1e6"], "overflows float64")])
def test_cli_theory_prop1_refuses_bad_values_in_one_line(argv, message, tmp_path, capsys):
    from nnrnn_cli.command import main
    assert main(["theory", "prop1", "--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_cli_analyze(tmp_path, capsys):
    from nnrnn.training import checkpoint
    from nnrnn.training.config import resolve_config
    from nnrnn.training.network import build
    config = resolve_config({"task": "copy", "model": "nnrnn", "hidden": 8, "T": 5, "out": str(tmp_path / "r")})
    _, net = build(config)
    ckpt = tmp_path / "model.pt"
    checkpoint.save(ckpt, {"config": config, "model": net.state_dict(), "step": 7})
    args = _parser().parse_args(["analyze", str(ckpt), "--no-gradients"])
    assert args.handler(args) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"{'analysed':36s} {ckpt} (after update 7)\n")
    # the checkpoint is the run's seeded start: its basis has not moved, and T = 0 (nnrnn.analysis.mechanism)
    assert f"{'basis_drift':36s} 0\n" in printed and f"{'t_over_lambda':36s} 0\n" in printed
    assert "fisher_memory" in printed
    out = tmp_path / "model-analysis"
    assert {"spectrum.png", "schur.png", "summary.json"} <= {p.name for p in out.iterdir()}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["model"] == "nnrnn" and summary["checkpoint"] == str(ckpt) and summary["step"] == 7
    assert summary["mechanism"]["cells"]["l0"]["basis_drift"] == 0.0
    assert "gradient" not in summary


def test_single_threaded_blas_sets_and_restores(monkeypatch):
    from nnrnn.analysis._blas import _setters, single_threaded_blas
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    setters = _setters()
    if not setters:
        pytest.skip("no OpenBLAS with openblas_set_num_threads_local loaded")
    before = [f(1) for f in setters]
    for f, n in zip(setters, before):
        f(n)
    with single_threaded_blas():
        with single_threaded_blas():  # re-entrant
            pass
        inside = [f(1) for f in setters]
    after = [f(1) for f in setters]
    for f, n in zip(setters, before):
        f(n)
    assert inside == [1] * len(setters) and after == before


def test_angle_concentration_and_delay_line_ratio():
    from nnrnn.analysis.trained import angle_concentration, delay_line_ratio
    spread = np.linspace(0, np.pi, 64)
    assert abs(angle_concentration(spread)) < 0.02 and angle_concentration(np.full(8, 0.3)) == pytest.approx(1.0)
    assert angle_concentration(np.array([0.0, np.pi])) < 0  # crowded at both ends: less aligned than uniform
    t = np.tril(np.full((6, 6), 0.1), -2) + np.diag(np.ones(5), -1)
    assert delay_line_ratio(t) == pytest.approx(10.0)
    assert np.isnan(delay_line_ratio(np.zeros((6, 6))))


PAIRS = [(0, 1), (2, 3), (4, 5), (6, 7)]  # four 2×2 blocks, the real nnRNN's Λ at n = 8


def test_entries_inside_the_2x2_blocks_are_no_delay_line():
    from nnrnn.analysis.trained import delay_line_ratio, schur_links
    t = np.tril(np.full((8, 8), 0.01), -1)
    for i, _ in PAIRS:
        t[i + 1, i] = 1.0  # large in-block entries, the links between blocks no larger than the rest
    assert delay_line_ratio(t) > 10  # what the first sub-diagonal alone would say
    links = schur_links(t, PAIRS)
    assert links["delay_line"] == pytest.approx(1.0) and not links["delay_line"] > 1
    assert links["in_block_mean"] == pytest.approx(1.0) and links["in_block_to_link"] == pytest.approx(100.0)


def test_a_delay_line_between_blocks_stands_out():
    from nnrnn.analysis.trained import delay_line_ratio, schur_links
    t = np.tril(np.full((8, 8), 0.01), -1)
    for (_, j), (i, _) in zip(PAIRS, PAIRS[1:]):
        t[i, j] = 1.0  # mode b's second unit feeds mode b+1's first: one entry of the 2×2 link per pair
    for i, _ in PAIRS:
        t[i + 1, i] = 0.0  # the real Schur form's T: nothing inside the blocks
    links = schur_links(t, PAIRS)
    # links: 3 sub-blocks of 4 entries, one of each 1.0; the rest: 3 sub-blocks of 4 entries at 0.01
    assert links["link_mean"] == pytest.approx((1.0 + 3 * 0.01) / 4)
    assert links["delay_line"] == pytest.approx((1.0 + 3 * 0.01) / 4 / 0.01) == delay_line_ratio(t, PAIRS)
    assert links["in_block_mean"] == 0.0 and links["in_block_to_link"] == 0.0


def test_with_1x1_blocks_the_links_are_the_first_subdiagonal():
    from nnrnn.analysis.trained import delay_line_ratio, schur_links
    rng = np.random.default_rng(0)
    t = np.tril(rng.standard_normal((7, 7)), -1)
    first = np.abs(np.diagonal(t, -1)).mean() / np.abs(t[np.tril_indices(7, -2)]).mean()  # the former measure
    assert delay_line_ratio(t) == pytest.approx(first)
    assert delay_line_ratio(t, [(i,) for i in range(7)]) == pytest.approx(first)
    assert np.isnan(schur_links(t)["in_block_mean"])  # no 2×2 block: nothing inside one


def test_a_trained_nnrnn_summary_separates_the_in_block_entries_from_the_links():
    from nnrnn.analysis.trained import matrix_summary, schur_view
    model = nnrnn.create("nnrnn", 2, 8, triangular="strict").double()
    with torch.no_grad():
        lower = torch.tril(torch.full((8, 8), 0.01, dtype=torch.float64), -1)
        for i, _ in PAIRS:
            lower[i + 1, i] = 1.0
        model.schur_form.lower.copy_(lower)
    summary = matrix_summary(schur_view(model))
    assert summary["delay_line"] == pytest.approx(1.0)
    assert summary["in_block_mean"] == pytest.approx(1.0) and summary["in_block_to_link"] == pytest.approx(100.0)
    assert summary["mean_eigenvalue_modulus"] != pytest.approx(summary["mean_gamma"])  # what the in-block t does


def test_the_delay_line_is_undefined_with_fewer_than_three_blocks_and_blocks_must_cover_the_matrix():
    from nnrnn.analysis.trained import delay_line_ratio
    t = np.tril(np.ones((4, 4)), -1)
    assert np.isnan(delay_line_ratio(t, [(0, 1), (2, 3)]))
    with pytest.raises(ValueError, match="consecutive"):
        delay_line_ratio(t, [(0, 1), (3, 2)])


THEORY_FIGURES = {"figure1": ["--n-init", "50"], "prop1": ["--n", "6"], "prop2": ["--n", "3", "--t-max", "1000"]}


# each command first into a new folder: whichever writes first must leave it open to the others
@pytest.mark.parametrize("order", [("figure1", "prop1", "prop2"), ("prop1", "prop2", "figure1"),
                                   ("prop2", "figure1", "prop1")])
def test_cli_theory_commands_share_one_folder_in_any_order(order, tmp_path, capsys, undrawn_figures):
    from nnrnn_cli.command import main
    for command in order:
        assert main(["theory", command, "--out", str(tmp_path / "theory"), *THEORY_FIGURES[command]]) == 0, command
    assert {"figure1b.png", "figure1c.png", "proposition1.png", "proposition2.png"} <= \
        {p.name for p in (tmp_path / "theory").iterdir()}


def test_cli_analyze_names_the_run_in_every_title_and_draws_the_gradient_beside_the_untrained_model(
        tmp_path, capsys, monkeypatch):
    import matplotlib.figure

    from nnrnn.training import checkpoint
    from nnrnn.training.config import resolve_config
    from nnrnn.training.network import build, initial_network
    run = tmp_path / "copy-demo-20261127"
    config = resolve_config({"task": "copy", "model": "nnrnn", "hidden": 8, "T": 5, "out": str(run)})
    _, net = build(config)
    initial = {k: v.clone() for k, v in net.state_dict().items()}
    with torch.no_grad():  # "trained": another V than the run's start
        net.rnn.parametrizations.weight_hh_l0.original.mul_(3.0)
    checkpoint.save(run / "checkpoints" / "best.pt", {"config": config, "model": net.state_dict(), "step": 7})
    assert all(torch.equal(v, initial[k]) for k, v in initial_network(run).state_dict().items())
    figures = {}
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, path, *a, **k: figures.__setitem__(str(path).rsplit("/", 1)[-1], fig))
    args = _parser().parse_args(["analyze", str(run)])
    assert args.handler(args) == 0
    for name, fig in figures.items():  # the run's name heads every figure
        titles = [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
        assert any("copy-demo-20261127" in t for t in titles), (name, titles)
    gradients = figures["gradients.png"].axes[0]
    assert gradients.get_yscale() == "log" and "right to left" in gradients.get_xlabel()
    trained, untrained = gradients.get_lines()
    reference = gradient_propagation(initial_network(run).rnn, _probe_inputs())
    np.testing.assert_allclose(untrained.get_ydata(), reference, rtol=1e-5)
    labels = [t.get_text() for t in figures["gradients.png"].legends[0].get_texts()]
    assert labels[0].startswith("trained: going back from t = 100 to t = 1 the gradient ")
    assert labels[1].startswith("untrained (the run's initial network): going back")
    panel_d = figures["schur.png"].axes[3]
    legend = [t.get_text() for t in panel_d.get_legend().get_texts()]
    assert any(t.startswith(r"$\gamma_i$ of $\Lambda$ (dashed: mean") for t in legend)  # the bars are named
    assert any(t.startswith(r"$|\lambda_i|$ of $V$ (dashed: mean") for t in legend)
    assert "1 (the unit circle)" in legend


def _probe_inputs():
    """analyze's synthetic probe: Gaussian inputs from a generator seeded 0, T = 100, B = 8, float32."""
    g = torch.Generator().manual_seed(0)
    return torch.randn((100, 8, 10), generator=g, dtype=torch.float64).float()


def test_the_gradient_direction_is_said_in_words():
    from nnrnn.analysis.plots import gradient_direction
    assert gradient_direction(np.array([5.0, 1.0, 1.0])) == "going back from t = 3 to t = 1 the gradient grows 5×"
    assert gradient_direction(np.array([1.0, 4.0])) == "going back from t = 2 to t = 1 the gradient shrinks 4×"
    assert "keeps its size" in gradient_direction(np.array([1.0, 1.05]))


def test_a_recurrent_matrix_with_nan_is_refused_naming_it(tmp_path):
    model = torch.nn.RNN(3, 6)
    with torch.no_grad():
        model.weight_hh_l0[0, 0] = float("nan")
    with pytest.raises(ValueError, match="the recurrent matrix V holds 1 NaN or inf entries"):
        analyze_model(model, tmp_path, batch=False)


def test_cli_analyze_of_a_checkpoint_with_nan_parameters_says_so_in_one_line(tmp_path, capsys):
    from helpers import TINY, one_line

    from nnrnn_cli import command as cli
    run = tmp_path / "run"
    assert cli.main(["train", "copy", "--steps", "2", "--eval-every", "2", "--out", str(run), *TINY]) == 0
    best = run / "checkpoints" / "best.pt"
    saved = torch.load(best, weights_only=False)
    for value in saved["model"].values():
        if value.is_floating_point():
            value.fill_(float("nan"))
    torch.save(saved, best)
    capsys.readouterr()
    code = cli.main(["analyze", str(run)])
    out, err = capsys.readouterr()
    one_line(code, err, "holds NaN or inf parameters (a diverged run?)")
    assert not (run / "analysis").exists() and out == ""  # nothing said to be analysed
