"""The numbers the report's theory claims are judged on (nnrnn.experiments.judging.theory_verdicts): Fig. 1(b)'s
transients, Fig. 1(c)'s Fisher memory curves and Propositions 1 and 2, the figures' ensembles and curves computed once
and shared with :mod:`.plots`."""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from .fisher import fisher_memory, fisher_memory_curve
from .polynomial_growth import proposition2
from .proposition1 import delay_line_fmc, fisher_memory_lower_bound, gram_schmidt_triangle
from .theta_example import schur_example
from .transient_growth import transients

__all__ = [
    "figure1b_transients", "figure1c_memory", "fisher_memory_numbers", "proposition1_numbers",
    "proposition2_coefficients", "proposition2_numbers", "transient_numbers",
]

FIGURE1_ALPHAS, FIGURE1_BETAS, FIGURE1_DS = (0.95, 1.0, 1.05), (0.0, 0.005), (0.0, 0.2)


def _read_only(array) -> np.ndarray:
    array = np.array(array, dtype=np.float64)
    array.flags.writeable = False  # shared through the caches below: nobody may change what another reads
    return array


@functools.lru_cache(maxsize=4)
def _figure1b_transients(n, alphas, betas, d, n_init, steps, seed) -> dict:
    return {(a, b): {key: _read_only(v) for key, v in transients(schur_example(n, a, b, d), steps, n_init,
                                                                     seed).items()}
            for a in alphas for b in betas}


def figure1b_transients(n: int = 100, alphas=FIGURE1_ALPHAS, betas=FIGURE1_BETAS, d: float = 0.0,
                        n_init: int = 1000, steps: int | None = None, seed: int = 0) -> dict:
    """{(α, β): :func:`transients` of Θ(α, β, d) over ``steps`` (default n + 20) steps}: Fig. 1(b)'s ensembles,
    computed once per set of arguments and shared, as read-only arrays, by plots.figure1b and
    :func:`transient_numbers`."""
    steps = n + 20 if steps is None else steps
    return _figure1b_transients(int(n), tuple(map(float, alphas)), tuple(map(float, betas)), float(d), int(n_init),
                                int(steps), int(seed))


@functools.lru_cache(maxsize=4)
def _figure1c_memory(n, alphas, betas, ds, noise) -> dict:
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # cond(C) at d = 0.2; 'sqrt' is good to 1e-8 there
        for d in ds:
            for a in alphas:
                for b in betas:
                    fm = fisher_memory(schur_example(n, a, b, d), None, noise=noise)
                    fm.curve = _read_only(fm.curve)
                    out[a, b, d] = fm
    return out


def figure1c_memory(n: int = 100, alphas=FIGURE1_ALPHAS, betas=FIGURE1_BETAS, ds=FIGURE1_DS,
                    noise: float = 1.0) -> dict:
    """{(α, β, d): :func:`fisher_memory` of Θ(α, β, d), u = e₁, ε = ``noise``}: Fig. 1(c)'s curves (J(k) until
    J_tot has converged), computed once per set of arguments and shared (read-only) by plots.figure1c and
    :func:`fisher_memory_numbers`."""
    return _figure1c_memory(int(n), tuple(map(float, alphas)), tuple(map(float, betas)), tuple(map(float, ds)),
                            float(noise))


def transient_numbers(n: int = 100, alphas=FIGURE1_ALPHAS, betas=FIGURE1_BETAS, d: float = 0.0,
                      n_init: int = 1000, seed: int = 0) -> dict:
    """Fig. 1(b)'s transients in numbers, from the mean m_t = ⟨‖h_t‖⟩ over ``n_init`` initial conditions on the
    unit sphere (:func:`figure1b_transients`, t = 0 … n + 20).

    Returns {"n", "n_init", "d", "runs": {(α, β): {"peak": max_t m_t, "peak_se": the standard error of that
    mean (std over the initial conditions / √n_init), "peak_t": its t (the first, if tied), "start": m_0 (= 1),
    "last": m_{N−1}, "after": max_{t≥N} m_t}}} with N = n.
    """
    runs = figure1b_transients(n, alphas, betas, d, n_init, None, seed)
    out = {}
    for key, r in runs.items():
        mean, std = r["norm_mean"], r["norm_std"]
        i = int(np.argmax(mean))
        out[key] = {"peak": float(mean[i]), "peak_se": float(std[i] / math.sqrt(n_init)), "peak_t": i,
                    "start": float(mean[0]), "last": float(mean[n - 1]), "after": float(mean[n:].max())}
    return {"n": int(n), "n_init": int(n_init), "d": float(d), "runs": out}


