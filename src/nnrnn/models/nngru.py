"""The non-normal GRU: torch.nn.GRU whose candidate recurrent matrix is in the nnRNN's Schur form."""
from __future__ import annotations

import torch

from ..parametrizations import INITS, check_init, free_triangular_entries, stacked_schur
from ..parametrizations.schur import check_triangular
from .base import cell_suffix
from .gru import GATES, GRU


class NonNormalGRU(GRU):
    r"""A GRU (torch.nn.GRU's equations and fused kernels) whose candidate recurrent matrix W_hn is in the
    nnRNN's Schur form; with ``schur_gates=True`` the reset and update gates' W_hr and W_hz are too:

    .. math::
        r_t = \sigma(W_{ir} x_t + b_{ir} + W_{hr} h_{t-1} + b_{hr}), \quad
        z_t = \sigma(W_{iz} x_t + b_{iz} + W_{hz} h_{t-1} + b_{hz}) \\
        n_t = \tanh(W_{in} x_t + b_{in} + r_t \odot (W_{hn} h_{t-1} + b_{hn})), \quad
        h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1} \\
        W_{hn} = P (\Lambda + T) P^\top

    with, per constrained matrix, its own P = exp(A) orthogonal (A skew-symmetric),
    Λ = blockdiag(γ_i R(θ_i)) and T strictly lower triangular (:class:`~nnrnn.parametrizations.SchurForm`).
    The eigenvalues of Λ + T are γ_i e^{±iθ_i} (exactly, for V, with ``triangular="block"``).  Where
    z_t → 0 and r_t → 1 the update is h_t = tanh(V h_{t-1} + …): the nnRNN with tanh.

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device, dtype:
            torch.nn.GRU's, in its order.
        init: P's initial skew generator: ``'cayley'`` (default), ``'henaff'`` or ``'random'``;
            θ ~ U(0, 2π), γ = 1, T = 0.  The free recurrent blocks, the input blocks and the biases are
            drawn as :class:`~nnrnn.models.gru.GRU`'s ``'xavier'`` (Glorot normal per gate, zero biases).
        triangular: the shape of T: ``'strict'`` (the paper's, default) or ``'block'``.
        schur_gates: if ``True``, W_hr and W_hz in Schur form too, each with its own P, Λ, T.
        generator: a ``torch.Generator`` for reproducible P and θ.

    Inputs: input, h_0; Outputs: output, h_n: torch.nn.GRU's (``input`` (L, B, N_in), batch-first, unbatched
    or packed; ``h_0`` (D·num_layers, B, N) → ``output`` (L, B, D·N), ``h_n`` like ``h_0``).

    Attributes:
        weight_ih_l[k], bias_ih_l[k], bias_hh_l[k]: torch.nn.GRU's.
        weight_hh_l[k]: [W_hr; W_hz; W_hn] (3N × N), composed on access by the
            :class:`~nnrnn.parametrizations.StackedSchurForm` ``parametrizations.weight_hh_l[k][0]``: its
            ``original0`` holds the free blocks (W_hr, W_hz; absent with ``schur_gates``), the next
            originals the skew generators, and ``forms[j]`` each Schur form's ``theta``, ``gamma`` and
            ``lower``.

    Train the generators at their own learning rate (:func:`nnrnn.param_groups`) and add
    :meth:`regularization` (δ on every Schur form's γ, decay on its T) to the loss.
    """
    DISPLAY_NAME = "nnGRU"
    LINE_STYLE = ('#e377c2', (0, (8, 2, 2, 2, 2, 2)))

    CONFIG_OPTIONS = ("init", "triangular", "bias", "schur_gates", "state_noise")
    TRAIN_OPTIONS = ("lr_orth", "delta", "t_decay")
    ORTHOGONAL_FACTOR, SCHUR_FORM = True, True
    TUNED_OPTIONS = ("delta", "t_decay")  # the Schur form's penalties, the supplement's sets
    INITS = INITS
    COMPLEX_DTYPES = False

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, *, init: str = "cayley", triangular: str = "strict", schur_gates: bool = False,
                 generator: torch.Generator | None = None, state_noise: float = 0.0):
        check_triangular(triangular)
        if not isinstance(schur_gates, bool):
            raise TypeError(f"schur_gates must be True or False; got {schur_gates!r}")
        self.triangular, self.schur_gates = triangular, schur_gates
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device,
                         dtype, init=init, state_noise=state_noise)
        constrained = (schur_gates, schur_gates, True)
        for suffix in self.cells:
            stacked_schur(self, "weight_hh" + suffix, constrained, init=init, triangular=triangular,
                          generator=generator)

    @staticmethod
    def _check_init(init) -> None:
        check_init(init)

    def _gate_init(self) -> str:
        return "xavier"

    def schur_form(self, layer: int = 0, direction: int = 0, gate: str = "new"):
        """The :class:`~nnrnn.parametrizations.SchurForm` of one gate's recurrent matrix ('new', or with
        ``schur_gates`` also 'reset' and 'update')."""
        if gate not in GATES:
            raise ValueError(f"gate must be one of {', '.join(GATES)}; got {gate!r}")
        self.recurrent_matrix(layer, direction, gate)  # checks layer and direction
        return self.parametrizations["weight_hh" + cell_suffix(layer, direction)][0].form(GATES.index(gate))

    def schur_forms(self) -> list:
        """Every :class:`~nnrnn.parametrizations.SchurForm` of the model, per cell in :attr:`cells` order and
        within a cell in gate order."""
        return [form for s in self.cells for form in self.parametrizations["weight_hh" + s][0].forms]

    def schur_factors(self, layer: int = 0, direction: int = 0, gate: str = "new"):
        """(P, Λ, T) with that gate's W = P (Λ + T) Pᵀ."""
        self.schur_form(layer, direction, gate)
        plist = self.parametrizations["weight_hh" + cell_suffix(layer, direction)]
        return plist[0].factors(self._originals(plist), GATES.index(gate))

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        """Σ over every Schur form (each layer, direction and constrained gate) of
        δ Σ_i (1 - γ_i)² + (t_decay / 2) ‖T‖²_F, as :meth:`nnrnn.NonNormalRNN.regularization`."""
        return sum(self.parametrizations["weight_hh" + s][0].regularization(delta, t_decay) for s in self.cells)

    @classmethod
    def recurrent_parameter_count(cls, hidden_size: int, triangular: str = "strict", schur_gates: bool = False,
                                  **_) -> int:
        """Free parameters of one cell's [W_hr; W_hz; W_hn]: N² per free block, and per Schur-form block
        N(N-1)/2 (P) + T's free entries + N//2 (θ) + ⌈N/2⌉ (γ)."""
        n = hidden_size
        schur = n * (n - 1) // 2 + free_triangular_entries(n, triangular) + n // 2 + (n + 1) // 2
        return (3 * schur) if schur_gates else (2 * n * n + schur)
