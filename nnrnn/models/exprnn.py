"""expRNN (Lezcano-Casado & Martínez-Rubio 2019): V = exp(A), A skew-symmetric."""
from __future__ import annotations

import torch

from ..parametrizations import orthogonal
from .base import RecurrentModel


class ExpRNN(RecurrentModel):
    """h_t = φ(exp(A) h_{t-1} + W_ih x_t + b), φ = modReLU by default.

    ``init``: 'henaff', 'cayley' or 'random' for the skew-symmetric A; its
    free entries live in ``parametrizations.weight_hh.original``.
    """

    def __init__(self, input_size: int, hidden_size: int, nonlinearity="modrelu", bias: bool = True,
                 batch_first: bool = False, init: str = "henaff", input_init: str = "xavier", bias_init: str = "zeros"):
        super().__init__(input_size, hidden_size, nonlinearity, bias, batch_first, input_init, bias_init)
        self.weight_hh = torch.nn.Parameter(torch.empty(hidden_size, hidden_size))
        orthogonal(self, "weight_hh", init=init)

    def recurrent_matrix(self) -> torch.Tensor:
        return self.weight_hh

    @classmethod
    def parameter_count(cls, input_size, hidden_size, bias=True, nonlinearity="modrelu", **_) -> int:
        return cls.shared_parameter_count(input_size, hidden_size, bias, nonlinearity) + hidden_size * (hidden_size - 1) // 2
