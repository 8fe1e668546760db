"""LEM, Long Expressive Memory (Rusch, Mishra, Erichson & Mahoney, ICLR 2022)."""
from __future__ import annotations

import torch
from torch import nn

from ..kernels.operations import choose_cells
from ..kernels.settings import COMPILED
from . import fused_cells
from .cells import CellModel
from .cornn import check_positive
from .published import Published


def lem_loop(x, y0, z0, weight_ih, weight_hh, weight_zy, bias, dt: float, noise: torch.Tensor | None = None):
    """The recurrence step by step (autograd): x (T, B, I), y0 and z0 (B, H) → ys and zs (T, B, H); ``noise``
    (T, B, 2H), if given, added to [y, z] after every step."""
    projected = x @ weight_ih.t()
    if bias is not None:
        projected = projected + bias
    y, z, ys, zs = y0, z0, [], []
    for t, step in enumerate(projected.unbind(0)):  # unbind: one gradient buffer for all steps, not one per step
        gate_y, gate_z, drive_y, drive_z = step.chunk(4, -1)
        from_y = y @ weight_hh.t()
        step_y, step_z, into_z = from_y.chunk(3, -1)
        dt_y = dt * torch.sigmoid(gate_y + step_y)
        dt_z = dt * torch.sigmoid(gate_z + step_z)
        z = (1 - dt_z) * z + dt_z * torch.tanh(drive_z + into_z)
        y = (1 - dt_y) * y + dt_y * torch.tanh(z @ weight_zy.t() + drive_y)
        if noise is not None:
            y, z = y + noise[t, :, :y.shape[-1]], z + noise[t, :, y.shape[-1]:]
        ys.append(y)
        zs.append(z)
    return torch.stack(ys), torch.stack(zs)


class LEM(CellModel):
    r"""Long Expressive Memory: each layer and direction computes, with learned multiscale time steps,

    .. math::
        \Delta t_n &= \Delta t\,\hat\sigma(W_1 y_{n-1} + V_1 u_n + b_1), \qquad
        \overline{\Delta t}_n = \Delta t\,\hat\sigma(W_2 y_{n-1} + V_2 u_n + b_2), \\
        z_n &= (1 - \Delta t_n) \odot z_{n-1} + \Delta t_n \odot \tanh(W_z y_{n-1} + V_z u_n + b_z), \\
        y_n &= (1 - \overline{\Delta t}_n) \odot y_{n-1} + \overline{\Delta t}_n \odot \tanh(W_y z_n + V_y u_n + b_y),

    σ̂ the logistic sigmoid (the paper's eq. 3); the layer outputs y_n.

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device, dtype:
            torch.nn.GRU's, in its order.
        dt: Δt, a positive number (default 1, the authors' code's default).
        state_noise: σ (default 0), Gaussian noise added to [y_n, z_n] after every step (:mod:`nnrnn.models.noise`;
            σ > 0 runs :func:`lem_loop`).

    Inputs: input, (y_0, z_0); Outputs: output, (y_n, z_n): torch.nn.LSTM's form, y in the place of h and z in the
    place of c, each (D·num_layers, B, N) (zeros when omitted); ``output`` (L, B, D·N) is y at every step.

    Attributes:
        weight_ih_l[k]: [V_2; V_1; V_y; V_z] (4N, N_in) — in this order: the gate of y's step, of z's step, then
            the input to y's and to z's drive; bias_ih_l[k]: the four biases (4N);
        weight_hh_l[k]: [W_2; W_1; W_z] (3N, N), acting on y; weight_zy_l[k]: W_y (N, N), acting on z_n.
        All U(±1/sqrt(N)), as the authors' code draws every parameter.
    """
    # its published figures on the protocols the grids run (nnrnn.models.published)
    PUBLISHED = (
        Published("psmnist", "test accuracy (%)", 96.6,
                  "N = 128 (68K parameters), the 60,000 training images, 120 epochs",
                  "tk-rusch/LEM README (96.62 in its log)"),
        Published("ptb", "test bpc", 1.25, "N = 1024, T_PTB = 150, one layer, the full training file",
                  "tk-rusch/LEM README and its PTB configuration"),
    )
    DISPLAY_NAME = "LEM"
    PAPER_OPTIMIZER = "adam"  # Rusch et al.'s code, every task
    LINE_STYLE = ('#800000', (0, (5, 1, 1, 1)))

    CONFIG_OPTIONS = ("bias", "dt", "state_noise")
    # log-uniform around the values its code sets (adding: Δt 0.0242; psMNIST: 0.31); docs/design.md
    SEARCHED = {"dt": ("log", 0.01, 1.0)}
    TUNED_OPTIONS = ("dt",)
    STATES = ("y", "z")
    GATES = 4  # [W_2; W_1; W_z] and W_y

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, *, dt: float = 1.0, state_noise: float = 0.0):
        self.dt = check_positive("dt", dt)
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device,
                         dtype, state_noise=state_noise)

    def _make_cell(self, suffix, layer_input, factory):
        n = self.hidden_size
        self.register_parameter("weight_ih" + suffix, nn.Parameter(torch.empty(4 * n, layer_input, **factory)))
        self.register_parameter("weight_hh" + suffix, nn.Parameter(torch.empty(3 * n, n, **factory)))
        self.register_parameter("weight_zy" + suffix, nn.Parameter(torch.empty(n, n, **factory)))
        if self.bias:
            self.register_parameter("bias_ih" + suffix, nn.Parameter(torch.empty(4 * n, **factory)))

    def _reset_cell(self, suffix):
        bound = self.hidden_size ** -0.5
        for name in ("weight_ih", "weight_hh", "weight_zy", "bias_ih"):
            if hasattr(self, name + suffix):
                getattr(self, name + suffix).uniform_(-bound, bound)

    def _run(self, suffix, x, h0):
        y0, z0 = h0.chunk(2, -1)
        bias = getattr(self, "bias_ih" + suffix) if self.bias else None
        noise = self._noise(x)  # the compiled loop has no noise input: with noise, the loop below
        if noise is None and fused_cells.runs(x) and choose_cells(h0, "lem") == COMPILED:  # all steps in one call
            states = fused_cells.lem_compiled(x, h0, getattr(self, "weight_ih" + suffix),
                                              getattr(self, "weight_hh" + suffix), getattr(self, "weight_zy" + suffix),
                                              bias, self.dt)
            return states[..., :self.hidden_size], states
        ys, zs = lem_loop(x, y0, z0, getattr(self, "weight_ih" + suffix), getattr(self, "weight_hh" + suffix),
                          getattr(self, "weight_zy" + suffix), bias, self.dt, noise)
        return ys, torch.cat([ys, zs], -1)

    @classmethod
    def cell_parameter_count(cls, layer_input, hidden_size, bias=True, **_) -> int:
        return 4 * hidden_size * layer_input + 4 * hidden_size ** 2 + 4 * hidden_size * bool(bias)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", dt={self.dt}"
