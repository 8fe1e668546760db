"""The complex Schur form of the complex nnRNN's recurrent matrix.

    V = P (Λ + T) Pᴴ,    P = exp(A) unitary,    Λ = diag(γ_j e^{iθ_j}),    T strictly lower triangular

* A is skew-Hermitian (Aᴴ = −A: a real skew-symmetric part and an imaginary symmetric part, whose
  diagonal is purely imaginary), stored in one real N × N tensor X, the parametrization's
  ``original``: the strict lower triangle of X is Re A below the diagonal, the strict upper triangle
  of X is Im A above it (Im A is symmetric), and the diagonal of X is Im A's diagonal,

      Re A = tril(X, −1) − tril(X, −1)ᵀ,    Im A = triu(X, 1) + triu(X, 1)ᵀ + diag(X),

  N² real numbers, every one of them used.  P = exp(A) by :func:`expm_skew_hermitian`: the truncated
  Taylor series with scaling and squaring of :mod:`.expm`, its degree and scaling chosen from the 2-norm
  (A is normal; −A² = AᴴA is Hermitian positive semidefinite, so the same power iteration bounds it),
  evaluated in complex arithmetic under autograd.  Measured at N = 360 in float32 against
  ``torch.linalg.matrix_exp`` on A (whose backward exponentiates a 2N × 2N block matrix and whose scaling
  comes from the 1-norm) and against ``expm_skew`` of A's real embedding (2N × 2N real): a forward and
  backward pass in about a fifth and two fifths of their times, with PᴴP − I at 1.5e-5 (Frobenius) against
  2.6e-4 for ``matrix_exp`` (docs/performance.md, "The GRUs and the complex nnRNN").
* Λ has one free angle θ_j and one modulus γ_j per unit (N each); T is complex, its real and
  imaginary parts two real N × N tensors masked to the strict lower triangle (N(N−1) real numbers).
  Λ + T is lower triangular, so its eigenvalues (and V's) are exactly γ_j e^{iθ_j}.

The weight itself is real, (2, N, N) = [Re V, Im V], so that it is an ordinary real tensor for
``torch.nn.utils.parametrize`` (same dtype as its storage), the optimizers and saving.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ..kernels.operations import fixed_exponential_plan
from .expm import (MAX_SQUARINGS, NORM_SAFETY, fixed_plan, plan, spectral_norm_from_square, squarings,
                   taylor_series, within_capacity)
from .registration import Parametrization, register

INITS = ("random", "identity")


def skew_hermitian(x: torch.Tensor) -> torch.Tensor:
    """A (complex) from its real storage X (see the module docstring)."""
    lower, upper = x.tril(-1), x.triu(1)
    real = lower - lower.transpose(-2, -1)
    imag = upper + upper.transpose(-2, -1) + torch.diag_embed(x.diagonal(dim1=-2, dim2=-1))
    return torch.complex(real, imag)


def storage_of(a: torch.Tensor) -> torch.Tensor:
    """X with ``skew_hermitian(X) = a`` for a skew-Hermitian ``a`` (the inverse of :func:`skew_hermitian`)."""
    return a.real.tril(-1) + a.imag.triu(1) + torch.diag_embed(a.imag.diagonal(dim1=-2, dim2=-1))


def expm_skew_hermitian(a: torch.Tensor) -> torch.Tensor:
    """exp(A) for a skew-Hermitian A (complex N × N): the Taylor series T_m(A / 2^s)^(2^s) evaluated by
    Paterson–Stockmeyer with the plans :func:`~nnrnn.parametrizations.expm.expm_skew` has for real
    skew-symmetric matrices, from ‖A‖₂ (power iteration on AᴴA = −A², times a safety margin): fixed, the
    scaling chosen on the device (where :func:`nnrnn.kernels.fixed_exponential_plan` says, and while
    compiling), or read on the host; differentiated by autograd through the same products."""
    n = a.shape[-1]
    eye = torch.eye(n, dtype=a.dtype, device=a.device)
    real = torch.float64 if a.dtype == torch.complex128 else torch.float32
    if n == 0 or a.device.type == "meta":
        return eye + a
    a2 = a @ a
    theta = NORM_SAFETY * spectral_norm_from_square(a2.detach())
    if not (torch.compiler.is_compiling() or fixed_exponential_plan(a)):
        read = float(theta)  # not finite where A² overflowed: no plan is accurate, P is NaN as the fixed plan's
        s, m, q = plan(read if math.isfinite(read) else 0.0, real)
        scale = 2.0 ** -s
        p, _ = taylor_series(a * scale, a2 * scale ** 2, m, q, eye)
        for _ in range(s):
            p = p @ p
        return p if math.isfinite(read) else torch.full_like(p, math.nan)
    m, q = fixed_plan(real)
    s = squarings(theta)
    scale = torch.exp2(-s).to(a.dtype)
    p, _ = taylor_series(a * scale, a2 * (scale * scale), m, q, eye)
    for k in range(MAX_SQUARINGS):
        p = torch.where(s > k, p @ p, p)
    return within_capacity(p, theta)


@torch.no_grad()
def init_skew_hermitian_(x: torch.Tensor, init: str, generator: torch.Generator | None = None) -> torch.Tensor:
    """Fill the storage ``x`` (N × N) of P's generator: ``'random'``: P Haar-distributed on U(N) (QR of a
    complex Gaussian, its principal logarithm); ``'identity'``: A = 0, P = I."""
    if init not in INITS:
        raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
    n = x.shape[-1]
    if init == "identity":
        return x.zero_()
    g = torch.complex(torch.randn(n, n, generator=generator, dtype=torch.float64),
                      torch.randn(n, n, generator=generator, dtype=torch.float64))
    q, r = torch.linalg.qr(g)
    d = r.diagonal()
    q = q * (d / d.abs())  # Haar measure on U(N)
    import scipy.linalg  # here, not at the top: scipy.linalg costs `import nnrnn` up to a second (docs/performance.md)
    log = scipy.linalg.logm(q.numpy())
    log = 0.5 * (log - np.conj(log.T))  # skew-Hermitian to rounding: made exactly so
    return x.copy_(storage_of(torch.from_numpy(log)))


class ComplexSchurForm(Parametrization):
    """Parametrization ``X -> [Re V, Im V]`` (2 × N × N), V = P (Λ + T) Pᴴ with P = exp(skew_hermitian(X)).

    Attributes:
        theta: (N) the angles of Λ, U(0, 2π) at the start.
        gamma: (N) the moduli of Λ, 1 at the start.
        lower_real, lower_imag: (N × N) storage of Re T and Im T, masked to the strict lower triangle on
            use; 0 at the start.
    """

    def __init__(self, n: int, init: str = "random", dtype=None, device=None,
                 generator: torch.Generator | None = None):
        super().__init__()
        if init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
        self.n, self.init, self._generator = n, init, generator
        factory = {"dtype": dtype or torch.get_default_dtype(), "device": device}
        theta = torch.rand(n, generator=generator, dtype=torch.float64) * (2 * math.pi)
        self.theta = nn.Parameter(theta.to(**factory))
        self.gamma = nn.Parameter(torch.ones(n, **factory))
        self.lower_real = nn.Parameter(torch.zeros(n, n, **factory))
        self.lower_imag = nn.Parameter(torch.zeros(n, n, **factory))
        self.register_buffer("mask", torch.ones(n, n, dtype=torch.bool, device=device).tril(-1).to(factory["dtype"]))
        self._applied = False

    def unitary(self, x: torch.Tensor) -> torch.Tensor:
        """P = exp(A) from the storage ``x``."""
        return expm_skew_hermitian(skew_hermitian(x))

    def triangular_factor(self) -> torch.Tensor:
        """T (complex, strictly lower triangular)."""
        return torch.complex(self.lower_real * self.mask, self.lower_imag * self.mask)

    def eigenvalues(self) -> torch.Tensor:
        """γ_j e^{iθ_j}: the diagonal of Λ, the spectrum of Λ + T and of V."""
        return torch.polar(self.gamma, self.theta)

    def factors(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(P, Λ, T), complex, with V = P (Λ + T) Pᴴ."""
        return self.unitary(x), torch.diag_embed(self.eigenvalues()), self.triangular_factor()

    def compose(self, x: torch.Tensor) -> torch.Tensor:
        """V (complex N × N)."""
        p, lam, t = self.factors(x)
        return p @ (lam + t) @ p.conj().transpose(-2, -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.compose(x)
        return torch.stack([v.real, v.imag])

    @torch.no_grad()
    def reset_(self, original: torch.Tensor) -> None:
        """Re-draw the factors as a fresh constraint has them: P by ``init``, θ ~ U(0, 2π), γ = 1, T = 0."""
        init_skew_hermitian_(original, self.init)
        self.mask.copy_(torch.ones_like(self.mask).tril(-1))
        self.theta.copy_(torch.rand(self.n, dtype=torch.float64) * (2 * math.pi))
        self.gamma.fill_(1.0)
        self.lower_real.zero_()
        self.lower_imag.zero_()

    @torch.no_grad()
    def right_inverse(self, weight: torch.Tensor) -> torch.Tensor:
        if self._applied:
            raise ValueError("a complex Schur-form weight cannot be assigned directly; set its factors instead: "
                             "parametrizations.<name>.original (P's generator), theta, gamma, lower_real, "
                             "lower_imag")
        if weight.shape != (2, self.n, self.n):
            raise ValueError(f"ComplexSchurForm({self.n}) needs a 2×{self.n}×{self.n} weight; "
                             f"got {tuple(weight.shape)}")
        self._applied = True
        generator, self._generator = self._generator, None  # not picklable, and only needed once
        return init_skew_hermitian_(weight.new_empty(self.n, self.n), self.init, generator)

    def regularization(self, delta: float, t_decay: float) -> torch.Tensor:
        """δ Σ_j (1 − γ_j)² + (t_decay / 2) ‖T‖²_F (‖T‖² = ‖Re T‖² + ‖Im T‖²), nnRNN's penalty."""
        for name, value in (("delta", delta), ("t_decay", t_decay)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ValueError(f"{name} must be zero or a positive finite number; got {value!r}")
        t = self.triangular_factor()
        return delta * (1 - self.gamma).pow(2).sum() + (0.5 * t_decay) * (t.real.pow(2).sum() + t.imag.pow(2).sum())


def complex_schur(module: nn.Module, name: str, init: str = "random",
                  generator: torch.Generator | None = None) -> nn.Module:
    """Put :class:`ComplexSchurForm` on the real (2, N, N) weight ``module.<name>``; returns ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 3 or weight.shape[0] != 2 \
            or weight.shape[1] != weight.shape[2]:
        raise ValueError(f"complex_schur() needs a real 2 × N × N weight at {name!r}; "
                         f"got {getattr(weight, 'shape', None)}")
    form = ComplexSchurForm(weight.shape[1], init=init, dtype=weight.dtype, device=weight.device, generator=generator)
    return register(module, name, form, "complex_schur()")