def _first(curve: np.ndarray, n: int) -> np.ndarray:
    """J(k) for k < n (zero past the end of the curve: Θᴺ = 0)."""
    return np.concatenate([curve, np.zeros(max(0, n - len(curve)))])[:n]


def fisher_memory_numbers(n: int = 100, alphas=FIGURE1_ALPHAS, betas=FIGURE1_BETAS, ds=FIGURE1_DS,
                          noise: float = 1.0) -> dict:
    """Fig. 1(c)'s Fisher memory curves in numbers (:func:`figure1c_memory`), k < N = n unless said otherwise.

    Returns {"n", "delay_alpha": the largest α (the delay line: β = 0, d = 0),
    "rivals": {(α, β, d): (max_k J(k)/J_delay(k), its k)} for every other curve,
    "beta": {α: (min_k J_{α,β}(k)/J_{α,0}(k), its k, J_tot at β = 0, J_tot at β)} at d = 0, β the largest β,
    "diagonal": {(α, β, d): {"near_optimal": (min_k J(k)/G_α(k), its k) with G_α Ganguli's delay line
    :func:`delay_line_fmc`, "beyond": Σ_{k≥N} J(k), "total": J_tot, "total_d0": J_tot of (α, β, 0)}} for d > 0}.
    """
    memory = figure1c_memory(n, alphas, betas, ds, noise)
    curves = {key: _first(fm.curve, n) for key, fm in memory.items()}
    a_max, b_max = float(max(alphas)), float(max(betas))
    delay = curves[a_max, 0.0, 0.0]

    def extreme(ratio, pick):
        k = int(pick(ratio))
        return float(ratio[k]), k

    rivals = {key: extreme(c / delay, np.argmax) for key, c in curves.items() if key != (a_max, 0.0, 0.0)}
    beta = {float(a): extreme(curves[a, b_max, 0.0] / curves[a, 0.0, 0.0], np.argmin)
            + (memory[a, 0.0, 0.0].total, memory[a, b_max, 0.0].total) for a in map(float, alphas)}
    diagonal = {(a, b, d): {"near_optimal": extreme(c / delay_line_fmc(a, n, noise), np.argmin),
                            "beyond": memory[a, b, d].total - float(c.sum()), "total": memory[a, b, d].total,
                            "total_d0": memory[a, b, 0.0].total}
                for (a, b, d), c in curves.items() if d > 0}
    return {"n": int(n), "delay_alpha": a_max, "rivals": rivals, "beta": beta, "diagonal": diagonal}


def proposition1_numbers(n: int = 20, alpha: float = 1.05, beta: float = 0.005, alphas=FIGURE1_ALPHAS,
                         scales=(0.01, 0.1), seed: int = 0) -> dict:
    """Proposition 1 checked numerically, k < N = n: J(k) against :func:`fisher_memory_lower_bound`.

    On the figure's Θ (√``alpha`` on the sub-diagonal, ``beta`` below it), and for every α of ``alphas`` and s of
    ``scales`` a strictly lower-triangular Θ with √α on its sub-diagonal and N(0, s²) entries below it
    (numpy.random.default_rng(``seed``)); and on the delay line (β = 0) at every α of ``alphas``, where the
    bound is an equality.  Returns {"n", "cases": [{"theta": its description, "alpha", "sigma_max",
    "min_ratio": min_k J(k)/bound(k), "k": its k}], "delay": [{"alpha", "max_deviation": max_k abs(J(k)/bound(k) −
    1)}]}.
    """
    rng = np.random.default_rng(seed)
    subdiagonal = lambda a: np.diag(np.full(n - 1, math.sqrt(a)), -1)
    thetas = [(f"figure's: β = {beta:g}", alpha, schur_example(n, math.sqrt(alpha), beta, 0.0))]
    thetas += [(f"random: N(0, {s:g}²) below the sub-diagonal", float(a),
                subdiagonal(a) + np.tril(rng.normal(0.0, s, (n, n)), -2)) for a in alphas for s in scales]
    cases, delay = [], []
    for description, a, theta in thetas:
        ratio = fisher_memory_curve(theta, n) / fisher_memory_lower_bound(theta, n)
        sigma = float(np.linalg.svd(gram_schmidt_triangle(theta), compute_uv=False)[0])
        k = int(np.argmin(ratio))
        cases.append({"theta": description, "alpha": a, "sigma_max": sigma, "min_ratio": float(ratio[k]), "k": k})
    for a in map(float, alphas):
        theta = subdiagonal(a)
        ratio = fisher_memory_curve(theta, n) / fisher_memory_lower_bound(theta, n)
        delay.append({"alpha": a, "max_deviation": float(np.abs(ratio - 1).max())})
    return {"n": int(n), "cases": cases, "delay": delay}


