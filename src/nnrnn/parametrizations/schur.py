"""The nnRNN's Schur-form constraint on a square weight (Kerg et al. 2019, Eq. nnRNN).

    V = P (Λ + T) Pᵀ

* P = exp(A) orthogonal, A skew-symmetric (see :mod:`.orthogonal`); the free
  parameter is the parametrization's ``original`` (its strict lower triangle).
* Λ = blockdiag(γ_1 R(θ_1), …, γ_m R(θ_m)),  R(θ) = [[cos θ, -sin θ], [sin θ, cos θ]],
  m = n // 2.  The eigenvalues of V are exactly γ_i e^{±iθ_i}.
* T below the diagonal, in one of three forms (``triangular``):

  - ``"strict"`` (default; the paper's text and the authors' released code):
    every entry below the diagonal, n(n-1)/2 free entries, the (2i+1, 2i)
    entries inside the 2×2 blocks included.  A non-zero t there makes the
    block [[γc, -γs], [γs + t, γc]], whose eigenvalues move off γ e^{±iθ}
    (to γc ± sqrt(-γs(γs + t))), so the eigenvalues of V are γ_i e^{±iθ_i}
    only while those entries are zero.
  - ``"block"`` (nnrnn's variant): strictly lower *block* triangular, the
    n//2 in-block entries held at zero, n(n-1)/2 - n//2 free entries; the
    eigenvalues of V are then exactly γ_i e^{±iθ_i} throughout training.
  - ``"none"``: T ≡ 0, no free entries, so V = P Λ Pᵀ is normal (V Vᵀ = Vᵀ V) throughout training,
    with the same Λ blocks and the same δ penalty on γ: the nnRNN without its non-normal part, the
    control that isolates what T contributes.  ``lower`` is then a buffer of zeros, not a parameter
    (states keep their keys; one holding a non-zero T is refused on loading).
* Odd n: the last unit is a 1×1 block +γ_{m+1} (a real eigenvalue +γ), so
  ``gamma`` has ceil(n/2) entries and ``theta`` has n//2.

Freshly applied (paper's initialisation): P from the Henaff, Cayley or random
scheme, θ_i ~ U(0, 2π), γ_i = 1, T = 0, so every eigenvalue has modulus 1.
The weight's previous value is discarded.  No Schur decomposition is ever
computed: V is composed from its factors on every access.

Two options that are not the paper's defaults:

* ``fixed_gamma=G``: every γ_i is held at G (a buffer, not a parameter: the
  optimizer never sees it and the δ penalty counts nothing for it).  The
  supplement's Table 7 trains nnRNN with γ = 1 and γ = 0.958 this way.
* ``t_init="delay:α"``: T starts with α on its first sub-diagonal, Θ = Λ + αS
  (S the shift, S_{i+1,i} = 1): the delay line of the paper's §3 (Eq.
  simpletheta with β = 0), with Λ's blocks in place of the diagonal d; with
  ``triangular="block"`` only the between-block entries (2i+2, 2i+1) are set,
  the in-block ones being held at zero.  ``"zeros"`` (the default) is the
  paper's T = 0.  docs/design.md says what each does to the eigenvalues.
"""
from __future__ import annotations

import math
import numbers

import torch
from torch import nn

from ..kernels.autograd import autocast_off

from ..kernels.operations import matmul
from .orthogonal import LOW_PRECISION, OrthogonalFactor, check_init, init_skew_, square_weight
from .registration import register


TRIANGULAR = ("strict", "block", "none")


def check_triangular(triangular: str) -> None:
    """ValueError unless ``triangular`` names one of the shapes of T in :data:`TRIANGULAR`."""
    if triangular not in TRIANGULAR:
        raise ValueError(f"triangular must be 'strict' or 'block' (T non-normal) or 'none' (T = 0, V normal); "
                         f"got {triangular!r}")


def triangular_mask(n: int, triangular: str = "strict", dtype=torch.bool, device=None) -> torch.Tensor:
    """1 where T may be non-zero: the strict lower triangle, minus the (2i+1, 2i) entries for "block";
    nowhere for "none"."""
    check_triangular(triangular)
    if triangular == "none":
        return torch.zeros(n, n, dtype=dtype, device=device)
    mask = torch.ones(n, n, dtype=torch.bool, device=device).tril(-1)
    if triangular == "block":
        idx = torch.arange(0, n - 1, 2, device=device)
        mask[idx + 1, idx] = False
    return mask.to(dtype)


