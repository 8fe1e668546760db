"""Proposition 1 of Kerg, Goyette et al. (2019): Ganguli et al.'s delay line in closed form, the Gram–Schmidt
triangle of a strictly lower-triangular Θ and the lower bound on its Fisher memory curve (float64 NumPy)."""
from __future__ import annotations

import math

import numpy as np

from ._blas import single_threaded_blas
from ._checks import _as_square, _check_int, _check_noise

__all__ = ["delay_line_fmc", "fisher_memory_lower_bound", "gram_schmidt_triangle"]


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
