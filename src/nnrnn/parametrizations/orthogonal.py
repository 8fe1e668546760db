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
import torch
from torch import nn

from ..kernels.autograd import LOW_PRECISION

from ..kernels.operations import matmul
from .expm import expm_skew
from .registration import Parametrization, check_unconstrained, register

INITS = ("henaff", "cayley", "random")


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
    import scipy.linalg  # here, not at the top: scipy.linalg costs `import nnrnn` up to a second (docs/performance.md)
    log = scipy.linalg.logm(q.detach().cpu().double().numpy())
    log = np.real(log)
    log = 0.5 * (log - log.T)
    with torch.no_grad():
        return x.copy_(torch.from_numpy(np.tril(log, -1)))


INIT_FUNCTIONS = {"henaff": henaff_, "cayley": cayley_, "random": random_orthogonal_}


def check_init(init) -> str:
    """``init`` if it names one of :data:`INITS`, else a ValueError listing them."""
    if init not in INIT_FUNCTIONS:
        raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
    return init


def init_skew_(x: torch.Tensor, init: str, generator: torch.Generator | None = None) -> torch.Tensor:
    """Fill the generator ``x`` with one of :data:`INITS`."""
    return INIT_FUNCTIONS[check_init(init)](x, generator)


class OrthogonalFactor(Parametrization):
    """Q = exp(skew(X)), or with a moving base (dynamic trivialization) Q = B exp(skew(X)).

    Static (``dynamic=False``, the paper's and expRNN's): Q = exp(skew(X)) throughout.

    Dynamic (Lezcano-Casado 2019, "Trivializations for gradient-based optimization on
    manifolds"): a buffer B (orthogonal, initially I) and Q = B exp(skew(X)).  :meth:`rebase_`
    moves the base to the current point, B ← B exp(skew(X)), and sets X = 0, so the optimizer
    always works near the identity, where the exponential is cheap: right after a rebase
    exp(0) = I costs no products and the gradient is just Bᵀ ∂L/∂Q.  Rebasing after every
    update is Riemannian gradient descent with the exponential retraction; it changes the
    optimisation path (the optimizer's state is kept across rebases, as in that paper), so it is
    an option, off in the paper's presets.  Every ``NS_EVERY`` rebases B takes one
    Newton–Schulz step, B ← B (3I − BᵀB)/2, so that rounding does not accumulate in it.
    """

    NS_EVERY = 64

    def __init__(self, n: int | None = None, dynamic: bool = False, dtype=None, device=None):
        super().__init__()
        self.n = n  # the size of Q; None only for a static factor made without it
        self.dynamic = bool(dynamic)
        if self.dynamic:
            if n is None:
                raise ValueError("a dynamic orthogonal factor needs its size n")
            self.register_buffer("base", torch.eye(n, dtype=dtype, device=device))
            self.register_buffer("rebases", torch.zeros((), dtype=torch.long, device=device))

    @torch.no_grad()
    def reset_base_(self) -> None:
        """B = I and no rebases yet, as a new factor has them (dynamic only; nothing otherwise)."""
        if self.dynamic:
            self.base.copy_(torch.eye(self.base.shape[0], dtype=self.base.dtype, device=self.base.device))
            self.rebases.zero_()

    def orthogonal(self, x: torch.Tensor) -> torch.Tensor:
        """Q from the generator storage ``x`` (in float32 for half-precision x, rounded once)."""
        if x.dtype in LOW_PRECISION:
            q = expm_skew(skew(x.float()))
            return (matmul(self.base.float(), q) if self.dynamic else q).to(x.dtype)
        q = expm_skew(skew(x))
        return matmul(self.base, q) if self.dynamic else q

    @torch.no_grad()
    def rebase_(self, original: torch.Tensor) -> None:
        """B ← B exp(skew(X)), X ← 0 (dynamic only): Q is unchanged, the optimizer starts again at X = 0."""
        if not self.dynamic:
            raise ValueError("rebase_ needs a dynamic orthogonal factor (dynamic=True)")
        self.base.copy_(self.orthogonal(original))
        original.zero_()
        self.rebases += 1
        if int(self.rebases) % self.NS_EVERY == 0:
            b = self.base
            self.base.copy_(matmul(b, 1.5 * torch.eye(b.shape[0], dtype=b.dtype, device=b.device)
                                   - 0.5 * matmul(b.T, b)))


