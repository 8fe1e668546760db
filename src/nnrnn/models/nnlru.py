"""The non-normal LRU: the LRU's block (Orvieto et al. 2023) with the nnRNN's non-normal part (Kerg, Goyette et al.
2019) in its state recurrence, A = Λ + T with T strictly upper triangular, trained by a parallel scan over time
with the step-by-step loop as its reference."""
from __future__ import annotations

import torch

from ..kernels.candidates import Scanned
from ..parametrizations import parse_t_init
from ..parametrizations.schur import check_penalty_weights
from . import fused_cells
from .base import kept
from .cells import compiled_here, use_scan
from .lru import LRU, _interleave

# batch × 2N_s at and below which the scan beat the loop on a CPU (docs/performance.md, "Parallel scans"): the kernel
# policy's fixed rule where it does not time the two
CPU_SCAN_CROSSOVER = 256


def transition(lr: torch.Tensor, li: torch.Tensor, tr: torch.Tensor, ti: torch.Tensor) -> torch.Tensor:
    """M = [[Re A, −Im A], [Im A, Re A]] (2N × 2N), the real form of A = diag(λ) + T acting on [Re s, Im s]:
    λ = lr + i·li (N), T = tr + i·ti (N × N)."""
    ar, ai = torch.diag_embed(lr) + tr, torch.diag_embed(li) + ti
    return torch.cat([torch.cat([ar, -ai], 1), torch.cat([ai, ar], 1)], 0)


