"""The example matrix Θ(α, β, d) of the paper's Eq. (simpletheta) and its J_tot in Table 3 of the supplement."""
from __future__ import annotations

import warnings

import numpy as np

from ._blas import single_threaded_blas
from .fisher import fisher_memory, fisher_memory_total

__all__ = ["EXACT_TABLE3", "PAPER_TABLE3", "TABLE3_GRID", "schur_example", "table3"]

# Table 3 of the paper's supplement, in the paper's row order (α fastest, then β, then d).
TABLE3_GRID: tuple[tuple[float, float, float], ...] = tuple(
    (a, b, d) for d in (0.0, 0.2) for b in (0.0, 0.005) for a in (0.95, 1.0, 1.05))
PAPER_TABLE3: tuple[float, ...] = (3.03, 5.19, 12.1, 3.18, 5.30, 12.1, 12.0, 16.2, 20.5, 12.1, 16.3, 20.4)
# J_tot for the same rows (N = 100, ε = 1, u = e_1) in 80-digit arithmetic (mpmath): C summed over
# 600 terms (tail < 1e-230) and J(t) over t < 600, i.e. to convergence.  Reproduce with
# fisher_memory_total(schur_example(100, α, β, d), method="mpmath").
EXACT_TABLE3: tuple[float, ...] = (3.03270207, 5.18737752, 12.0872721, 3.17576759, 5.3014258, 12.0865363,
                                   11.9393889, 16.2982252, 20.8370574, 12.0895251, 16.3909548, 20.8846574)


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
