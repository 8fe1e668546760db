"""EURNN's GivensProduct: V and angle gradients against plain autograd through every layer.

The reference applies each Givens layer out of place by index gathers, so
autograd differentiates it layer by layer; GivensProduct must match it while
keeping no intermediates.
"""
from __future__ import annotations

import os

import pytest
import torch

import nnrnn
from nnrnn.kernels import policy as kernel_policy
from nnrnn.kernels.operations import givens_chunks
from nnrnn.models import eurnn
from nnrnn.models.eurnn import GivensProduct

DEVICE = torch.device(os.environ.get("NNRNN_TEST_DEVICE", "cpu"))


def reference_product(even_angles, odd_angles, n):
    """V = R_{L-1} ⋯ R_0 by autograd; layer ℓ maps rows (a, a+1), a ≡ ℓ mod 2, to (c·v_a - s·v_b, s·v_a + c·v_b)."""
    v = torch.eye(n, dtype=even_angles.dtype, device=even_angles.device)
    for layer in range(len(even_angles) + len(odd_angles)):
        odd = layer % 2
        angles = (odd_angles if odd else even_angles)[layer // 2]
        a = torch.arange(odd, max(n - 1, odd), 2, device=v.device)
        c, s = angles.cos()[:, None], angles.sin()[:, None]
        va, vb = v[a], v[a + 1]
        v = v.index_put((a,), c * va - s * vb).index_put((a + 1,), s * va + c * vb)
    return v


def angles(n, capacity, dtype, scale=3.0):
    even = torch.empty((capacity + 1) // 2, n // 2, dtype=dtype, device=DEVICE).uniform_(-scale, scale)
    odd = torch.empty(capacity // 2, (n - 1) // 2, dtype=dtype, device=DEVICE).uniform_(-scale, scale)
    return even.requires_grad_(), odd.requires_grad_()


@pytest.mark.parametrize("n,capacity", [(1, 1), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2), (4, 4), (5, 3), (6, 9),
                                        (7, 7)])
def test_gradcheck_float64(n, capacity):
    torch.manual_seed(n * 100 + capacity)
    even, odd = angles(n, capacity, torch.float64)
    assert torch.autograd.gradcheck(lambda e, o: GivensProduct.apply(e, o, n), (even, odd))


@pytest.mark.parametrize("n,capacity", [(1, 2), (2, 1), (2, 2), (3, 1), (5, 2), (8, 4), (9, 5), (16, 40),
                                        (33, 16), (64, 32), (127, 64)])
def test_matches_autograd_reference_float32(n, capacity):
    torch.manual_seed(n * 1000 + capacity)
    even, odd = angles(n, capacity, torch.float32)
    weight = torch.randn(n, n, device=DEVICE)
    results = []
    for compose in (GivensProduct.apply, reference_product):
        v = compose(even, odd, n)
        grads = torch.autograd.grad((v * weight).sum(), (even, odd), allow_unused=True, materialize_grads=True)
        results.append((v.detach(), *grads))
    for got, want in zip(*results):  # V, even-angle gradient, odd-angle gradient
        assert got.shape == want.shape and got.dtype == want.dtype
        assert (got - want).norm() <= 1e-5 * want.norm() + 1e-30


@pytest.mark.parametrize("n,capacity", [(2, 1), (5, 3), (6, 6), (64, 100)])
def test_orthogonal_with_det_one(n, capacity):
    torch.manual_seed(n + capacity)
    for dtype in (torch.float32, torch.float64):
        even, odd = angles(n, capacity, dtype, scale=10.0)
        v = GivensProduct.apply(even, odd, n).detach().double()
        torch.testing.assert_close(v.T @ v, torch.eye(n, dtype=torch.float64, device=DEVICE), atol=1e-5, rtol=0)
        assert torch.linalg.det(v).item() == pytest.approx(1.0, abs=1e-5)


def test_model_uses_givens_product_and_keeps_no_layer_intermediates():
    torch.manual_seed(3)
    model = nnrnn.create("eurnn", 2, 12, capacity=9).to(DEVICE)
    v = model.recurrent_matrix()
    assert v.grad_fn is not None and "GivensProduct" in type(v.grad_fn).__name__
    torch.testing.assert_close(v, reference_product(model.even_angles_l0, model.odd_angles_l0, 12), atol=1e-6, rtol=0)
    v.sum().backward()
    assert model.even_angles_l0.grad.shape == model.even_angles_l0.shape
    assert model.odd_angles_l0.grad.shape == model.odd_angles_l0.shape


# --------------------------------------------------------------------------- chunks in parallel (for GPUs)
@pytest.mark.parametrize("n,capacity,chunks", [(1, 1, 2), (2, 3, 2), (5, 3, 2), (7, 7, 3), (8, 9, 4), (9, 5, 5),
                                               (16, 40, 5), (33, 16, 16), (64, 32, 4)])
def test_chunks_in_parallel_match_the_layers_in_order_float64(n, capacity, chunks):
    """V and both angle gradients of the chunked composition against the reference (one layer after
    another), in float64 to rounding, for chunk counts that divide the layers and ones that leave padding."""
    torch.manual_seed(n * 10 + capacity)
    even, odd = (a.detach() for a in angles(n, capacity, torch.float64))
    v = eurnn.sequential_forward(even, odd, n)
    torch.testing.assert_close(eurnn.product_tree(eurnn.chunk_products(even, odd, n, chunks)), v, atol=1e-14, rtol=0)
    grad = torch.randn(n, n, dtype=torch.float64, device=DEVICE)
    for got, want in zip(eurnn.chunked_backward(even, odd, grad, chunks),
                         eurnn.sequential_backward(even, odd, v, grad)):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, atol=1e-13, rtol=0)


def test_the_product_uses_the_chunks_the_chooser_gives(monkeypatch):
    """GivensProduct (and so the model and the compiled op) composes by chunks when NNRNN_GIVENS_CHUNKS asks,
    gradcheck-exact in float64; on the CPU the chooser keeps the reference, elsewhere it cuts the layers into
    chunks of GIVENS_LAYERS_PER_CHUNK."""
    from nnrnn.kernels import policy as kernels
    assert givens_chunks(torch.zeros(1), 64) == 1
    meta = torch.empty(0, device="meta")  # stands for a GPU tensor: any device but the CPU
    assert givens_chunks(meta, 64) == 64 // kernels.GIVENS_LAYERS_PER_CHUNK and givens_chunks(meta, 3) == 1
    calls = []
    real = eurnn.chunked_backward
    monkeypatch.setattr(eurnn, "chunked_backward", lambda *args: calls.append(args[-1]) or real(*args))
    monkeypatch.setenv("NNRNN_GIVENS_CHUNKS", "3")
    kernel_policy.reset()  # the policy reads the environment once
    even, odd = angles(6, 9, torch.float64)
    assert torch.autograd.gradcheck(lambda e, o: GivensProduct.apply(e, o, 6), (even, odd))
    assert calls and set(calls) == {3}
