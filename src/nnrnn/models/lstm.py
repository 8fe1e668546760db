"""LSTM baseline: ``torch.nn.LSTM`` (fused kernels) with the paper's or the release's initialisation."""
from __future__ import annotations

import warnings

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence

from ..kernels.autograd import autocast_enabled
from ..parametrizations.schur import check_penalty_weights
from . import noise
from .base import as_given, cell_suffix, check_constructor, check_input, check_state, reverse_within, time_major
from .init import CHAINS, CHRONO, accepts_init, chain_matrix, check_chrono, chrono_, init_, init_repr, parse_chain
from .traits import Traits
from .published import Published

GATES = ("input", "forget", "cell", "output")  # torch's row order in weight_hh_l0
INITS = ("xavier", "concat", CHRONO, *CHAINS)
RENAMED_INITS = {"glorot": "xavier"}  # an earlier name, still accepted with a warning


def onednn_has_lstm(dtype: torch.dtype) -> bool:
    """Whether oneDNN, which runs torch's LSTM on the CPU under autocast, has an LSTM in ``dtype`` on this CPU
    (bfloat16 needs AVX-512 BF16 or AMX, float16 AVX-512 FP16 or AMX; torch raises where it has none)."""
    supported = {torch.bfloat16: torch.ops.mkldnn._is_mkldnn_bf16_supported,
                 torch.float16: torch.ops.mkldnn._is_mkldnn_fp16_supported}.get(dtype)
    return supported is None or supported()


