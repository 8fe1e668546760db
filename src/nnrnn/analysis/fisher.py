"""The Fisher memory of §3 of Kerg, Goyette et al. (2019): stationary covariance, J(k) and J_tot.

Everything here is float64 NumPy/SciPy; nothing needs torch.

Fisher memory curve (Ganguli, Huh & Sompolinsky 2008; the paper's Eq. explicit_FMC)
--------------------------------------------------------------------------------------
For the linear network h_{t+1} = Θ h_t + u s_t + ξ_t with white noise ξ_t ~ N(0, ε I),

    J(k) = uᵀ (Θᵏ)ᵀ C⁻¹ Θᵏ u,        C = ε Σ_{k≥0} Θᵏ (Θᵏ)ᵀ,

and C is the stationary covariance, the solution of the discrete Lyapunov
equation C = Θ C Θᵀ + ε I.  It exists iff the spectral radius ρ(Θ) < 1:
for ρ ≥ 1 the sum diverges and :func:`stationary_covariance` raises
``ValueError``.  J scales as 1/ε; the paper (and Table 3) use ε = 1.

Numerics.  C can be extremely ill-conditioned even for ρ(Θ) well below 1:
for Table 3's d = 0.2 rows Θ is a single 100×100 Jordan block (eigenvalue
0.2) with strong feed-forward amplification and cond(C) reaches 5·10¹⁴–10²⁴,
beyond what float64 (unit round-off 1.1e-16) can represent.  Forming C and
then solving with it ("lyapunov" method below, scipy.linalg.solve_discrete_lyapunov
+ cho_solve) then loses every digit of the small-eigenvalue directions and J_tot
comes out wrong by percents (up to 6.4 % on one machine, 1.8 % on another).
The default "sqrt" method never forms C: it builds a triangular factor C = Rᵀ R directly by the square-root (QR) form of
the doubling (Smith) iteration of the same Lyapunov equation,

    C_{2K} = C_K + Θᴷ C_K (Θᴷ)ᵀ   ⇔   R_{2K} = qr([R_K ; R_K (Θᴷ)ᵀ]).R,

and evaluates J(k) = ‖R⁻ᵀ Θᵏ u‖² with a triangular solve.  Its error grows
with cond(R) = sqrt(cond(C)) instead of cond(C): it agrees with an 80-digit
mpmath computation ("mpmath" method) to better than 1e-8 relative on every
Table 3 row.  See docs/theory.md for the measured comparison.

The doubling stops when the tail ‖Θᴷ‖² ‖C_K‖ ≤ u·ε (it can no longer change
C in float64, since C ⪰ ε I), or exactly when Θᴷ = 0 (nilpotent Θ, e.g. every
strictly lower-triangular Θ: then C is the finite sum over k < N).

J_tot = Σ_{t≥0} J(t) is summed until a rigorous bound on the remaining tail
is below ``rtol`` (default 1e-12) times the partial sum:

    Σ_{t≥K} J(t) ≤ ‖C⁻¹‖ Σ_{m≥0} ‖Θᵐ Θᴷ u‖² ≤ (1/ε) ‖Q‖ ‖Θᴷ u‖²,   Q = Σ_m (Θᵐ)ᵀ Θᵐ,

or exactly at K = N when Θᴷ u = 0 (nilpotent Θ).

From rest (:func:`fisher_memory_from_rest`): the same formula for the state h_L after L steps of a network
started at h_0 = 0, as a task starts each sequence: the noise then has had L steps to accumulate,

    J_L(k) = uᵀ (Θᵏ)ᵀ C_L⁻¹ Θᵏ u  (k < L),     C_L = ε Σ_{j<L} Θʲ (Θʲ)ᵀ  ⪰ ε I,

defined for every Θ, ρ(Θ) ≥ 1 included (an orthogonal Θ: J_L(k) = ‖u‖² / (εL)), and J_L → J as L → ∞ where
ρ(Θ) < 1.  Its factor C_L = Rᵀ R comes from the square-root doubling above and binary splitting,
C_{a+b} = C_a + Θᵃ C_b (Θᵃ)ᵀ  ⇔  R_{a+b} = qr([R_a ; R_b (Θᵃ)ᵀ]).R.  For every normal Θ, Σ_{k<L} J_L(k) = ‖u‖²/ε
(in Θ's eigenbasis each mode i contributes |ũ_i|² |λ_i|^{2k} / (ε Σ_{j<L} |λ_i|^{2j})), the finite-horizon form
of Ganguli's J_tot = 1 for normal networks.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sl

from ._blas import single_threaded_blas
from ._checks import _as_square, _check_noise

__all__ = [
    "CovarianceFactor", "FisherMemory", "covariance_factor", "fisher_memory", "fisher_memory_curve",
    "fisher_memory_from_rest", "fisher_memory_total", "spectral_radius", "stationary_covariance",
]

METHODS = ("sqrt", "lyapunov", "mpmath")
_U = np.finfo(np.float64).eps / 2  # unit round-off


@single_threaded_blas()
def spectral_radius(theta) -> float:
    """max |λ_i(Θ)|; exact (the diagonal) for a triangular Θ, whose eigenvalues may be
    arbitrarily ill-conditioned (a Jordan block) and are best not recomputed."""
    theta = _as_square(theta)
    if not np.triu(theta, 1).any() or not np.tril(theta, -1).any():
        return float(np.abs(np.diag(theta)).max())
    return float(np.abs(np.linalg.eigvals(theta)).max())


def _check_stable(theta: np.ndarray) -> float:
    rho = spectral_radius(theta)
    if rho >= 1.0:
        raise ValueError(
            f"spectral radius of theta is {rho:.6g} >= 1: the linear dynamics h_(t+1) = theta h_t + noise "
            "have no stationary covariance (C = eps * sum_k theta^k theta^kT diverges), so the Fisher "
            "memory curve is undefined; scale theta so that all |eigenvalues| < 1")
    return rho


def _gramian_factor(theta: np.ndarray, noise: float, max_doublings: int = 64) -> tuple[np.ndarray, int, bool]:
    """Upper-triangular R with Rᵀ R = ε Σ_{k≥0} Θᵏ (Θᵏ)ᵀ (square-root doubling).

    Returns (R, K, exact): the number of terms summed and whether the sum is exact (Θᴷ = 0).
    """
    n = theta.shape[0]
    r = math.sqrt(noise) * np.eye(n)
    power, terms = theta.copy(), 1
    for _ in range(max_doublings):
        if not power.any():
            return r, terms, True
        # Frobenius norms bound the 2-norms from above: a conservative, SVD-free test
        if np.sum(power * power) * np.sum(r * r) <= _U * noise:
            return r, terms, False
        r = sl.qr(np.vstack([r, r @ power.T]), mode="r", check_finite=False)[0][:n]
        power = power @ power
        terms *= 2
        if not np.all(np.isfinite(r)) or not np.all(np.isfinite(power)):
            break
    raise ValueError(f"the sum C = eps * sum_k theta^k theta^kT did not converge after {terms} terms: "
                     f"the spectral radius ({spectral_radius(theta):.12g}) is too close to 1 for float64")


@dataclass
class CovarianceFactor:
    """The stationary covariance C of h_{t+1} = Θ h_t + ξ_t, ξ ~ N(0, εI), ready for solves.

    ``method`` 'sqrt': ``factor`` = upper-triangular R with C = Rᵀ R (C itself is never formed);
    'lyapunov': ``matrix`` = C from scipy.linalg.solve_discrete_lyapunov and ``factor`` its
    Cholesky factor (or None where C is not numerically positive definite).
    ``cond`` = cond₂(C) (from R: cond(R)²), ``terms`` = number of powers summed (sqrt; 0 for
    lyapunov), ``exact`` = the series terminated (nilpotent Θ).
    """
    method: str
    noise: float
    spectral_radius: float
    cond: float
    factor: np.ndarray | None = None
    matrix: np.ndarray | None = None
    terms: int = 0
    exact: bool = False
    _cho: tuple | None = field(default=None, repr=False)

    def covariance(self) -> np.ndarray:
        """C as a dense matrix (formed on demand for 'sqrt')."""
        if self.matrix is not None:
            return self.matrix
        return self.factor.T @ self.factor

    def quadratic(self, vectors: np.ndarray) -> np.ndarray:
        """vᵀ C⁻¹ v for every column v of ``vectors`` (n × m) -> (m,)."""
        vectors = np.asarray(vectors, dtype=np.float64)
        if self.method == "sqrt":
            w = sl.solve_triangular(self.factor, vectors, trans="T", check_finite=False)
            return np.einsum("ij,ij->j", w, w)
        if self._cho is not None:
            x = sl.cho_solve(self._cho, vectors, check_finite=False)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sl.LinAlgWarning)
                x = sl.solve(self.matrix, vectors, assume_a="sym", check_finite=False)
        return np.einsum("ij,ij->j", vectors, x)


@single_threaded_blas()
def covariance_factor(theta, noise: float = 1.0, method: str = "sqrt") -> CovarianceFactor:
    """Solve C = Θ C Θᵀ + ε I (ε = ``noise``) for the Fisher memory computations.

    Raises ValueError when ρ(Θ) ≥ 1 (no stationary covariance).  Warns
    (RuntimeWarning) when the error estimate of vᵀC⁻¹v exceeds 1e-3, i.e.
    u·sqrt(cond C) > 1e-3 for 'sqrt' or u·cond C > 1e-3 for 'lyapunov' (u = 1.1e-16;
    the estimate is pessimistic: on Table 3, 'sqrt' is good to 1e-8 where it
    predicts 1e-4).
    """
    if method not in ("sqrt", "lyapunov"):
        raise ValueError(f"method must be 'sqrt' or 'lyapunov' here; got {method!r}")
    theta = _as_square(theta)
    noise = _check_noise(noise)
    rho = _check_stable(theta)
    if method == "sqrt":
        r, terms, exact = _gramian_factor(theta, noise)
        s = np.linalg.svd(r, compute_uv=False)
        cond = float((s[0] / s[-1]) ** 2) if s[-1] > 0 else math.inf
        out = CovarianceFactor("sqrt", noise, rho, cond, factor=r, terms=terms, exact=exact)
        err = _U * math.sqrt(cond)
    else:
        c = sl.solve_discrete_lyapunov(theta, noise * np.eye(theta.shape[0]))
        c = (c + c.T) / 2
        cond = float(np.linalg.cond(c))
        try:
            cho = sl.cho_factor(c, lower=False, check_finite=False)
        except np.linalg.LinAlgError:
            cho = None
        out = CovarianceFactor("lyapunov", noise, rho, cond, matrix=c,
                               factor=None if cho is None else np.triu(cho[0]), _cho=cho)
        err = _U * cond
    if err > 1e-3:
        warnings.warn(f"stationary covariance is ill-conditioned (cond(C) = {cond:.3g}, spectral radius "
                      f"{rho:.6g}); expected relative error of the Fisher memory ~{err:.1g} with method "
                      f"{method!r}" + ("; use method='sqrt' or 'mpmath'" if method == "lyapunov" else
                                        "; use method='mpmath' to check"), RuntimeWarning, stacklevel=2)
    return out


def stationary_covariance(theta, noise: float = 1.0, method: str = "sqrt") -> tuple[np.ndarray, float]:
    """(C, cond₂(C)): the stationary covariance ε Σ_k Θᵏ(Θᵏ)ᵀ and its condition number."""
    f = covariance_factor(theta, noise, method)
    return f.covariance(), f.cond


@dataclass
class FisherMemory:
    """Result of :func:`fisher_memory`.

    curve: J(k) for k = 0..len-1; total: J_tot = Σ_t J(t) summed to convergence;
    total_steps: number of terms summed for ``total`` (N for a nilpotent Θ);
    tail_bound: bound on the neglected Σ_{t ≥ total_steps} J(t);
    cond: cond₂(C); spectral_radius: ρ(Θ); method: 'sqrt' | 'lyapunov' | 'mpmath'.
    """
    curve: np.ndarray
    total: float
    total_steps: int
    tail_bound: float
    cond: float
    spectral_radius: float
    method: str
    noise: float


def _input(theta: np.ndarray, input_vector) -> np.ndarray:
    n = theta.shape[0]
    if input_vector is None:
        u = np.zeros(n)
        u[0] = 1.0
        return u
    if np.iscomplexobj(input_vector):
        raise ValueError("input_vector must be real; got a complex array")
    u = np.asarray(input_vector, dtype=np.float64).reshape(-1)
    if u.shape != (n,):
        raise ValueError(f"input_vector must have {n} entries; got shape {np.shape(input_vector)}")
    if not np.all(np.isfinite(u)):  # else J(k) is NaN, or J_tot's tail bound never falls
        raise ValueError("input_vector has non-finite entries")
    return u


def _orbit(theta: np.ndarray, v: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns Θᵏ v for k < count, and Θ^count v."""
    cols = np.empty((theta.shape[0], count))
    for k in range(count):
        cols[:, k] = v
        v = theta @ v
    return cols, v


