"""One step of every model, with ``torch.nn.RNNCell``'s contract (``torch.nn.LSTMCell``'s for a model with two
state vectors), for a user's own time loop.

Each cell is its model's layer with one layer and one direction, so it holds the same parameters under the same
names (``weight_ih_l0``, ``parametrizations.weight_hh_l0.original``, …): a one-layer layer's ``state_dict()``
loads into its cell, and the cell stepped T times computes what the layer computes over the T steps (the same
recurrence, parametrizations, initialisation and penalties: ``nnrnn.regularization``, ``nnrnn.param_groups``).

    cell = NonNormalRNNCell(input_size, hidden_size, bias=True, nonlinearity="modrelu", device=None, dtype=None,
                            *, <the model's own keywords>)
    h_1 = cell(x, h_0)                  # x (B, input_size) or unbatched (input_size,); h_0 the same rank, or None

``nonlinearity`` belongs to the non-gated models only, as it does to ``torch.nn.RNNCell`` and not
``torch.nn.GRUCell``.  The state, zeros when omitted:

* one vector (most models): ``hx`` (B, W) → ``h_1`` (B, W); W is hidden_size, 2·hidden_size for nnrnn-complex
  ([Re h, Im h]);
* two vectors (LSTM (h, c), coRNN and LEM (y, z)): ``hx = (h_0, c_0)`` → ``(h_1, c_1)``, each (B, hidden_size),
  the first the output, as ``torch.nn.LSTMCell``;
* the LRU and the non-normal LRU, whose output is not their state: ``hx = (y_0, s_0)`` → ``(y_1, s_1)``, y the
  output (B, hidden_size) and s the complex state [Re s, Im s] (B, 2·state_size), as LSTMCell's (h, c); y_0 is
  not read (it is there so that ``hx = cell(x, hx)`` loops as for an LSTMCell).

Errors are of torch's types: an input that is not 1-d or 2-d, or a state of another rank, a ValueError; a width or
batch size that does not fit, a ValueError that is also the RuntimeError torch raises; a state of the wrong kind
(a tensor where a tuple is due), a TypeError.
"""
from __future__ import annotations

import torch

from .base import ShapeError
from .cornn import CoRNN
from .eurnn import EURNN
from .exprnn import ExpRNN
from .gru import GRU
from .lem import LEM
from .lru import LRU
from .lstm import LSTM
from .mingru import MinGRU
from .nngru import NonNormalGRU
from .nnlru import NonNormalLRU
from .nnrnn import NonNormalRNN
from .nnrnn_complex import ComplexNonNormalRNN
from .rnn import OrthogonalInitRNN, VanillaRNN


class Cell:
    """One step of the layer class that follows this one among a cell's bases; see the module docstring.

    ``STATE_NAMES``: the names of the state's vectors (one: ``hx`` is a tensor; two: a tuple).
    ``OUTPUT_IS_SEPARATE``: the first of two is the layer's output, not part of the state the layer carries (the
    LRU's).
    """

    STATE_NAMES: tuple[str, ...] = ("h",)
    OUTPUT_IS_SEPARATE = False

    def state_widths(self) -> tuple[int, ...]:
        """The width of each state vector."""
        return (self.hidden_size,) * len(self.STATE_NAMES)

    def forward(self, input: torch.Tensor, hx=None):
        states = self._checked_states(input, hx)
        if states is None:
            layer_hx = None
        elif self.OUTPUT_IS_SEPARATE:
            layer_hx = states[1].unsqueeze(0)
        elif len(states) == 1:
            layer_hx = states[0].unsqueeze(0)
        else:
            layer_hx = tuple(h.unsqueeze(0) for h in states)
        output, h_n = super().forward(input.unsqueeze(0), layer_hx)  # one step: (1, B, ·), or (1, ·) unbatched
        if self.OUTPUT_IS_SEPARATE:
            return output[0], h_n[0]
        return tuple(h[0] for h in h_n) if isinstance(h_n, tuple) else h_n[0]

    def _checked_states(self, input, hx) -> list[torch.Tensor] | None:
        """The state's vectors as a list, or None for zeros; checked as torch.nn.RNNCell / LSTMCell check theirs."""
        name = type(self).__name__
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"input must be a torch.Tensor; got {type(input).__name__}")
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D input instead")
        if hx is None:
            return None
        names = self.STATE_NAMES
        if len(names) == 1:
            if not isinstance(hx, torch.Tensor):
                raise TypeError(f"hx must be a torch.Tensor or None; got {type(hx).__name__}")
            states = [hx]
        else:
            if not (isinstance(hx, (tuple, list)) and len(hx) == len(names)
                    and all(isinstance(h, torch.Tensor) for h in hx)):
                raise TypeError(f"hx must be a tuple ({', '.join(n + '_0' for n in names)}) of tensors or None; "
                                f"got {type(hx).__name__}")
            states = list(hx)
        batch = () if input.dim() == 1 else (input.shape[0],)
        for state, label, width in zip(states, names, self.state_widths()):
            label = "hx" if len(names) == 1 else f"{label}_0"
            if state.dim() != input.dim():
                raise ValueError(f"{name}: Expected {label} to be {input.dim()}D for {input.dim()}D input, got "
                                 f"{state.dim()}D instead")
            if tuple(state.shape) != (*batch, width):
                layout = "(batch, width)" if batch else "(width,)"
                raise ShapeError(f"{label} must have shape {(*batch, width)} {layout} for input of shape "
                                 f"{tuple(input.shape)}; got {tuple(state.shape)}")
        return states


