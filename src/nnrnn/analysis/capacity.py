"""Linear memory capacity (Jaeger 2001, the reservoir-computing standard) of a recurrent layer.

Drive the layer with i.i.d. inputs u_t (a (T, B, input_size) tensor drawn from the task's input distribution) and
read its features h_t (the layer's outputs).  For each delay k = 1..K a ridge-regularised linear read-out (with an
intercept) is fitted from h_t to u_{t−k} on the first half of the sequences and scored on the other half:

    R²_k = 1 − Σ ‖u_{t−k} − ŷ_t‖² / Σ ‖u_{t−k} − ū‖²     (summed over the input's channels),

clipped at 0 (a held-out read-out can do worse than the mean), and MC = Σ_{k=1..K} R²_k.  Scoring on held-out
sequences keeps the read-outs' fitting noise (about N / samples per delay, summed over K delays) out of MC.

Reference values (tests/analysis/test_capacity.py): an exact delay line of N units, h_t = (u_t, …, u_{t−N+1}),
recalls u_{t−k} exactly for k ≤ N − 1 and nothing beyond (the inputs are independent), so MC = N − 1 over k ≥ 1
(Jaeger's bound MC ≤ N counts the current input, k = 0, as well); a layer without recurrence holds u_t only, so
MC = 0; a scalar leaky unit h_t = a h_{t−1} + u_t has R²_k = a^{2k}(1 − a²), so MC = a².
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

WASHOUT = 50  # time steps dropped before the read-outs are fitted: the state still remembers the zero start


@dataclass(frozen=True)
class Capacity:
    """MC = Σ_k R²_k, and R²_k for k = 1..K in order."""
    total: float
    r2: tuple[float, ...]


def features(layer: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    """The layer's outputs for ``inputs`` (time first), without gradients, as real float64 (T, B, F)."""
    with torch.no_grad():
        out = layer(inputs)
    out = out[0] if isinstance(out, tuple) else out
    if out.is_complex():
        out = torch.cat([out.real, out.imag], -1)
    return out.double()


def ridge_r2(x_fit: torch.Tensor, y_fit: torch.Tensor, x_test: torch.Tensor, y_test: torch.Tensor,
             ridge: float) -> float:
    """Held-out R² (over every channel of y, clipped at 0) of the ridge read-out y ≈ W x + b fitted on the fit set;
    ``ridge`` is relative to the mean feature variance, so that it does not depend on the features' scale."""
    mx, my = x_fit.mean(0), y_fit.mean(0)
    xc, yc = x_fit - mx, y_fit - my
    gram = xc.T @ xc
    scale = gram.diagonal().mean().clamp_min(torch.finfo(gram.dtype).tiny)
    weights = torch.linalg.solve(gram + ridge * scale * torch.eye(gram.shape[0], dtype=gram.dtype), xc.T @ yc)
    residual = y_test - ((x_test - mx) @ weights + my)
    total = ((y_test - y_test.mean(0)) ** 2).sum()
    return max(0.0, float(1 - (residual ** 2).sum() / total)) if total > 0 else 0.0


def memory_capacity(layer: nn.Module, inputs: torch.Tensor, max_delay: int, ridge: float = 1e-6,
                    washout: int = WASHOUT) -> Capacity:
    """Jaeger's linear memory capacity of ``layer`` driven by ``inputs`` (T, B, input_size), time first, i.i.d.
    over time and batch (see the module docstring); ``max_delay`` K < T − ``washout``.  Read-outs are fitted on the
    first half of the batch and scored on the second."""
    steps, batch = inputs.shape[:2]
    if batch < 2 or not 0 < max_delay < steps - washout:
        raise ValueError(f"memory_capacity needs a batch of at least 2 and 0 < max_delay < T - washout; got batch "
                         f"{batch}, max_delay {max_delay}, T {steps}, washout {washout}")
    h, u = features(layer, inputs), inputs.double()
    half, start = batch // 2, max(washout, max_delay)  # every delay read at the same time steps
    r2 = []
    for k in range(1, max_delay + 1):
        x, y = h[start:], u[start - k:steps - k]

        def flat(t, part):
            return t[:, part].reshape(-1, t.shape[-1])
        r2.append(ridge_r2(flat(x, slice(0, half)), flat(y, slice(0, half)), flat(x, slice(half, None)),
                           flat(y, slice(half, None)), ridge))
    return Capacity(sum(r2), tuple(r2))
