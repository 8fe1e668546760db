"""Proposition 2 of Kerg, Goyette et al. (2019): the powers of A = I + x·(strictly upper all-ones) grow polynomially,
measured and fitted."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._blas import single_threaded_blas
from ._checks import _check_int

__all__ = ["Prop2Result", "proposition2", "proposition2_matrix"]


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
