"""Shape handling and parameters shared by the non-gated recurrent models.

Every model follows ``torch.nn.RNN`` for one layer:

* ``input``: (T, B, input_size), or (B, T, input_size) with ``batch_first``,
  or unbatched (T, input_size);
* ``hx``: (1, B, hidden_size), or (1, hidden_size) for unbatched input;
  zeros when omitted;
* returns ``output`` (T, B, hidden_size) (batch_first: (B, T, hidden_size);
  unbatched: (T, hidden_size)) and ``h_n`` shaped like ``hx``.
"""
from __future__ import annotations

import torch
from torch import nn

from .fused import fused_recurrence
from .init import check_scheme, init_
from .recurrence import NONLINEARITIES, reference_recurrence

IMPLEMENTATIONS = {"fused": fused_recurrence, "reference": reference_recurrence}


def check_size(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a positive int; got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int; got {value}")
    return value


def check_nonlinearity(value):
    if value == "none":
        value = None
    if value not in NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of 'modrelu', 'tanh', 'relu' or None; got {value!r}")
    return value


def check_input(module: nn.Module, input) -> None:
    """TypeError / ValueError naming what is wrong with ``input`` for a layer like torch.nn.RNN."""
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"input must be a torch.Tensor; got {type(input).__name__}")
    if not input.is_floating_point():
        raise TypeError(f"input must be a floating-point tensor; got dtype {input.dtype}")
    if input.dim() not in (2, 3):
        raise ValueError(f"input must be 2-d (T, input_size) or 3-d (T, B, input_size); got shape {tuple(input.shape)}")
    if input.shape[-1] != module.input_size:
        raise ValueError(f"input.size(-1) must be equal to input_size: expected {module.input_size}, "
                         f"got {input.shape[-1]}")


def prepare_input(module: nn.Module, input: torch.Tensor, hx):
    """Validate and bring input to (T, B, I) and hx to (1, B, N); report whether input was unbatched."""
    check_input(module, input)
    unbatched = input.dim() == 2
    if unbatched:
        input = input.unsqueeze(1)
    elif module.batch_first:
        input = input.transpose(0, 1)
    batch = input.shape[1]
    if hx is None:
        hx = input.new_zeros(1, batch, module.hidden_size)
    else:
        if not isinstance(hx, torch.Tensor):
            raise TypeError(f"hx must be a torch.Tensor or None; got {type(hx).__name__}")
        expected = (1, module.hidden_size) if unbatched else (1, batch, module.hidden_size)
        if tuple(hx.shape) != expected:
            raise ValueError(f"hx must have shape {expected}; got {tuple(hx.shape)}")
        if unbatched:
            hx = hx.unsqueeze(1)
    return input, hx, unbatched


def restore_output(module: nn.Module, output: torch.Tensor, h_n: torch.Tensor, unbatched: bool):
    if unbatched:
        return output.squeeze(1), h_n.squeeze(1)
    if module.batch_first:
        output = output.transpose(0, 1)
    return output, h_n


class RecurrentModel(nn.Module):
    """h_t = φ(V h_{t-1} + W_ih x_t + b) with V from :meth:`recurrent_matrix`.

    Parameters every subclass shares: ``weight_ih`` (hidden_size × input_size,
    initialised by ``input_init``, Glorot normal by default), ``bias``
    (hidden_size, by ``bias_init``, zeros by default; absent with ``bias=False``)
    and, for modReLU, ``modrelu_bias`` (hidden_size, U(-0.01, 0.01) as in
    expRNN, so that modReLU starts close to the identity).  The schemes are
    those of :mod:`nnrnn.models.init`; the bias's "uniform" uses input_size as
    its fan-in, as ``torch.nn.Linear`` does.

    How the recurrence is computed is chosen by the attribute
    ``implementation`` (the class default, ``"fused"``, may be overridden per
    instance, e.g. ``model.implementation = "reference"``):

    * ``"fused"``: :func:`~nnrnn.models.fused.fused_recurrence`, one autograd
      node with a hand-written backward-through-time (see
      :mod:`nnrnn.models.fused`); first-order gradients only.
    * ``"reference"``: :func:`~nnrnn.models.recurrence.reference_recurrence`,
      the plain autograd loop (supports double backward).

    Both compute the same values (to rounding); V = :meth:`recurrent_matrix` is
    composed once per forward, in autograd, and handed to the recurrence.
    """

    implementation = "fused"

    def __init__(self, input_size: int, hidden_size: int, nonlinearity="modrelu", bias: bool = True,
                 batch_first: bool = False, input_init: str = "xavier", bias_init: str = "zeros"):
        super().__init__()
        self.input_size = check_size("input_size", input_size)
        self.hidden_size = check_size("hidden_size", hidden_size)
        self.nonlinearity = check_nonlinearity(nonlinearity)
        self.batch_first = bool(batch_first)
        self.input_init = check_scheme("input_init", input_init)
        self.bias_init = check_scheme("bias_init", bias_init)
        self.weight_ih = nn.Parameter(init_(torch.empty(hidden_size, input_size), input_init))
        self.bias = nn.Parameter(init_(torch.empty(hidden_size), bias_init, fan_in=input_size)) if bias else None
        if self.nonlinearity == "modrelu":
            self.modrelu_bias = nn.Parameter(torch.empty(hidden_size).uniform_(-0.01, 0.01))
        else:
            self.modrelu_bias = None

    @staticmethod
    def shared_parameter_count(input_size: int, hidden_size: int, bias: bool = True,
                               nonlinearity="modrelu") -> int:
        return hidden_size * input_size + hidden_size * bool(bias) + hidden_size * (check_nonlinearity(nonlinearity) == "modrelu")

    def recurrent_matrix(self) -> torch.Tensor:
        """V (hidden_size × hidden_size), composed from the current parameters."""
        raise NotImplementedError

    def recurrence(self, inputs: torch.Tensor, h0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """inputs (T, B, I), h0 (B, N) -> outputs (T, B, N), h_T (B, N)."""
        if self.implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}; "
                             f"got {self.implementation!r}")
        return IMPLEMENTATIONS[self.implementation](inputs, h0, self.weight_ih, self.bias, self.recurrent_matrix(),
                                                    self.nonlinearity, self.modrelu_bias)

    def forward(self, input: torch.Tensor, hx: torch.Tensor | None = None):
        input, hx, unbatched = prepare_input(self, input, hx)
        output, h_n = self.recurrence(input, hx[0])
        return restore_output(self, output, h_n.unsqueeze(0), unbatched)

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        """The model's penalty to add to the loss (zero unless overridden)."""
        return self.weight_ih.new_zeros(())

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}, nonlinearity={self.nonlinearity!r}"
        if self.bias is None:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        return s
