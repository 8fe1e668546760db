"""expRNN (Lezcano-Casado & Martínez-Rubio 2019): V = exp(A), A skew-symmetric."""
from __future__ import annotations

import torch

from ..parametrizations import INITS, check_init, orthogonal
from ..parametrizations.orthogonal import init_skew_
from .base import RecurrentModel, check_flag
from .published import Published


class ExpRNN(RecurrentModel):
    r"""expRNN (Lezcano-Casado & Martínez-Rubio 2019): each layer and direction computes

    .. math::
        h_t = \phi(\exp(A) h_{t-1} + W_{ih} x_t + b),

    A skew-symmetric, so V = exp(A) is orthogonal (det +1) after any update.

    Args:
        input_size, hidden_size, num_layers, nonlinearity, bias, batch_first, dropout, bidirectional,
            device, dtype: as :class:`~nnrnn.NonNormalRNN` (torch.nn.RNN's, modReLU by default).
        init: A's initialisation: ``'henaff'`` (default), ``'cayley'`` or ``'random'``.
        dynamic: V = B exp(A) with a base moved by :func:`nnrnn.parametrizations.rebase_` (off, as in
            the paper).
        input_init, bias_init: schemes of :mod:`nnrnn.models.init`.

    Inputs and outputs: as :class:`~nnrnn.NonNormalRNN`: ``input`` (L, B, N_in) (or batch-first,
    unbatched, packed), ``h_0`` (D·num_layers, B, N) → ``output`` (L, B, D·N), ``h_n`` like h_0.

    Attributes:
        weight_ih_l[k], bias_ih_l[k], modrelu_bias_l[k]: as :class:`~nnrnn.NonNormalRNN`.
        weight_hh_l[k]: V (N, N) = exp(A), composed on access; A's free entries are the strict lower
            triangle of ``parametrizations.weight_hh_l[k].original`` (N × N).
    """
    # its published figures on the protocols the grids run (nnrnn.models.published)
    PUBLISHED = (
        Published("psmnist", "test accuracy (%)", 96.6, "N = 512 (137K parameters), the 60,000 training images",
                  "Lezcano-Casado & Martínez-Rubio 2019, as quoted by the asRNN repository's README"),
        Published("ptb", "test bpc", 1.51, "N = 1024, T_PTB = 150, the full training file", "the paper's Table 1"),
    )
    DISPLAY_NAME = "expRNN"
    PAPER_OPTIMIZER = "rmsprop"  # the paper's release (utils.select_optimizer)
    LINE_STYLE = ('#d62728', (0, (6, 2, 1, 2)))

    CONFIG_OPTIONS = RecurrentModel.CONFIG_OPTIONS + ("init", "dynamic")
    TRAIN_OPTIONS = ("lr_orth", "rebase_every")
    ORTHOGONAL, ORTHOGONAL_FACTOR = True, True
    INITS = INITS
    TUNED_OPTIONS = ("init",)  # the orthogonal initialisation, the supplement's set

    def __init__(self, *args, init: str = "henaff", dynamic: bool = False, **kwargs):
        self.init, self.dynamic = check_init(init), check_flag("dynamic", dynamic)
        super().__init__(*args, **kwargs)

    def _make_recurrent(self, suffix, factory):
        name = "weight_hh" + suffix
        self.register_parameter(name, torch.nn.Parameter(torch.empty(self.hidden_size, self.hidden_size, **factory)))
        orthogonal(self, name, init=self.init, dynamic=self.dynamic)

    def _reset_recurrent(self, suffix):
        plist = self.parametrizations["weight_hh" + suffix]
        init_skew_(plist.original, self.init)
        plist[0].reset_base_()

    def _recurrent_parameters(self, suffix):
        plist = self.parametrizations["weight_hh" + suffix]
        return [plist.original] + ([plist[0].base] if self.dynamic else [])

    @classmethod
    def recurrent_parameter_count(cls, hidden_size, **_) -> int:
        return hidden_size * (hidden_size - 1) // 2
