"""Theory of §3 of Kerg, Goyette et al. (2019): non-normal Θ, Fisher memory, Propositions 1 and 2.

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
"""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sl

from ._blas import single_threaded_blas

__all__ = [
    "CovarianceFactor", "FisherMemory", "PAPER_TABLE3", "EXACT_TABLE3", "Prop2Result", "TABLE3_GRID",
    "covariance_factor", "delay_line_fmc", "figure1b_transients", "figure1c_memory", "fisher_memory",
    "fisher_memory_curve", "fisher_memory_lower_bound", "fisher_memory_numbers", "fisher_memory_total",
    "gram_schmidt_triangle", "proposition1_numbers", "proposition2", "proposition2_coefficients",
    "proposition2_matrix", "proposition2_numbers", "schur_example", "spectral_radius", "stationary_covariance",
    "table3", "transient_numbers", "transients",
]

METHODS = ("sqrt", "lyapunov", "mpmath")
_U = np.finfo(np.float64).eps / 2  # unit round-off

# Table 3 of the paper's supplement, in the paper's row order (α fastest, then β, then d).
TABLE3_GRID: tuple[tuple[float, float, float], ...] = tuple(
    (a, b, d) for d in (0.0, 0.2) for b in (0.0, 0.005) for a in (0.95, 1.0, 1.05))
PAPER_TABLE3: tuple[float, ...] = (3.03, 5.19, 12.1, 3.18, 5.30, 12.1, 12.0, 16.2, 20.5, 12.1, 16.3, 20.4)
# J_tot for the same rows (N = 100, ε = 1, u = e_1) in 80-digit arithmetic (mpmath): C summed over
# 600 terms (tail < 1e-230) and J(t) over t < 600, i.e. to convergence.  Reproduce with
# fisher_memory_total(schur_example(100, α, β, d), method="mpmath").
EXACT_TABLE3: tuple[float, ...] = (3.03270207, 5.18737752, 12.0872721, 3.17576759, 5.3014258, 12.0865363,
                                   11.9393889, 16.2982252, 20.8370574, 12.0895251, 16.3909548, 20.8846574)


# ----------------------------------------------------------------------------------------------
# The example matrix of Eq. (simpletheta)
# ----------------------------------------------------------------------------------------------
def schur_example(n: int, alpha: float, beta: float, d: float) -> np.ndarray:
    """Θ of Eq. (simpletheta): (Θ)_ij = d δ_ij + α δ_{i,j+1} + β Σ_{2≤k≤i} δ_{i,j+k}.

    ``d`` on the diagonal, ``alpha`` on the first sub-diagonal and ``beta`` on every
    entry below it; zero above the diagonal.  Returns an (n, n) float64 array.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int; got {n!r}")
    theta = np.tril(np.full((n, n), float(beta)), -2)
    theta += np.diag(np.full(n - 1, float(alpha)), -1)
    theta += float(d) * np.eye(n)
    return theta


# ----------------------------------------------------------------------------------------------
# Stationary covariance
# ----------------------------------------------------------------------------------------------
def _as_square(theta) -> np.ndarray:
    if np.iscomplexobj(theta):  # float64 conversion would drop the imaginary part with a warning only
        raise ValueError("theta must be real; got a complex array (use the real Schur or real form of the matrix)")
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 2 or theta.shape[0] != theta.shape[1] or theta.shape[0] == 0:
        raise ValueError(f"theta must be a non-empty square matrix; got shape {theta.shape}")
    if not np.all(np.isfinite(theta)):
        raise ValueError("theta has non-finite entries")
    return theta


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


def _check_noise(noise) -> float:
    if (isinstance(noise, bool) or not isinstance(noise, (int, float, np.floating, np.integer)) or not noise > 0
            or not math.isfinite(noise)):
        raise ValueError(f"noise (eps) must be a positive finite number; got {noise!r}")
    return float(noise)


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


# ----------------------------------------------------------------------------------------------
# Fisher memory
# ----------------------------------------------------------------------------------------------
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


def fisher_memory_total(theta, input_vector=None, noise: float = 1.0, method: str = "sqrt", rtol: float = 1e-12,
                        max_steps: int = 1_000_000) -> float:
    """J_tot = Σ_{t=0}^∞ J(t), summed until the tail bound is below ``rtol`` × the partial sum
    (exactly N terms for a nilpotent Θ).  See :func:`fisher_memory`."""
    return fisher_memory(theta, None, input_vector, noise, method, rtol, max_steps).total


def delay_line_fmc(alpha: float, steps: int, noise: float = 1.0) -> np.ndarray:
    """Ganguli et al.'s closed form for the delay line with gain √α per link, k < N:
    J(k) = αᵏ (α − 1) / (α^{k+1} − 1) / ε  (= 1 / ((k+1) ε) at α = 1; 1/ε at k = 0 and 0 after at α = 0).

    Evaluated in logarithms (:func:`_delay_line_log_fraction`, shared with Proposition 1's bound): finite for
    α > 1 at large k, where αᵏ overflows (the value tends to (α − 1)/α), and exact next to α = 1.
    Raises ValueError naming ``alpha`` (not a finite number ≥ 0: α is a squared gain), ``steps`` or ``noise``.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating, np.integer)) \
            or not (math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"alpha (the squared gain of each link) must be a finite number >= 0; got {alpha!r}")
    _check_int("steps", steps, 0)
    noise = _check_noise(noise)
    k = np.arange(steps, dtype=np.float64)
    if alpha == 0:  # the signal stays in the first unit for one step only
        return np.where(k == 0, 1.0 / noise, 0.0)
    return np.exp(_delay_line_log_fraction(float(alpha), k) - math.log(noise))


