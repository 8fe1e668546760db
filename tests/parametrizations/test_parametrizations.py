"""nnrnn.parametrizations: the orthogonal (expRNN) and Schur-form (nnRNN) constraints.

Everything is checked against the formulas in the module docstrings:

    Q = exp(A),  A = L - Lᵀ,  L = tril(X, -1)
    V = P (Λ + T) Pᵀ,  P = exp(skew(X)),  Λ = blockdiag(γ_i R(θ_i)) [+ γ_last],  T masked lower

Set NNRNN_TEST_DEVICE (e.g. "cuda") to run the same checks on another device.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment
from torch import nn
from torch.func import functional_call

from nnrnn.parametrizations import (INITS, MatrixExpOrthogonal, SchurForm, init_skew_,
                                    orthogonal, rotation_blocks, schur, skew, triangular_mask)
from nnrnn.parametrizations.schur import free_triangular_entries

DEVICE = torch.device(os.environ.get("NNRNN_TEST_DEVICE", "cpu"))


# --------------------------------------------------------------------------- helpers

def assert_orthogonal(q: torch.Tensor, atol: float = 1e-5) -> None:
    eye = torch.eye(q.shape[-1], dtype=q.dtype, device=q.device)
    err = (q.transpose(-2, -1) @ q - eye).abs().max().item()
    assert err < atol, f"QᵀQ - I has max entry {err}"


def assert_same_spectrum(actual, expected, atol: float = 1e-4) -> None:
    """The two complex multisets are equal: pair them off (optimal matching) and compare."""
    a = np.sort_complex(np.asarray(torch.as_tensor(actual).detach().cpu().to(torch.complex128)))
    b = np.sort_complex(np.asarray(torch.as_tensor(expected).detach().cpu().to(torch.complex128)))
    assert a.shape == b.shape, f"{a.shape} eigenvalues, expected {b.shape}"
    rows, cols = linear_sum_assignment(np.abs(a[:, None] - b[None, :]))
    err = np.abs(a[rows] - b[cols]).max() if len(a) else 0.0
    assert err < atol, f"spectra differ by {err}:\n{a}\n{b}"


def expected_spectrum(theta: torch.Tensor, gamma: torch.Tensor, n: int) -> torch.Tensor:
    """γ_i e^{±iθ_i} for the n // 2 blocks, and +γ_last when n is odd."""
    theta = theta.detach().cpu().double()
    gamma = gamma.detach().cpu().double()
    m = n // 2
    z = gamma[:m] * torch.exp(1j * theta)
    eig = torch.cat([z, z.conj()])
    if n % 2:
        eig = torch.cat([eig, gamma[m:].to(torch.complex128)])
    return eig


def eigvals(v: torch.Tensor) -> torch.Tensor:
    return torch.linalg.eigvals(v.detach().cpu().double())


def assert_schur_form(module: nn.Module, name: str, atol: float = 1e-5) -> None:
    """module.<name> = P (Λ + T) Pᵀ with every factor of the documented shape, and the right spectrum."""
    form = module.parametrizations[name][0]
    x = module.parametrizations[name].original
    n = form.n
    p, lam, t = form.factors(x)
    v = getattr(module, name)
    assert v.shape == (n, n)
    torch.testing.assert_close(v, p @ (lam + t) @ p.T, atol=atol, rtol=0)
    # P orthogonal, P = exp(skew(X)) with det +1
    assert_orthogonal(p, atol)
    torch.testing.assert_close(p, torch.linalg.matrix_exp(skew(x).double()).to(x.dtype), atol=atol, rtol=0)
    assert torch.linalg.det(p.double()).item() == pytest.approx(1.0, abs=1e-4)
    # T strictly lower triangular; with triangular="block", zero inside the 2×2 blocks
    assert torch.equal(t, t.tril(-1))
    idx = torch.arange(0, n - 1, 2)
    if form.triangular == "block":
        assert torch.all(t[idx + 1, idx] == 0)
    # Λ block diagonal: γ_i R(θ_i)
    m = n // 2
    for i in range(m):
        g, th = form.gamma[i], form.theta[i]
        block = torch.stack([torch.stack([g * torch.cos(th), -g * torch.sin(th)]),
                             torch.stack([g * torch.sin(th), g * torch.cos(th)])])
        torch.testing.assert_close(lam[2 * i:2 * i + 2, 2 * i:2 * i + 2], block, atol=1e-6, rtol=0)
    if n % 2:
        assert lam[-1, -1] == form.gamma[-1]
    off = lam.clone()
    for i in range(m):
        off[2 * i:2 * i + 2, 2 * i:2 * i + 2] = 0
    if n % 2:
        off[-1, -1] = 0
    assert torch.all(off == 0), "Λ has entries outside its diagonal blocks"
    # the spectrum of V is that of Λ + T: exactly γ_i e^{±iθ_i} (+γ_last) when T is block triangular
    expected = expected_spectrum(form.theta, form.gamma, n) if form.triangular == "block" else eigvals(lam + t)
    assert_same_spectrum(eigvals(v), expected, atol=1e-4)


def snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    return {k: p.detach().clone() for k, p in module.named_parameters()}


# --------------------------------------------------------------------------- skew / orthogonal

def test_skew_uses_only_the_strict_lower_triangle():
    x = torch.randn(5, 5, device=DEVICE)
    a = skew(x)
    torch.testing.assert_close(a, -a.T)
    assert torch.all(a.diagonal() == 0)
    torch.testing.assert_close(a.tril(-1), x.tril(-1))
    y = x.tril(-1) + (x + 3.0).triu()  # changing the upper triangle and diagonal does not change A
    assert not torch.equal(y, x)
    torch.testing.assert_close(skew(y), a)


@pytest.mark.parametrize("init", INITS)
@pytest.mark.parametrize("n", [5, 6])
def test_orthogonal_on_linear_is_a_rotation(init, n):
    torch.manual_seed(0)
    layer = orthogonal(nn.Linear(n, n, bias=False).to(DEVICE), init=init)
    w = layer.weight
    assert_orthogonal(w)
    assert torch.linalg.det(w.detach().double()).item() == pytest.approx(1.0, abs=1e-5)
    x = layer.parametrizations.weight.original
    torch.testing.assert_close(w, torch.linalg.matrix_exp(skew(x).double()).to(x.dtype))
    y = layer(torch.randn(3, n, device=DEVICE))
    assert y.shape == (3, n)


@pytest.mark.parametrize("init", ["henaff", "cayley"])
@pytest.mark.parametrize("n", [6, 7])
def test_block_inits_give_a_2x2_block_diagonal_skew_generator(init, n):
    torch.manual_seed(1)
    x = torch.randn(n, n, device=DEVICE)  # garbage everywhere; init must overwrite all of it
    init_skew_(x, init)
    a = skew(x)
    m = n // 2
    s = torch.stack([a[2 * i, 2 * i + 1] for i in range(m)])
    expected = torch.zeros_like(a)
    for i in range(m):
        expected[2 * i, 2 * i + 1] = s[i]
        expected[2 * i + 1, 2 * i] = -s[i]
    assert torch.equal(a, expected), "generator is not blockdiag(s_i J)"
    assert torch.all(s != 0)
    if init == "henaff":
        assert torch.all(s.abs() <= math.pi)
    else:  # s = -tan(u/2), u ~ U(0, π/2)
        assert torch.all((s <= 0) & (s >= -1))
    if n % 2:
        assert torch.all(a[-1] == 0) and torch.all(a[:, -1] == 0)  # last unit not rotated
    # only the strict lower triangle is stored
    assert torch.all(x.triu() == 0)
    # eigenvalues of exp(A) are e^{±i s_i} (and 1 for odd n)
    q = torch.linalg.matrix_exp(a.double())
    z = torch.exp(1j * s.cpu().double())
    expected_eigs = torch.cat([z, z.conj()] + ([torch.ones(1, dtype=torch.complex128)] if n % 2 else []))
    assert_same_spectrum(eigvals(q), expected_eigs, atol=1e-5)


