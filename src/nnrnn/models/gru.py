"""GRU baseline: ``torch.nn.GRU`` (its fused kernels and equations) with nnrnn's interface, and the GRU's
reference loop that the nnGRU's fast path is tested against."""
from __future__ import annotations

import weakref

import torch
from torch import nn
from torch.nn.utils import parametrize
from torch.nn.utils.rnn import PackedSequence

from ..kernels.operations import choose_cells
from ..kernels.settings import COMPILED
from . import fused_cells, noise
from .base import (as_given, assign_constrained, cell_suffix, check_constructor, check_hx, check_input, kept,
                   stack_layers, time_major)
from .init import CHAINS, CHRONO, accepts_init, chain_matrix, check_chrono, chrono_, init_, init_repr, parse_chain
from .traits import Traits

GATES = ("reset", "update", "new")  # torch's row order in weight_hh_l0
INITS = ("xavier", "torch", CHRONO, *CHAINS)
IMPLEMENTATIONS = ("auto", "torch", "reference")


def check_gru_init(init) -> str:
    if not accepts_init(INITS, init):
        raise ValueError(f"init must be 'xavier', 'torch', 'chrono', 'chain:GAIN' or 'fbchain:GAIN' for the GRU; "
                         f"got {init!r}")
    return init


def gru_reference(inputs: torch.Tensor, h0: torch.Tensor, weight_ih: torch.Tensor, weight_hh: torch.Tensor,
                  bias_ih: torch.Tensor | None, bias_hh: torch.Tensor | None, noise: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    r"""torch.nn.GRU's equations as a plain autograd loop: inputs (T, B, I), h0 (B, N) -> outputs (T, B, N), h_T.

    .. math::
        r_t = \sigma(W_{ir} x_t + b_{ir} + W_{hr} h_{t-1} + b_{hr}) \\
        z_t = \sigma(W_{iz} x_t + b_{iz} + W_{hz} h_{t-1} + b_{hz}) \\
        n_t = \tanh(W_{in} x_t + b_{in} + r_t \odot (W_{hn} h_{t-1} + b_{hn})) \\
        h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1}

    with ``weight_ih`` = [W_ir; W_iz; W_in] and ``weight_hh`` = [W_hr; W_hz; W_hn] stacked as torch stacks them;
    ``noise`` (T, B, N), if given, is added to h_t after every step (:mod:`nnrnn.models.noise`).
    """
    w_hr, w_hz, w_hn = weight_hh.chunk(3)
    b_hr, b_hz, b_hn = bias_hh.chunk(3) if bias_hh is not None else (None, None, None)
    x_r, x_z, x_n = nn.functional.linear(inputs, weight_ih, bias_ih).chunk(3, -1)  # every step's input at once
    h = h0
    outputs = []
    for t in range(inputs.shape[0]):
        r = torch.sigmoid(x_r[t] + nn.functional.linear(h, w_hr, b_hr))
        z = torch.sigmoid(x_z[t] + nn.functional.linear(h, w_hz, b_hz))
        n = torch.tanh(x_n[t] + r * nn.functional.linear(h, w_hn, b_hn))
        h = (1 - z) * n + z * h
        if noise is not None:
            h = h + noise[t]
        outputs.append(h)
    if not outputs:
        return h0.new_zeros(0, *h0.shape), h0
    return torch.stack(outputs), h


class GRU(nn.GRU, Traits):
    r"""``torch.nn.GRU`` (its fused kernels and equations) with the paper's LSTM initialisation and nnrnn's
    interface (``recurrent_matrix``, ``regularization``, ``parameter_count``, a reference loop).

    .. math::
        r_t = \sigma(W_{ir} x_t + b_{ir} + W_{hr} h_{t-1} + b_{hr}), \quad
        z_t = \sigma(W_{iz} x_t + b_{iz} + W_{hz} h_{t-1} + b_{hz}) \\
        n_t = \tanh(W_{in} x_t + b_{in} + r_t \odot (W_{hn} h_{t-1} + b_{hn})), \quad
        h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1}

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device, dtype:
            torch.nn.GRU's, in its order.
        init: ``'xavier'`` (default): each gate's input block and recurrent block Glorot normal on its own,
            zero biases (what the paper does for its LSTM); ``'torch'``: torch.nn.GRU's U(±1/sqrt(N));
            ``'chain:α'`` / ``'fbchain:β'``: each gate's recurrent block the chain of
            :func:`~nnrnn.models.init.chain_matrix` (Orhan & Pitkow 2020), input blocks Glorot normal, zero biases;
            ``'chrono'``: as ``'xavier'``, then the chrono initialisation of Tallec & Ollivier (2018) for the update
            gate: b_z ~ log(U(1, T_max − 1)) (in ``bias_ih``; ``bias_hh`` zero), T_max = ``chrono_tmax``.  Here
            h_t = (1 − z_t) n_t + z_t h_{t-1}, so z near 1 keeps the state: the sign that makes 1 / (1 − z) the time
            constant they give (their GRU writes the update gate the other way round, hence their −log).

    Inputs: input, h_0; Outputs: output, h_n: torch.nn.GRU's, with the same shapes: ``input`` (L, B, N_in)
    (or batch-first, unbatched, packed), ``h_0`` (D·num_layers, B, N) → ``output`` (L, B, D·N), ``h_n``
    like ``h_0``.

    Attributes: torch.nn.GRU's (``weight_ih_l[k]`` (3N, N_in), ``weight_hh_l[k]`` (3N, N), ``bias_ih_l[k]``,
    ``bias_hh_l[k]`` (3N)), gates in torch's order (reset, update, new).  ``implementation``:
    ``state_noise`` σ (keyword, default 0): Gaussian noise of standard deviation σ added to h_t after every step, in
    training and evaluation (:mod:`nnrnn.models.noise`); with σ > 0 every implementation runs :func:`gru_reference`,
    the loop that can add it (torch's kernels and the compiled loop cannot).  ``implementation``:
    ``"auto"`` (the default): the compiled loop of :class:`~nnrnn.models.fused_cells.GRULoop` (the whole
    sequence in one call, a hand-written backward) where the kernel policy chooses it (float32 on the CPU), else
    torch's kernels; ``"torch"``: torch's kernels; ``"reference"``: :func:`gru_reference`, an autograd loop.
    """
    DISPLAY_NAME = "GRU"
    LINE_STYLE = ('#8c564b', (0, (4, 4)))

    CONFIG_OPTIONS: tuple[str, ...] = ("init", "bias", "chrono_tmax", "state_noise")  # the traits beyond these:
    # Traits' (nnrnn.models.traits)
    state_noise = 0.0  # here for models saved whole before the option
    GATES = len(GATES)
    INITS: tuple[str, ...] = INITS
    implementation = "auto"
    COMPLEX_DTYPES = True  # torch.nn.GRU's complex parameters; a Schur-form block is real

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, *, init: str = "xavier", chrono_tmax: float | None = None, state_noise: float = 0.0):
        num_layers, dropout = check_constructor(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                                                bidirectional, dtype, complex_ok=self.COMPLEX_DTYPES,
                                                dropout_warning=False)
        self._check_init(init)
        self.init = init
        self.chrono_tmax = check_chrono(init, chrono_tmax, bias)
        self.state_noise = noise.check_state_noise(state_noise)
        super().__init__(input_size, hidden_size, num_layers=num_layers, bias=bias, batch_first=batch_first,
                         dropout=dropout, bidirectional=bidirectional, device=device, dtype=dtype)

    @staticmethod
    def _check_init(init) -> None:
        check_gru_init(init)

    @property
    def num_directions(self) -> int:
        """D: 2 if bidirectional else 1."""
        return 2 if self.bidirectional else 1

    @property
    def cells(self) -> list[str]:
        """The parameter-name suffix of every layer and direction: '_l0', '_l0_reverse', '_l1', …"""
        return [cell_suffix(layer, d) for layer in range(self.num_layers) for d in range(self.num_directions)]

    def _gate_init(self) -> str:
        """The scheme of the free gate blocks and biases: ``init`` for the GRU."""
        return self.init

    def reset_parameters(self) -> None:
        """Re-draw every weight by ``init`` (torch.nn.GRU calls this from its constructor)."""
        if not hasattr(self, "init"):  # torch's constructor runs before nnrnn's attributes exist
            return super().reset_parameters()
        scheme = self._gate_init()
        n = self.hidden_size
        with torch.no_grad():
            for suffix in self.cells:
                blocks = [getattr(self, "weight_ih" + suffix)]
                name = "weight_hh" + suffix
                if parametrize.is_parametrized(self, name):  # the nnGRU: free blocks and Schur factors
                    plist = self.parametrizations[name]
                    plist[0].reset_(self._originals(plist))
                    if plist[0].has_free:
                        blocks.append(plist.original0)
                else:
                    blocks.append(getattr(self, name))
                for index, weight in enumerate(blocks):
                    for block in weight.split(n):
                        self._init_block(block, scheme, recurrent=index > 0)
                if self.bias:
                    for name in ("bias_ih" + suffix, "bias_hh" + suffix):
                        self._init_block(getattr(self, name), scheme)
                    if scheme == CHRONO:  # torch's gate order: reset, update, new
                        chrono_(getattr(self, "bias_ih" + suffix).chunk(3)[1], self.chrono_tmax)

    def _init_block(self, block: torch.Tensor, scheme: str, recurrent: bool = False) -> None:
        if recurrent and parse_chain(scheme):  # every gate's recurrent block the chain, as Orhan & Pitkow's LSTM
            block.copy_(chain_matrix(self.hidden_size, scheme, block))
        elif scheme == "torch":
            bound = self.hidden_size ** -0.5
            block.uniform_(-bound, bound)
        elif block.dim() == 1:
            block.zero_()
        else:
            init_(block, "xavier")

    @staticmethod
    def _originals(plist) -> list[torch.Tensor]:
        count = sum(1 for name, _ in plist.named_parameters(recurse=False) if name.startswith("original"))
        return [getattr(plist, f"original{i}") for i in range(count)]

    # ------------------------------------------------------------------ forward
    def forward(self, input, hx=None):
        self._check_hx(input, hx)
        if self.implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}; "
                             f"got {self.implementation!r}")
        with parametrize.cached():  # a constrained weight is composed once per call, not once per read
            if self.implementation == "reference" or self.state_noise:
                return self._reference_forward(input, hx)
            if self.implementation == "auto" and choose_cells(self.weight_ih_l0, "gru") == COMPILED:
                # a constrained weight as torch's kernel gets it (without autograd: composed once, then reused)
                weights = dict(zip(self._flat_weights_names, self._composed_weights())) \
                    if parametrize.is_parametrized(self) else None
                return self._reference_forward(input, hx, compiled=True, weights=weights)
            if parametrize.is_parametrized(self):
                # torch's kernel reads these: this call's composed weights (composed once, under cached()).
                # Not through torch's _init_flat_weights, whose flatten_parameters would, on CUDA, move the
                # composed (non-leaf) tensors into a cuDNN buffer in place
                self._flat_weights = self._composed_weights()
                self._flat_weight_refs = [None if w is None else weakref.ref(w) for w in self._flat_weights]
                self.__dict__["_flat_weights_set"] = True
                try:
                    return super().forward(input, hx)
                finally:
                    self.__dict__["_flat_weights_set"] = False
            return super().forward(input, hx)

    def extra_repr(self) -> str:
        # the options beyond torch's, each only where it is not its default, as torch shows its own
        return ", ".join([super().extra_repr(), *init_repr(self), *noise.repr_part(self.state_noise)])

    def _update_flat_weights(self) -> None:
        # torch.nn.GRU.forward reads every weight again to see whether it changed, which composes each constrained
        # one; within this class's forward they were just set (and, without grad, reused: _composed_weights)
        if not self.__dict__.get("_flat_weights_set"):
            super()._update_flat_weights()

    def _composed_weights(self) -> list:
        """torch's flat weights with each constrained one composed from its current parameters.  With autograd
        off they are reused while no parameter or buffer of the constraints changed (as the non-gated models
        reuse V, :meth:`~nnrnn.models.base.RecurrentModel.recurrent_matrix`): one step at a time (generation)
        would otherwise compose every Schur form, an exponential each, at every step."""
        def compose():
            return [getattr(self, name, None) for name in self._flat_weights_names]
        return kept(self.__dict__.setdefault("_inference_weights", {}), "flat weights",
                    (*self.parametrizations.parameters(), *self.parametrizations.buffers()), compose)

    def train(self, mode: bool = True):
        self.__dict__.pop("_inference_weights", None)  # see _composed_weights
        return super().train(mode)

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_inference_weights", None)  # composed matrices are not part of the model
        state.pop("_flat_weights_set", None)
        return state

    def _apply(self, fn, recurse=True):
        if not parametrize.is_parametrized(self):
            return super()._apply(fn, recurse)
        # torch.nn.GRU re-reads every weight after a move; a constrained one would be composed from what the move
        # left (to_empty: uninitialised memory), so it is left out until forward composes it
        self._flat_weight_refs = []
        self.__dict__.pop("_inference_weights", None)
        result = nn.Module._apply(self, fn, recurse)
        self._flat_weights = [None if parametrize.is_parametrized(self, name) else getattr(self, name, None)
                              for name in self._flat_weights_names]
        self._flat_weight_refs = [None if w is None else weakref.ref(w) for w in self._flat_weights]
        return result

    def _check_hx(self, input, hx) -> None:
        """The same TypeError / ValueError as the other models (each also of torch's type), before torch's."""
        packed = isinstance(input, PackedSequence)
        x = input.data if packed else input
        check_input(self, x, states=[] if packed else [("hx", hx)])
        if hx is None:
            return
        if packed:
            batch, unbatched = int(input.batch_sizes[0]), False
        else:
            batch, unbatched = (1 if x.dim() == 2 else x.shape[0 if self.batch_first else 1]), x.dim() == 2
        check_hx(self, hx, batch, unbatched, x, self.weight_ih_l0.dtype, self.hidden_size, "hidden_size")

    def __setattr__(self, name: str, value) -> None:
        if not assign_constrained(self, name, value):
            super().__setattr__(name, value)

    def _reference_forward(self, input, hx, compiled: bool = False, weights: dict | None = None):
        """The whole layer (stacking, directions, dropout, packed batches) over :func:`gru_reference`, or with
        ``compiled`` over the compiled loop (:func:`~nnrnn.models.fused_cells.gru_compiled`); ``weights``: the
        parameters by name where they are given (else read from the module)."""
        def weight(name):
            return weights[name] if weights is not None else getattr(self, name)

        x, lengths, unbatched = time_major(self, input)
        if hx is None:
            hx = x.new_zeros(self.num_layers * self.num_directions, x.shape[1], self.hidden_size)
        elif unbatched:
            hx = hx.unsqueeze(1)

        def run_cell(layer, direction, xs, h0):
            s = cell_suffix(layer, direction)
            bias = (weight("bias_ih" + s), weight("bias_hh" + s)) if self.bias else (None, None)
            if self.state_noise:
                return gru_reference(xs, h0, weight("weight_ih" + s), weight("weight_hh" + s), *bias,
                                     noise.draw(self.state_noise, *xs.shape[:2], self.hidden_size, h0))
            cell = fused_cells.gru_compiled if compiled and fused_cells.runs(xs) else gru_reference
            return cell(xs, h0, weight("weight_ih" + s), weight("weight_hh" + s), *bias)
        output, h_n = stack_layers(self, x, lengths, hx, run_cell)
        return as_given(self, output, h_n, input, lengths, unbatched)

    # ------------------------------------------------------------------ description
    def recurrent_matrix(self, layer: int = 0, direction: int = 0, gate: str = "new") -> torch.Tensor:
        """The hidden-to-hidden block (N × N) of one gate ('reset', 'update' or 'new') of one layer and direction
        (composed from its factors where it is constrained)."""
        if gate not in GATES:
            raise ValueError(f"gate must be one of {', '.join(GATES)}; got {gate!r}")
        if not (0 <= layer < self.num_layers and 0 <= direction < self.num_directions):
            raise ValueError(f"layer must be in [0, {self.num_layers}) and direction in [0, {self.num_directions}); "
                             f"got layer={layer}, direction={direction}")
        return getattr(self, "weight_hh" + cell_suffix(layer, direction)).chunk(3)[GATES.index(gate)]

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        """The model's penalty to add to the loss: zero for the GRU."""
        return self.weight_ih_l0.new_zeros(())

    @classmethod
    def parameter_count(cls, input_size, hidden_size, bias=True, num_layers=1, bidirectional=False, **options) -> int:
        """Free parameters: per layer and direction 3N·(input + N) weights and 6N biases; a constrained
        recurrent block counts its degrees of freedom (:meth:`recurrent_parameter_count`)."""
        d = 2 if bidirectional else 1
        n = hidden_size
        inputs = 3 * n * input_size + (num_layers - 1) * 3 * n * d * n
        per_cell = 6 * n * bool(bias) + cls.recurrent_parameter_count(n, **options)
        return d * inputs + num_layers * d * per_cell

    @classmethod
    def recurrent_parameter_count(cls, hidden_size: int, **_) -> int:
        """Free parameters of one cell's stacked recurrent weight [W_hr; W_hz; W_hn]: 3N²."""
        return 3 * hidden_size ** 2