def _delay_line_log_fraction(alpha: float, k: np.ndarray) -> np.ndarray:
    """log(αᵏ (α − 1)/(α^{k+1} − 1)) for α > 0, as k ln α + log|e^{ln α} − 1| − log|e^{(k+1) ln α} − 1| with
    expm1: exact next to α = 1 (the limit −log(k + 1) at α = 1) and finite for large k."""
    log_alpha = math.log(alpha)
    if log_alpha == 0.0:
        return -np.log(k + 1)
    return k * log_alpha + _log_abs_expm1(np.array(log_alpha)) - _log_abs_expm1((k + 1) * log_alpha)


def _check_proposition1(theta) -> tuple[np.ndarray, float]:
    """(Θ as float64, α) when Θ satisfies Proposition 1's hypotheses, else ValueError naming ``theta``."""
    theta = _as_square(theta)
    n = theta.shape[0]
    if n < 2:
        raise ValueError(f"theta must be at least 2×2 (Proposition 1 needs a sub-diagonal); got shape {theta.shape}")
    if np.triu(theta).any():
        raise ValueError("theta must be strictly lower triangular (zero on and above the diagonal) for "
                         "Proposition 1; it has non-zero entries there")
    sub = np.diag(theta, -1)
    # √α written into float64 and squared back may differ from α in the last bit; a different value may not
    if not (sub[0] > 0 and np.allclose(sub, sub[0], rtol=1e-12, atol=0)):
        raise ValueError(f"theta's first sub-diagonal must be one positive value √α for Proposition 1; it holds "
                         f"values from {sub.min():.6g} to {sub.max():.6g}")
    return theta, float(sub[0]) ** 2


def gram_schmidt_triangle(theta) -> np.ndarray:
    """A of the proof of Proposition 1 (the paper's T_Gram): the lower-triangular matrix with unit diagonal such
    that Θ = D A, D the delay line with Θ's sub-diagonal √α (D_{i+1,i} = √α).

    D's columns are what Gram–Schmidt makes of Θ's columns taken from the last to the first (column j of Θ,
    less its projection on the span of the later columns, e_{j+2} … e_N, is √α e_{j+1}), and A holds the
    coefficients, scaled to a unit diagonal: A_{i,j} = Θ_{i+1,j}/√α for i < N, and A's last row is e_Nᵀ (Θ's
    last column is zero, D's too, so that row is free; the identity's keeps σ_max(A) ≥ 1).  It equals
    QR's R of the reversed columns with each row divided by its diagonal entry (rows' signs and norms are
    all that separate the two).

    Args:
        theta: (N, N) strictly lower triangular, its first sub-diagonal one positive value √α.

    Returns:
        (N, N) float64 array A.
    """
    return _triangle(*_check_proposition1(theta))


def _triangle(theta: np.ndarray, alpha: float) -> np.ndarray:
    a = np.zeros_like(theta)
    a[:-1] = theta[1:] / math.sqrt(alpha)
    a[-1, -1] = 1.0
    return a


