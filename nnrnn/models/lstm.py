"""LSTM baseline: ``torch.nn.LSTM`` (one layer, fused kernels) behind nnrnn's interface."""
from __future__ import annotations

import torch
from torch import nn

from .base import check_input, check_size
from .init import init_

GATES = ("input", "forget", "cell", "output")  # torch's row order in weight_hh_l0
INITS = ("glorot", "concat")


class LSTM(nn.LSTM):
    """``torch.nn.LSTM(input_size, hidden_size, num_layers=1)`` with Glorot-normal weights.

    ``init="glorot"``: each gate's input block (N × I) and recurrent block (N × N)
    Glorot normal on its own, zero biases.  ``init="concat"``: what the authors'
    released code does, whose LSTM computes each gate as one ``nn.Linear`` of
    the concatenated [h, x]: each gate's N × (N + I) weight is Glorot normal as
    a whole (std sqrt(2 / (2N + I))), its single bias U(±1/sqrt(N + I)).  torch's
    fused LSTM has two biases per gate; with "concat" the recurrent one
    (``bias_hh_l0``) is held at zero and not trained, so the parameters are the
    release's.

    The state is torch's tuple ``(h, c)``: ``forward(input, hx=None)`` returns
    ``(output, (h_n, c_n))``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, batch_first: bool = False,
                 init: str = "glorot"):
        check_size("input_size", input_size)
        check_size("hidden_size", hidden_size)
        if init not in INITS:
            raise ValueError(f"init must be 'glorot' or 'concat' for the LSTM; got {init!r}")
        super().__init__(input_size, hidden_size, num_layers=1, bias=bias, batch_first=batch_first)
        self.init = init
        with torch.no_grad():
            for gate_ih, gate_hh in zip(self.weight_ih_l0.chunk(4, 0), self.weight_hh_l0.chunk(4, 0)):
                if init == "glorot":
                    init_(gate_ih, "xavier")
                    init_(gate_hh, "xavier")
                else:
                    gate = init_(torch.empty(hidden_size, hidden_size + input_size), "xavier")
                    gate_hh.copy_(gate[:, :hidden_size])
                    gate_ih.copy_(gate[:, hidden_size:])
            if bias:
                init_(self.bias_ih_l0, "zeros" if init == "glorot" else "uniform", fan_in=hidden_size + input_size)
                self.bias_hh_l0.zero_()
        if bias and init == "concat":
            self.bias_hh_l0.requires_grad_(False)

    def forward(self, input, hx=None):
        if isinstance(input, torch.Tensor):  # PackedSequence goes to torch unchecked
            self._check(input, hx)
        return super().forward(input, hx)

    def _check(self, input: torch.Tensor, hx) -> None:
        """The same TypeError / ValueError as the other models, before torch's RuntimeError."""
        check_input(self, input)
        if hx is None:
            return
        if not (isinstance(hx, (tuple, list)) and len(hx) == 2 and all(isinstance(h, torch.Tensor) for h in hx)):
            raise TypeError(f"hx must be a tuple (h_0, c_0) of tensors or None; got {type(hx).__name__}")
        if input.dim() == 2:
            expected = (1, self.hidden_size)
        else:
            expected = (1, input.shape[0 if self.batch_first else 1], self.hidden_size)
        for name, h in zip(("h_0", "c_0"), hx):
            if tuple(h.shape) != expected:
                raise ValueError(f"{name} must have shape {expected}; got {tuple(h.shape)}")

    def recurrent_matrix(self, gate: str = "cell") -> torch.Tensor:
        """The hidden-to-hidden block of one gate ('input', 'forget', 'cell' or 'output')."""
        if gate not in GATES:
            raise ValueError(f"gate must be one of {', '.join(GATES)}; got {gate!r}")
        return self.weight_hh_l0.chunk(4, 0)[GATES.index(gate)]

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        return self.weight_hh_l0.new_zeros(())

    @classmethod
    def parameter_count(cls, input_size, hidden_size, bias=True, init="glorot", **_) -> int:
        biases = (1 if init == "concat" else 2) * bool(bias)
        return 4 * (hidden_size * input_size + hidden_size ** 2 + biases * hidden_size)
