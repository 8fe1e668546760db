"""coRNN, the coupled oscillatory RNN (Rusch & Mishra, ICLR 2021)."""
from __future__ import annotations

import math

import torch
from torch import nn

from ..kernels.operations import choose_cells
from ..kernels.settings import COMPILED
from . import fused_cells
from .cells import CellModel
from .published import Published


def check_positive(name: str, value) -> float:
    """``value`` as a float if it is a positive finite number, else a TypeError / ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a positive number; got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    return float(value)


DAMPINGS = ("explicit", "implicit")  # the authors' released code's step, the paper's eq. 3


def check_damping(damping) -> str:
    """``damping`` if it is one of :data:`DAMPINGS`, else a ValueError."""
    if damping not in DAMPINGS:
        raise ValueError(f"damping must be 'explicit' or 'implicit'; got {damping!r}")
    return damping


def cornn_loop(x, y0, z0, weight_ih, weight_hh, bias, dt: float, gamma: float, epsilon: float,
               damping: str = "explicit", noise: torch.Tensor | None = None):
    """The recurrence step by step (autograd): x (T, B, I), y0 and z0 (B, H) → ys and zs (T, B, H); ``damping``
    as :class:`CoRNN` takes it; ``noise`` (T, B, 2H), if given, added to [y, z] after every step."""
    projected = x @ weight_ih.t()
    if bias is not None:
        projected = projected + bias
    implicit = check_damping(damping) == "implicit"
    y, z, ys, zs = y0, z0, [], []
    for t, step in enumerate(projected.unbind(0)):  # unbind: one gradient buffer for all steps, not one per step
        drive = torch.tanh(step + torch.cat([y, z], -1) @ weight_hh.t())
        if implicit:
            z = (z + dt * (drive - gamma * y)) / (1 + dt * epsilon)
        else:  # in the code's order of operations
            z = z + dt * (drive - gamma * y - epsilon * z)
        y = y + dt * z
        if noise is not None:
            y, z = y + noise[t, :, :y.shape[-1]], z + noise[t, :, y.shape[-1]:]
        ys.append(y)
        zs.append(z)
    return torch.stack(ys), torch.stack(zs)


class CoRNN(CellModel):
    r"""The coupled oscillatory RNN: each layer and direction is a network of N damped, driven nonlinear oscillators,

    .. math::
        y'' = \tanh(W y + \mathcal{W} y' + V u + b) - \gamma y - \epsilon y',

    discretised, with ``damping="explicit"`` (the default), as the authors' released code (tk-rusch/coRNN, every
    task) steps it, the damping taken at the old velocity,

    .. math::
        z_n &= z_{n-1} + \Delta t\,\big(\tanh(W y_{n-1} + \mathcal{W} z_{n-1} + V u_n + b)
               - \gamma\, y_{n-1} - \epsilon\, z_{n-1}\big), \\
        y_n &= y_{n-1} + \Delta t\, z_n;

    with ``damping="implicit"``, as the paper's eq. 3 writes it, at the new one: −ε z_n in place of −ε z_{n−1},
    solved for z_n as z_n = (z_{n-1} + Δt(tanh(·) − γ y_{n-1})) / (1 + Δt ε).  Where Δt ε < 1 the two are one
    model in two coordinates: the explicit step at (Δt, γ, ε) outputs the same y_n as the implicit step at
    (aΔt, γ, aε), a = 1/√(1 − Δt ε), with 𝒲 scaled by a and its z (and z_0) by 1/a (docs/design.md).  The layer
    outputs y_n.

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device, dtype:
            torch.nn.GRU's, in its order.
        dt, gamma, epsilon: Δt, γ and ε, positive numbers (defaults: the authors' psMNIST values, 0.076, 0.4, 8).
        damping: ``"explicit"`` (the released code's step, default) or ``"implicit"`` (the paper's eq. 3).
        state_noise: σ (default 0), Gaussian noise added to [y_n, z_n] after every step (:mod:`nnrnn.models.noise`;
            σ > 0 runs :func:`cornn_loop`).

    Inputs: input, (y_0, z_0); Outputs: output, (y_n, z_n): torch.nn.LSTM's form, the position y in the place of h
    and the velocity z in the place of c, each (D·num_layers, B, N) (zeros when omitted); ``output`` (L, B, D·N) is
    y at every step.

    Attributes:
        weight_ih_l[k]: V, (N, N_in); bias_ih_l[k]: b, (N); weight_hh_l[k]: [W, 𝒲], (N, 2N), acting on [y, z].
        All drawn as ``torch.nn.Linear`` draws the authors' one layer of [u, z, y]: U(±1/sqrt(N_in + 2N)).
    """
    # its published figures on the protocols the grids run (nnrnn.models.published)
    PUBLISHED = (
        Published("psmnist", "test accuracy (%)", 97.3,
                  "N = 256 (134K parameters), the 60,000 training images, 120 epochs",
                  "tk-rusch/coRNN README (97.34 in its first version, the last epoch's test accuracy)"),
    )
    DISPLAY_NAME = "coRNN"
    PAPER_OPTIMIZER = "adam"  # Rusch & Mishra's code, every task
    LINE_STYLE = ('#17becf', (0, (12, 3, 3, 3)))

    CONFIG_OPTIONS = ("bias", "dt", "gamma", "epsilon", "damping", "state_noise")
    # log-uniform ranges around the values its code sets for its tasks (adding: Δt 0.06, γ 66, ε 15; psMNIST:
    # 0.076, 0.4, 8; sMNIST: 0.042, 2.7, 4.7), Δt and ε cut so that Δt ε < 1 everywhere in the box (0.1 × 9.9): the
    # explicit step multiplies z by 1 − Δt ε, which flips its sign beyond and grows it beyond 2; docs/design.md
    SEARCHED = {"dt": ("log", 0.01, 0.1), "gamma": ("log", 0.1, 100.0), "epsilon": ("log", 0.5, 9.9)}
    TUNED_OPTIONS = ("dt", "epsilon")  # the step and its damping; γ stays at its preset's value
    STATES = ("y", "z")
    GATES = 2  # [W, 𝒲]

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, *, dt: float = 0.076, gamma: float = 0.4, epsilon: float = 8.0,
                 damping: str = "explicit", state_noise: float = 0.0):
        self.dt, self.gamma = check_positive("dt", dt), check_positive("gamma", gamma)
        self.epsilon, self.damping = check_positive("epsilon", epsilon), check_damping(damping)
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device,
                         dtype, state_noise=state_noise)

    def _make_cell(self, suffix, layer_input, factory):
        n = self.hidden_size
        self.register_parameter("weight_ih" + suffix, nn.Parameter(torch.empty(n, layer_input, **factory)))
        self.register_parameter("weight_hh" + suffix, nn.Parameter(torch.empty(n, 2 * n, **factory)))
        if self.bias:
            self.register_parameter("bias_ih" + suffix, nn.Parameter(torch.empty(n, **factory)))

    def _reset_cell(self, suffix):
        weight_ih = getattr(self, "weight_ih" + suffix)
        bound = (weight_ih.shape[1] + 2 * self.hidden_size) ** -0.5
        for name in ("weight_ih", "weight_hh", "bias_ih"):
            if hasattr(self, name + suffix):
                getattr(self, name + suffix).uniform_(-bound, bound)

    def _run(self, suffix, x, h0):
        y0, z0 = h0.chunk(2, -1)
        bias = getattr(self, "bias_ih" + suffix) if self.bias else None
        noise = self._noise(x)  # the compiled loop has no noise input: with noise, the loop below
        if noise is None and fused_cells.runs(x) and choose_cells(h0, "cornn") == COMPILED:  # all steps in one call
            states = fused_cells.cornn_compiled(x, h0, getattr(self, "weight_ih" + suffix),
                                                getattr(self, "weight_hh" + suffix), bias, self.dt, self.gamma,
                                                self.epsilon, self.damping == "implicit")
            return states[..., :self.hidden_size], states
        ys, zs = cornn_loop(x, y0, z0, getattr(self, "weight_ih" + suffix), getattr(self, "weight_hh" + suffix), bias,
                            self.dt, self.gamma, self.epsilon, self.damping, noise)
        return ys, torch.cat([ys, zs], -1)

    @classmethod
    def cell_parameter_count(cls, layer_input, hidden_size, bias=True, **_) -> int:
        return hidden_size * (layer_input + 2 * hidden_size + bool(bias))

    def extra_repr(self) -> str:
        return (super().extra_repr() + f", dt={self.dt}, gamma={self.gamma}, epsilon={self.epsilon}, "
                f"damping={self.damping!r}")
