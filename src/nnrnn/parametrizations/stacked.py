"""The Schur-form constraint on some square blocks of a stacked gate weight (the nnGRU's recurrent weight).

A gated layer keeps its gates' recurrent matrices stacked in one weight, as torch.nn.GRU's
``weight_hh_l0`` = [W_hr; W_hz; W_hn] (3N × N).  :class:`StackedSchurForm` composes such a weight
block by block,

    W = [B_1; …; B_k],    B_j = P_j (Λ_j + T_j) P_jᵀ  for a constrained block j,  free otherwise,

each constrained block with its own :class:`~nnrnn.parametrizations.SchurForm` (its own P_j = exp(A_j),
θ_j, γ_j and T_j).  The weight stays one tensor, so torch's fused GRU kernels run on it unchanged.

Its originals (``torch.nn.utils.parametrize`` with several): ``original0`` holds the free blocks stacked
in their order (absent when every block is constrained), then one skew generator storage (N × N, its
strict lower triangle used) per constrained block, in block order.
"""
from __future__ import annotations

import torch
from torch import nn

from .orthogonal import check_init, init_skew_
from .registration import Parametrization, register
from .schur import SchurForm


class StackedSchurForm(Parametrization):
    """Parametrization ``(free, A_1, …) -> [B_1; …; B_k]`` with each constrained block B_j = P_j (Λ_j + T_j) P_jᵀ.

    Args:
        n: the size N of each square block.
        constrained: one bool per block, True where the block is in Schur form.
        init, triangular, generator: as :class:`~nnrnn.parametrizations.SchurForm`'s, for every
            constrained block.
        dtype, device: factory keywords.

    Attributes:
        forms: the :class:`~nnrnn.parametrizations.SchurForm` of each constrained block, in block order
            (each owns its ``theta``, ``gamma`` and ``lower``).
        constrained: the flags given.
    """

    def __init__(self, n: int, constrained: tuple[bool, ...], init: str = "cayley", triangular: str = "strict",
                 generator: torch.Generator | None = None, dtype=None, device=None):
        super().__init__()
        check_init(init)
        if not constrained or not all(isinstance(c, bool) for c in constrained) or not any(constrained):
            raise ValueError(f"constrained must be a non-empty tuple of bools with at least one True; "
                             f"got {constrained!r}")
        self.n, self.constrained, self.init = n, tuple(constrained), init
        self._generator = generator
        self.forms = nn.ModuleList(SchurForm(n, init=init, dtype=dtype, device=device, generator=generator,
                                             triangular=triangular) for c in constrained if c)
        for form in self.forms:
            form._generator = None  # drawn from already; a torch.Generator is not picklable
        self._applied = False

    @property
    def has_free(self) -> bool:
        return not all(self.constrained)

    def generator_indices(self) -> list[int]:
        """The indices i of the originals (``original{i}``) that are skew generators."""
        first = 1 if self.has_free else 0
        return list(range(first, first + len(self.forms)))

    def generators(self, plist) -> list[nn.Parameter]:
        return [getattr(plist, f"original{i}") for i in self.generator_indices()]

    def forward(self, *originals: torch.Tensor) -> torch.Tensor:
        free = originals[0].split(self.n) if self.has_free else ()
        generators = iter(originals[1:] if self.has_free else originals)
        forms, free = iter(self.forms), iter(free)
        return torch.cat([next(forms)(next(generators)) if c else next(free) for c in self.constrained])

    def factors(self, originals, block: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(P, Λ, T) of constrained block ``block`` (its index among all blocks), from the originals."""
        if not (0 <= block < len(self.constrained)) or not self.constrained[block]:
            raise ValueError(f"block must index a constrained block ({self.constrained}); got {block!r}")
        j = sum(self.constrained[:block])
        return self.forms[j].factors(originals[self.generator_indices()[j]])

    def form(self, block: int) -> SchurForm:
        """The :class:`SchurForm` of constrained block ``block`` (its index among all blocks)."""
        if not (0 <= block < len(self.constrained)) or not self.constrained[block]:
            raise ValueError(f"block must index a constrained block ({self.constrained}); got {block!r}")
        return self.forms[sum(self.constrained[:block])]

    @torch.no_grad()
    def right_inverse(self, weight: torch.Tensor):
        if self._applied:
            raise ValueError("a weight with Schur-form blocks cannot be assigned directly (not every matrix has "
                             "this form); set its free blocks (parametrizations.<name>.original0) and the "
                             "factors of each Schur form instead")
        k = len(self.constrained)
        if weight.shape != (k * self.n, self.n):
            raise ValueError(f"StackedSchurForm needs a {k * self.n}×{self.n} weight; got {tuple(weight.shape)}")
        self._applied = True
        blocks = weight.split(self.n)
        free = [b for b, c in zip(blocks, self.constrained) if not c]
        generator, self._generator = self._generator, None  # not picklable, and only needed once
        generators = [init_skew_(torch.empty_like(blocks[0]), self.init, generator) for _ in self.forms]
        return tuple(([torch.cat(free).clone()] if free else []) + generators)

    @torch.no_grad()
    def reset_(self, originals) -> None:
        """Re-draw each constrained block's factors as a fresh constraint has them (P by ``init`` into its
        generator original, θ ~ U(0, 2π), γ = 1, T = 0); the free blocks are the caller's."""
        for form, index in zip(self.forms, self.generator_indices()):
            form.reset_(originals[index])

    def regularization(self, delta: float, t_decay: float) -> torch.Tensor:
        """Σ over the constrained blocks of δ Σ_i (1 - γ_i)² + (t_decay / 2) ‖T‖²_F
        (:meth:`SchurForm.regularization`)."""
        return sum(form.regularization(delta, t_decay) for form in self.forms)


def stacked_schur(module: nn.Module, name: str, constrained: tuple[bool, ...], init: str = "cayley",
                  triangular: str = "strict", generator: torch.Generator | None = None) -> nn.Module:
    """Put :class:`StackedSchurForm` on ``module.<name>`` (k·N × N, k = len(constrained)); returns ``module``."""
    weight = getattr(module, name, None)
    k = len(constrained)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2 or weight.shape[0] != k * weight.shape[1]:
        raise ValueError(f"stacked_schur() needs a {k}N × N weight at {name!r}; got {getattr(weight, 'shape', None)}")
    form = StackedSchurForm(weight.shape[1], tuple(constrained), init=init, triangular=triangular,
                            generator=generator, dtype=weight.dtype, device=weight.device)
    return register(module, name, form, "stacked_schur()")