def _log_abs_expm1(x: np.ndarray) -> np.ndarray:
    """log|e^x − 1| without cancellation for small |x| nor overflow for large x."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    pos = x > 0
    out[pos] = x[pos] + np.log(-np.expm1(-x[pos]))
    out[~pos] = np.log(-np.expm1(x[~pos]))
    return out


@single_threaded_blas()
def fisher_memory_lower_bound(theta, steps: int, noise: float = 1.0) -> np.ndarray:
    """Proposition 1's lower bound on the Fisher memory curve of a strictly lower-triangular Θ:

        J(k) ≥ αᵏ (α − 1)/(α^{k+1} − 1) / (ε σ_max^{2(N−1)}),    0 ≤ k ≤ N − 1,

    with √α the value on Θ's first sub-diagonal and σ_max the largest singular value of the unit-diagonal
    Gram–Schmidt triangle A of Θ's columns (:func:`gram_schmidt_triangle`; σ_max ≥ 1, = 1 for the delay
    line, where the bound is Ganguli et al.'s J(k) exactly).  At α = 1 the fraction is its limit 1/(k+1).
    Θᴺ = 0, so J(k) = 0 for k ≥ N, and the bound returned there is 0.  ε (``noise``) and u = e₁ are as in
    :func:`fisher_memory_curve`.

    Args:
        theta: (N, N), N ≥ 2, strictly lower triangular with one positive value on its first sub-diagonal.
        steps: how many values, k = 0 … steps − 1.
        noise: ε > 0.

    Returns:
        (steps,) float64 array.

    Raises:
        ValueError naming ``theta`` when it does not satisfy these hypotheses, ``steps`` or ``noise`` when
        they are not a non-negative int and a positive number.
    """
    _check_int("steps", steps, 0)
    noise = _check_noise(noise)
    theta, alpha = _check_proposition1(theta)
    n = theta.shape[0]
    sigma = float(np.linalg.svd(_triangle(theta, alpha), compute_uv=False)[0])
    k = np.arange(min(int(steps), n), dtype=np.float64)
    bound = np.exp(_delay_line_log_fraction(alpha, k) - 2 * (n - 1) * math.log(sigma) - math.log(noise))
    return np.concatenate([bound, np.zeros(max(int(steps) - n, 0))])


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


# ----------------------------------------------------------------------------------------------
# Table 3
# ----------------------------------------------------------------------------------------------
@single_threaded_blas()
def table3(n: int = 100, noise: float = 1.0, method: str = "sqrt", compare_lyapunov: bool = True) -> list[dict]:
    """Rows of the supplement's Table 3 (J_tot of Θ(α, β, d), u = e₁), in the paper's order.

    Each row: alpha, beta, d, j_tot (``method``), paper (the published value),
    rel_diff_paper = j_tot / paper − 1, exact (80-digit reference, N = 100, ε = 1 only),
    cond_C, spectral_radius, steps (terms summed) and, with ``compare_lyapunov``,
    j_tot_lyapunov (the float64 solve_discrete_lyapunov route; on the ill-conditioned d = 0.2
    rows it is off by percents, by an amount that changes with the machine's BLAS kernels).
    """
    rows = []
    for i, (a, b, d) in enumerate(TABLE3_GRID):
        theta = schur_example(n, a, b, d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            fm = fisher_memory(theta, None, noise=noise, method=method)
            row = {"alpha": a, "beta": b, "d": d, "j_tot": fm.total, "paper": PAPER_TABLE3[i],
                   "rel_diff_paper": fm.total / PAPER_TABLE3[i] - 1.0,
                   "exact": EXACT_TABLE3[i] if (n == 100 and noise == 1.0) else None,
                   "cond_C": fm.cond, "spectral_radius": fm.spectral_radius, "steps": fm.total_steps,
                   "method": method}
            if compare_lyapunov:
                row["j_tot_lyapunov"] = fisher_memory_total(theta, noise=noise, method="lyapunov")
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------------------------
# Transients (Figure 1b)
# ----------------------------------------------------------------------------------------------
@single_threaded_blas()
def transients(theta, steps: int, n_init: int = 1000, seed: int = 0) -> dict[str, np.ndarray]:
    """Iterate h_{t+1} = Θ h_t from ``n_init`` initial conditions uniform on the unit sphere.

    Returns per-t mean and standard deviation (over initial conditions) of the
    standard deviation across units of h_t (``unit_std_mean``/``unit_std_std``)
    and of ‖h_t‖ (``norm_mean``/``norm_std``), t = 0..steps, plus ``t``.  Raises ValueError naming
    ``steps`` (not an int ≥ 0) or ``n_init`` (not an int ≥ 1).
    """
    theta = _as_square(theta)
    _check_int("steps", steps, 0)
    _check_int("n_init", n_init, 1)
    rng = np.random.default_rng(seed)
    h = rng.standard_normal((theta.shape[0], n_init))
    h /= np.linalg.norm(h, axis=0, keepdims=True)
    stds, norms = np.empty((steps + 1, n_init)), np.empty((steps + 1, n_init))
    for t in range(steps + 1):
        stds[t] = h.std(axis=0)
        norms[t] = np.linalg.norm(h, axis=0)
        h = theta @ h
    return {"t": np.arange(steps + 1), "unit_std_mean": stds.mean(1), "unit_std_std": stds.std(1),
            "norm_mean": norms.mean(1), "norm_std": norms.std(1)}


# ----------------------------------------------------------------------------------------------
# Proposition 2
# ----------------------------------------------------------------------------------------------
def proposition2_matrix(n: int, x: float) -> np.ndarray:
    """A of Proposition 2: A_ii = 1, A_ij = x for i < j, 0 below the diagonal."""
    return np.eye(n) + np.triu(np.full((n, n), float(x)), 1)


@dataclass
class Prop2Result:
    """Fit of max_ij |(Aᵗ)_ij| ~ c tᵖ on the tail t ∈ [t_max/10, t_max].

    degree: fitted p (log-log slope); bound: n − 1 (Proposition 2); loglog_r2 and
    semilog_r2: R² of the straight-line fit of log max|Aᵗ| against log t and against t
    on the same tail (polynomial growth: loglog_r2 ≈ 1 > semilog_r2); is_polynomial:
    degree ≤ bound + 0.05 and loglog_r2 > 0.999 > semilog_r2; local_slopes: d log/d log t
    along the whole range (approaches n − 1 from below).
    """
    n: int
    x: float
    degree: float
    bound: int
    loglog_r2: float
    semilog_r2: float
    is_polynomial: bool
    t: np.ndarray
    max_entry: np.ndarray
    local_slopes: np.ndarray


def _check_int(name: str, value, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be an int >= {least}; got {value!r}")


def _r2(x, y):
    coef = np.polyfit(x, y, 1)
    resid = y - np.polyval(coef, x)
    return coef[0], 1 - resid.var() / y.var()


@single_threaded_blas()
def proposition2(n: int = 6, x: float = 0.5, t_max: int = 100_000, points: int = 60) -> Prop2Result:
    """Measure the growth of max_ij |(Aᵗ)_ij| for Proposition 2's A and fit its polynomial degree.

    Aᵗ is evaluated exactly through the binomial expansion Aᵗ = Σ_{l<n} C(t, l) (xN)ˡ
    (N = strictly upper all-ones, nilpotent), so no rounding accumulates over t.

    Raises ValueError naming ``n`` (not an int ≥ 2), ``x`` (0, where A = I has nothing to fit, or not finite),
    ``t_max`` (not an int ≥ 10), ``points`` (fewer than 3 t in the fitted tail) and when max |Aᵗ| overflows
    float64 (large n, t_max or |x|).
    """
    _check_int("n", n, 2)
    if isinstance(x, bool) or not isinstance(x, (int, float, np.floating, np.integer)) or not math.isfinite(x) \
            or x == 0:
        raise ValueError(f"x (A's entries above the diagonal) must be a non-zero finite number; got {x!r}")
    _check_int("t_max", t_max, 10)
    _check_int("points", points, 3)
    nil = x * np.triu(np.ones((n, n)), 1)
    powers = [np.linalg.matrix_power(nil, l) for l in range(n)]
    t = np.unique(np.round(np.logspace(0, math.log10(t_max), points)).astype(np.int64))
    maxima = np.empty(len(t))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        for i, ti in enumerate(t):
            at = sum(math.comb(int(ti), l) * powers[l] for l in range(min(n, int(ti) + 1)))
            maxima[i] = np.abs(at).max()
    if not np.all(np.isfinite(maxima)):
        raise ValueError(f"max |(A^t)_ij| overflows float64 for n = {n}, x = {x:g}, t <= {t_max}: "
                         "choose a smaller n, t_max or |x|")
    tail = t >= t_max / 10
    if tail.sum() < 3:
        raise ValueError(f"points = {points} leaves {tail.sum()} distinct t in the fitted tail [t_max/10, t_max]; "
                         "at least 3 are needed")
    lt, lm = np.log(t[tail]), np.log(maxima[tail])
    degree, r2_loglog = _r2(lt, lm)
    _, r2_semilog = _r2(t[tail].astype(float), lm)
    slopes = np.gradient(np.log(maxima), np.log(t))
    is_poly = bool(degree <= n - 1 + 0.05 and r2_loglog > 0.999 and r2_loglog > r2_semilog)
    return Prop2Result(n=n, x=float(x), degree=float(degree), bound=n - 1, loglog_r2=float(r2_loglog),
                       semilog_r2=float(r2_semilog), is_polynomial=is_poly, t=t, max_entry=maxima,
                       local_slopes=slopes)


# ----------------------------------------------------------------------------------------------
# The numbers the report's theory claims are judged on (nnrnn.experiments.verdicts, section "theory")
# ----------------------------------------------------------------------------------------------
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
