"""Orthogonal matrices as the exponential of a skew-symmetric matrix (expRNN).

    Q = exp(A),    A = L - Lᵀ,    L = tril(X, -1)

``X`` is an unconstrained square tensor of which only the strictly lower
triangle is used, so the free parameters number n(n-1)/2.  ``exp`` is
``torch.linalg.matrix_exp`` (see :func:`matrix_exp` for one range where it
is evaluated shifted, and for its gradient, which is read off one complex
``torch.linalg.matrix_exp``), so there is no hand-written expm or Fréchet
derivative.  Q stays orthogonal to rounding error after
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


# Measured with torch 2.13: for a single float32 (or complex64) matrix whose 1-norm lies in
# (0.0512, 0.580] (the range torch evaluates with its degree-8 formula), exp of blockdiag(s J)
# with |s| ≈ 0.5 is off by up to 4e-5, so QᵀQ ≠ I well above rounding (1e-7 outside that
# range).  Such matrices are shifted out of the range: exp(M + cI) = e^c exp(M) because I
# commutes with M, and for a generator with zero diagonal ‖M + cI‖₁ = ‖M‖₁ + c.  The
# shifted matrix takes torch's degree-12 formula: error ≤ 5e-7 relative, in about the time
# of the plain float32 call (a float64 detour costs 2.5× at n = 512).
_SINGLE_T8_NORMS = (5.116619363445086e-02, 5.800524627688768e-01)
_SHIFT = 0.6
# Complex step: the imaginary perturbation's 1-norm relative to max(‖A‖₁, 1).  Its truncation
# error is of order STEP², and rounding does not grow as it shrinks (no difference is taken).
_COMPLEX_STEP = 2.0 ** -20


def _one_norm(m: torch.Tensor) -> float:
    return float(m.abs().sum(-2).amax()) if m.numel() else 0.0


def _exp(m: torch.Tensor) -> torch.Tensor:
    """torch.linalg.matrix_exp(m) for one square real or complex matrix, shifted out of the
    single-precision degree-8 range (see above)."""
    if m.dtype in (torch.float32, torch.complex64):
        if _SINGLE_T8_NORMS[0] < _one_norm(m) <= _SINGLE_T8_NORMS[1]:
            shifted = m + _SHIFT * torch.eye(m.shape[-1], dtype=m.dtype, device=m.device)
            if _one_norm(shifted) > _SINGLE_T8_NORMS[1]:  # true unless m's diagonal is large
                return torch.linalg.matrix_exp(shifted).mul_(math.exp(-_SHIFT))
            wide = torch.float64 if m.dtype == torch.float32 else torch.complex128
            return torch.linalg.matrix_exp(m.to(wide)).to(m.dtype)
    return torch.linalg.matrix_exp(m)


class _MatrixExp(torch.autograd.Function):
    """exp(A), with the gradient L(Aᵀ, G) read off one complex ``torch.linalg.matrix_exp``.

    The gradient of exp at A applied to the incoming gradient G is the Fréchet
    derivative L(Aᵀ, G).  For real A and G, the complex-step identity
    (Al-Mohy & Higham, "The complex step approximation to the Fréchet derivative
    of a matrix function", Numer. Algorithms 2010)

        L(Aᵀ, G) = Im exp(Aᵀ + i h G) / h + O(h²‖G‖³)

    takes no difference, so h can be tiny (here h‖G‖₁ = 2⁻²⁰ max(‖A‖₁, 1)) and
    the result is accurate to the working precision.  torch's own backward
    exponentiates the real 2n × 2n block [[Aᵀ, G], [0, Aᵀ]] instead: 8× the
    flops of exp(A), against 4× for one complex n × n exponential.  Measured
    at n = 512, float32, against float64: relative error ~1e-7 here, 1e-4 for
    torch's backward, 3-4× faster (see docs/performance.md).  No Padé or
    Fréchet code is hand-written: both directions are one library call.
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
        grad_norm = _one_norm(grad)
        if grad_norm == 0.0:
            return torch.zeros_like(a)
        h = _COMPLEX_STEP * max(_one_norm(a), 1.0) / grad_norm
        return _exp(torch.complex(a.t(), grad * h)).imag / h


def matrix_exp(a: torch.Tensor) -> torch.Tensor:
    """``torch.linalg.matrix_exp(a)`` for a square real matrix, accurate to single-precision rounding
    where torch's forward or backward is not, and with a faster backward (see :class:`_MatrixExp`);
    batched or complex input goes to torch."""
    if a.dim() != 2 or a.is_complex():
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