def _sum_to_convergence(theta, u, quadratic, noise, rtol, max_steps, block=256):
    """J(t) for t = 0, 1, … until the tail bound (1/ε)‖Q‖‖Θᴷu‖² ≤ rtol · partial sum (or Θᴷu = 0).

    Returns (J values computed, total, K = terms needed, tail bound): K is the first K at which
    the partial sum is within rtol of the total (N for a nilpotent Θ and generic u)."""
    q_factor, _, _ = _gramian_factor(theta.T.copy(), 1.0)
    q_norm = np.linalg.norm(q_factor, 2) ** 2
    values, total, k, v = [], 0.0, 0, u
    while True:
        bound = q_norm * float(v @ v) / noise
        if not v.any() or (k and bound <= rtol * total):
            break
        if k >= max_steps:
            raise ValueError(f"J_tot did not converge within {max_steps} steps (tail bound {bound:.3g}, "
                             f"partial sum {total:.6g}); raise max_steps or rtol")
        cols, v = _orbit(theta, v, block)
        values.append(quadratic(cols))
        total += float(values[-1].sum())
        k += block
    values = np.concatenate(values) if values else np.zeros(0)
    nz = np.nonzero(values)[0]
    needed = int(nz[-1]) + 1 if len(nz) else 0
    if bound > 0 and needed:
        c = np.cumsum(values)
        needed = min(needed, int(np.searchsorted(c, c[-1] * (1 - rtol))) + 1)
    return values, total, needed, bound


