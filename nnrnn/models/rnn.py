"""Unconstrained RNNs: vanilla ("rnn", Glorot normal V) and "rnn-orth" (V initialised
orthogonal, then trained freely; Henaff et al. 2016)."""
from __future__ import annotations

import torch
from torch import nn

from ..parametrizations.expm import expm_skew
from ..parametrizations.orthogonal import INITS, init_skew_, skew
from .base import RecurrentModel


class VanillaRNN(RecurrentModel):
    """h_t = φ(V h_{t-1} + W_ih x_t + b), V = ``weight_hh_l{k}`` free, Glorot normal.

    Arguments as :class:`~nnrnn.models.base.RecurrentModel` (torch.nn.RNN's); nonlinearity defaults to
    the paper's modReLU.
    """

    def _make_recurrent(self, suffix, factory):
        self.register_parameter("weight_hh" + suffix, nn.Parameter(torch.empty(self.hidden_size, self.hidden_size,
                                                                               **factory)))
        self._reset_recurrent(suffix)

    def _reset_recurrent(self, suffix):
        nn.init.xavier_normal_(getattr(self, "weight_hh" + suffix))

    def _compose(self, suffix):
        return getattr(self, "weight_hh" + suffix)

    def _recurrent_parameters(self, suffix):
        return [getattr(self, "weight_hh" + suffix)]

    @classmethod
    def parameter_count(cls, input_size, hidden_size, bias=True, nonlinearity="modrelu", num_layers=1,
                        bidirectional=False, **_) -> int:
        return (cls.shared_parameter_count(input_size, hidden_size, bias, nonlinearity, num_layers, bidirectional)
                + cls.cells_count(num_layers, bidirectional) * hidden_size ** 2)


class OrthogonalInitRNN(VanillaRNN):
    """As :class:`VanillaRNN`, with V orthogonal at initialisation only.

    ``init="random"``: Haar-random (``torch.nn.init.orthogonal_``); ``"cayley"``
    or ``"henaff"``: exp of that scheme's skew-symmetric matrix (the paper's
    PTB-300 setting uses Cayley).
    """

    def __init__(self, *args, init: str = "random", **kwargs):
        if init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
        self.init = init
        super().__init__(*args, **kwargs)

    def _reset_recurrent(self, suffix):
        weight = getattr(self, "weight_hh" + suffix)
        with torch.no_grad():
            if self.init == "random":
                nn.init.orthogonal_(weight)
            else:
                generator = init_skew_(torch.empty(weight.shape, dtype=torch.float64), self.init)
                weight.copy_(expm_skew(skew(generator)))
