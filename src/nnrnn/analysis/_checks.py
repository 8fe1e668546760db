"""Argument checks shared by the theory's modules (:mod:`.fisher`, :mod:`.proposition1`, :mod:`.transient_growth`,
:mod:`.polynomial_growth`): each raises ValueError naming the argument."""
from __future__ import annotations

import math

import numpy as np


def _as_square(theta) -> np.ndarray:
    if np.iscomplexobj(theta):  # float64 conversion would drop the imaginary part with a warning only
        raise ValueError("theta must be real; got a complex array (use the real Schur or real form of the matrix)")
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 2 or theta.shape[0] != theta.shape[1] or theta.shape[0] == 0:
        raise ValueError(f"theta must be a non-empty square matrix; got shape {theta.shape}")
    if not np.all(np.isfinite(theta)):
        raise ValueError("theta has non-finite entries")
    return theta


def _check_noise(noise) -> float:
    if (isinstance(noise, bool) or not isinstance(noise, (int, float, np.floating, np.integer)) or not noise > 0
            or not math.isfinite(noise)):
        raise ValueError(f"noise (eps) must be a positive finite number; got {noise!r}")
    return float(noise)


def _check_int(name: str, value, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be an int >= {least}; got {value!r}")
