"""oneDNN's float32 inner-product kernel, the one behind torch.nn.LSTM and torch.compile's CPU linear layers,
reached through ``torch.ops.mkldnn._linear_pointwise``:

    linear(X, W)           = X Wᵀ
    linear.binary(X, Y, W) = X Wᵀ + Y      (the recurrence's V h_{t-1} + z_t in one call)

The op is private to torch, so it is checked on first use (:func:`kernel`); without it everything uses torch.mm.
Whether it runs is :mod:`nnrnn.kernels.policy`'s decision; this module only holds the kernel.
"""
from __future__ import annotations

import functools

import torch

from .autograd import first_order_only


@functools.cache
def kernel():
    """The oneDNN op if this torch build has it and it computes X Wᵀ (+ Y), else None (checked once, on first use:
    it runs a few small products)."""
    if not torch.backends.mkldnn.is_available():
        return None
    try:
        op = torch.ops.mkldnn._linear_pointwise
        g = torch.Generator().manual_seed(0)  # not the global one: a run's random numbers stay as they were
        x, w, y = (torch.randn(*shape, generator=g) for shape in ((3, 4), (5, 4), (3, 5)))
        ok = torch.allclose(op.binary(x, y, w, None, "add"), torch.addmm(y, x, w.t()), atol=1e-5) and \
            torch.allclose(op(x.t(), y.t(), None, "none", [], ""), x.t() @ y, atol=1e-5)
    except (AttributeError, RuntimeError):
        return None
    return op if ok else None


def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b by oneDNN (which reorders the weight operand anyway, so passing bᵀ as a view costs nothing)."""
    return kernel()(a, b.t(), None, "none", [], "")


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b by oneDNN.  While torch.compile traces (also a backward, under compiled autograd) by torch.mm:
    inductor lowers the oneDNN op only for a frozen weight."""
    if torch.compiler.is_compiling():
        return torch.mm(a, b)
    return mm(a, b)


class MatMul(torch.autograd.Function):
    """a @ b by oneDNN, forward and backward (what :func:`matmul` runs where the policy chooses oneDNN)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _mm(a, b)

    @staticmethod
    @first_order_only("nnrnn's oneDNN matrix product", "; NNRNN_ONEDNN=0 uses torch.mm instead")
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad = grad.contiguous()  # an expanded gradient (from .sum(), stride 0) takes oneDNN's slow path: 30x
        grad_a = _mm(grad, b.t()) if ctx.needs_input_grad[0] else None
        grad_b = _mm(a.t(), grad) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b