def free_triangular_entries(n: int, triangular: str = "strict") -> int:
    """How many entries of T are free (the ones of :func:`triangular_mask`)."""
    check_triangular(triangular)
    if triangular == "none":
        return 0
    return n * (n - 1) // 2 - (n // 2 if triangular == "block" else 0)


def check_fixed_gamma(fixed_gamma) -> float | None:
    """``fixed_gamma`` as a float (None stays None: γ is trained); ValueError / TypeError unless it is a
    finite number ≥ 0."""
    if fixed_gamma is None:
        return None
    if isinstance(fixed_gamma, bool) or not isinstance(fixed_gamma, (int, float)):
        raise TypeError(f"fixed_gamma must be None or a number >= 0; got {fixed_gamma!r}")
    if not (math.isfinite(fixed_gamma) and fixed_gamma >= 0):
        raise ValueError(f"fixed_gamma must be None or a finite number >= 0; got {fixed_gamma!r}")
    return float(fixed_gamma)


def parse_t_init(t_init) -> tuple[str, float]:
    """(kind, α) of a ``t_init`` string: ``"zeros"`` -> ("zeros", 0.0), ``"delay:α"`` -> ("delay", α) with α a
    positive finite number; ValueError naming ``t_init`` otherwise."""
    if t_init == "zeros":
        return "zeros", 0.0
    if isinstance(t_init, str) and t_init.startswith("delay:"):
        try:
            alpha = float(t_init[len("delay:"):])
        except ValueError:
            alpha = math.nan
        if math.isfinite(alpha) and alpha > 0:
            return "delay", alpha
    raise ValueError(f"t_init must be 'zeros' or 'delay:ALPHA' with ALPHA a positive number (e.g. 'delay:1.0'); "
                     f"got {t_init!r}")


def check_t_init(t_init, triangular: str) -> None:
    """:func:`parse_t_init`'s checks, and a ValueError naming both options for a T-setting ``t_init`` with
    ``triangular="none"``, where T has no entry to set."""
    kind, _ = parse_t_init(t_init)
    if kind != "zeros" and triangular == "none":
        raise ValueError(f"t_init={t_init!r} sets T, and triangular='none' holds T at zero; "
                         f"give t_init='zeros' or triangular 'strict' or 'block'")


def initial_triangular(n: int, t_init: str = "zeros", triangular: str = "strict", dtype=None,
                       device=None) -> torch.Tensor:
    """T at initialisation (n × n): zeros, or for ``"delay:α"`` α on the first sub-diagonal where
    ``triangular``'s mask leaves it free (all of it for "strict", the between-block entries for "block")."""
    kind, alpha = parse_t_init(t_init)
    mask = triangular_mask(n, triangular, dtype=dtype or torch.get_default_dtype(), device=device)
    if kind == "zeros":
        return torch.zeros_like(mask)
    return alpha * torch.ones(n, n, dtype=mask.dtype, device=device).tril(-1).triu(-1) * mask


def rotation_blocks(theta: torch.Tensor, gamma: torch.Tensor, n: int) -> torch.Tensor:
    """Λ = blockdiag(γ_i R(θ_i)) (n × n), with a trailing 1×1 block γ_last when n is odd."""
    m = n // 2
    c = gamma[:m] * torch.cos(theta)
    s = gamma[:m] * torch.sin(theta)
    diag = torch.stack([c, c], -1).reshape(-1)
    sub = torch.stack([s, torch.zeros_like(s)], -1).reshape(-1)[: max(2 * m - 1, 0)]
    if n % 2:
        diag = torch.cat([diag, gamma[m:]])
        sub = torch.cat([sub, gamma.new_zeros(1)]) if m else gamma.new_zeros(0)
    return torch.diag_embed(diag) + torch.diag_embed(sub, -1) - torch.diag_embed(sub, 1)