def test_random_init_is_a_haar_rotation_logarithm():
    g = torch.Generator().manual_seed(3)
    x = torch.empty(6, 6)
    init_skew_(x, "random", generator=g)
    q = torch.linalg.matrix_exp(skew(x.double()))
    assert_orthogonal(q, 1e-10)
    assert torch.linalg.det(q).item() == pytest.approx(1.0)
    a = skew(x)
    assert not torch.allclose(a, torch.zeros_like(a))
    # not block diagonal: a dense generator
    assert (a.abs() > 1e-6).sum() > 2 * 3
    # reproducible through the generator
    x2 = torch.empty(6, 6)
    init_skew_(x2, "random", generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(x, x2)


def test_henaff_angles_are_uniform_on_minus_pi_to_pi_drawn_in_float64_from_the_generator():
    """s_i = 2π u_i − π with u ~ U(0, 1) (Henaff et al. 2016), the u drawn in float64 from the generator
    given, one per 2×2 block, so that a seed fixes the init whatever the default dtype."""
    x = init_skew_(torch.empty(7, 7), "henaff", generator=torch.Generator().manual_seed(5))
    u = torch.rand(3, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    want = (2 * math.pi * u - math.pi).float()
    a = skew(x)
    torch.testing.assert_close(torch.stack([a[2 * i, 2 * i + 1] for i in range(3)]), want, rtol=0, atol=0)


def test_cayley_angles_are_minus_tan_of_half_a_uniform_angle_drawn_in_float64_from_the_generator():
    """s_i = −√((1 − cos u_i)/(1 + cos u_i)) = −tan(u_i/2), u ~ U(0, π/2) (Helfrich et al. 2018), the u drawn
    in float64 from the generator given; the reference uses the tangent form."""
    x = init_skew_(torch.empty(6, 6), "cayley", generator=torch.Generator().manual_seed(2))
    u = torch.rand(3, generator=torch.Generator().manual_seed(2), dtype=torch.float64) * (math.pi / 2)
    a = skew(x)
    torch.testing.assert_close(torch.stack([a[2 * i, 2 * i + 1] for i in range(3)]), (-torch.tan(u / 2)).float(),
                               rtol=0, atol=1e-7)


@pytest.mark.parametrize("seed", range(8))
def test_random_init_is_the_haar_rotation_of_the_generators_gaussian(seed):
    """Mezzadri (2007): Q from the QR of a float64 Gaussian G (drawn from the generator) with R's diagonal
    made positive is Haar on O(n); negating Q's first column when det Q = −1 puts it in SO(n).  The
    reference QR is numpy's, not torch's; the stored generator is the strict lower triangle of log Q."""
    g = torch.randn(5, 5, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).numpy()
    q, r = np.linalg.qr(g)
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    x = init_skew_(torch.empty(5, 5, dtype=torch.float64), "random", generator=torch.Generator().manual_seed(seed))
    assert torch.all(x.triu() == 0)
    np.testing.assert_allclose(torch.linalg.matrix_exp(skew(x)).numpy(), q, rtol=0, atol=1e-10)


def test_rebase_moves_every_dynamic_factor_and_counts_them():
    from nnrnn.parametrizations import rebase_
    model = nn.Sequential(orthogonal(nn.Linear(4, 4), dynamic=True), orthogonal(nn.Linear(3, 3)),
                          schur(nn.Linear(5, 5), dynamic=True))
    for factor in (model[0], model[2]):
        with torch.no_grad():
            factor.parametrizations.weight.original.normal_()
    assert rebase_(model) == 2
    assert torch.all(model[0].parametrizations.weight.original == 0)


def test_a_dynamic_half_precision_weight_is_the_base_times_the_exponential_rounded_once():
    torch.manual_seed(4)
    layer = orthogonal(nn.Linear(6, 6, bias=False), dynamic=True)
    with torch.no_grad():
        layer.parametrizations.weight.original.normal_(0, 0.5)
    from nnrnn.parametrizations import rebase_
    rebase_(layer)  # a base B ≠ I
    with torch.no_grad():
        layer.parametrizations.weight.original.normal_(0, 0.5)
    base = layer.parametrizations.weight[0].base.double()
    x = layer.parametrizations.weight.original.detach().double()
    want = (base @ torch.linalg.matrix_exp(skew(x))).to(torch.bfloat16)
    layer.to(torch.bfloat16)
    assert layer.weight.dtype == torch.bfloat16
    torch.testing.assert_close(layer.weight.detach(), want, rtol=0, atol=2 ** -8)


def test_skew_of_a_stack_is_the_stack_of_skews():
    x = torch.randn(3, 4, 4)
    torch.testing.assert_close(skew(x), torch.stack([skew(m) for m in x]), rtol=0, atol=0)


def test_the_rebase_count_stays_an_exact_integer_in_half_precision():
    """The Newton–Schulz step fires on every NS_EVERY-th rebase: a float count in bfloat16 (8 bits) would
    stop counting at 256."""
    layer = orthogonal(nn.Linear(2, 2, bias=False), dynamic=True).to(torch.bfloat16)
    factor = layer.parametrizations.weight[0]
    assert factor.rebases.dtype == torch.long
    from nnrnn.parametrizations import rebase_
    for _ in range(300):
        rebase_(layer)
    assert int(factor.rebases) == 300


def test_a_dynamic_factors_buffers_go_to_the_device_asked():
    """On the meta device, which this CPU-only machine has, so that a dropped ``device=`` is seen here too."""
    from nnrnn.parametrizations.orthogonal import OrthogonalFactor
    factor = OrthogonalFactor(4, dynamic=True, device="meta")
    assert factor.base.device.type == "meta" and factor.rebases.device.type == "meta"


def test_a_dynamic_base_takes_the_weights_dtype():
    layer = orthogonal(nn.Linear(4, 4, bias=False, dtype=torch.float64), dynamic=True)
    assert layer.parametrizations.weight[0].base.dtype == torch.float64
    assert layer.weight.dtype == torch.float64


def test_orthogonal_init_none_keeps_a_rotation_and_rejects_others():
    torch.manual_seed(0)
    q = torch.linalg.matrix_exp(skew(torch.randn(5, 5, dtype=torch.float64) * 0.5))
    layer = nn.Linear(5, 5, bias=False).double()
    with torch.no_grad():
        layer.weight.copy_(q)
    orthogonal(layer, init=None)
    torch.testing.assert_close(layer.weight, q, atol=1e-8, rtol=0)

    bad = nn.Linear(5, 5, bias=False)
    with torch.no_grad():
        bad.weight.copy_(torch.randn(5, 5) * 3)
    with pytest.raises(ValueError):
        orthogonal(bad, init=None)


def test_orthogonal_assignment_of_a_rotation_round_trips_and_of_others_raises():
    torch.manual_seed(0)
    layer = orthogonal(nn.Linear(4, 4, bias=False).double())
    q = torch.linalg.matrix_exp(skew(torch.randn(4, 4, dtype=torch.float64) * 0.3))
    layer.weight = q
    torch.testing.assert_close(layer.weight, q, atol=1e-8, rtol=0)
    reflection = torch.diag(torch.tensor([-1.0, 1.0, 1.0, 1.0], dtype=torch.float64))
    with pytest.raises(ValueError):
        layer.weight = reflection
    with pytest.raises(ValueError):
        layer.weight = 2 * q


def test_orthogonal_errors():
    with pytest.raises(ValueError):
        orthogonal(nn.Linear(3, 4))  # weight 4×3
    with pytest.raises(ValueError):
        orthogonal(nn.Linear(4, 4), name="bias")
    with pytest.raises(ValueError):
        orthogonal(nn.Linear(4, 4), init="glorot")
    with pytest.raises(ValueError, match="henaff"):
        init_skew_(torch.empty(4, 4), "nope")


@pytest.mark.parametrize("s", [0.06, 0.3, 0.45, 0.5, 0.55, 0.58, 0.7, 1.2, 2.0, 3.1])
def test_orthogonal_weight_is_orthogonal_to_float32_rounding_for_block_generators(s):
    # exp(blockdiag(s J)) is a rotation by s; torch 2.13's float32 matrix_exp is off by ~3e-5
    # for |s| ≈ 0.5 (pytorch/pytorch#196592), nnrnn's exponential must not be.
    layer = orthogonal(nn.Linear(4, 4, bias=False).to(DEVICE))
    x = torch.zeros(4, 4, device=DEVICE)
    x[1, 0], x[3, 2] = -s, -0.5 * s
    with torch.no_grad():
        layer.parametrizations.weight.original.copy_(x)
    w = layer.weight
    assert_orthogonal(w, atol=1e-6)
    c, sn = math.cos(s), math.sin(s)
    torch.testing.assert_close(w[:2, :2].double().cpu(), torch.tensor([[c, sn], [-sn, c]], dtype=torch.float64),
                               atol=1e-6, rtol=0)
    # the same in the Schur form's P
    lin = schur(nn.Linear(4, 4).to(DEVICE))
    p = lin.parametrizations.weight[0].orthogonal(x)
    assert_orthogonal(p, atol=1e-6)


def test_matrix_exp_orthogonal_gradcheck():
    x = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(MatrixExpOrthogonal(), (x,))


# --------------------------------------------------------------------------- Schur form pieces

@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7])
def test_block_triangular_mask(n):
    mask = triangular_mask(n, "block")
    assert mask.dtype == torch.bool and mask.shape == (n, n)
    assert torch.equal(mask, mask.tril(-1))
    for i in range(n // 2):
        assert not mask[2 * i + 1, 2 * i]
    assert int(mask.sum()) == n * (n - 1) // 2 - n // 2
    # every other strictly-lower entry is free
    expected = torch.ones(n, n, dtype=torch.bool).tril(-1)
    for i in range(n // 2):
        expected[2 * i + 1, 2 * i] = False
    assert torch.equal(mask, expected)


def test_free_triangular_entries_counts_by_hand():
    # n = 6: 15 entries below the diagonal; the block form frees all but the 3 inside the 2x2 blocks
    assert free_triangular_entries(6) == 15 and free_triangular_entries(6, "strict") == 15
    assert free_triangular_entries(6, "block") == 12 and free_triangular_entries(7, "block") == 18
    with pytest.raises(ValueError, match="triangular"):
        free_triangular_entries(5, "full")


def test_block_triangular_mask_takes_dtype_and_device():
    assert triangular_mask(4, "block", dtype=torch.float64).dtype == torch.float64
    assert triangular_mask(4, "block", device="meta").device.type == "meta"


@pytest.mark.parametrize("n", [1, 2, 3, 6, 7])
def test_rotation_blocks(n):
    torch.manual_seed(n)
    theta = torch.rand(n // 2, dtype=torch.float64) * 2 * math.pi
    gamma = 0.5 + torch.rand((n + 1) // 2, dtype=torch.float64)
    lam = rotation_blocks(theta, gamma, n)
    assert lam.shape == (n, n)
    expected = torch.zeros(n, n, dtype=torch.float64)
    for i in range(n // 2):
        c, s = torch.cos(theta[i]), torch.sin(theta[i])
        expected[2 * i:2 * i + 2, 2 * i:2 * i + 2] = gamma[i] * torch.tensor([[c, -s], [s, c]])
    if n % 2:
        expected[-1, -1] = gamma[-1]
    torch.testing.assert_close(lam, expected)
    assert_same_spectrum(eigvals(lam), expected_spectrum(theta, gamma, n), atol=1e-10)


@pytest.mark.parametrize("triangular", ["strict", "block"])
def test_schur_form_gradcheck_wrt_every_factor(triangular):
    torch.manual_seed(0)
    form = SchurForm(5, dtype=torch.float64, triangular=triangular)
    x = init_skew_(torch.empty(5, 5, dtype=torch.float64), "random").requires_grad_()
    theta = form.theta.detach().clone().requires_grad_()
    gamma = (form.gamma.detach() + 0.1 * torch.randn(3, dtype=torch.float64)).requires_grad_()
    lower = torch.randn(5, 5, dtype=torch.float64).requires_grad_()

    def f(x, theta, gamma, lower):
        return functional_call(form, {"theta": theta, "gamma": gamma, "lower": lower}, (x,))

    assert torch.autograd.gradcheck(f, (x, theta, gamma, lower))
    # the masked entries of `lower` do not reach V, the free ones do
    (g_lower,) = torch.autograd.grad(f(x, theta, gamma, lower).pow(2).sum(), lower)
    mask = triangular_mask(5, triangular)
    assert int(mask.sum()) == (10 if triangular == "strict" else 8)
    assert torch.all(g_lower[~mask] == 0)
    assert torch.all(g_lower[mask] != 0)


# --------------------------------------------------------------------------- schur() on plain modules

@pytest.mark.parametrize("init", INITS)
@pytest.mark.parametrize("n", [6, 7])
def test_schur_on_linear_fresh(init, n):
    torch.manual_seed(0)
    layer = schur(nn.Linear(n, n).to(DEVICE), init=init)
    form = layer.parametrizations.weight[0]
    assert isinstance(form, SchurForm)
    assert form.theta.shape == (n // 2,) and form.gamma.shape == ((n + 1) // 2,)
    assert torch.all(form.gamma == 1)
    assert torch.all((form.theta >= 0) & (form.theta < 2 * math.pi))
    assert torch.all(form.triangular_factor() == 0)
    assert_schur_form(layer, "weight")
    eig = eigvals(layer.weight)
    torch.testing.assert_close(eig.abs(), torch.ones(n, dtype=torch.float64), atol=1e-5, rtol=0)
    # the forward uses V
    x = torch.randn(3, n, device=DEVICE)
    torch.testing.assert_close(layer(x), x @ layer.weight.T + layer.bias)


def test_schur_is_static_unless_asked():
    """The paper's parametrization P = exp(skew(X)) by default; a moving base only with dynamic=True."""
    assert not schur(nn.Linear(4, 4)).parametrizations.weight[0].dynamic
    assert schur(nn.Linear(4, 4), dynamic=True).parametrizations.weight[0].dynamic


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_schur_in_half_precision_composes_every_factor_in_float32(dtype):
    torch.manual_seed(3)
    layer = schur(nn.Linear(6, 6))
    with torch.no_grad():
        layer.parametrizations.weight[0].lower.normal_()  # T ≠ 0, as after training
    expected = layer.weight.detach().clone()
    got = layer.to(dtype).weight
    assert got.dtype == dtype
    torch.testing.assert_close(got.float(), expected, atol=0.05, rtol=0)


def test_schur_form_defaults_are_the_papers():
    form = SchurForm(4)
    assert form.triangular == "strict" and not form.dynamic and form.init == "cayley"
    assert torch.equal(form.mask, triangular_mask(4, dtype=torch.float32))
    assert all(t.dtype == torch.float32 for t in (form.theta, form.gamma, form.lower, form.mask))  # the default


def test_schur_form_draws_theta_uniformly_on_the_circle_in_float64():
    """θ ~ U(0, 2π), drawn in float64 whatever the model's dtype, so that one seed gives one set of angles
    (a change here would change every seeded run)."""
    form = SchurForm(4000, generator=torch.Generator().manual_seed(3))
    theta = form.theta.detach()
    assert 0 <= theta.min() < 0.05 and 2 * math.pi - 0.05 < theta.max() < 2 * math.pi
    assert abs(theta.mean().item() - math.pi) < 0.1
    expected = torch.rand(2000, generator=torch.Generator().manual_seed(3), dtype=torch.float64) * (2 * math.pi)
    assert torch.equal(theta, expected.float())


def test_schur_form_makes_its_tensors_in_the_dtype_asked():
    form = SchurForm(4, dtype=torch.float64, dynamic=True)
    tensors = dict(form.named_parameters()) | dict(form.named_buffers())
    assert set(tensors) == {"theta", "gamma", "lower", "mask", "base", "rebases"}
    assert all(t.dtype == torch.float64 for name, t in tensors.items() if name != "rebases")  # a counter


def test_schur_generator_makes_it_reproducible():
    a = schur(nn.Linear(6, 6), generator=torch.Generator().manual_seed(5), init="random")
    b = schur(nn.Linear(6, 6), generator=torch.Generator().manual_seed(5), init="random")
    c = schur(nn.Linear(6, 6), generator=torch.Generator().manual_seed(6), init="random")
    torch.testing.assert_close(a.weight, b.weight)
    assert not torch.allclose(a.weight, c.weight)


def test_schur_errors():
    with pytest.raises(ValueError, match=r"^schur\(\) needs a square"):  # names the function the user called
        schur(nn.Linear(4, 5))  # weight 5×4
    with pytest.raises(ValueError):
        schur(nn.Linear(4, 4), name="bias")
    with pytest.raises(ValueError):
        schur(nn.Linear(4, 4), name="no_such_weight")
    with pytest.raises(ValueError, match="cayley"):
        schur(nn.Linear(4, 4), init="glorot")


def test_assigning_a_schur_weight_raises():
    layer = schur(nn.Linear(4, 4))
    before = layer.weight.detach().clone()
    with pytest.raises(ValueError):
        layer.weight = torch.eye(4)
    with pytest.raises(ValueError):
        layer.weight = torch.randn(4, 4)
    torch.testing.assert_close(layer.weight, before)  # unchanged


def rnn_reference(rnn: nn.RNN, x: torch.Tensor, h0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.nn.RNN's tanh recurrence written out, with the module's current weights."""
    w_ih, w_hh = rnn.weight_ih_l0, rnn.weight_hh_l0
    h = h0[0]
    outs = []
    for x_t in x:
        h = torch.tanh(x_t @ w_ih.T + rnn.bias_ih_l0 + h @ w_hh.T + rnn.bias_hh_l0)
        outs.append(h)
    return torch.stack(outs), h.unsqueeze(0)


def test_schur_on_torch_rnn_trains_and_keeps_its_form():
    torch.manual_seed(0)
    n = 6
    rnn = schur(nn.RNN(3, n).to(DEVICE), "weight_hh_l0", init="henaff")
    form = rnn.parametrizations.weight_hh_l0[0]
    torch.testing.assert_close(eigvals(rnn.weight_hh_l0).abs(), torch.ones(n, dtype=torch.float64),
                               atol=1e-5, rtol=0)
    assert_schur_form(rnn, "weight_hh_l0")

    x = torch.randn(5, 2, 3, device=DEVICE)
    h0 = torch.randn(1, 2, n, device=DEVICE)
    out, h_n = rnn(x, h0)
    ref_out, ref_h = rnn_reference(rnn, x, h0)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(h_n, ref_h, atol=1e-5, rtol=1e-5)

    # gradients reach every factor of V
    out.pow(2).sum().backward()
    factors = {"original": rnn.parametrizations.weight_hh_l0.original, "theta": form.theta,
               "gamma": form.gamma, "lower": form.lower}
    for name, p in factors.items():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"no gradient reaches {name}"

    before = snapshot(rnn)
    opt = torch.optim.RMSprop(rnn.parameters(), lr=1e-2)
    for _ in range(5):
        opt.zero_grad()
        out, _ = rnn(x, h0)
        (out.pow(2).mean() + form.regularization(0.1, 1e-3)).backward()
        opt.step()
    after = snapshot(rnn)
    for key in before:
        assert not torch.equal(before[key], after[key]), f"{key} did not change"
    assert form.triangular_factor().abs().sum() > 0 and torch.any(form.gamma != 1)
    assert_schur_form(rnn, "weight_hh_l0")
    # the fused module runs on the *current* V (not a stale copy taken at registration)
    out, h_n = rnn(x, h0)
    ref_out, ref_h = rnn_reference(rnn, x, h0)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(h_n, ref_h, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("triangular", ["strict", "block"])
def test_schur_regularization(triangular):
    torch.manual_seed(0)
    layer = schur(nn.Linear(5, 5), triangular=triangular)
    form = layer.parametrizations.weight[0]
    assert form.regularization(3.0, 2.0).item() == 0.0  # γ = 1, T = 0 at init
    with torch.no_grad():
        form.gamma.copy_(torch.tensor([0.5, 1.25, 0.9]))
        form.lower.copy_(torch.randn(5, 5))  # also fills masked entries, which must not count
    mask = triangular_mask(5, triangular)
    expected = 3.0 * (0.25 + 0.0625 + 0.01) + 2.0 / 2 * form.lower.detach()[mask].pow(2).sum()
    assert form.regularization(3.0, 2.0).item() == pytest.approx(expected.item(), rel=1e-6)
    for bad in (True, math.inf, -1.0, "1"):  # a flag passed by mistake, or no finite non-negative weight
        for delta, t_decay in ((bad, 0.0), (0.0, bad)):
            with pytest.raises(ValueError, match="delta" if delta is bad else "t_decay"):
                form.regularization(delta, t_decay)


def test_an_expanded_incoming_gradient_is_as_fast_as_a_dense_one():
    """`V.sum().backward()` hands the composition a stride-0 gradient, which oneDNN's product handled 30x
    slower than a dense one; the ratio of the two, measured alternately, must stay small."""
    import statistics
    import time
    model = schur(nn.Linear(384, 384))
    dense = torch.randn(384, 384)
    times = {"sum": [], "dense": []}
    for _ in range(3):
        for kind in times:
            model.zero_grad()
            start = time.perf_counter()
            v = model.weight
            (v.sum() if kind == "sum" else (v * dense).sum()).backward()
            times[kind].append(time.perf_counter() - start)
    assert statistics.median(times["sum"]) < 5 * statistics.median(times["dense"])


# --------------------------------------------------------------------------- dynamic trivialization

@pytest.mark.parametrize("constrain", [schur, orthogonal])
def test_rebase_keeps_the_weight_and_moves_the_generator_to_zero(constrain):
    from nnrnn.parametrizations import rebase_
    torch.manual_seed(0)
    layer = constrain(nn.Linear(6, 6, bias=False), dynamic=True).double()
    original = layer.parametrizations.weight.original
    with torch.no_grad():
        original.normal_(0, 0.3)
    before = layer.weight.detach().clone()
    assert rebase_(layer) == 1
    torch.testing.assert_close(layer.weight.detach(), before, rtol=0, atol=1e-12)
    assert torch.all(original == 0)
    base = layer.parametrizations.weight[0].base
    torch.testing.assert_close(base.T @ base, torch.eye(6, dtype=torch.float64), rtol=0, atol=1e-12)


def test_dynamic_gradient_at_the_base_is_the_exact_derivative():
    """Q(X) = B exp(skew(X)) at X = 0: the gradient matches autograd through torch.linalg.matrix_exp in float64."""
    from nnrnn.parametrizations import rebase_
    torch.manual_seed(1)
    layer = orthogonal(nn.Linear(5, 5, bias=False), dynamic=True).double()
    with torch.no_grad():
        layer.parametrizations.weight.original.normal_()
    rebase_(layer)
    g = torch.randn(5, 5, dtype=torch.float64)
    (layer.weight * g).sum().backward()
    base = layer.parametrizations.weight[0].base
    x = torch.zeros(5, 5, dtype=torch.float64, requires_grad=True)
    (base @ torch.linalg.matrix_exp(skew(x)) * g).sum().backward()
    torch.testing.assert_close(layer.parametrizations.weight.original.grad, x.grad, rtol=1e-12, atol=1e-12)


def test_rebase_refuses_a_static_factor():
    from nnrnn.parametrizations import rebase_
    layer = orthogonal(nn.Linear(4, 4, bias=False))
    assert rebase_(layer) == 0
    with pytest.raises(ValueError, match="dynamic"):
        layer.parametrizations.weight[0].rebase_(layer.parametrizations.weight.original)


def test_the_base_stays_orthogonal_over_many_rebases_in_float32():
    """Each rebase multiplies B by a rounded exponential, so BᵀB − I drifts (without correction to about
    8e-7 after 64 rebases and 2e-6 after 512 at this size); the periodic Newton–Schulz step brings it back
    to a few ulps."""
    from nnrnn.parametrizations import rebase_
    from nnrnn.parametrizations.orthogonal import OrthogonalFactor
    torch.manual_seed(3)
    n, every = 32, OrthogonalFactor.NS_EVERY
    layer = orthogonal(nn.Linear(n, n, bias=False), dynamic=True)
    original = layer.parametrizations.weight.original
    errors = []
    for _ in range(8 * every):
        with torch.no_grad():
            original.normal_(0, 0.05)  # an update-sized step of the generator
        rebase_(layer)
        base = layer.parametrizations.weight[0].base
        errors.append((base.T @ base - torch.eye(n)).abs().max().item())
    assert int(layer.parametrizations.weight[0].rebases) == 8 * every
    after_correction = errors[every - 1::every]
    assert max(after_correction) < 6e-7, after_correction
    assert max(errors) < 2e-6


def test_schur_on_torch_rnn_with_a_fixed_gamma_and_a_delay_t_init():
    """schur(..., fixed_gamma, t_init) on torch's own RNN: γ is a buffer outside its parameters, T starts as
    α on the free first sub-diagonal, and V's eigenvalues (numpy) have modulus G with "block"."""
    rnn = schur(nn.RNN(3, 6).double(), "weight_hh_l0", fixed_gamma=0.9, t_init="delay:0.25", triangular="block")
    form = rnn.parametrizations.weight_hh_l0[0]
    assert all(p is not form.gamma for p in rnn.parameters()) and "gamma" in dict(form.named_buffers())
    expected = np.zeros((6, 6))
    expected[[2, 4], [1, 3]] = 0.25
    np.testing.assert_array_equal(form.triangular_factor().detach().numpy(), expected)
    eig = np.linalg.eigvals(rnn.weight_hh_l0.detach().numpy())
    np.testing.assert_allclose(np.abs(eig), np.full(6, 0.9), rtol=0, atol=1e-12)
    assert form.regularization(5.0, 0.0).item() == 0.0


# --------------------------------------------------------------------------- triangular="none": V = P Λ Pᵀ, normal

def assert_normal(v: torch.Tensor) -> None:
    v = v.detach()
    torch.testing.assert_close(v @ v.T, v.T @ v, atol=1e-10, rtol=0)


def gamma_moduli(gamma: torch.Tensor, n: int) -> torch.Tensor:
    """|eigenvalues| of P Λ Pᵀ: each block's γ_i twice, and the trailing γ once when n is odd."""
    gamma = gamma.detach().double()
    return torch.cat([gamma[: n // 2].repeat_interleave(2), gamma[n // 2:]]).sort().values


@pytest.mark.parametrize("n", [1, 4, 7])
def test_triangular_none_frees_no_entry_of_t(n):
    assert free_triangular_entries(n, "none") == 0
    assert not triangular_mask(n, "none").any()
    assert triangular_mask(n, "none", dtype=torch.float64).dtype == torch.float64
    form = SchurForm(n, triangular="none")
    assert "lower" not in dict(form.named_parameters()) and "lower" in form.state_dict()  # a buffer, kept in states
    assert [p.numel() for p in form.parameters()] == [n // 2, (n + 1) // 2]  # θ and γ only


@pytest.mark.parametrize("n", [6, 7])
@pytest.mark.parametrize("optimizer", [torch.optim.Adam, torch.optim.RMSprop])
def test_triangular_none_keeps_v_normal_through_training(n, optimizer):
    torch.manual_seed(n)
    layer = schur(nn.Linear(n, n, bias=False, dtype=torch.float64), init="random", triangular="none")
    form, generator = layer.parametrizations.weight[0], layer.parametrizations.weight.original
    assert_normal(layer.weight)
    x, y = torch.randn(32, n, dtype=torch.float64), torch.randn(32, n, dtype=torch.float64)
    opt = optimizer([generator, form.theta, form.gamma], lr=1e-2)
    for _ in range(6):
        opt.zero_grad()
        loss = (layer(x) - y).pow(2).mean() + form.regularization(delta=0.1, t_decay=1.0)
        loss.backward()
        assert all(bool(p.grad.abs().sum() > 0) for p in (generator, form.theta, form.gamma))
        opt.step()
    assert not torch.allclose(form.gamma, torch.ones_like(form.gamma))  # the updates moved γ off 1
    assert_normal(layer.weight)
    torch.testing.assert_close(eigvals(layer.weight).abs().sort().values, gamma_moduli(form.gamma, n),
                               atol=1e-10, rtol=0)
    assert torch.all(form.triangular_factor() == 0)


def test_triangular_none_refuses_a_t_init_that_sets_t():
    with pytest.raises(ValueError, match="t_init='delay:1.0'.*triangular='none'"):
        SchurForm(4, triangular="none", t_init="delay:1.0")
    assert torch.all(SchurForm(4, triangular="none", t_init="zeros").triangular_factor() == 0)


def test_triangular_none_refuses_a_state_whose_t_it_would_drop():
    strict = SchurForm(4, triangular="strict")
    with torch.no_grad():
        strict.lower.copy_(torch.randn(4, 4))
    with pytest.raises(RuntimeError, match="lower holds a non-zero T"):
        SchurForm(4, triangular="none").load_state_dict(strict.state_dict())
    normal = SchurForm(4, triangular="none")
    strict.load_state_dict(normal.state_dict())  # T = 0 loads into a layer that could train it
    torch.testing.assert_close(strict.theta, normal.theta)
    assert torch.all(strict.triangular_factor() == 0)


@pytest.mark.parametrize("dynamic", [False, True])
def test_an_orthogonal_weight_refuses_a_rotation_of_another_size(dynamic):
    """Assigning a 4×4 rotation to a 3×3 orthogonal weight is a ValueError naming both shapes; the weight keeps
    its shape (torch's parametrize would otherwise resize ``original`` to whatever right_inverse returns)."""
    linear = orthogonal(nn.Linear(3, 3, bias=False, dtype=torch.float64), dynamic=dynamic)
    rotation = torch.linalg.matrix_exp(skew(torch.randn(4, 4, dtype=torch.float64)))
    with pytest.raises(ValueError, match=r"3×3.*\(4, 4\)"):
        linear.weight = rotation
    assert linear.weight.shape == (3, 3)
