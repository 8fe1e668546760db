"""The kernels as the library calls them: each asks :mod:`nnrnn.kernels.policy` which kernel to run for its
tensors' device, dtype and shape, then runs it.

torch.mm goes to MKL's sgemm; oneDNN's inner-product kernel (:mod:`nnrnn.kernels.onednn`) is faster at some
shapes on some processors.  :func:`matmul` (composing V) and :func:`linear` (the input projection of every step)
choose between the two; :func:`choose_loops` chooses the loops of the fused recurrence
(:mod:`nnrnn.kernels.loops`); :func:`choose_cells` a gated or oscillator cell's compiled loop or its Python one;
:func:`choose_scan` a model's parallel scan over time or its loop;
:func:`fixed_exponential_plan` and :func:`givens_chunks` the matrix exponential's
plan and EURNN's composition.  Tensors on other devices and in other dtypes always use torch.
"""
from __future__ import annotations

import torch

from . import onednn, policy, settings
from .candidates import Scanned


def choose_loops(h: torch.Tensor, nonlinearity: str | None = "relu") -> str:
    """COMPILED, ONEDNN or ATEN for outputs h (T × B × N): the kernel policy's choice for h's device, dtype and
    (B, N) (benchmarks/recurrence_loops.py and benchmarks/kernel_policy.py time them)."""
    return policy.policy_for(h).loops(h.shape[1], h.shape[2], nonlinearity)


def choose_cells(like: torch.Tensor, cell: str) -> str:
    """COMPILED or TORCH for the time loop of a gated or oscillator ``cell`` (``"gru"``, ``"cornn"``, ``"lem"``), of
    the complex nnRNN (``"nnrnn-complex"``) or of a linear recurrence (``"lru"``, ``"nnlru"``, ``"mingru"``: TORCH
    leaves it to :func:`choose_scan`), whose parameters are like ``like``: the kernel policy's choice for its
    device and dtype (:meth:`nnrnn.kernels.policy.KernelPolicy.cells`); TORCH while torch.compile or torch.export
    traces (the compiled loops are not traceable, the Python loop is)."""
    if torch.compiler.is_compiling():
        return settings.TORCH
    return policy.policy_for(like).cells(cell)


def choose_scan(x: torch.Tensor, width: int, scanned: Scanned) -> bool:
    """Whether ``scanned`` (a model's recurrence) runs its parallel scan, else its loop, on x (T, B, ·) with states
    of ``width`` real features: the kernel policy's choice for x's device, dtype, (T, B, width) and the model's
    kind (:meth:`nnrnn.kernels.policy.KernelPolicy.scan`; benchmarks/scan_speed.py times the two).  While
    torch.compile traces, the fixed rule (:func:`~nnrnn.kernels.policy.scan_rule`): a policy's timing, cache and
    lock are not traceable, and a traced decision is not kept anyway."""
    if torch.compiler.is_compiling():
        return policy.scan_rule(x.device.type, scanned, x.shape[1], width).choice == policy.SCAN
    return policy.policy_for(x).scan(scanned, x.shape[0], x.shape[1], width)


def fixed_exponential_plan(like: torch.Tensor) -> bool:
    """Whether the matrix exponential (nnrnn.parametrizations.expm) runs its fixed plan, whose scaling is chosen on
    the device and which reads nothing to the host (True), or the plan made for the ‖A‖₂ read on the host
    (False): :meth:`nnrnn.kernels.policy.KernelPolicy.fixed_exponential_plan` for ``like``'s device and dtype."""
    return policy.policy_for(like).fixed_exponential_plan()


def givens_chunks(like: torch.Tensor, layers: int) -> int:
    """How many chunks EURNN's Givens product composes in parallel (nnrnn.models.eurnn), 1 for the layers in
    order: :meth:`nnrnn.kernels.policy.KernelPolicy.givens_chunks` for ``like``'s device and dtype."""
    return policy.policy_for(like).givens_chunks(layers)


def use_onednn(x: torch.Tensor, batch: int, n: int) -> bool:
    """Whether the recurrence's (batch × n) · (n × n) steps go to oneDNN: its loops are the ``onednn`` ones."""
    return policy.policy_for(x).loops(batch, n) == settings.ONEDNN


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b, by oneDNN (forward and backward) for float32 CPU matrices where the kernel policy chooses it
    (:meth:`nnrnn.kernels.policy.KernelPolicy.products`); torch.matmul otherwise, and while torch.compile
    traces: inductor lowers the oneDNN op only for a frozen (constant) weight and fails on any other."""
    if a.dim() == 2 and b.dim() == 2 and a.device.type == "cpu" and a.dtype == torch.float32 \
            and b.dtype == a.dtype and not torch.compiler.is_compiling() \
            and policy.policy_for(a).products(a.shape[0], a.shape[1], b.shape[1]):
        return onednn.MatMul.apply(a, b)
    return torch.matmul(a, b)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x Wᵀ (+ b) over x's last dimension, (…, K) · (M × K)ᵀ -> (…, M), contiguous; no autograd (for the
    fused recurrence's forward and backward, which run under no_grad).  By oneDNN for float32 CPU tensors
    where the kernel policy chooses it (:meth:`nnrnn.kernels.policy.KernelPolicy.projections`), by torch
    otherwise."""
    rows = x.numel() // max(1, x.shape[-1])
    if x.device.type == "cpu" and x.dtype == torch.float32 and weight.dtype == x.dtype and rows > 0 \
            and policy.policy_for(x).projections(rows, x.shape[-1], weight.shape[0], weight.is_contiguous()):
        flat = onednn.kernel()(x.reshape(rows, x.shape[-1]), weight, bias, "none", [], "")
        return flat.view(*x.shape[:-1], weight.shape[0])
    return torch.nn.functional.linear(x, weight, bias).contiguous()


def step_products(g: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """gᵀ x (M × K) from g (R × M) and x (R × K), R = steps · batch: a weight's gradient summed over every step
    (no autograd).  By oneDNN for float32 CPU tensors where oneDNN is preferred (AVX-512,
    :func:`nnrnn.kernels.policy.onednn_preferred`): at the cells' shapes, a long sum over R into a small
    matrix, MKL's sgemm ran at a third of its speed on the AMD EPYC host (about 900 µs for R = 3200, M = 192,
    K = 64, oneDNN 370 µs); by torch.mm otherwise."""
    if g.device.type == "cpu" and g.dtype == torch.float32 and x.dtype == g.dtype and g.shape[0] > 0 \
            and not torch.compiler.is_compiling() and onednn.kernel() is not None \
            and policy.onednn_preferred(policy.policy_for(g).settings):
        # oneDNN's linear(X, W) = X Wᵀ with X = xᵀ (copied contiguous, as oneDNN would) and W = gᵀ, the transpose
        # of a contiguous g (given rows with gaps, a slice of a wider tensor, oneDNN took seconds)
        return onednn.kernel()(x.t().contiguous(), g.contiguous().t(), None, "none", [], "").t().contiguous()
    return torch.mm(g.t(), x)