def lstm_reference(inputs: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, weight_ih: torch.Tensor,
                   weight_hh: torch.Tensor, bias_ih: torch.Tensor | None, bias_hh: torch.Tensor | None,
                   noise: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    r"""torch.nn.LSTM's equations as a plain autograd loop: inputs (T, B, I), h0 and c0 (B, N) -> (h_t, c_t) of every
    step, each (T, B, N).

    .. math::
        i, f, g, o = \sigma, \sigma, \tanh, \sigma\,(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh}) \\
        c_t = f \odot c_{t-1} + i \odot g, \quad h_t = o \odot \tanh(c_t)

    ``noise`` (T, B, 2N), if given, is added to the state [h_t, c_t] after every step (:mod:`nnrnn.models.noise`).
    """
    projected = nn.functional.linear(inputs, weight_ih, bias_ih)  # every step's input at once
    h, c, hs, cs = h0, c0, [], []
    for t in range(inputs.shape[0]):
        i, f, g, o = (projected[t] + nn.functional.linear(h, weight_hh, bias_hh)).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        if noise is not None:
            h, c = h + noise[t, :, :h.shape[-1]], c + noise[t, :, h.shape[-1]:]
        hs.append(h)
        cs.append(c)
    return torch.stack(hs), torch.stack(cs)


def check_lstm_init(init) -> str:
    """``init`` as one of :data:`INITS` (an earlier name is translated with a FutureWarning), else a
    ValueError."""
    if init in RENAMED_INITS:
        warnings.warn(f"the LSTM's init {init!r} is now called {RENAMED_INITS[init]!r}; {init!r} will be removed",
                      FutureWarning, stacklevel=3)
        return RENAMED_INITS[init]
    if not accepts_init(INITS, init):
        raise ValueError(f"init must be 'xavier', 'concat', 'chrono', 'chain:GAIN' or 'fbchain:GAIN' for the LSTM; "
                         f"got {init!r}")
    return init


class LSTM(nn.LSTM, Traits):
    r"""``torch.nn.LSTM`` (its fused kernels and equations) with the paper's or the release's initialisation.

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, proj_size,
            device, dtype: torch.nn.LSTM's, in its order.
        init: ``'xavier'`` (default): each gate's input block and recurrent block Glorot normal on its
            own, zero biases (the paper's).  ``'concat'``: what the authors' released code does, whose
            LSTM computes each gate as one ``nn.Linear`` of the concatenated [h, x]: each gate's
            N × (N + I) weight Glorot normal as a whole (std sqrt(2 / (2N + I))), its single bias
            U(±1/sqrt(N + I)); torch's second bias per gate (``bias_hh_l*``) is held at zero and not
            trained, so the parameters are the release's.  (``'glorot'`` is the earlier name of
            ``'xavier'``.)  ``'chain:α'`` / ``'fbchain:β'``: each gate's recurrent block the chain of
            :func:`~nnrnn.models.init.chain_matrix` (Orhan & Pitkow 2020), input blocks Glorot normal, zero biases.
            ``'chrono'``: as ``'xavier'``, then the chrono initialisation of Tallec & Ollivier (2018): the forget
            gate's bias b_f ~ log(U(1, T_max − 1)) and the input gate's b_i = −b_f (in ``bias_ih``; ``bias_hh`` zero),
            T_max = ``chrono_tmax``, so that the cells start with memory time constants spread up to T_max.
            With ``proj_size`` > 0 the projection ``weight_hr_l[k]`` (P × N), which neither the paper nor the
            release has, is Glorot normal under every init.

        state_noise: σ (default 0): Gaussian noise of standard deviation σ added to h_t and c_t after every step, in
            training and evaluation (:mod:`nnrnn.models.noise`); with σ > 0 the layer runs :func:`lstm_reference`,
            the loop that can add it, instead of torch's kernels (not with ``proj_size``).

    Inputs: input, (h_0, c_0); Outputs: output, (h_n, c_n): torch.nn.LSTM's, with the same shapes:
    ``input`` (L, B, N_in) (or batch-first, unbatched, packed), ``h_0``/``c_0`` (D·num_layers, B, N)
    → ``output`` (L, B, D·N).

    Attributes: torch.nn.LSTM's (``weight_ih_l[k]`` (4N, N_in), ``weight_hh_l[k]`` (4N, N), ``bias_ih_l[k]``,
    ``bias_hh_l[k]`` (4N)), gates in torch's order (input, forget, cell, output).
    """
    # its published figures on the protocols the grids run (nnrnn.models.published)
    PUBLISHED = (
        Published("ptb", "test bpc", 1.37, "N = 1024, the full training file",
                  "the paper's §4.2 (its text, not a table)"),
    )
    DISPLAY_NAME = "LSTM"
    PAPER_OPTIMIZER = "rmsprop"  # the paper's release (utils.select_optimizer)
    LINE_STYLE = ('#9467bd', (0, (3, 1, 1, 1, 1, 1)))

    CONFIG_OPTIONS = ("init", "bias", "chrono_tmax", "state_noise")  # the traits beyond these: Traits'
    state_noise = 0.0  # here for models saved whole before the option
    GATES = len(GATES)
    INITS = INITS

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None, *, init: str = "xavier", chrono_tmax: float | None = None,
                 state_noise: float = 0.0):
        num_layers, dropout = check_constructor(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                                                bidirectional, dtype, complex_ok=True, dropout_warning=False)
        self.init = check_lstm_init(init)
        self.chrono_tmax = check_chrono(self.init, chrono_tmax, bias)
        self.state_noise = noise.check_state_noise(state_noise)
        if self.state_noise and proj_size:
            raise ValueError(f"state_noise is not supported with a projection; got state_noise={state_noise} and "
                             f"proj_size={proj_size} (use one of them)")
        if parse_chain(self.init) and isinstance(proj_size, int) and not isinstance(proj_size, bool) and proj_size > 0:
            # a chain is square (unit i feeds unit i + 1); with a projection each gate's recurrent block is N × P
            raise ValueError(f"init {self.init!r} needs square recurrent blocks, so proj_size must be 0; "
                             f"got proj_size={proj_size} (use init='xavier' or 'concat' with a projection)")
        super().__init__(input_size, hidden_size, num_layers=num_layers, bias=bias, batch_first=batch_first,
                         dropout=dropout, bidirectional=bidirectional, proj_size=proj_size, device=device,
                         dtype=dtype)

    @property
    def num_directions(self) -> int:
        """D: 2 if bidirectional else 1."""
        return 2 if self.bidirectional else 1

    def reset_parameters(self) -> None:
        """Re-draw every weight by ``init`` (torch.nn.LSTM calls this from its constructor)."""
        if not hasattr(self, "init"):  # torch's constructor runs before nnrnn's attributes exist
            return super().reset_parameters()
        with torch.no_grad():
            for suffix in self._cell_suffixes():
                weight_ih, weight_hh = getattr(self, "weight_ih" + suffix), getattr(self, "weight_hh" + suffix)
                chain = parse_chain(self.init)
                for gate_ih, gate_hh in zip(weight_ih.chunk(4), weight_hh.chunk(4)):
                    if chain:  # every gate's recurrent block the chain, as Orhan & Pitkow's LSTM initialiser
                        init_(gate_ih, "xavier")
                        gate_hh.copy_(chain_matrix(gate_hh.shape[0], self.init, gate_hh))
                    elif self.init in ("xavier", CHRONO):
                        init_(gate_ih, "xavier")
                        init_(gate_hh, "xavier")
                    else:
                        gate = init_(gate_ih.new_empty(gate_hh.shape[0], gate_hh.shape[1] + gate_ih.shape[1]), "xavier")
                        gate_hh.copy_(gate[:, :gate_hh.shape[1]])
                        gate_ih.copy_(gate[:, gate_hh.shape[1]:])
                if self.proj_size:  # torch.nn.LSTM leaves W_hr as torch.empty until its own reset, never run here
                    init_(getattr(self, "weight_hr" + suffix), "xavier")
                if self.bias:
                    fan_in = weight_ih.shape[1] + weight_hh.shape[1]
                    init_(getattr(self, "bias_ih" + suffix), "uniform" if self.init == "concat" else "zeros",
                          fan_in=fan_in)
                    getattr(self, "bias_hh" + suffix).zero_()
                    getattr(self, "bias_hh" + suffix).requires_grad_(self.init != "concat")
                    if self.init == CHRONO:  # torch's gate order: input, forget, cell, output
                        gate_input, forget = getattr(self, "bias_ih" + suffix).chunk(4)[:2]
                        gate_input.copy_(-chrono_(forget, self.chrono_tmax))

    def _cell_suffixes(self) -> list[str]:
        """One suffix per layer and direction ("_l0", "_l0_reverse", "_l1", …), from torch's parameter names."""
        return [name.removeprefix("weight_ih") for name, _ in self.named_parameters() if name.startswith("weight_ih")]

    def forward(self, input, hx=None):
        self._check(input, hx)
        if self.state_noise:
            return self._noisy_forward(input, hx)
        if isinstance(input, torch.Tensor):
            steps = input.shape[1 if self.batch_first and input.dim() == 3 else 0]
            if steps == 1 and not torch.is_grad_enabled() and not self.proj_size \
                    and not autocast_enabled(input.device.type):
                return self._one_step(input, hx)
        if self.weight_ih_l0.device.type == "cpu" and autocast_enabled("cpu") \
                and not onednn_has_lstm(torch.get_autocast_dtype("cpu")):
            with torch.autocast("cpu", enabled=False):  # torch would raise: run this call in float32
                return super().forward(input, hx)
        return super().forward(input, hx)

    def _noisy_forward(self, input, hx):
        """The layer over :func:`lstm_reference` with the state noise of every layer and direction (its (T, B, 2N)
        block drawn before its loop): stacking, directions, dropout and packed batches as torch.nn.LSTM's."""
        x, lengths, unbatched = time_major(self, input)
        directions, batch, n = self.num_directions, x.shape[1], self.hidden_size
        if hx is None:
            h0 = c0 = x.new_zeros(self.num_layers * directions, batch, n)
        else:
            h0, c0 = (h.unsqueeze(1) if unbatched else h for h in hx)
        last = None if lengths is None else (lengths - 1).to(x.device)
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for d in range(directions):
                suffix, i = cell_suffix(layer, d), layer * directions + d
                xs = reverse_within(x, lengths) if d else x
                biases = (getattr(self, "bias_ih" + suffix), getattr(self, "bias_hh" + suffix)) if self.bias \
                    else (None, None)
                hs, cs = lstm_reference(xs, h0[i], c0[i], getattr(self, "weight_ih" + suffix),
                                        getattr(self, "weight_hh" + suffix), *biases,
                                        noise.draw(self.state_noise, *xs.shape[:2], 2 * n, xs))
                at = -1 if last is None else (last, torch.arange(batch, device=x.device))
                finals.append((hs[at], cs[at]))
                outputs.append(reverse_within(hs, lengths) if d else hs)
            x = outputs[0] if directions == 1 else torch.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = nn.functional.dropout(x, self.dropout, training=True)
        h_n, c_n = (torch.stack(states) for states in zip(*finals))
        if unbatched:
            return x.squeeze(1), (h_n.squeeze(1), c_n.squeeze(1))
        return as_given(self, x, (h_n, c_n), input, lengths, False)

    def extra_repr(self) -> str:
        # the options beyond torch's, each only where it is not its default, as torch shows its own
        return ", ".join([super().extra_repr(), *init_repr(self), *noise.repr_part(self.state_noise)])

    def _one_step(self, input: torch.Tensor, hx):
        """One time step without autograd (generation): torch's fused LSTM cell per layer and direction, which
        costs a fraction of building the fused sequence kernel for a single step."""
        unbatched = input.dim() == 2
        x = input.reshape(-1, input.shape[-1])  # (B, I): one step
        directions = self.num_directions
        cells = self.num_layers * directions
        if hx is None:
            h0 = c0 = x.new_zeros(cells, x.shape[0], self.hidden_size)
        else:
            h0, c0 = (h.unsqueeze(1) if unbatched else h for h in hx)
        hs, cs = [], []
        for layer in range(self.num_layers):
            outputs = []
            for d in range(directions):
                suffix, i = cell_suffix(layer, d), layer * directions + d
                bias = (getattr(self, "bias_ih" + suffix), getattr(self, "bias_hh" + suffix)) if self.bias \
                    else (None, None)
                h, c = torch._VF.lstm_cell(x, (h0[i], c0[i]), getattr(self, "weight_ih" + suffix),
                                           getattr(self, "weight_hh" + suffix), *bias)
                outputs.append(h)
                hs.append(h)
                cs.append(c)
            x = outputs[0] if directions == 1 else torch.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = nn.functional.dropout(x, self.dropout, training=True)
        h_n, c_n = torch.stack(hs), torch.stack(cs)
        if unbatched:
            return x, (h_n.squeeze(1), c_n.squeeze(1))
        return (x.unsqueeze(1) if self.batch_first else x.unsqueeze(0)), (h_n, c_n)

    def _check(self, input, hx) -> None:
        """The same TypeError / ValueError as the other models (each also of torch's type), before torch's."""
        packed = isinstance(input, PackedSequence)
        states = list(zip(("h_0", "c_0"), hx)) if isinstance(hx, (tuple, list)) and len(hx) == 2 and not packed \
            else []
        check_input(self, input.data if packed else input, states=states)
        if hx is None:
            return
        if not (isinstance(hx, (tuple, list)) and len(hx) == 2 and all(isinstance(h, torch.Tensor) for h in hx)):
            raise TypeError(f"hx must be a tuple (h_0, c_0) of tensors or None; got {type(hx).__name__}")
        layers = self.num_layers * self.num_directions
        if packed:
            batch = (int(input.batch_sizes[0]),)
        else:
            batch = () if input.dim() == 2 else (input.shape[0 if self.batch_first else 1],)
        x = input.data if packed else input
        for name, h, width in (("h_0", hx[0], self.proj_size or self.hidden_size), ("c_0", hx[1], self.hidden_size)):
            layout = f"num_layers * num_directions, {'batch, ' if batch else ''}" \
                     f"{'proj_size' if name == 'h_0' and self.proj_size else 'hidden_size'}"
            check_state(self, name, h, (layers, *batch, width), layout, x, self.weight_ih_l0.dtype)

    def recurrent_matrix(self, layer: int = 0, direction: int = 0, gate: str = "cell") -> torch.Tensor:
        """The hidden-to-hidden block (N × N) of one gate ('input', 'forget', 'cell' or 'output') of one layer and
        direction; the layer and direction come first, as every other model's ``recurrent_matrix``."""
        if isinstance(layer, str):  # the earlier order, recurrent_matrix(gate, layer, direction)
            warnings.warn("LSTM.recurrent_matrix(gate, layer, direction) is now recurrent_matrix(layer, direction, "
                          "gate=...)", FutureWarning, stacklevel=2)
            layer, direction, gate = (direction, gate if isinstance(gate, int) else 0, layer)
        if gate not in GATES:
            raise ValueError(f"gate must be one of {', '.join(GATES)}; got {gate!r}")
        suffix = cell_suffix(layer, direction)
        if not hasattr(self, "weight_hh" + suffix):
            raise ValueError(f"this LSTM has no layer {layer}, direction {direction}")
        return getattr(self, "weight_hh" + suffix).chunk(4)[GATES.index(gate)]

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        check_penalty_weights(delta, t_decay)
        return self.weight_hh_l0.new_zeros(())

    @classmethod
    def parameter_count(cls, input_size, hidden_size, bias=True, init="xavier", num_layers=1, bidirectional=False,
                        proj_size=0, **_) -> int:
        if proj_size:
            raise ValueError("parameter_count does not count an LSTM with proj_size; count model.parameters()")
        d = 2 if bidirectional else 1
        biases = (1 if init == "concat" else 2) * bool(bias)
        first = hidden_size * input_size + hidden_size ** 2 + biases * hidden_size
        later = hidden_size * d * hidden_size + hidden_size ** 2 + biases * hidden_size
        return 4 * d * (first + (num_layers - 1) * later)
