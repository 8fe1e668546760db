"""Unconstrained RNNs: vanilla ("rnn", Glorot normal V) and "rnn-orth" (V initialised
orthogonal, then trained freely; Henaff et al. 2016)."""
from __future__ import annotations

import torch
from torch import nn

from ..parametrizations import INITS, check_init
from ..parametrizations.expm import expm_skew
from ..parametrizations.orthogonal import init_skew_, skew
from .base import RecurrentModel
from .init import CHAINS, accepts_init, chain_matrix
from .published import Published


class VanillaRNN(RecurrentModel):
    r"""An unconstrained RNN: each layer and direction computes

    .. math::
        h_t = \phi(V h_{t-1} + W_{ih} x_t + b),

    V = ``weight_hh_l[k]`` a free (N, N) parameter, Glorot normal at initialisation, or a chain.

    Args:
        input_size, hidden_size, num_layers, nonlinearity, bias, batch_first, dropout, bidirectional,
            device, dtype: as :class:`~nnrnn.NonNormalRNN` (torch.nn.RNN's, modReLU by default).
        init: V's start: ``'xavier'`` (default, Glorot normal); ``'chain:α'``, V_{i+1,i} = α and zero elsewhere;
            ``'fbchain:β'``, V_{i+1,i} = 0.99 and V_{i,i+1} = β (Orhan & Pitkow 2020's non-normal chains, their
            code's definitions; :func:`~nnrnn.models.init.chain_matrix`).
        input_init, bias_init: schemes of :mod:`nnrnn.models.init`.

    Inputs and outputs: as :class:`~nnrnn.NonNormalRNN`: ``input`` (L, B, N_in) (or batch-first,
    unbatched, packed), ``h_0`` (D·num_layers, B, N) → ``output`` (L, B, D·N), ``h_n`` like h_0.

    Attributes:
        weight_ih_l[k], bias_ih_l[k], modrelu_bias_l[k]: as :class:`~nnrnn.NonNormalRNN`.
        weight_hh_l[k]: V (N, N), Glorot normal.
    """
    # its published figures on the protocols the grids run (nnrnn.models.published)
    PUBLISHED = (
        Published("ptb", "test bpc", 2.89, "N = 1024, T_PTB = 150, the full training file", "the paper's Table 1"),
    )
    DISPLAY_NAME = "RNN"
    PAPER_OPTIMIZER = "rmsprop"  # the paper's release trains every one of its models with RMSprop
    LINE_STYLE = ('#1f77b4', (0, (10, 2)))

    CONFIG_OPTIONS = RecurrentModel.CONFIG_OPTIONS + ("init",)
    INITS: tuple[str, ...] = ("xavier", *CHAINS)

    def __init__(self, *args, init: str = "xavier", **kwargs):
        self.init = self._check_init(init)
        super().__init__(*args, **kwargs)

    @classmethod
    def _check_init(cls, init) -> str:
        if not accepts_init(cls.INITS, init):
            raise ValueError(f"init must be one of {', '.join(i + ':GAIN' if i in CHAINS else i for i in cls.INITS)} "
                             f"for {cls.__name__}; got {init!r}")
        return init

    def _make_recurrent(self, suffix, factory):
        self.register_parameter("weight_hh" + suffix, nn.Parameter(torch.empty(self.hidden_size, self.hidden_size,
                                                                               **factory)))
        self._reset_recurrent(suffix)

    def _reset_recurrent(self, suffix):
        weight = getattr(self, "weight_hh" + suffix)
        with torch.no_grad():
            if self.init == "xavier":
                nn.init.xavier_normal_(weight)
            else:
                weight.copy_(chain_matrix(self.hidden_size, self.init, weight))

    def _recurrent_parameters(self, suffix):
        return [getattr(self, "weight_hh" + suffix)]

    @classmethod
    def recurrent_parameter_count(cls, hidden_size, **_) -> int:
        return hidden_size ** 2


class OrthogonalInitRNN(VanillaRNN):
    """As :class:`VanillaRNN` ("rnn-orth"), with V orthogonal at initialisation only, then trained freely.

    Args (beyond :class:`VanillaRNN`'s):
        init: ``'random'`` (default): Haar-random (``torch.nn.init.orthogonal_``); ``'cayley'`` or
            ``'henaff'``: the exponential of that scheme's skew-symmetric matrix (the paper's PTB-300
            setting uses Cayley).
    """
    # its published figures on the protocols the grids run (nnrnn.models.published)
    PUBLISHED = (
        Published("ptb", "test bpc", 1.62, "N = 1024, T_PTB = 150, the full training file", "the paper's Table 1"),
    )
    DISPLAY_NAME = "RNN-orth"
    LINE_STYLE = ('#ff7f0e', (0, (6, 2)))

    ORTHOGONAL = True  # the paper counts RNN-orth among its orthogonal RNNs
    INITS = INITS
    TUNED_OPTIONS = ("init",)  # the orthogonal initialisation, the supplement's set

    def __init__(self, *args, init: str = "random", **kwargs):
        super().__init__(*args, init=init, **kwargs)

    @classmethod
    def _check_init(cls, init) -> str:
        return check_init(init)

    def _reset_recurrent(self, suffix):
        weight = getattr(self, "weight_hh" + suffix)
        with torch.no_grad():
            if self.init == "random" and weight.dtype in (torch.float16, torch.bfloat16):
                # torch's QR has no half-precision kernel: draw in float32 (the same draw) and round once
                weight.copy_(nn.init.orthogonal_(torch.empty(weight.shape, device=weight.device)))
            elif self.init == "random":
                nn.init.orthogonal_(weight)
            else:
                log = init_skew_(torch.empty(weight.shape, dtype=torch.float64), self.init)
                weight.copy_(expm_skew(skew(log)))
