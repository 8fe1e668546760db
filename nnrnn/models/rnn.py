"""Unconstrained RNNs: vanilla ("rnn", Glorot normal V) and "rnn-orth" (V initialised
orthogonal, then trained freely; Henaff et al. 2016)."""
from __future__ import annotations

import torch
from torch import nn

from ..parametrizations.expm import expm_skew
from ..parametrizations.orthogonal import INITS, init_skew_, skew
from .base import RecurrentModel


class VanillaRNN(RecurrentModel):
    """h_t = φ(V h_{t-1} + W_ih x_t + b), V = ``weight_hh`` free, Glorot normal."""

    def __init__(self, input_size: int, hidden_size: int, nonlinearity="modrelu", bias: bool = True,
                 batch_first: bool = False, input_init: str = "xavier", bias_init: str = "zeros"):
        super().__init__(input_size, hidden_size, nonlinearity, bias, batch_first, input_init, bias_init)
        self.weight_hh = nn.Parameter(torch.empty(hidden_size, hidden_size))
        nn.init.xavier_normal_(self.weight_hh)

    def recurrent_matrix(self) -> torch.Tensor:
        return self.weight_hh

    @classmethod
    def parameter_count(cls, input_size, hidden_size, bias=True, nonlinearity="modrelu", **_) -> int:
        return cls.shared_parameter_count(input_size, hidden_size, bias, nonlinearity) + hidden_size ** 2


class OrthogonalInitRNN(VanillaRNN):
    """As :class:`VanillaRNN`, with V orthogonal at initialisation only.

    ``init="random"``: Haar-random (``torch.nn.init.orthogonal_``); ``"cayley"``
    or ``"henaff"``: exp of that scheme's skew-symmetric matrix (the paper's
    PTB-300 setting uses Cayley).
    """

    def __init__(self, input_size: int, hidden_size: int, nonlinearity="modrelu", bias: bool = True,
                 batch_first: bool = False, init: str = "random", input_init: str = "xavier", bias_init: str = "zeros"):
        if init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
        super().__init__(input_size, hidden_size, nonlinearity, bias, batch_first, input_init, bias_init)
        with torch.no_grad():
            if init == "random":
                nn.init.orthogonal_(self.weight_hh)
            else:
                generator = init_skew_(torch.empty_like(self.weight_hh), init)
                self.weight_hh.copy_(expm_skew(skew(generator)))
