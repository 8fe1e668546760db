"""nnrnn.kernels.matmul: oneDNN for large float32 CPU products, torch.matmul for everything else."""
import pytest
import torch

from nnrnn import kernels


def relative_error(a, b):
    return ((a.double() - b).norm() / b.norm()).item()


@pytest.mark.parametrize("shape", [(256, 300, 256), (260, 256, 512)])
@pytest.mark.parametrize("transposed", [False, True])
def test_matmul_value_and_gradients_match_float64(shape, transposed):
    if kernels.onednn_linear is None:
        pytest.skip("this torch build has no oneDNN linear kernel")
    m, k, n = shape
    g = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=g)
    b = torch.randn(n, k, generator=g).t() if transposed else torch.randn(k, n, generator=g)  # a strided b too
    a.requires_grad_(True)
    b.requires_grad_(True)
    weights = torch.randn(m, n, generator=g)
    out = kernels.matmul(a, b)
    assert out.grad_fn is not None and type(out.grad_fn).__name__ == "_MatMulBackward"
    grad_a, grad_b = torch.autograd.grad((out * weights).sum(), (a, b))
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ref = a64 @ b64
    ref_a, ref_b = torch.autograd.grad((ref * weights.double()).sum(), (a64, b64))
    assert relative_error(out, ref) < 1e-6
    assert relative_error(grad_a, ref_a) < 1e-6 and relative_error(grad_b, ref_b) < 1e-6


@pytest.mark.parametrize("a,b", [(torch.randn(128, 300), torch.randn(300, 256)),       # a side below 256
                                 (torch.randn(300, 300).double(), torch.randn(300, 300).double()),
                                 (torch.randn(2, 256, 256), torch.randn(2, 256, 256))])  # batched
def test_matmul_falls_back_to_torch(a, b):
    out = kernels.matmul(a, b)
    assert torch.equal(out, torch.matmul(a, b))
