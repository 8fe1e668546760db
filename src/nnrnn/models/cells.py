"""torch.nn.RNN's interface for the models that bring their own cell (coRNN, LEM, LRU, minGRU).

A :class:`CellModel` takes torch.nn.GRU's arguments in its order (these models have no ``nonlinearity``),

    Model(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
          bidirectional=False, device=None, dtype=None, *, <the model's own keywords>)

and follows the contract of :mod:`nnrnn.models.base`: inputs (L, B, I), batch-first, unbatched or packed; a state
per layer and direction; outputs (L, B, D·H).  What differs between the models is the cell, which a subclass gives
in three hooks: ``_make_cell(suffix, layer_input, factory)`` registers one cell's parameters,
``_reset_cell(suffix)`` draws them, and ``_run(suffix, x, h0)`` maps x (T, B, layer_input) and the initial state
h0 (B, STATE_WIDTH) to (outputs (T, B, H), states (T, B, STATE_WIDTH)).  The states of every step come back so that
a packed batch's h_n can be each sequence's state after its last real step, which for these models is not always
its output (coRNN's and LEM's velocity, the LRU's complex state).

The state: a model whose state is one vector takes and returns ``hx`` as torch.nn.RNN does, (num_layers·D, B, W).
A model whose state is two vectors (``STATES = ("y", "z")``: coRNN, LEM) takes and returns them as torch.nn.LSTM
takes (h_0, c_0): a tuple of two (num_layers·D, B, H) tensors, the first the one the layer outputs.

``state_noise`` σ (keyword, default 0): Gaussian noise of standard deviation σ added to every vector of the state
after every step, in training and evaluation (:mod:`nnrnn.models.noise`); each model's ``_run`` adds
:meth:`CellModel._noise`'s block, in its loop (coRNN, LEM and minGRU then run their Python loops) or, for the
linear recurrences of the LRUs, as one more input that their scans take.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence

from ..kernels import operations, settings
from ..kernels.autograd import exporting_to_onnx
from ..kernels.candidates import Scanned
from ..parametrizations.schur import check_penalty_weights
from . import fused_cells, noise
from .base import as_given, cell_suffix, check_constructor, check_state, reverse_within, stacked_repr, time_major
from .traits import Traits


IMPLEMENTATIONS = ("auto", "scan", "loop")


def use_scan(implementation: str, x: torch.Tensor, width: int, scanned: Scanned) -> bool:
    """Whether a layer with a parallel scan over time (the LRU, the non-normal LRU, minGRU) runs it, or its loop,
    on x (T, B, ·).  ``"scan"`` and ``"loop"`` force one; ``"auto"`` asks the kernel policy, which decides for x's
    device and dtype, (T, B, ``width``: its state's real features per step) and the model's kind: timed on this
    CPU (the two candidates of ``scanned``), or by the fixed rule where timing is off (``NNRNN_TUNE=0``) or
    untrusted: the scan off the CPU, on it at and below the model's measured crossover of batch × width
    (:meth:`nnrnn.kernels.policy.KernelPolicy.scan`; docs/performance.md, "Parallel scans")."""
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}; got {implementation!r}")
    if implementation != "auto":
        return implementation == "scan"
    return operations.choose_scan(x, width, scanned)


def compiled_here(x: torch.Tensor, like: torch.Tensor, cell: str) -> bool:
    """Whether a linear recurrence (``cell``: "lru", "nnlru", "mingru") over x (T, B, ·), whose constant part is
    like ``like``, runs by its compiled loop (:mod:`.fused_cells`): the kernel policy's choice for x's device and
    dtype (:func:`~nnrnn.kernels.operations.choose_cells`: float32 on the CPU where the loops built), at least one
    step and one sequence, ``like`` of x's dtype (under autocast x may be lower), and not while ``torch.onnx.export``
    traces (an autograd Function of compiled code has no ONNX form)."""
    return (fused_cells.runs(x) and like.dtype == x.dtype and not exporting_to_onnx()
            and operations.choose_cells(x, cell) == settings.COMPILED)


def scanned_recurrences(models) -> tuple[Scanned, ...]:
    """The descriptions (:class:`~nnrnn.kernels.candidates.Scanned`) of the scanned recurrences among ``models``
    (classes), for ``nnrnn kernels --retune`` to time a cached scan decision again."""
    return tuple(cls.SCANNED for cls in models
                 if isinstance(cls, type) and issubclass(cls, CellModel) and cls.SCANNED is not None)


class CellModel(nn.Module, Traits):
    """The shared layer of the models with their own cell; see the module docstring."""

    CONFIG_OPTIONS: tuple[str, ...] = ("bias", "state_noise")
    state_noise = 0.0  # σ of the noise added to the state after every step; here for models saved whole before it
    STATES: tuple[str, ...] = ("h",)  # the state's vectors: one, or two (returned as a tuple, torch.nn.LSTM's form)
    GATES: int = 0  # a cell's N × N recurrent blocks (0: its recurrence is elementwise); the other traits: Traits'
    SCANNED: Scanned | None = None  # a recurrence run by a parallel scan or its loop, described to the kernel policy

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, *, state_noise: float = 0.0):
        super().__init__()
        num_layers, dropout = check_constructor(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                                                bidirectional, dtype)
        self.state_noise = noise.check_state_noise(state_noise)
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout, self.bidirectional = bias, batch_first, dropout, bidirectional
        factory = {"device": device, "dtype": dtype}
        directions = self.num_directions
        self.cells = [cell_suffix(layer, d) for layer in range(num_layers) for d in range(directions)]
        for index, suffix in enumerate(self.cells):
            self._make_cell(suffix, input_size if index < directions else hidden_size * directions, factory)
        self.reset_parameters()

    @property
    def num_directions(self) -> int:
        """D: 2 if bidirectional else 1."""
        return 2 if self.bidirectional else 1

    @property
    def state_width(self) -> int:
        """The width of one state vector (hidden_size unless a model says otherwise)."""
        return self.hidden_size

    # how an error names state_width (the LRU's is 2·N_s, not hidden_size)
    STATE_WIDTH_NAME = "hidden_size"

    # ------------------------------------------------------------------ subclass hooks
    def _make_cell(self, suffix: str, layer_input: int, factory: dict) -> None:
        raise NotImplementedError

    def _reset_cell(self, suffix: str) -> None:
        raise NotImplementedError

    def _run(self, suffix: str, x: torch.Tensor, h0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def _noise(self, x: torch.Tensor) -> torch.Tensor | None:
        """σ ε for one cell over x (T, B, ·): (T, B, len(STATES)·state_width), the state's vectors side by side, or
        None without noise (:mod:`nnrnn.models.noise`); each model's ``_run`` adds it to its state after every
        step."""
        return noise.draw(self.state_noise, *x.shape[:2], len(self.STATES) * self.state_width, x)

    # ------------------------------------------------------------------ parameters
    def reset_parameters(self) -> None:
        """Re-draw every parameter by the model's initialisation (its paper's)."""
        with torch.no_grad():
            for suffix in self.cells:
                self._reset_cell(suffix)

    def flatten_parameters(self) -> None:
        """As torch.nn.RNN's, for code that calls it: there is no flat weight buffer."""

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        """The model's penalty to add to the loss: zero (no Schur form)."""
        check_penalty_weights(delta, t_decay)
        return self.weight_ih_l0.new_zeros(())

    @classmethod
    def parameter_count(cls, input_size: int, hidden_size: int, num_layers: int = 1, bidirectional: bool = False,
                        **options) -> int:
        """Free parameters: each cell's :meth:`cell_parameter_count`, layer 0 reading the input, the others the
        previous layer's D·H outputs."""
        d = 2 if bidirectional else 1
        first = cls.cell_parameter_count(input_size, hidden_size, **options)
        later = cls.cell_parameter_count(d * hidden_size, hidden_size, **options)
        return d * (first + (num_layers - 1) * later)

    @classmethod
    def cell_parameter_count(cls, layer_input: int, hidden_size: int, **options) -> int:
        raise NotImplementedError

    # ------------------------------------------------------------------ forward
    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        first = hx[0] if isinstance(hx, (tuple, list)) and hx else hx  # its rank is checked before the input's dtype
        x, lengths, unbatched = time_major(self, input, first if isinstance(first, torch.Tensor) else None)
        dtype = self.weight_ih_l0.dtype
        h0 = self._initial_state(hx, x, unbatched, dtype)
        last = None if lengths is None else (lengths - 1).to(x.device)
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self.num_directions):
                index = layer * self.num_directions + direction
                xs = reverse_within(x, lengths) if direction else x
                out, states = self._run(self.cells[index], xs.to(dtype), h0[index])
                finals.append(states[-1] if last is None else states[last, torch.arange(x.shape[1], device=x.device)])
                outputs.append(reverse_within(out, lengths) if direction else out)
            x = outputs[0] if len(outputs) == 1 else torch.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = nn.functional.dropout(x, self.dropout, training=True)
        h_n = torch.stack(finals)
        if len(self.STATES) > 1:
            h_n = tuple(h_n.chunk(len(self.STATES), -1))
        if unbatched and not packed:
            return x.squeeze(1), (tuple(h.squeeze(1) for h in h_n) if isinstance(h_n, tuple) else h_n.squeeze(1))
        return as_given(self, x, h_n, input, lengths, False)

    def _initial_state(self, hx, x: torch.Tensor, unbatched: bool, dtype: torch.dtype) -> torch.Tensor:
        """The initial state of every layer and direction, (num_layers·D, B, len(STATES)·state_width), zeros when
        ``hx`` is None; ``hx`` checked as torch.nn.RNN (one vector) or torch.nn.LSTM (two) checks theirs."""
        cells, batch, width = len(self.cells), x.shape[1], self.state_width
        if hx is None:
            return x.new_zeros(cells, batch, len(self.STATES) * width, dtype=dtype)
        parts = (hx,) if len(self.STATES) == 1 else hx
        if len(self.STATES) > 1 and not (isinstance(hx, (tuple, list)) and len(hx) == len(self.STATES)):
            names = ", ".join(f"{s}_0" for s in self.STATES)
            raise TypeError(f"hx must be a tuple ({names}) of tensors or None; got {type(hx).__name__}")
        expected = (cells, width) if unbatched else (cells, batch, width)
        layout = f"num_layers * num_directions, {'' if unbatched else 'batch, '}{self.STATE_WIDTH_NAME}"
        for name, h in zip(self.STATES, parts):
            check_state(self, "hx" if len(self.STATES) == 1 else f"{name}_0", h, expected, layout, x, dtype)
        state = torch.cat(parts, -1) if len(parts) > 1 else parts[0]
        return state.unsqueeze(1) if unbatched else state

    def extra_repr(self) -> str:
        return stacked_repr(self, *noise.repr_part(self.state_noise))