class SchurForm(OrthogonalFactor):
    """Parametrization ``X -> P (Λ + T) Pᵀ`` with P = exp(skew(X)) (or ``B exp(skew(X))`` with
    ``dynamic=True``: see :class:`~nnrnn.parametrizations.orthogonal.OrthogonalFactor`).

    The parametrization owns θ (``theta``, n//2), γ (``gamma``, ceil(n/2)) and
    the unconstrained storage of T (``lower``, n × n, masked on use by
    ``triangular``'s mask).

    Args:
        n: the size of the square weight.
        init: P's initial skew generator: ``"cayley"``, ``"henaff"`` or ``"random"``.
        triangular: T's shape, ``"strict"``, ``"block"`` or ``"none"`` (T ≡ 0) (module docstring).
        dynamic: P = B exp(skew(X)) with a movable base B.
        fixed_gamma: None (γ trained, starting at 1) or G ≥ 0: every γ_i held at G.  ``gamma`` is then a
            buffer (saved in the state dict, copied by deepcopy and pickle), not a parameter.
        t_init: T at initialisation: ``"zeros"`` (the paper's) or ``"delay:α"`` (α on the first
            sub-diagonal where ``triangular`` leaves it free; refused with ``triangular="none"``).
    """

    def __init__(self, n: int, init: str = "cayley", dtype=None, device=None,
                 generator: torch.Generator | None = None, triangular: str = "strict", dynamic: bool = False,
                 fixed_gamma: float | None = None, t_init: str = "zeros"):
        super().__init__(n, dynamic, dtype, device)
        check_init(init)
        check_triangular(triangular)
        self.fixed_gamma = check_fixed_gamma(fixed_gamma)
        check_t_init(t_init, triangular)
        self.n = n
        self.init = init
        self.triangular = triangular
        self.t_init = t_init
        self._generator = generator
        factory = {"dtype": dtype or torch.get_default_dtype(), "device": device}
        # drawn in float64 whatever the dtype, so that one seed gives the same angles in every precision
        theta = torch.rand(n // 2, generator=generator, dtype=torch.float64) * (2 * math.pi)
        self.theta = nn.Parameter(theta.to(**factory))
        if self.fixed_gamma is None:
            self.gamma = nn.Parameter(torch.ones((n + 1) // 2, **factory))
        else:  # a buffer: out of parameters(), hence out of every optimizer and of the δ penalty
            self.register_buffer("gamma", torch.full(((n + 1) // 2,), self.fixed_gamma, **factory))
        lower = initial_triangular(n, t_init, triangular, **factory)
        if triangular == "none":  # T ≡ 0: a buffer, so no optimizer and no parameter count sees it
            self.register_buffer("lower", lower)
        else:
            self.lower = nn.Parameter(lower)
        self.register_buffer("mask", triangular_mask(n, triangular, **factory))
        self._applied = False

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # a held γ saved under the same key as a trained one: refuse a state whose γ is not the held value
        # rather than silently replacing it
        key = prefix + "gamma"
        if self.fixed_gamma is not None and key in state_dict:
            loaded = state_dict[key]
            if loaded.shape == self.gamma.shape and not bool((loaded == self.fixed_gamma).all()):
                error_msgs.append(f"{key} holds values other than this layer's fixed_gamma={self.fixed_gamma}; "
                                  f"load it into a layer with fixed_gamma=None (trained γ) instead")
        lower = state_dict.get(prefix + "lower")
        if self.triangular == "none" and lower is not None and bool(lower.any()):
            error_msgs.append(f"{prefix}lower holds a non-zero T, which this layer (triangular='none') would drop; "
                              f"load it into a layer with triangular 'strict' or 'block' instead")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def triangular_factor(self) -> torch.Tensor:
        """T: ``lower`` masked to the entries ``triangular`` leaves free."""
        return self.lower * self.mask

    def factors(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(P, Λ, T) with V = P (Λ + T) Pᵀ, from P's generator storage ``x``."""
        return self.orthogonal(x), rotation_blocks(self.theta, self.gamma, self.n), self.triangular_factor()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with autocast_off(x.device.type):  # V in the parameters' precision, also under autocast
            if x.dtype in LOW_PRECISION:  # composed in float32 and rounded once: a half-precision exp is inaccurate
                p = self.orthogonal(x.float())
                middle = (rotation_blocks(self.theta.float(), self.gamma.float(), self.n)
                          + self.triangular_factor().float())
                return matmul(matmul(p, middle), p.T).to(x.dtype)
            p, lam, t = self.factors(x)
            return matmul(matmul(p, lam + t), p.transpose(-2, -1))

    @torch.no_grad()
    def reset_(self, original: torch.Tensor) -> None:
        """Re-draw the factors as a fresh constraint has them: P by ``init`` (its generator written into
        ``original``), θ ~ U(0, 2π), γ = 1 (or ``fixed_gamma``), T by ``t_init`` (and B = I when dynamic).
        The buffers are written again too, so that a model made on the ``meta`` device and moved with
        ``to_empty`` is whole."""
        init_skew_(original, self.init)
        self.reset_base_()
        self.mask.copy_(triangular_mask(self.n, self.triangular, dtype=self.mask.dtype, device=self.mask.device))
        self.theta.copy_(torch.rand(self.n // 2, dtype=torch.float64) * (2 * math.pi))
        self.gamma.fill_(1.0 if self.fixed_gamma is None else self.fixed_gamma)
        self.lower.copy_(initial_triangular(self.n, self.t_init, self.triangular, dtype=self.lower.dtype,
                                            device=self.lower.device))

    @torch.no_grad()
    def right_inverse(self, weight: torch.Tensor) -> torch.Tensor:
        if self._applied:
            raise ValueError(
                "a Schur-form weight cannot be assigned directly (not every matrix has this form); "
                "set its factors instead: parametrizations.<name>.original (the generator of P), "
                "theta, gamma and lower")
        self._applied = True
        if weight.shape != (self.n, self.n):
            raise ValueError(f"SchurForm({self.n}) needs a {self.n}×{self.n} weight; got {tuple(weight.shape)}")
        generator = self._generator
        self._generator = None  # not picklable and only needed once
        return init_skew_(torch.empty_like(weight), self.init, generator)

    def regularization(self, delta: float, t_decay: float) -> torch.Tensor:
        """δ Σ_i (1 - γ_i)² + (t_decay / 2) ‖T‖²_F, the paper's penalty.

        Its gradient adds 2δ(γ_i - 1) to each γ_i and t_decay · T to T: exactly what the authors'
        code does, which puts δ Σ(1 - γ)² into the loss and applies t_decay as the optimizer's
        ``weight_decay`` on T.  (With gradient clipping the two differ: here the decay is part of
        the clipped gradient.)  With ``fixed_gamma`` the δ term is zero: a held γ is not penalised.
        """
        delta, t_decay = check_penalty_weights(delta, t_decay)
        decay = (0.5 * t_decay) * self.triangular_factor().pow(2).sum()
        if self.fixed_gamma is not None:
            return decay
        return delta * (1 - self.gamma).pow(2).sum() + decay


def check_penalty_weights(delta, t_decay) -> tuple[float, float]:
    """(delta, t_decay) as floats.  Each must be a real number (a Python or NumPy one), zero or positive and
    finite; anything else is a ValueError naming it (a flag or a string passed by mistake included, as before),
    except a tensor, which is a TypeError: it is refused, not read, since reading it would synchronise with its
    device at every update and one that requires grad would quietly make the penalty's weight trainable; pass
    ``float(delta)``."""
    values = []
    for name, value in (("delta", delta), ("t_decay", t_decay)):
        if isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a float, not a tensor; got {value!r}: pass float({name})")
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < math.inf:
            raise ValueError(f"{name} must be zero or a positive finite number; got {value!r}")
        values.append(float(value))
    return values[0], values[1]


def schur(module: nn.Module, name: str = "weight", init: str = "cayley",
          generator: torch.Generator | None = None, triangular: str = "strict", dynamic: bool = False,
          fixed_gamma: float | None = None, t_init: str = "zeros") -> nn.Module:
    """Put the Schur-form constraint on the square weight ``module.<name>``.

    Works on any module, e.g. ``schur(torch.nn.RNN(8, 64), "weight_hh_l0")``
    keeps PyTorch's fused RNN kernels while training V = P (Λ + T) Pᵀ.
    ``triangular``: "strict" (the paper's T, the default), "block" or "none"
    (T ≡ 0, V normal; see the module docstring).  ``dynamic``: P = B exp(skew(X)) with a base that
    :func:`~nnrnn.parametrizations.orthogonal.rebase_` moves (an option; the
    paper's is static).  ``fixed_gamma``: every γ_i held at this value instead
    of trained.  ``t_init``: T's initial value, ``"zeros"`` or ``"delay:α"``.
    Returns ``module``; the factors are reached through
    ``module.parametrizations.<name>[0]`` (a :class:`SchurForm`).
    """
    weight = square_weight(module, name, "schur()")
    form = SchurForm(weight.shape[0], init=init, dtype=weight.dtype, device=weight.device, generator=generator,
                     triangular=triangular, dynamic=dynamic, fixed_gamma=fixed_gamma, t_init=t_init)
    return register(module, name, form, "schur()")