class MatrixExpOrthogonal(OrthogonalFactor):
    """Parametrization ``X -> exp(skew(X))`` (or ``B exp(skew(X))``, dynamic; see
    :class:`OrthogonalFactor`); half-precision weights are exponentiated in float32 and rounded once."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.orthogonal(x)

    @torch.no_grad()
    def right_inverse(self, q: torch.Tensor) -> torch.Tensor:
        # parametrize resizes ``original`` to whatever this returns: a rotation of another size must not pass
        n = getattr(self, "n", None)  # None also in a factor pickled before it kept its size
        if q.dim() != 2 or (n is not None and q.shape != (n, n)):
            raise ValueError(f"an orthogonal {n}×{n} weight can only be assigned a {n}×{n} rotation; got shape "
                             f"{tuple(q.shape)}")
        eye = torch.eye(q.shape[-1], dtype=q.dtype, device=q.device)
        if self.dynamic:
            q = self.base.T @ q  # X with B exp(skew(X)) = q
        if torch.equal(q, eye):
            return torch.zeros_like(q)
        if not torch.allclose(q.transpose(-2, -1) @ q, eye, atol=1e-4) or torch.linalg.det(q) <= 0:
            raise ValueError("an orthogonal weight can only be assigned a rotation matrix (QᵀQ = I, det Q = +1)")
        return log_orthogonal_(torch.empty_like(q), q)


def rebase_(module: nn.Module) -> int:
    """Move the base of every dynamic orthogonal factor in ``module`` to its current point (call it after
    ``optimizer.step()`` every K updates); returns how many were moved."""
    from torch.nn.utils import parametrize
    moved = 0
    for sub in module.modules():
        if not parametrize.is_parametrized(sub):
            continue
        for plist in sub.parametrizations.values():
            if isinstance(plist[0], OrthogonalFactor) and plist[0].dynamic:
                plist[0].rebase_(plist.original)
                moved += 1
    return moved


def square_weight(module: nn.Module, name: str, who: str) -> torch.Tensor:
    """``module.<name>``, or a ValueError if it is not a square 2-d tensor."""
    weight = getattr(module, name, None)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2 or weight.shape[0] != weight.shape[1]:
        raise ValueError(f"{who} needs a square 2-d weight at {name!r}; got {getattr(weight, 'shape', None)}")
    return weight


def orthogonal(module: nn.Module, name: str = "weight", init: str | None = "henaff", dynamic: bool = False
               ) -> nn.Module:
    """Constrain ``module.<name>`` (square) to SO(n) through Q = exp(skew(X)).

    ``init`` picks the generator's initialisation (:data:`INITS`); ``None``
    keeps the current weight (which must then be a rotation).  The free
    parameter is ``module.parametrizations.<name>.original``.  ``dynamic``:
    Q = B exp(skew(X)) with a base B that :func:`rebase_` moves (see
    :class:`OrthogonalFactor`).
    """
    weight = square_weight(module, name, "orthogonal()")
    if init is not None:
        check_init(init)
    check_unconstrained(module, name, "orthogonal()")
    if init is not None:
        with torch.no_grad():  # a rotation, so right_inverse accepts it; replaced just below
            weight.copy_(torch.eye(weight.shape[0], dtype=weight.dtype, device=weight.device))
    register(module, name, MatrixExpOrthogonal(weight.shape[0], dynamic, weight.dtype, weight.device), "orthogonal()")
    if init is not None:
        init_skew_(module.parametrizations[name].original, init)
    return module
