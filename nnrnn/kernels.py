"""Which kernel computes nnrnn's large float32 matrix products on the CPU.

torch.mm goes to MKL's sgemm. On this project's reference machine (AMD EPYC with AVX-512,
torch 2.13) that reaches about 185 GFLOP/s, while oneDNN's float32 inner-product kernel,
the one behind torch.nn.LSTM and torch.compile's CPU linear layers, reaches about 420.
oneDNN costs about 15 µs more per call, so it is used only for products large enough to
gain.  It is reached through ``torch.ops.mkldnn._linear_pointwise``:

    linear(X, W)          = X Wᵀ
    linear.binary(X, Y, W) = X Wᵀ + Y      (the recurrence's V h_{t-1} + z_t in one call)

That op is private to torch, so it is checked once at import; without it (another torch
build, ``NNRNN_ONEDNN=0``) everything uses torch.mm.  Tensors on other devices and in
other dtypes always do.
"""
from __future__ import annotations

import os

import torch
from torch.autograd.function import once_differentiable


def _find_onednn_linear():
    """The oneDNN op if this torch build has it and it computes X Wᵀ (+ Y), else None."""
    if os.environ.get("NNRNN_ONEDNN", "1") == "0" or not torch.backends.mkldnn.is_available():
        return None
    try:
        op = torch.ops.mkldnn._linear_pointwise
        x, w, y = torch.randn(3, 4), torch.randn(5, 4), torch.randn(3, 5)
        ok = torch.allclose(op.binary(x, y, w, None, "add"), torch.addmm(y, x, w.t()), atol=1e-5) and \
            torch.allclose(op(x.t(), y.t(), None, "none", [], ""), x.t() @ y, atol=1e-5)
    except (AttributeError, RuntimeError):
        return None
    return op if ok else None


onednn_linear = _find_onednn_linear()


def _onednn_float32_cpu(x: torch.Tensor) -> bool:
    return onednn_linear is not None and x.device.type == "cpu" and x.dtype == torch.float32


def use_onednn(x: torch.Tensor, batch: int, n: int) -> bool:
    """Whether the recurrence's (batch × n) · (n × n) products go to oneDNN.

    Measured per step here: 2× faster than torch.mm at (B, N) = (128, 512), 2.4× at (128, 1024),
    1.6× at (10, 512); break-even around B·N² = 2²¹ and slower below (the copy task's (10, 128)
    takes 7 µs with torch.mm, 20 with oneDNN).
    """
    return _onednn_float32_cpu(x) and n >= 256 and batch * n * n >= 1 << 21


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b by oneDNN; it reorders the weight operand anyway, so passing bᵀ as a view costs nothing."""
    return onednn_linear(a, b.t(), None, "none", [], "")


class _MatMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _mm(a, b)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = _mm(grad, b.t()) if ctx.needs_input_grad[0] else None
        grad_b = _mm(a.t(), grad) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b, by oneDNN (forward and backward) for float32 CPU matrices with every side ≥ 256,
    where it measured about twice as fast as torch.mm at 256, 512 and 1024; torch.matmul otherwise."""
    if a.dim() == 2 and b.dim() == 2 and _onednn_float32_cpu(a) and b.dtype == a.dtype \
            and min(a.shape[0], a.shape[1], b.shape[1]) >= 256:
        return _MatMul.apply(a, b)
    return torch.matmul(a, b)
