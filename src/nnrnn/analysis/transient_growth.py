"""The linear transients of Fig. 1(b): ‖h_t‖ of h_{t+1} = Θ h_t from initial conditions on the unit sphere."""
from __future__ import annotations

import numpy as np

from ._blas import single_threaded_blas
from ._checks import _as_square, _check_int

__all__ = ["transients"]


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
