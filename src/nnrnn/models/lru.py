"""The LRU, Linear Recurrent Unit (Orvieto, Smith, Gu, Fernando, Gulcehre, Pascanu & De, ICML 2023,
"Resurrecting recurrent neural networks for long sequences"), stacked as its paper stacks it, trained by a
parallel scan over time with the step-by-step loop as its reference."""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from ..kernels.candidates import Scanned
from . import fused_cells
from .base import kept
from .cells import CellModel, compiled_here, use_scan
from .cornn import check_positive

# batch × 2N_s at and below which the scan beat the loop on a CPU (docs/performance.md, "Parallel scans"): the kernel
# policy's fixed rule where it does not time the two
CPU_SCAN_CROSSOVER = 2048
R_MIN, R_MAX = 0.9, 0.999  # the ring |λ| starts in: the LRU paper's setting for its long-range tasks


def lru_loop(br, bi, lr, li):
    """x_t = λ x_{t−1} + b_t from x_{−1} = 0, step by step, in real arithmetic on (Re, Im): b (T, B, N), λ (N,)."""
    xr, xi = torch.zeros_like(br[0]), torch.zeros_like(bi[0])
    rs, is_ = [], []
    for br_t, bi_t in zip(br.unbind(0), bi.unbind(0)):  # unbind: one gradient buffer, not one per step
        xr, xi = lr * xr - li * xi + br_t, lr * xi + li * xr + bi_t
        rs.append(xr)
        is_.append(xi)
    return torch.stack(rs), torch.stack(is_)


def _interleave(even: torch.Tensor, odd: torch.Tensor) -> torch.Tensor:
    """[e_0, o_0, e_1, o_1, …] along time; ``even`` has as many steps as ``odd`` or one more."""
    pairs = torch.stack([even[:odd.shape[0]], odd], 1).flatten(0, 1)
    return pairs if even.shape[0] == odd.shape[0] else torch.cat([pairs, even[-1:]])


def lru_scan(br, bi, lr, li):
    """What :func:`lru_loop` computes, by the odd-even parallel scan: the pairs (2k, 2k+1) fold into one step of
    λ² (c_k = λ b_{2k} + b_{2k+1}), whose scan, recursively, gives every odd x; each even x is then one step from
    the odd one before it.  log₂ T levels, each of elementwise work over the half-length sequence: O(T) work in
    all, and depth O(log T)."""
    steps = br.shape[0]
    if steps == 1:
        return br, bi
    half = steps // 2
    er, ei = br[0:2 * half:2], bi[0:2 * half:2]
    cr = br[1::2] + lr * er - li * ei
    ci = bi[1::2] + lr * ei + li * er
    odd_r, odd_i = lru_scan(cr, ci, lr * lr - li * li, 2 * lr * li)
    rest_r, rest_i = br[2::2], bi[2::2]
    k = rest_r.shape[0]
    even_r = torch.cat([br[:1], rest_r + lr * odd_r[:k] - li * odd_i[:k]])
    even_i = torch.cat([bi[:1], rest_i + lr * odd_i[:k] + li * odd_r[:k]])
    return _interleave(even_r, odd_r), _interleave(even_i, odd_i)


