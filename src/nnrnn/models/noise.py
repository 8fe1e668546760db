"""Noise in the state: every model's ``state_noise`` σ, Gaussian noise of standard deviation σ added to the state
after every step, in training and in evaluation (the noisy networks of Ganguli et al. 2008, whose Fisher memory the
paper's Section 3 measures).

The noise is drawn from torch's global generator of the state's device, as dropout's masks are: a run seeded with
``torch.manual_seed`` draws the same noise, a training checkpoint that holds the generator's state resumes it, and a
CUDA graph replays it (captured graphs advance the global CUDA generator; a generator of the layer's own could not be
reseeded inside one).  Each layer and direction draws its whole (T, B, width) block at once, before its time loop, so
that every implementation of a model's loop (the reference, the fused and compiled ones) reads the same noise from
the same draws (docs/design.md, "Noise in the state").
"""
from __future__ import annotations

import math
import numbers

import torch


def check_state_noise(value) -> float:
    """``state_noise`` as a float σ ≥ 0: a TypeError for what is not a real number (a bool included), a ValueError
    for a negative, infinite or NaN one."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"state_noise must be a non-negative float (the noise's standard deviation); got {value!r}")
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"state_noise must be a non-negative finite float (the noise's standard deviation); "
                         f"got {value!r}")
    return float(value)


def draw(sigma: float, steps: int, batch: int, width: int, like: torch.Tensor) -> torch.Tensor | None:
    """σ·ε, ε (steps, batch, width) standard normal in ``like``'s (real) dtype and device; None when σ is 0, so
    that a noiseless model draws nothing and runs exactly as one without the option."""
    if not sigma:
        return None
    return torch.randn(steps, batch, width, dtype=like.dtype, device=like.device) * sigma


def repr_part(sigma: float) -> list[str]:
    """The model's repr's mention of its noise: nothing at 0, the option's default."""
    return [f"state_noise={sigma}"] if sigma else []
