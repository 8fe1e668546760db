"""Orthogonal matrices as the exponential of a skew-symmetric matrix (expRNN).

    Q = exp(A),    A = L - Lᵀ,    L = tril(X, -1)

``X`` is an unconstrained square tensor of which only the strictly lower
triangle is used, so the free parameters number n(n-1)/2.  ``exp`` is
:func:`~nnrnn.parametrizations.expm.expm_skew` (a Taylor series chosen from
the 2-norm, which skew-symmetric matrices allow; tested against
``torch.linalg.matrix_exp`` in float64).  Q stays orthogonal to rounding error
after any update of X, with det Q = +1 (Lezcano-Casado & Martínez-Rubio, 2019,
"static trivialization").

Initialisation schemes for the skew-symmetric generator live beside the
constraint (as in expRNN):

* ``henaff``:  A = blockdiag(s_i J),  s_i ~ U(-π, π)            (Henaff et al. 2016)
* ``cayley``:  A = blockdiag(s_i J),  s_i = -sqrt((1-cos u)/(1+cos u)), u ~ U(0, π/2)
                                                               (Helfrich et al. 2018)
* ``random``:  A = logm(Q),  Q Haar-random in SO(n)             (QR of a Gaussian)

with J = [[0, 1], [-1, 0]].  For odd n the last unit gets no rotation.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import torch
from torch import nn

from .expm import expm_skew
from .registration import check_unconstrained, register

INITS = ("henaff", "cayley", "random")
LOW_PRECISION = (torch.float16, torch.bfloat16)


def skew(x: torch.Tensor) -> torch.Tensor:
    """A = tril(x, -1) - tril(x, -1)ᵀ, the skew-symmetric matrix x stands for."""
    lower = x.tril(-1)
    return lower - lower.transpose(-2, -1)


def _block_skew(angles: torch.Tensor, n: int) -> torch.Tensor:
    """Lower-triangle generator whose skew matrix is blockdiag(s_i [[0, 1], [-1, 0]])."""
    x = angles.new_zeros(n, n)
    idx = torch.arange(angles.numel(), device=angles.device) * 2
    x[idx + 1, idx] = -angles  # A[2i, 2i+1] = s_i, A[2i+1, 2i] = -s_i
    return x


def henaff_(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    n = x.shape[-1]
    s = torch.rand(n // 2, generator=generator, dtype=torch.float64) * 2 * math.pi - math.pi
    with torch.no_grad():
        return x.copy_(_block_skew(s, n))


def cayley_(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    n = x.shape[-1]
    u = torch.rand(n // 2, generator=generator, dtype=torch.float64) * (math.pi / 2)
    s = -torch.sqrt((1 - torch.cos(u)) / (1 + torch.cos(u)))
    with torch.no_grad():
        return x.copy_(_block_skew(s, n))


def random_orthogonal_(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    n = x.shape[-1]
    g = torch.randn(n, n, generator=generator, dtype=torch.float64)
    q, r = torch.linalg.qr(g)
    q = q * torch.sign(torch.diagonal(r))  # Haar measure on O(n)
    if torch.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]  # into SO(n), where the real logarithm exists
    return log_orthogonal_(x, q)


def log_orthogonal_(x: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Set x so that exp(skew(x)) = q, for q in SO(n) (scipy's matrix logarithm)."""
    log = scipy.linalg.logm(q.detach().cpu().double().numpy())
    log = np.real(log)
    log = 0.5 * (log - log.T)
    with torch.no_grad():
        return x.copy_(torch.from_numpy(np.tril(log, -1)))


INIT_FUNCTIONS = {"henaff": henaff_, "cayley": cayley_, "random": random_orthogonal_}


def init_skew_(x: torch.Tensor, init: str, generator: torch.Generator | None = None) -> torch.Tensor:
    """Fill the generator ``x`` with one of :data:`INITS`."""
    if init not in INIT_FUNCTIONS:
        raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
    return INIT_FUNCTIONS[init](x, generator)


class MatrixExpOrthogonal(nn.Module):
    """Parametrization ``X -> exp(skew(X))`` (see the module docstring); half-precision weights are
    exponentiated in float32 and rounded once."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype in LOW_PRECISION:
            return expm_skew(skew(x.float())).to(x.dtype)
        return expm_skew(skew(x))

    @torch.no_grad()
    def right_inverse(self, q: torch.Tensor) -> torch.Tensor:
        eye = torch.eye(q.shape[-1], dtype=q.dtype, device=q.device)
        if torch.equal(q, eye):
            return torch.zeros_like(q)
        if not torch.allclose(q.transpose(-2, -1) @ q, eye, atol=1e-4) or torch.linalg.det(q) <= 0:
            raise ValueError("an orthogonal weight can only be assigned a rotation matrix (QᵀQ = I, det Q = +1)")
        return log_orthogonal_(torch.empty_like(q), q)


def square_weight(module: nn.Module, name: str, who: str) -> torch.Tensor:
    """``module.<name>``, or a ValueError if it is not a square 2-d tensor."""
    weight = getattr(module, name, None)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2 or weight.shape[0] != weight.shape[1]:
        raise ValueError(f"{who} needs a square 2-d weight at {name!r}; got {getattr(weight, 'shape', None)}")
    return weight


def orthogonal(module: nn.Module, name: str = "weight", init: str | None = "henaff") -> nn.Module:
    """Constrain ``module.<name>`` (square) to SO(n) through Q = exp(skew(X)).

    ``init`` picks the generator's initialisation (:data:`INITS`); ``None``
    keeps the current weight (which must then be a rotation).  The free
    parameter is ``module.parametrizations.<name>.original``.
    """
    weight = square_weight(module, name, "orthogonal()")
    if init is not None and init not in INIT_FUNCTIONS:
        raise ValueError(f"init must be one of {', '.join(INITS)} or None; got {init!r}")
    check_unconstrained(module, name, "orthogonal()")
    if init is not None:
        with torch.no_grad():  # a rotation, so right_inverse accepts it; replaced just below
            weight.copy_(torch.eye(weight.shape[0], dtype=weight.dtype, device=weight.device))
    register(module, name, MatrixExpOrthogonal(), "orthogonal()")
    if init is not None:
        init_skew_(module.parametrizations[name].original, init)
    return module
