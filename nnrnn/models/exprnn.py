"""expRNN (Lezcano-Casado & Martínez-Rubio 2019): V = exp(A), A skew-symmetric."""
from __future__ import annotations

import torch

from ..parametrizations import orthogonal
from ..parametrizations.orthogonal import INITS, init_skew_
from .base import RecurrentModel


class ExpRNN(RecurrentModel):
    """h_t = φ(exp(A) h_{t-1} + W_ih x_t + b), φ = modReLU by default.

    Arguments as :class:`~nnrnn.models.base.RecurrentModel` (torch.nn.RNN's), then ``init``:
    'henaff', 'cayley' or 'random' for the skew-symmetric A, whose free entries live in
    ``parametrizations.weight_hh_l{k}.original``, and ``dynamic``: V = B exp(A) with a base moved by
    :func:`nnrnn.parametrizations.rebase_` (off, as in the paper, by default).
    """

    def __init__(self, *args, init: str = "henaff", dynamic: bool = False, **kwargs):
        if init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
        self.init, self.dynamic = init, bool(dynamic)
        super().__init__(*args, **kwargs)

    def _make_recurrent(self, suffix, factory):
        name = "weight_hh" + suffix
        self.register_parameter(name, torch.nn.Parameter(torch.empty(self.hidden_size, self.hidden_size, **factory)))
        orthogonal(self, name, init=self.init, dynamic=self.dynamic)

    def _reset_recurrent(self, suffix):
        plist = self.parametrizations["weight_hh" + suffix]
        init_skew_(plist.original, self.init)
        plist[0].reset_base_()

    def _compose(self, suffix):
        return getattr(self, "weight_hh" + suffix)

    def _recurrent_parameters(self, suffix):
        plist = self.parametrizations["weight_hh" + suffix]
        return [plist.original] + ([plist[0].base] if self.dynamic else [])

    @classmethod
    def parameter_count(cls, input_size, hidden_size, bias=True, nonlinearity="modrelu", num_layers=1,
                        bidirectional=False, **_) -> int:
        return (cls.shared_parameter_count(input_size, hidden_size, bias, nonlinearity, num_layers, bidirectional)
                + cls.cells_count(num_layers, bidirectional) * hidden_size * (hidden_size - 1) // 2)
