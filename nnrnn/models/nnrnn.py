"""The non-normal RNN (Kerg, Goyette et al. 2019)."""
from __future__ import annotations

import torch

from ..parametrizations import free_triangular_entries, schur
from .base import RecurrentModel


class NonNormalRNN(RecurrentModel):
    """h_t = φ(V h_{t-1} + W_ih x_t + b),  V = P (Λ + T) Pᵀ.

    P = exp(A) orthogonal (A skew-symmetric, expRNN), Λ = blockdiag(γ_i R(θ_i)),
    T strictly lower triangular (``triangular="strict"``, the paper's) or
    strictly lower block-triangular (``"block"``); see
    :mod:`nnrnn.parametrizations.schur` for the exact form, odd sizes and
    initialisation (``init`` picks P's scheme: 'cayley', 'henaff' or 'random';
    θ ~ U(0, 2π), γ = 1, T = 0).

    Shapes follow ``torch.nn.RNN`` with one layer (see :mod:`nnrnn.models.base`).
    With ``nonlinearity=None, bias=False``: h_t = V h_{t-1} + W_ih x_t exactly.
    """

    def __init__(self, input_size: int, hidden_size: int, nonlinearity="modrelu", bias: bool = True,
                 batch_first: bool = False, init: str = "cayley", generator: torch.Generator | None = None,
                 triangular: str = "strict", input_init: str = "xavier", bias_init: str = "zeros"):
        super().__init__(input_size, hidden_size, nonlinearity, bias, batch_first, input_init, bias_init)
        self.weight_hh = torch.nn.Parameter(torch.empty(hidden_size, hidden_size))
        schur(self, "weight_hh", init=init, generator=generator, triangular=triangular)

    @property
    def schur_form(self):
        return self.parametrizations.weight_hh[0]

    def recurrent_matrix(self) -> torch.Tensor:
        return self.weight_hh

    def schur_factors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(P, Λ, T) with V = P (Λ + T) Pᵀ."""
        return self.schur_form.factors(self.parametrizations.weight_hh.original)

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        """δ Σ_i (1 - γ_i)² + (t_decay / 2) ‖T‖²_F: its gradient is the paper's δ penalty plus t_decay · T,
        the weight decay on T of the authors' code (see :meth:`SchurForm.regularization`)."""
        return self.schur_form.regularization(delta, t_decay)

    @classmethod
    def parameter_count(cls, input_size, hidden_size, bias=True, nonlinearity="modrelu", triangular="strict",
                        **_) -> int:
        n = hidden_size
        generator = n * (n - 1) // 2
        triangle = free_triangular_entries(n, triangular)
        return cls.shared_parameter_count(input_size, n, bias, nonlinearity) + generator + triangle + n // 2 + (n + 1) // 2
