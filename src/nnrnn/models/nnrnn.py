"""The non-normal RNN (Kerg, Goyette et al. 2019)."""
from __future__ import annotations

import torch

from ..parametrizations import INITS, check_fixed_gamma, check_init, free_triangular_entries, schur
from ..parametrizations.schur import check_t_init
from .base import RecurrentModel, check_flag
from .published import Published


class NonNormalRNN(RecurrentModel):
    r"""The non-normal RNN (nnRNN) of Kerg, Goyette et al. (2019): for each element of the input sequence,
    each layer and direction computes

    .. math::
        h_t = \phi(V h_{t-1} + W_{ih} x_t + b), \qquad V = P (\Lambda + T) P^\top

    with P = exp(A) orthogonal (A skew-symmetric), Λ = blockdiag(γ_i R(θ_i)) (R(θ) a 2×2 rotation) and
    T strictly lower triangular.  The eigenvalues of Λ + T are γ_i e^{±iθ_i} (with ``triangular="block"``
    also those of V throughout training), so the spectrum is controlled while T adds non-normal
    (transient) dynamics.  φ is the paper's modReLU by default.

    Args:
        input_size: the number of expected features in the input x.
        hidden_size: the number of features in the hidden state h (N).
        num_layers: number of stacked recurrent layers. Default: 1.
        nonlinearity: ``'modrelu'`` (default), ``'tanh'``, ``'relu'`` or ``None`` (identity).
        bias: if ``False``, the layer has no input bias b. Default: ``True``.
        batch_first: if ``True``, input and output are (batch, seq, feature). Default: ``False``.
        dropout: dropout on the outputs of each layer except the last. Default: 0.
        bidirectional: if ``True``, a bidirectional RNN. Default: ``False``.
        device, dtype: factory keywords, as torch's.
        init: P's initial skew generator: ``'cayley'`` (default), ``'henaff'`` or ``'random'``;
            θ ~ U(0, 2π), γ = 1, T = 0 (unless ``fixed_gamma`` or ``t_init`` say otherwise).
        triangular: the shape of T: ``'strict'`` (the paper's, default), ``'block'`` (the in-block
            entries held at zero, so V's eigenvalues stay exactly γ_i e^{±iθ_i}) or ``'none'`` (T ≡ 0:
            V = P Λ Pᵀ is normal, the nnRNN without its non-normal part; ``t_decay`` then acts on nothing).
        generator: a ``torch.Generator`` for reproducible P and θ.
        dynamic: P = B exp(A) with a base B moved by :func:`nnrnn.parametrizations.rebase_` (dynamic
            trivialization; off, as in the paper).
        fixed_gamma: None (default: γ trained, from 1) or G ≥ 0: every γ_i held at G, a buffer and not a
            parameter (the supplement's nnRNN-γ=1 and nnRNN-γ=0.958); the δ penalty then counts nothing.
        t_init: T at initialisation: ``'zeros'`` (the paper's, default) or ``'delay:α'``: α on T's first
            sub-diagonal (with ``triangular='block'`` its between-block entries only), the delay line
            of the paper's §3 on top of Λ.  A ValueError with ``triangular='none'``.
        input_init, bias_init: schemes of :mod:`nnrnn.models.init` for W_ih (Glorot normal) and b (zeros).

    Inputs: input, h_0
        * **input**: (L, N_in) unbatched, (L, B, N_in), or (B, L, N_in) with ``batch_first``; or a
          ``PackedSequence``.
        * **h_0**: (D·num_layers, N) or (D·num_layers, B, N); zeros if omitted.

    Outputs: output, h_n
        * **output**: (L, D·N), (L, B, D·N) or (B, L, D·N); packed in, packed out.
        * **h_n**: shaped like h_0: the final state of every layer and direction.

    where L is the sequence length, B the batch size, N_in ``input_size``, N ``hidden_size`` and
    D = 2 if bidirectional else 1.

    Attributes:
        weight_ih_l[k]: (N, N_in) for k = 0, else (N, D·N); ``input_init``.
        bias_ih_l[k]: (N); ``bias_init``.
        modrelu_bias_l[k]: (N), U(-0.01, 0.01) (modReLU only).
        weight_hh_l[k]: V (N, N), composed from its factors on access (it cannot be assigned): P's skew
            generator ``parametrizations.weight_hh_l[k].original`` and ``theta`` (N//2), ``gamma``
            (⌈N/2⌉; a buffer with ``fixed_gamma``), ``lower`` (N × N, masked to T) of the
            :class:`~nnrnn.parametrizations.SchurForm` ``parametrizations.weight_hh_l[k][0]``.  The reverse direction's
            names end in ``_reverse``.

    With ``nonlinearity=None, bias=False``: h_t = V h_{t-1} + W_ih x_t exactly.  Train P's generator at
    its own learning rate (:func:`nnrnn.param_groups`) and add :meth:`regularization` to the loss.
    """
    # its published figures on the protocols the grids run (nnrnn.models.published)
    PUBLISHED = (
        Published("ptb", "test bpc", 1.47, "N = 1024, T_PTB = 150, the full training file", "the paper's Table 1"),
    )
    DISPLAY_NAME = "nnRNN"
    PAPER_OPTIMIZER = "rmsprop"  # the paper's release (utils.select_optimizer)
    LINE_STYLE = ('#000000', '-')

    CONFIG_OPTIONS = RecurrentModel.CONFIG_OPTIONS + ("init", "triangular", "dynamic", "fixed_gamma", "t_init")
    TRAIN_OPTIONS = ("lr_orth", "rebase_every", "delta", "t_decay")
    ORTHOGONAL_FACTOR, SCHUR_FORM = True, True
    TUNED_OPTIONS = ("delta", "t_decay")  # the Schur form's penalties, the supplement's sets
    INITS = INITS

    def __init__(self, *args, init: str = "cayley", triangular: str = "strict",
                 generator: torch.Generator | None = None, dynamic: bool = False,
                 fixed_gamma: float | None = None, t_init: str = "zeros", **kwargs):
        self.init, self.triangular, self._generator, self.dynamic = (check_init(init), triangular, generator,
                                                                      check_flag("dynamic", dynamic))
        self.fixed_gamma = check_fixed_gamma(fixed_gamma)
        check_t_init(t_init, triangular)  # refused here, at the call that received it
        self.t_init = t_init
        super().__init__(*args, **kwargs)
        del self._generator  # only needed while the factors are drawn; not picklable

    def _make_recurrent(self, suffix, factory):
        name = "weight_hh" + suffix
        self.register_parameter(name, torch.nn.Parameter(torch.empty(self.hidden_size, self.hidden_size, **factory)))
        schur(self, name, init=self.init, generator=self._generator, triangular=self.triangular, dynamic=self.dynamic,
              fixed_gamma=self.fixed_gamma, t_init=self.t_init)

    def _reset_recurrent(self, suffix):
        plist = self.parametrizations["weight_hh" + suffix]
        plist[0].reset_(plist.original)

    def _recurrent_parameters(self, suffix):
        plist = self.parametrizations["weight_hh" + suffix]
        form = plist[0]
        return [plist.original, form.theta, form.gamma, form.lower] + ([form.base] if form.dynamic else [])

    @property
    def schur_form(self):
        """The :class:`~nnrnn.parametrizations.SchurForm` of the first layer (forward direction)."""
        return self.parametrizations["weight_hh_l0"][0]

    def schur_forms(self) -> list:
        """The :class:`~nnrnn.parametrizations.SchurForm` of every layer and direction, in
        :attr:`cells` order (l0, l0_reverse, l1, …)."""
        return [self.parametrizations["weight_hh" + s][0] for s in self.cells]

    def schur_factors(self, layer: int = 0, direction: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(P, Λ, T) with V = P (Λ + T) Pᵀ, for one layer and direction."""
        plist = self.parametrizations["weight_hh" + self.cell(layer, direction)]
        return plist[0].factors(plist.original)

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        """Σ over layers and directions of δ Σ_i (1 - γ_i)² + (t_decay / 2) ‖T‖²_F: the paper's δ penalty and
        a gradient t_decay · T, the weight decay on T of the authors' code (see
        :meth:`~nnrnn.parametrizations.SchurForm.regularization`)."""
        return sum(self.parametrizations["weight_hh" + s][0].regularization(delta, t_decay) for s in self.cells)

    @classmethod
    def recurrent_parameter_count(cls, hidden_size, triangular="strict", fixed_gamma=None, **_) -> int:
        """P's generator n(n-1)/2, T's free entries, θ n//2 and, unless ``fixed_gamma`` holds it, γ ⌈n/2⌉."""
        n = hidden_size
        gamma = 0 if check_fixed_gamma(fixed_gamma) is not None else (n + 1) // 2
        return n * (n - 1) // 2 + free_triangular_entries(n, triangular) + n // 2 + gamma