class RNNCell(Cell):
    """A non-gated model's cell: torch.nn.RNNCell's constructor, ``nonlinearity`` after ``bias``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity="modrelu", device=None,
                 dtype=None, **options):
        super().__init__(input_size, hidden_size, num_layers=1, nonlinearity=nonlinearity, bias=bias, device=device,
                         dtype=dtype, **options)


class GatedCell(Cell):
    """A model without ``nonlinearity``: torch.nn.GRUCell's and LSTMCell's constructor."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None, **options):
        super().__init__(input_size, hidden_size, num_layers=1, bias=bias, device=device, dtype=dtype, **options)


class VanillaRNNCell(RNNCell, VanillaRNN):
    """One step of :class:`~nnrnn.VanillaRNN`."""


class OrthogonalInitRNNCell(RNNCell, OrthogonalInitRNN):
    """One step of :class:`~nnrnn.OrthogonalInitRNN`."""


class EURNNCell(RNNCell, EURNN):
    """One step of :class:`~nnrnn.EURNN`."""


class ExpRNNCell(RNNCell, ExpRNN):
    """One step of :class:`~nnrnn.ExpRNN`."""


class NonNormalRNNCell(RNNCell, NonNormalRNN):
    """One step of :class:`~nnrnn.NonNormalRNN`."""


class ComplexNonNormalRNNCell(RNNCell, ComplexNonNormalRNN):
    """One step of :class:`~nnrnn.ComplexNonNormalRNN`; its state [Re h, Im h] is 2·hidden_size wide."""

    def state_widths(self) -> tuple[int, ...]:
        return (self.output_size,)


class LSTMCell(GatedCell, LSTM):
    """One step of :class:`~nnrnn.LSTM` (torch.nn.LSTMCell's contract, the paper's initialisations)."""

    STATE_NAMES = ("h", "c")

    def state_widths(self) -> tuple[int, ...]:
        return (self.proj_size or self.hidden_size, self.hidden_size)  # h is proj_size wide with a projection


class GRUCell(GatedCell, GRU):
    """One step of :class:`~nnrnn.GRU`."""


class NonNormalGRUCell(GatedCell, NonNormalGRU):
    """One step of :class:`~nnrnn.NonNormalGRU`."""


class CoRNNCell(GatedCell, CoRNN):
    """One step of :class:`~nnrnn.CoRNN`: the state (y, z), position and velocity."""

    STATE_NAMES = CoRNN.STATES


class LEMCell(GatedCell, LEM):
    """One step of :class:`~nnrnn.LEM`: the state (y, z)."""

    STATE_NAMES = LEM.STATES


class MinGRUCell(GatedCell, MinGRU):
    """One step of :class:`~nnrnn.MinGRU`."""


class LRUCell(GatedCell, LRU):
    """One step of :class:`~nnrnn.LRU`: ``(y_1, s_1) = cell(x, (y_0, s_0))``, y the output and s the state."""

    STATE_NAMES = ("y", "s")
    OUTPUT_IS_SEPARATE = True

    def state_widths(self) -> tuple[int, ...]:
        return (self.hidden_size, self.state_width)


class NonNormalLRUCell(LRUCell, NonNormalLRU):
    """One step of :class:`~nnrnn.NonNormalLRU`, as :class:`LRUCell`."""