def proposition2_coefficients(n: int, t_max: int) -> np.ndarray:
    """c[t, l, i, j]: the coefficient of xˡ in (Aᵗ)_ij, t = 0 … t_max, l = 0 … n, for Proposition 2's A = I + xU
    (U strictly upper, all ones), by exact integer multiplication Aᵗ = Aᵗ⁻¹ A, i.e. c_t[l] = c_{t−1}[l] +
    c_{t−1}[l−1] U (no binomial formula assumed; degree n is kept to show that it stays empty).  int64: exact
    while every coefficient, at most C(t_max, n−1)·C(n−2, ⌊(n−2)/2⌋), stays below 2⁶³."""
    upper = np.triu(np.ones((n, n), dtype=np.int64), 1)
    c = np.zeros((t_max + 1, n + 1, n, n), dtype=np.int64)
    c[0, 0] = np.eye(n, dtype=np.int64)
    for t in range(1, t_max + 1):
        c[t] = c[t - 1]
        c[t, 1:] += c[t - 1, :-1] @ upper
    return c


def proposition2_numbers(ns=(2, 4, 6, 8), x: float = 0.5, t_max: int = 100_000, n_exact: int = 8,
                         t_exact: int = 200, fits=None) -> dict:
    """Proposition 2 in numbers: (Aᵗ)_ij = p_{j−i}(x), of degree ≤ j − i, no x⁰ term, the xˡ coefficient O(C(t, l)).

    Exactly (:func:`proposition2_coefficients`, n = ``n_exact``, t ≤ ``t_exact``): "degree_ok" (no xˡ with l >
    j − i, for every i, j, t), "constant_zero" (no x⁰ term above the diagonal), "max_ratio" = max over t, l ≥ 1,
    i < j of coefficient/C(t, l) and "ratio_growth" = max over (l, i, j) of [max over t in (t_exact/2, t_exact]
    of coefficient/C(t, l)] / [max over l ≤ t ≤ t_exact/2] (≤ 1: the ratio does not grow with t).  And the growth
    of max_ij abs((Aᵗ)_ij) at x up to t_max (:func:`proposition2`, or the given ``fits``, e.g. figure_proposition2's
    results): "fits" = [{"n", "degree", "bound", "loglog_r2", "semilog_r2", "is_polynomial"}].
    """
    c = proposition2_coefficients(n_exact, t_exact)
    i, j = np.indices((n_exact, n_exact))
    levels = np.arange(n_exact + 1)[:, None, None]
    degree_ok = not c[:, levels > (j - i)[None]].any()
    constant_zero = not c[:, 0][:, j > i].any()
    binom = np.array([[math.comb(t, l) for l in range(n_exact + 1)] for t in range(t_exact + 1)], dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(binom[:, :, None, None] > 0, c / binom[:, :, None, None], 0.0)[:, 1:][:, :, j > i]
    half = t_exact // 2
    early, late = ratio[: half + 1].max(0), ratio[half + 1:].max(0)
    growth = float(np.max(np.where(early > 0, late / np.where(early > 0, early, 1.0), 1.0)))
    fits = fits if fits is not None else [proposition2(n, x, t_max) for n in ns]
    return {"n": int(n_exact), "t": int(t_exact), "degree_ok": bool(degree_ok), "constant_zero": bool(constant_zero),
            "max_ratio": float(ratio.max()), "ratio_growth": growth, "x": float(fits[0].x if fits else x),
            "t_max": int(fits[0].t[-1]) if fits else int(t_max),
            "fits": [{"n": r.n, "degree": r.degree, "bound": r.bound, "loglog_r2": r.loglog_r2,
                      "semilog_r2": r.semilog_r2, "is_polynomial": r.is_polynomial} for r in fits]}