def made_up_inputs(generator: torch.Generator, steps: int, batch: int, width: int) -> tuple:
    """(br, bi, lr, li) for :func:`lru_scan` and :func:`lru_loop` at a state of ``width`` real features (N_s =
    width / 2), float32, |λ| in [0.9, 1) as the LRU's ring starts: what the kernel policy times them on."""
    n = max(1, width // 2)
    modulus = 0.9 + 0.099 * torch.rand(n, generator=generator)
    angle = 2 * math.pi * torch.rand(n, generator=generator)
    b = torch.randn(2, steps, batch, n, generator=generator)
    return b[0], b[1], modulus * torch.cos(angle), modulus * torch.sin(angle)


# The paper's reference (its appendix's JAX listing and the Flax block around it) runs on Flax's and JAX's defaults,
# and nnrnn takes them where torch's differ (issue 59): LayerNorm's ε (Flax 1e-6, torch 1e-5), jax.nn.gelu's tanh
# form (torch's F.gelu is the exact erf one) and nn.Dense's initialisation (below).
NORM_EPS = 1e-6
# Flax's lecun_normal: a normal of variance 1/fan_in truncated at two standard deviations, its scale divided by the
# truncated normal's own standard deviation so that the variance stays 1/fan_in
TRUNCATED_STD = 0.87962566103423978


def dense(weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    """In place, a Dense layer as Flax's nn.Dense initialises it: the weight (out, in) lecun-normal, the bias 0."""
    std = weight.shape[1] ** -0.5 / TRUNCATED_STD
    nn.init.trunc_normal_(weight, 0.0, std, -2 * std, 2 * std)
    if bias is not None:
        bias.zero_()


class LRU(CellModel):
    r"""The LRU (Orvieto et al. 2023) in its paper's residual block.  Each layer and direction computes, for
    x_t the layer's input,

    .. math::
        u_t &= W_{ih} x_t + b, \qquad v_t = \mathrm{LayerNorm}(u_t), \\
        s_t &= \Lambda s_{t-1} + \gamma \odot (B v_t), \qquad s_t \in \mathbb{C}^{N_s}, \\
        y_t &= \mathrm{Re}(C s_t) + D \odot v_t, \\
        \text{output}_t &= u_t + \mathrm{GLU}(\mathrm{GELU}(y_t)), \qquad \mathrm{GLU}(a) = (W_1 a + c_1) \odot
            \sigma(W_2 a + c_2),

    with LayerNorm's ε 1e-6, GELU's tanh form ½a(1 + tanh(√(2/π)(a + 0.044715a³))) and the Dense layers (W_ih, b
    and the GLU's) drawn as Flax draws them (:func:`dense`), all as the paper's reference has them; Λ =
    diag(exp(−exp(ν) + i exp(θ_log))) (stable for any ν), γ = exp(γ_log) the normalisation, initialised
    to sqrt(1 − |λ_j|²), B (N_s × N) and C (N × N_s) complex, D (N) real.  The recurrence is linear, so time is
    computed by a parallel scan (:func:`lru_scan`) or, as its reference, step by step (:func:`lru_loop`).
    W_ih is the paper's linear encoder for layer 0 and, for the layers above, the map from the previous layer's
    D·N outputs (the paper's blocks read the previous block's N directly); the residual skips the recurrence and
    the position-wise nonlinear layer, as in the paper's block.

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device, dtype:
            torch.nn.GRU's, in its order; ``hidden_size`` is the model width N.
        state_size: N_s, the complex state's size (default: hidden_size).
        r_min, r_max: the ring 0 ≤ r_min < r_max ≤ 1 in which |λ| starts, uniform in area (default 0.9, 0.999:
            the paper's setting for its long-range tasks); max_phase: arg λ starts in U(0, max_phase) (2π).
        state_noise: σ (default 0), Gaussian noise added to [Re s_t, Im s_t] after every step (each part of
            standard deviation σ; :mod:`nnrnn.models.noise`): one more input of the linear recurrence, so the scan
            still runs.

    Inputs: input, h_0; Outputs: output, h_n.  ``input`` (L, B, N_in) (or batch-first, unbatched, packed) →
    ``output`` (L, B, D·N).  The state is the complex s as real features [Re s, Im s]: ``h_0`` and ``h_n`` are
    (D·num_layers, B, 2·N_s) (zeros when omitted).

    Attributes (per layer and direction, suffix ``_l[k]``): weight_ih, bias_ih (the encoder); norm_weight,
    norm_bias (LayerNorm); nu_log, theta_log, gamma_log (N_s); b_real, b_imag (N_s × N); c_real, c_imag
    (N × N_s); d (N); glu_weight (2N × N), glu_bias (2N).  ``implementation``: ``"auto"`` (default: the compiled
    loop, :class:`~nnrnn.models.fused_cells.DiagonalLoop`, where the kernel policy runs the compiled loops: float32
    on the CPU; elsewhere the kernel policy's choice of the two below for the shape, timed on this CPU or by its
    fixed rule, :func:`~nnrnn.models.cells.use_scan`), ``"scan"`` or ``"loop"`` (the references);
    docs/performance.md measures them.
    """
    DISPLAY_NAME = "LRU"
    PAPER_OPTIMIZER = "adam"  # Orvieto et al. train with AdamW; nnrnn has Adam (the nnLRU inherits it)
    LINE_STYLE = ('#000080', (0, (1, 3)))

    CONFIG_OPTIONS = ("bias", "r_min", "r_max", "state_noise")
    # the ring the eigenvalues start in: its paper's settings (r_min 0 or 0.9; r_max 0.99 to 0.9999); docs/design.md
    SEARCHED = {"r_min": ("choice", (0.0, 0.5, 0.9)), "r_max": ("choice", (0.99, 0.999, 0.9999))}
    TUNED_OPTIONS = ("r_min", "r_max")
    # its paper's stacks: 6 blocks on every Long Range Arena task, the depth of S4 and S5 it follows (docs/design.md)
    DEPTH = 6
    implementation = "auto"
    SCANNED = Scanned("lru", CPU_SCAN_CROSSOVER, {"scan": lru_scan, "loop": lru_loop}, made_up_inputs)

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, *, state_size: int | None = None, r_min: float = R_MIN, r_max: float = R_MAX,
                 max_phase: float = 2 * math.pi, state_noise: float = 0.0):
        if not (isinstance(r_min, (int, float)) and isinstance(r_max, (int, float)) and not isinstance(r_min, bool)
                and not isinstance(r_max, bool) and 0 <= r_min < r_max <= 1):
            raise ValueError(f"r_min and r_max must satisfy 0 <= r_min < r_max <= 1; got {r_min!r} and {r_max!r}")
        self.r_min, self.r_max = float(r_min), float(r_max)
        self.max_phase = check_positive("max_phase", max_phase)
        if state_size is not None and (isinstance(state_size, bool) or not isinstance(state_size, int)
                                       or state_size <= 0):
            raise ValueError(f"state_size must be a positive int or None; got {state_size!r}")
        self.state_size = state_size or hidden_size
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device,
                         dtype, state_noise=state_noise)
        self._kept: dict = {}  # what the recurrence derives from its parameters, kept while autograd is off

    def train(self, mode: bool = True):
        self._kept.clear()  # writes through .data move no version (base.kept)
        return super().train(mode)

    def __getstate__(self):
        state = super().__getstate__()
        state["_kept"] = {}  # derived tensors are not part of the model
        return state

    @property
    def state_width(self) -> int:
        """2·N_s: the state's real features, [Re s, Im s]."""
        return 2 * self.state_size

    STATE_WIDTH_NAME = "2 * state_size: [Re s, Im s]"

    def _make_cell(self, suffix, layer_input, factory):
        n, s = self.hidden_size, self.state_size
        shapes = {"weight_ih": (n, layer_input), "norm_weight": (n,), "norm_bias": (n,), "nu_log": (s,),
                  "theta_log": (s,), "gamma_log": (s,), "b_real": (s, n), "b_imag": (s, n), "c_real": (n, s),
                  "c_imag": (n, s), "d": (n,), "glu_weight": (2 * n, n), "glu_bias": (2 * n,)}
        if self.bias:
            shapes["bias_ih"] = (n,)
        for name, shape in shapes.items():
            self.register_parameter(name + suffix, nn.Parameter(torch.empty(shape, **factory)))

    def _reset_cell(self, suffix):
        p = {name: getattr(self, name + suffix) for name in ("weight_ih", "norm_weight", "norm_bias", "nu_log",
                                                             "theta_log", "gamma_log", "b_real", "b_imag", "c_real",
                                                             "c_imag", "d", "glu_weight", "glu_bias")}
        n, s = self.hidden_size, self.state_size
        dense(p["weight_ih"], getattr(self, "bias_ih" + suffix) if self.bias else None)
        p["norm_weight"].fill_(1.0)
        p["norm_bias"].zero_()
        # |λ| uniform in area over the ring: |λ|² ~ U(r_min², r_max²), ν = log(−log|λ|)
        radius_sq = torch.rand(s, dtype=torch.float64) * (self.r_max ** 2 - self.r_min ** 2) + self.r_min ** 2
        p["nu_log"].copy_(torch.log(-0.5 * torch.log(radius_sq)))
        p["theta_log"].copy_(torch.log(self.max_phase * torch.rand(s, dtype=torch.float64).clamp_min(1e-12)))
        p["gamma_log"].copy_(0.5 * torch.log1p(-radius_sq))
        for name, fan in (("b_real", 2 * n), ("b_imag", 2 * n), ("c_real", s), ("c_imag", s)):
            p[name].normal_(0.0, fan ** -0.5)
        p["d"].normal_()
        dense(p["glu_weight"], p["glu_bias"])

    def eigenvalues(self, layer: int = 0, direction: int = 0) -> torch.Tensor:
        """Λ's diagonal (complex, N_s) of one layer and direction."""
        suffix = self.cells[layer * self.num_directions + direction]
        modulus = torch.exp(-torch.exp(getattr(self, "nu_log" + suffix)))
        return torch.polar(modulus, torch.exp(getattr(self, "theta_log" + suffix)))

    def _run(self, suffix, x, h0):
        p = lambda name: getattr(self, name + suffix)  # noqa: E731
        u = F.linear(x, p("weight_ih"), p("bias_ih") if self.bias else None)
        v = F.layer_norm(u, (self.hidden_size,), p("norm_weight"), p("norm_bias"), eps=NORM_EPS)
        lr, li, gamma = self._diagonal(suffix)
        # [Re, Im] of γ ⊙ (B v) and of C s as one product each, γ taken into B's rows: at the memory grid's sizes a
        # layer's cost is its count of calls, each on a small tensor, more than their arithmetic
        gamma = torch.cat([gamma, gamma]).unsqueeze(1)
        b = F.linear(v, torch.cat([p("b_real"), p("b_imag")]) * gamma)
        noise = self._noise(x)
        if noise is not None:  # s_t = Λ s_{t−1} + b_t + ε_t: the noise is one more input, so the scan still runs
            b = b + noise
        states = self._recurrence(suffix, b, h0, lr, li)  # [Re s, Im s]
        y = torch.addcmul(F.linear(states, torch.cat([p("c_real"), -p("c_imag")], 1)), p("d"), v)
        # GLU(a) = (W_1 a + c_1) ⊙ σ(W_2 a + c_2), W_1 and W_2 the halves of glu_weight's rows: F.glu's formula
        return u + F.glu(F.linear(F.gelu(y, approximate="tanh"), p("glu_weight"), p("glu_bias")), -1), states

    def _diagonal(self, suffix) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(Re λ, Im λ, γ), each N_s, from ν, θ and γ's logarithms; kept while autograd is off and none of them
        changed (:func:`~nnrnn.models.base.kept`): one step at a time would otherwise spend most of its time here."""
        p = [getattr(self, name + suffix) for name in ("nu_log", "theta_log", "gamma_log")]

        def compose():
            modulus, angle = torch.exp(-torch.exp(p[0])), torch.exp(p[1])
            return modulus * torch.cos(angle), modulus * torch.sin(angle), torch.exp(p[2])
        return kept(self._kept, ("diagonal", suffix), p, compose)

    def _recurrence(self, suffix, b, h0, lr, li):
        """[Re s, Im s] (T, B, 2N_s) of s_t = Λ s_{t−1} + b_t from s_{−1} = h0 ([Re s, Im s]), b (T, B, 2N_s) as
        [Re b, Im b]: by the compiled loop (:class:`~nnrnn.models.fused_cells.DiagonalLoop`) where the kernel policy
        chooses it (``implementation = "auto"``, float32 on the CPU), else by the scan or the loop as
        :func:`~nnrnn.models.cells.use_scan` chooses: the hook the non-normal LRU (:mod:`.nnlru`) replaces."""
        if self.implementation == "auto" and compiled_here(b, lr, "lru"):
            return fused_cells.DiagonalLoop.apply(b, h0, lr, li)
        scan = use_scan(self.implementation, b, self.state_width, self.SCANNED)
        s = self.state_size
        br, bi = b[..., :s], b[..., s:]
        sr, si = h0.chunk(2, -1)  # the carried state enters as the first step's λ s_{-1}
        br = torch.cat([br[:1] + lr * sr - li * si, br[1:]])
        bi = torch.cat([bi[:1] + lr * si + li * sr, bi[1:]])
        return torch.cat((lru_scan if scan else lru_loop)(br, bi, lr, li), -1)

    @classmethod
    def cell_parameter_count(cls, layer_input, hidden_size, bias=True, state_size=None, **_) -> int:
        n, s = hidden_size, state_size or hidden_size
        return n * (layer_input + bool(bias)) + 2 * n + 3 * s + 4 * s * n + n + 2 * n * n + 2 * n

    def extra_repr(self) -> str:
        return super().extra_repr() + f", state_size={self.state_size}, r_min={self.r_min}, r_max={self.r_max}"