def nnlru_loop(b: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """z_t = M z_{t−1} + b_t from z_{−1} = 0, step by step: b (T, B, W), M (W × W) → z (T, B, W)."""
    z, out, mt = torch.zeros_like(b[0]), [], m.t()
    for b_t in b.unbind(0):  # unbind: one gradient buffer, not one per step
        z = torch.addmm(b_t, z, mt)
        out.append(z)
    return torch.stack(out)


def nnlru_scan(b: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """What :func:`nnlru_loop` computes, by the odd-even parallel scan with matrix powers: the pairs (2k, 2k+1)
    fold into one step of M² (c_k = M b_{2k} + b_{2k+1}), whose scan, recursively, gives every odd z; each even z
    is then one step from the odd one before it.  Level j uses M^(2^j), one W × W product shared by the whole
    batch; its other work is two (T/2^(j+1), B, W)·(W × W) products.  log₂ T levels: O(T·B·W²) work in all (about
    twice the loop's), depth O(log T)."""
    steps = b.shape[0]
    if steps == 1:
        return b
    half = steps // 2
    mt = m.t()
    odd = nnlru_scan(b[1::2] + b[0:2 * half:2] @ mt, m @ m)
    rest = b[2::2]
    even = torch.cat([b[:1], rest + odd[:rest.shape[0]] @ mt])
    return _interleave(even, odd)


def made_up_inputs(generator: torch.Generator, steps: int, batch: int, width: int) -> tuple:
    """(b, M) for :func:`nnlru_scan` and :func:`nnlru_loop` at a state of ``width`` real features, float32, M the
    real form of a stable A = Λ + T (|λ| in [0.9, 1), T of entries about 0.1/√N_s): what the kernel policy times
    them on."""
    n = max(1, width // 2)
    modulus = 0.9 + 0.099 * torch.rand(n, generator=generator)
    angle = 2 * torch.pi * torch.rand(n, generator=generator)
    tr, ti = (torch.randn(n, n, generator=generator).triu(1) * (0.1 / n ** 0.5) for _ in range(2))
    m = transition(modulus * torch.cos(angle), modulus * torch.sin(angle), tr, ti)
    return torch.randn(steps, batch, 2 * n, generator=generator), m


class NonNormalLRU(LRU):
    r"""The non-normal LRU: the LRU's block (:class:`~nnrnn.models.lru.LRU`: the same encoder, LayerNorm, read-out,
    GLU and residual, the same ring for Λ and the same γ normalisation) whose state recurrence is

    .. math::
        s_t = (\Lambda + T)\, s_{t-1} + \gamma \odot (B v_t), \qquad s_t \in \mathbb{C}^{N_s},

    Λ = diag(λ_j) the LRU's, T strictly upper triangular and complex (the nnRNN's non-normal part, here in the
    complex Schur form).  A = Λ + T is triangular, so its eigenvalues are exactly the λ_j, however T trains:
    stability is still |λ_j| < 1, which Λ's parametrisation keeps.

    Why this form is general: every square complex matrix is unitarily similar to an upper triangular one
    (Schur's theorem, A' = Q (Λ + T) Q^H with Q unitary), and Q can be taken into B (B ← Q^H B) and C (C ← C Q), so
    with free input and read-out maps Λ + T spans every linear recurrence on ℂ^{N_s}.  A diagonal Λ (the LRU)
    spans only the diagonalisable ones, and the strongly non-normal ones only through badly conditioned
    eigenvectors.  The delay line, Λ = 0 and T the unit shift (T_{j,j+1} = 1), is nilpotent and not
    diagonalisable at all: fed through the last coordinate alone it holds the last N_s inputs exactly, one per
    coordinate, the Fisher-memory optimum of the paper's §3.

    Time is linear, so it is computed by a parallel scan with the powers A^(2^k) (:func:`nnlru_scan`) or, as its
    reference, step by step (:func:`nnlru_loop`), both on the real form [Re s, Im s] (:func:`transition`); with
    ``implementation = "auto"`` in float32 on the CPU, by the compiled loop
    (:class:`~nnrnn.models.fused_cells.DenseLinearLoop`).

    Args: those of :class:`~nnrnn.models.lru.LRU`, and
        t_init: T at initialisation: ``"zeros"`` (default: the LRU exactly, until T trains) or ``"delay:α"``:
            α on T's first super-diagonal, Λ + α·shift, the nnRNN's delay-line start on top of Λ's ring.

    Attributes: the LRU's, and per layer and direction t_real, t_imag (N_s(N_s−1)/2 each): T's entries above the
    diagonal, row by row (:meth:`triangular`).  :meth:`regularization` gives the nnRNN's penalty on T,
    (t_decay / 2) ‖T‖²_F (``--t-decay``); Λ has no γ of a Schur form to pull to 1, so ``delta`` adds nothing.
    """
    DISPLAY_NAME = "nnLRU"
    LINE_STYLE = ('#008080', (0, (3, 2)))
    OWN_PENALTY = True  # its T is packed, not a Parametrization
    LINEAR_ANALYSIS = True

    CONFIG_OPTIONS = LRU.CONFIG_OPTIONS + ("t_init",)
    TRAIN_OPTIONS = ("t_decay",)
    SCANNED = Scanned("nnlru", CPU_SCAN_CROSSOVER, {"scan": nnlru_scan, "loop": nnlru_loop}, made_up_inputs)

    def __init__(self, *args, t_init: str = "zeros", **kwargs):
        parse_t_init(t_init)  # refused here, at the call that received it
        self.t_init = t_init
        super().__init__(*args, **kwargs)

    def _make_cell(self, suffix, layer_input, factory):
        super()._make_cell(suffix, layer_input, factory)
        entries = self.state_size * (self.state_size - 1) // 2
        for name in ("t_real", "t_imag"):
            self.register_parameter(name + suffix, torch.nn.Parameter(torch.empty(entries, **factory)))

    def _reset_cell(self, suffix):
        super()._reset_cell(suffix)
        kind, alpha = parse_t_init(self.t_init)
        s = self.state_size
        start = torch.diag_embed(torch.full((s - 1,), alpha), 1) if kind == "delay" else torch.zeros(s, s)
        rows, cols = torch.triu_indices(s, s, 1)
        getattr(self, "t_real" + suffix).copy_(start[rows, cols])
        getattr(self, "t_imag" + suffix).zero_()

    def _triangular_parts(self, suffix) -> tuple[torch.Tensor, torch.Tensor]:
        """(Re T, Im T), each N_s × N_s, zero on and below the diagonal."""
        s = self.state_size
        tr = getattr(self, "t_real" + suffix)
        rows, cols = torch.triu_indices(s, s, 1, device=tr.device)
        place = lambda values: values.new_zeros(s, s).index_put((rows, cols), values)  # noqa: E731
        return place(tr), place(getattr(self, "t_imag" + suffix))

    def triangular(self, layer: int = 0, direction: int = 0) -> torch.Tensor:
        """T (complex, N_s × N_s, strictly upper triangular) of one layer and direction."""
        return torch.complex(*self._triangular_parts(self.cells[layer * self.num_directions + direction]))

    def transition_matrix(self, layer: int = 0, direction: int = 0) -> torch.Tensor:
        """A = Λ + T (complex, N_s × N_s) of one layer and direction."""
        return torch.diag_embed(self.eigenvalues(layer, direction)) + self.triangular(layer, direction)

    def _recurrence(self, suffix, b, h0, lr, li):
        """[Re s, Im s] (T, B, 2N_s) of z_t = M z_{t−1} + b_t, M the real form of Λ + T (:func:`transition`): by the
        compiled loop (:class:`~nnrnn.models.fused_cells.DenseLinearLoop`) where the kernel policy chooses it
        (``implementation = "auto"``, float32 on the CPU), else by the scan or the loop as
        :func:`~nnrnn.models.cells.use_scan` chooses."""
        parts = [getattr(self, name + suffix) for name in ("nu_log", "theta_log", "t_real", "t_imag")]
        m = kept(self._kept, ("transition", suffix), parts, lambda: transition(lr, li, *self._triangular_parts(suffix)))
        if self.implementation == "auto" and compiled_here(b, m, "nnlru"):
            return fused_cells.DenseLinearLoop.apply(b, h0, m)
        scan = use_scan(self.implementation, b, self.state_width, self.SCANNED)
        b = torch.cat([b[:1] + h0 @ m.t(), b[1:]])  # the carried state enters as the first step's A s_{-1}
        return (nnlru_scan if scan else nnlru_loop)(b, m)

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        """(t_decay / 2) Σ over layers and directions of ‖T‖²_F: the nnRNN's decay on T (its gradient adds
        t_decay · T, as :meth:`~nnrnn.parametrizations.SchurForm.regularization`'s).  ``delta`` is checked and
        adds nothing: Λ's moduli are not a Schur form's γ."""
        _, t_decay = check_penalty_weights(delta, t_decay)
        total = self.weight_ih_l0.new_zeros(())
        for suffix in self.cells:
            for name in ("t_real", "t_imag"):
                total = total + getattr(self, name + suffix).pow(2).sum()
        return (0.5 * t_decay) * total

    @classmethod
    def cell_parameter_count(cls, layer_input, hidden_size, bias=True, state_size=None, **options) -> int:
        s = state_size or hidden_size
        return super().cell_parameter_count(layer_input, hidden_size, bias, state_size) + s * (s - 1)

    def extra_repr(self) -> str:
        return super().extra_repr() + (f", t_init={self.t_init!r}" if self.t_init != "zeros" else "")