@single_threaded_blas()
def fisher_memory(theta, steps: int | None = None, input_vector=None, noise: float = 1.0, method: str = "sqrt",
                  rtol: float = 1e-12, max_steps: int = 1_000_000, dps: int = 60) -> FisherMemory:
    """Fisher memory curve J(k), k < ``steps``, and J_tot = Σ_{t≥0} J(t) (summed to convergence).

    ``steps`` defaults to the number of terms J_tot needed (``total_steps``: N for
    a nilpotent Θ, else the first K with Σ_{t<K} J(t) within ``rtol`` of J_tot).
    ``method``: 'sqrt' (default; square-root Lyapunov factor, accurate to
    ~u·sqrt(cond C)), 'lyapunov' (scipy.linalg.solve_discrete_lyapunov +
    Cholesky solve, the textbook route, accurate to ~u·cond C only) or 'mpmath'
    (``dps``-digit arithmetic, slow: about a minute for N = 100; a reference).
    Raises ValueError for ρ(Θ) ≥ 1 and warns when C is too ill-conditioned for
    the chosen method.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0):
        raise ValueError(f"steps must be a non-negative int; got {steps!r}")
    theta = _as_square(theta)
    u = _input(theta, input_vector)
    noise = _check_noise(noise)
    if method == "mpmath":
        return _fisher_memory_mp(theta, steps, u, noise, rtol, max_steps, dps)
    cov = covariance_factor(theta, noise, method)
    values, total, needed, bound = _sum_to_convergence(theta, u, cov.quadratic, noise, rtol, max_steps)
    if steps is None:
        curve = values[:needed]
    elif steps <= len(values):
        curve = values[:steps]
    else:
        curve = cov.quadratic(_orbit(theta, u, int(steps))[0])
    return FisherMemory(curve=curve, total=total, total_steps=needed, tail_bound=bound, cond=cov.cond,
                        spectral_radius=cov.spectral_radius, method=method, noise=noise)


@single_threaded_blas()
def fisher_memory_curve(theta, steps: int, input_vector=None, noise: float = 1.0, method: str = "sqrt") -> np.ndarray:
    """J(k) = uᵀ(Θᵏ)ᵀ C⁻¹ Θᵏ u for k = 0..steps-1, C = ε Σ_k Θᵏ(Θᵏ)ᵀ (Eq. explicit_FMC).

    u defaults to e₁ and ε (``noise``) to 1; J ∝ 1/ε.  C solves the discrete
    Lyapunov equation C = Θ C Θᵀ + ε I; it exists only for spectral radius
    ρ(Θ) < 1, so ρ ≥ 1 raises ValueError.  As ρ → 1 (or with strong
    feed-forward amplification, e.g. Θ = 0.2 I + 1.05 × shift) cond(C) grows
    without bound; :func:`fisher_memory` reports it (``.cond``) and a
    RuntimeWarning is issued when the result may lose more than ~3 digits.  See
    the module docstring for the method choice (default 'sqrt': triangular
    square-root factor of C and triangular solves, never an inverse).
    """
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps must be a non-negative int; got {steps!r}")
    theta = _as_square(theta)
    u = _input(theta, input_vector)
    noise = _check_noise(noise)
    if method == "mpmath":
        return _fisher_memory_mp(theta, steps, u, noise, 1e-12, 1_000_000, 60).curve
    cov = covariance_factor(theta, noise, method)
    return cov.quadratic(_orbit(theta, u, int(steps))[0]) if steps else np.zeros(0)


def _from_rest_factor(theta: np.ndarray, steps: int, noise: float) -> np.ndarray:
    """Upper-triangular R with Rᵀ R = ε Σ_{j<steps} Θʲ (Θʲ)ᵀ: blocks of 2^i terms by square-root doubling, joined
    by binary splitting (module docstring)."""
    n = theta.shape[0]
    block, block_power = math.sqrt(noise) * np.eye(n), theta.copy()  # the factor of C_1, and Θ¹
    total, total_power = None, np.eye(n)  # the factor of the terms taken so far (C_a), and Θᵃ
    remaining = steps
    while remaining:
        if remaining & 1:  # C_{a+b} = C_a + Θᵃ C_b (Θᵃ)ᵀ
            later = block @ total_power.T
            total = later if total is None else sl.qr(np.vstack([total, later]), mode="r", check_finite=False)[0][:n]
            total_power = block_power @ total_power
        remaining >>= 1
        if remaining:  # C_{2b} = C_b + Θᵇ C_b (Θᵇ)ᵀ
            block = sl.qr(np.vstack([block, block @ block_power.T]), mode="r", check_finite=False)[0][:n]
            block_power = block_power @ block_power
        if not (np.all(np.isfinite(total if total is not None else block)) and np.all(np.isfinite(block_power))):
            raise ValueError(f"the sum C_L = eps * sum_(j<{steps}) theta^j theta^jT overflows float64: the spectral "
                             f"radius of theta ({spectral_radius(theta):.6g}) is too large for {steps} steps")
    return total


@single_threaded_blas()
def fisher_memory_from_rest(theta, steps: int, input_vector=None, noise: float = 1.0) -> np.ndarray:
    """J_L(k) = uᵀ(Θᵏ)ᵀ C_L⁻¹ Θᵏ u for k = 0..steps-1, C_L = ε Σ_{j<L} Θʲ(Θʲ)ᵀ, L = ``steps``: the Fisher memory of
    the state after L steps of h_{t+1} = Θ h_t + u s_t + ξ_t started at rest (module docstring).  Defined for every
    Θ; ValueError where C_L overflows float64, and a RuntimeWarning where it is too ill-conditioned for ~3 digits
    (as :func:`covariance_factor`'s)."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be a positive int; got {steps!r}")
    theta = _as_square(theta)
    u = _input(theta, input_vector)
    noise = _check_noise(noise)
    r = _from_rest_factor(theta, int(steps), noise)
    s = np.linalg.svd(r, compute_uv=False)
    cond = float((s[0] / s[-1]) ** 2) if s[-1] > 0 else math.inf
    if _U * math.sqrt(cond) > 1e-3:
        warnings.warn(f"the covariance after {steps} steps from rest is ill-conditioned (cond(C_L) = {cond:.3g}); "
                      f"expected relative error of the Fisher memory ~{_U * math.sqrt(cond):.1g}", RuntimeWarning,
                      stacklevel=2)
    factor = CovarianceFactor("sqrt", noise, math.nan, cond, factor=r)
    return factor.quadratic(_orbit(theta, u, int(steps))[0])


def fisher_memory_total(theta, input_vector=None, noise: float = 1.0, method: str = "sqrt", rtol: float = 1e-12,
                        max_steps: int = 1_000_000) -> float:
    """J_tot = Σ_{t=0}^∞ J(t), summed until the tail bound is below ``rtol`` × the partial sum
    (exactly N terms for a nilpotent Θ).  See :func:`fisher_memory`."""
    return fisher_memory(theta, None, input_vector, noise, method, rtol, max_steps).total


def _fisher_memory_mp(theta, steps, u, noise, rtol, max_steps, dps) -> FisherMemory:
    """Reference implementation in ``dps``-digit arithmetic (mpmath): C by doubling to below
    10^-dps relative, Cholesky, J(t) summed until J(t) and the tail bound are negligible."""
    import mpmath as mp

    rho = _check_stable(theta)
    n = theta.shape[0]
    with mp.workdps(dps):
        tiny = mp.mpf(10) ** (-dps)
        th = np.array([[mp.mpf(float(x)) for x in row] for row in theta], dtype=object)
        eps = mp.mpf(noise)
        c = np.array([[eps if i == j else mp.mpf(0) for j in range(n)] for i in range(n)], dtype=object)
        power = th.copy()
        for _ in range(64):
            pmax = max(abs(x) for x in power.flat)
            if pmax == 0:
                break
            cmax = max(abs(x) for x in c.flat)
            if (pmax * n) ** 2 * cmax <= tiny * eps:
                break
            c = c + power.dot(c).dot(power.T)
            power = power.dot(power)
        else:
            raise ValueError("the covariance series did not converge")
        chol = np.array(mp.cholesky(mp.matrix(c.tolist())).tolist(), dtype=object)
        q_factor, _, _ = _gramian_factor(theta.T.copy(), 1.0)
        q_norm = mp.mpf(float(np.linalg.norm(q_factor, 2) ** 2))
        v = np.array([mp.mpf(float(x)) for x in u], dtype=object)
        curve, total, k, bound = [], mp.mpf(0), 0, mp.mpf(0)
        while True:
            if k >= max_steps:
                raise ValueError("J_tot did not converge")
            # forward substitution L w = v
            w = np.empty(n, dtype=object)
            for i in range(n):
                w[i] = (v[i] - (chol[i, :i].dot(w[:i]) if i else 0)) / chol[i, i]
            j = w.dot(w)
            total += j
            curve.append(j)
            k += 1
            v = th.dot(v)
            vv = v.dot(v)
            bound = q_norm * vv / eps
            if vv == 0 or (bound <= rtol * total and (steps is None or k >= steps)):
                break
        curve = np.array([float(x) for x in curve])
    if steps is not None:
        curve = np.concatenate([curve, np.zeros(max(0, steps - len(curve)))])[:steps]
    s = np.linalg.svd(_gramian_factor(theta, noise)[0], compute_uv=False)
    return FisherMemory(curve=curve, total=float(total), total_steps=k, tail_bound=float(bound),
                        cond=float((s[0] / s[-1]) ** 2), spectral_radius=rho, method="mpmath", noise=noise)
