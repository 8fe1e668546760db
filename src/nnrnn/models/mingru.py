"""minGRU (Feng, Tung, Ahmed, Bengio & Hajimirsadeghi 2024, "Were RNNs all we needed?"), trained by a scan over
time in log space as its paper trains it, with the step-by-step loop as its reference."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ..kernels.autograd import exporting_to_onnx
from ..kernels.candidates import Scanned
from . import fused_cells
from .cells import CellModel, compiled_here, use_scan

# batch × N at and below which the log-space scan beat the loop on a CPU (docs/performance.md, "Parallel scans")
CPU_SCAN_CROSSOVER = 256


def g(x: torch.Tensor) -> torch.Tensor:
    """The paper's positive activation: x + 1/2 for x ≥ 0, sigmoid(x) below (continuous at 0, always > 0)."""
    return torch.where(x >= 0, x + 0.5, torch.sigmoid(x))


def log_g(x: torch.Tensor) -> torch.Tensor:
    """log g(x), computed without forming g(x) where it is small."""
    return torch.where(x >= 0, torch.log(F.relu(x) + 0.5), -F.softplus(-x))


def mingru_loop(gate: torch.Tensor, candidate: torch.Tensor, h0: torch.Tensor,
                noise: torch.Tensor | None = None) -> torch.Tensor:
    """The reference: h_t = (1 − z_t) h_{t−1} + z_t g(k_t), z_t = σ(gate_t), step by step.  (T, B, H) → (T, B, H);
    ``noise`` (T, B, H), if given, added to h_t after every step."""
    z, target = torch.sigmoid(gate), g(candidate)
    h, hs = h0, []
    for t, (z_t, target_t) in enumerate(zip(z.unbind(0), target.unbind(0))):  # unbind: one gradient buffer
        h = (1 - z_t) * h + z_t * target_t
        if noise is not None:
            h = h + noise[t]
        hs.append(h)
    return torch.stack(hs)


def mingru_scan(gate: torch.Tensor, candidate: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
    """The same h_t for all t at once, in log space (the paper's parallel form): with a_t = log(1 − z_t) and
    A_t = a_1 + … + a_t, h_t = e^{A_t} h_0 + e^{A_t} Σ_{k≤t} z_k g(k_k) e^{−A_k}, the sum taken as a
    logcumsumexp of log z_k + log g(k_k) − A_k.  h_0 enters linearly, so it may have any sign (the paper's
    log-space form needs g(h_0) > 0)."""
    log_keep = -F.softplus(gate)  # log(1 − σ(gate))
    log_values = -F.softplus(-gate) + log_g(candidate)  # log σ(gate) + log g(candidate)
    cumulative = torch.cumsum(log_keep, 0)
    return torch.exp(cumulative) * h0 + torch.exp(cumulative + torch.logcumsumexp(log_values - cumulative, 0))


def mingru_compiled(gate: torch.Tensor, candidate: torch.Tensor, h0: torch.Tensor,
                    noise: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`mingru_loop`'s h (T, B, H), the gates, g and the recurrence in one call of the compiled loop
    (:class:`~nnrnn.models.fused_cells.MinGRULoop`, where the formulas are)."""
    return fused_cells.MinGRULoop.apply(gate, candidate, h0, noise)


class MinGRU(CellModel):
    r"""minGRU: the GRU with its gates reading only the input, so that time can be computed in parallel:

    .. math::
        z_t = \sigma(W_z x_t + b_z), \qquad \tilde h_t = g(W_h x_t + b_h), \qquad
        h_t = (1 - z_t) \odot h_{t-1} + z_t \odot \tilde h_t,

    with g(x) = x + ½ for x ≥ 0 and σ(x) below, the paper's activation for its log-space form (Feng et al. 2024,
    section 3 and appendix).  Layers stack as torch.nn.GRU's do, with dropout between them.

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device, dtype:
            torch.nn.GRU's, in its order.

    Inputs and outputs: torch.nn.GRU's: ``input`` (L, B, N_in) (or batch-first, unbatched, packed), ``h_0``
    (D·num_layers, B, N) → ``output`` (L, B, D·N), ``h_n`` like ``h_0``.

    Attributes:
        weight_ih_l[k]: [W_z; W_h] (2N, N_in); bias_ih_l[k]: [b_z; b_h] (2N).  Drawn as ``torch.nn.Linear`` draws
            them, U(±1/sqrt(N_in)) (the paper's code uses ``nn.Linear``).
        implementation: ``"auto"`` (default: the compiled loop, :func:`mingru_compiled`, where the kernel policy
            runs the compiled loops: float32 on the CPU; elsewhere the faster of the two below for the batch's size,
            :func:`~nnrnn.models.cells.use_scan`), ``"scan"`` (:func:`mingru_scan`, log space) or ``"loop"``
            (:func:`mingru_loop`, the reference); docs/performance.md measures them.
    """
    DISPLAY_NAME = "minGRU"
    LINE_STYLE = ('#b8860b', (0, (9, 3, 1, 3, 1, 3)))

    # its paper's stacks: 3 layers, where its selective-copying table is solved (1 and 2 are not; docs/design.md)
    DEPTH = 3
    implementation = "auto"
    SCANNED = Scanned("mingru", CPU_SCAN_CROSSOVER)  # its scan and loop untimed: the kernel policy's fixed rule

    def _make_cell(self, suffix, layer_input, factory):
        n = self.hidden_size
        self.register_parameter("weight_ih" + suffix, nn.Parameter(torch.empty(2 * n, layer_input, **factory)))
        if self.bias:
            self.register_parameter("bias_ih" + suffix, nn.Parameter(torch.empty(2 * n, **factory)))

    def _reset_cell(self, suffix):
        weight = getattr(self, "weight_ih" + suffix)
        bound = weight.shape[1] ** -0.5
        weight.uniform_(-bound, bound)
        if self.bias:
            getattr(self, "bias_ih" + suffix).uniform_(-bound, bound)

    def _run(self, suffix, x, h0):
        noise = self._noise(x)
        projected = F.linear(x, getattr(self, "weight_ih" + suffix), getattr(self, "bias_ih" + suffix)
                             if self.bias else None)
        gate, candidate = projected.chunk(2, -1)
        if self.implementation == "auto" and compiled_here(gate, h0, "mingru"):  # all steps in one call, noise too
            h = mingru_compiled(gate, candidate, h0, noise)
            return h, h
        # the log-space scan needs positive terms, which noise does not keep: with noise, the loop
        scan = use_scan(self.implementation, x, self.hidden_size, self.SCANNED) and noise is None
        # ONNX has no logcumsumexp: an export traces the loop, which computes the same
        h = mingru_scan(gate, candidate, h0) if scan and not exporting_to_onnx() \
            else mingru_loop(gate, candidate, h0, noise)
        return h, h

    @classmethod
    def cell_parameter_count(cls, layer_input, hidden_size, bias=True, **_) -> int:
        return 2 * hidden_size * (layer_input + bool(bias))
