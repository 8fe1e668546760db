"""Orthogonal matrices as the exponential of a skew-symmetric matrix (expRNN).

    Q = exp(A),    A = L - Lᵀ,    L = tril(X, -1)

``X`` is an unconstrained square tensor of which only the strictly lower
triangle is used, so the free parameters number n(n-1)/2.  ``exp`` is
``torch.linalg.matrix_exp`` (see :func:`matrix_exp` for one range it is
evaluated in float64); autograd differentiates it, so there is no
hand-written Fréchet derivative.  Q stays orthogonal to rounding error after
any update of X, with det Q = +1 (Lezcano-Casado & Martínez-Rubio, 2019,
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
from torch.nn.utils import parametrize

INITS = ("henaff", "cayley", "random")


def skew(x: torch.Tensor) -> torch.Tensor:
    """A = tril(x, -1) - tril(x, -1)ᵀ, the skew-symmetric matrix x stands for."""
    lower = x.tril(-1)
    return lower - lower.transpose(-2, -1)


# Measured with torch 2.13: for a single float32 matrix whose 1-norm lies in
# (0.0512, 0.580] (the range torch evaluates with its degree-8 formula),
# exp of blockdiag(s J) with |s| ≈ 0.5 is off by up to 4e-5, so QᵀQ ≠ I well
# above rounding (1e-7 outside that range).  Such matrices are evaluated in float64.
_FLOAT32_T8_NORMS = (5.116619363445086e-02, 5.800524627688768e-01)


def _exp(a: torch.Tensor) -> torch.Tensor:
    if a.dtype == torch.float32:
        norm = float(a.abs().sum(-2).amax()) if a.numel() else 0.0  # torch's operator 1-norm
        if _FLOAT32_T8_NORMS[0] < norm <= _FLOAT32_T8_NORMS[1]:
            return torch.linalg.matrix_exp(a.double()).to(a.dtype)
    return torch.linalg.matrix_exp(a)


class _MatrixExp(torch.autograd.Function):
    """exp(A) with the gradient L(Aᵀ, G) read off exp([[Aᵀ, cG], [0, Aᵀ]]) / c.

    This is the block-matrix identity torch's own backward uses, evaluated by
    ``torch.linalg.matrix_exp`` as well, with one change: the Fréchet
    derivative is linear in G, so G is first scaled to the norm of A.  Torch
    exponentiates the unscaled block, whose norm is dominated by ‖G‖; that costs
    extra squarings and, measured in float32 against float64, gives gradients
    with relative error ~1e-4 where the scaled block gives ~3e-7, in about half
    the time at n = 512 (see docs/performance.md).
    """

    @staticmethod
    def forward(ctx, a):
        q = _exp(a)
        ctx.save_for_backward(a)
        return q

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        n = a.shape[-1]
        scale = a.abs().sum(-2).amax().clamp_min(1e-12) / grad.abs().sum(-2).amax().clamp_min(1e-30)
        block = a.new_zeros(2 * n, 2 * n)
        block[:n, :n] = a.t()
        block[n:, n:] = a.t()
        block[:n, n:] = grad * scale
        return _exp(block)[:n, n:] / scale


def matrix_exp(a: torch.Tensor) -> torch.Tensor:
    """``torch.linalg.matrix_exp(a)`` for a square matrix, accurate to float32 rounding where
    torch's forward or backward is not (see :class:`_MatrixExp`); batched input goes to torch."""
    if a.dim() != 2:
        return torch.linalg.matrix_exp(a)
    return _MatrixExp.apply(a)


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
    """Parametrization ``X -> exp(skew(X))`` (see the module docstring)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return matrix_exp(skew(x))

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
    if init is not None:
        with torch.no_grad():  # a rotation, so right_inverse accepts it; replaced just below
            weight.copy_(torch.eye(weight.shape[0], dtype=weight.dtype, device=weight.device))
    parametrize.register_parametrization(module, name, MatrixExpOrthogonal())
    if init is not None:
        init_skew_(module.parametrizations[name].original, init)
    return module
