"""The complex nnRNN (``nnrnn-complex``): its factors (P unitary, the spectrum γ e^{iθ} exactly), the
recurrence against complex arithmetic written out, the fused loop against the reference loop, gradcheck in
complex128 / float64, the counts, and torch.nn.RNN's contract with a 2N-wide real state [Re h, Im h]."""
import copy
import math

import numpy as np
import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import nnrnn
from nnrnn.kernels import policy as kernel_policy
from nnrnn.models.nnrnn_complex import complex_fused, complex_modrelu, complex_reference
from nnrnn.parametrizations.unitary import ComplexSchurForm, skew_hermitian, storage_of
from helpers import assert_copies_train_apart

F64 = torch.float64
NAME = "nnrnn-complex"


def make(n=5, i=3, dtype=F64, **options):
    return nnrnn.create(NAME, i, n, dtype=dtype, **options)


def nudge_(model, scale=0.3, seed=0):
    """Factors away from their start (γ ≠ 1, T ≠ 0) and modReLU biases of both signs, so every term counts."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for form in model.schur_forms():
            form.gamma.copy_(1 + scale * (torch.rand(form.gamma.shape, generator=gen, dtype=F64) - 0.5))
            form.lower_real.copy_(scale * torch.randn(form.lower_real.shape, generator=gen, dtype=F64))
            form.lower_imag.copy_(scale * torch.randn(form.lower_imag.shape, generator=gen, dtype=F64))
        for name, p in model.named_parameters():
            if name.startswith("modrelu_bias") or name.startswith("bias_ih"):
                p.copy_(scale * torch.randn(p.shape, generator=gen, dtype=F64))
    return model


def as_complex(real, n):
    return torch.complex(real[..., :n], real[..., n:])


# --------------------------------------------------------------------------- the factors

def test_generator_storage_is_a_skew_hermitian_matrix_with_every_entry_used():
    x = torch.randn(6, 6, dtype=F64)
    a = skew_hermitian(x)
    torch.testing.assert_close(a.conj().T, -a)
    assert torch.all(a.diagonal().real == 0)
    torch.testing.assert_close(storage_of(a), x)  # a bijection: N² real numbers, none unused


@pytest.mark.parametrize("dtype,n", [(F64, 16), (torch.float32, 16), (torch.float32, 512)])
def test_p_is_unitary_and_the_spectrum_is_exactly_the_angles_and_moduli(dtype, n):
    torch.manual_seed(1)
    model = make(n, 1, dtype)
    if n < 100:
        nudge_(model, 0.5)
    p, lam, t = (f.detach() for f in model.schur_factors())
    eye = torch.eye(n, dtype=p.dtype)
    error = torch.linalg.matrix_norm(p.conj().T @ p - eye).item()
    # float32 at N = 512, Haar-random P (‖A‖₂ ≈ π): measured 1.5e-5 in Frobenius norm, 3.6e-7 at most per entry
    assert error < (1e-12 if dtype == F64 else 1e-4 if n == 512 else 1e-5)
    assert (p.conj().T @ p - eye).abs().max() < (1e-14 if dtype == F64 else 2e-6)
    assert torch.equal(t, t.tril(-1)), "T is not strictly lower triangular"
    assert torch.equal(lam, torch.diag_embed(lam.diagonal())), "Λ is not diagonal"
    form = model.schur_form()
    expected = form.gamma.detach() * torch.exp(1j * form.theta.detach().to(p.dtype))
    torch.testing.assert_close(lam.diagonal(), expected.to(p.dtype))
    # Λ + T is triangular: its eigenvalues are its diagonal exactly
    torch.testing.assert_close((lam + t).diagonal(), expected.to(p.dtype), rtol=0, atol=0)
    v = model.recurrent_matrix().detach()
    torch.testing.assert_close(v, p @ (lam + t) @ p.conj().T, rtol=0, atol=1e-10 if dtype == F64 else 2e-4)
    if n < 100:  # V's eigenvalues are those of Λ + T up to rounding
        got = np.sort_complex(torch.linalg.eigvals(v.to(torch.complex128)).numpy())
        want = np.sort_complex(expected.to(torch.complex128).numpy())
        assert np.abs(got - want).max() < (1e-9 if dtype == F64 else 1e-4)


@pytest.mark.parametrize("plan", ["fixed", "read"])  # nnrnn.kernels.fixed_exponential_plan: a GPU's, the CPU's
@pytest.mark.parametrize("init", ["random", "identity"])
def test_p_through_the_real_embedding_is_torchs_complex_matrix_exp(init, plan, monkeypatch):
    """The fast path (expm_skew_hermitian) against the reference, torch.linalg.matrix_exp of the complex A, in
    float64, after the generator has moved, with either plan of the exponential."""
    monkeypatch.setenv("NNRNN_EXPM_PLAN", plan)
    kernel_policy.reset()  # the policy reads the environment once
    model = make(12, init=init)
    with torch.no_grad():
        model.parametrizations.weight_hh_l0.original.add_(0.3 * torch.randn(12, 12, dtype=F64))
    x = model.parametrizations.weight_hh_l0.original
    torch.testing.assert_close(model.schur_form().unitary(x), torch.linalg.matrix_exp(skew_hermitian(x)),
                               rtol=0, atol=1e-13)


def test_weight_is_real_and_an_assignment_is_refused():
    model = make()
    assert model.weight_hh_l0.shape == (2, 5, 5) and model.weight_hh_l0.dtype == F64
    with pytest.raises(ValueError, match="cannot be assigned directly"):
        model.weight_hh_l0 = torch.zeros(2, 5, 5, dtype=F64)


def test_identity_init_starts_with_a_diagonal_unitary_v():
    model = make(init="identity")
    v = model.recurrent_matrix().detach()
    torch.testing.assert_close(v, torch.diag_embed(model.schur_form().eigenvalues().detach()))
    torch.testing.assert_close(v.abs().diagonal(), torch.ones(5, dtype=F64))


# --------------------------------------------------------------------------- the recurrence

def test_modrelu_is_the_documented_formula():
    z = torch.tensor([3 + 4j, 0j, 0.1 + 0.1j, -1j], dtype=torch.complex128)
    b = torch.tensor([-1.0, 0.5, -1.0, 0.25], dtype=F64)
    expected = torch.tensor([(3 + 4j) / 5 * 4, 0, 0, -1.25j], dtype=torch.complex128)
    torch.testing.assert_close(complex_modrelu(z, b), expected)


@pytest.mark.parametrize("nonlinearity", ["modrelu", None])
def test_output_is_the_complex_recurrence_written_out(nonlinearity):
    torch.manual_seed(2)
    n, i = 4, 3
    model = nudge_(make(n, i, nonlinearity=nonlinearity))
    x, h0 = torch.randn(5, 2, i, dtype=F64), torch.randn(1, 2, 2 * n, dtype=F64)
    out, h_n = model(x, h0)
    v = model.recurrent_matrix()
    w = model.weight_ih_l0
    w_c, b_c = torch.complex(w[:n], w[n:]), as_complex(model.bias_ih_l0, n)
    h = as_complex(h0[0], n)
    for t in range(5):
        z = (v @ h.T).T + (w_c @ x[t].to(torch.complex128).T).T + b_c
        if nonlinearity == "modrelu":
            r = z.abs()
            h = z / r * torch.relu(r + model.modrelu_bias_l0)
        else:
            h = z
        torch.testing.assert_close(as_complex(out[t], n), h, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(h_n[0], out[-1])


def test_linear_complex_nnrnn_is_exactly_linear():
    """nonlinearity=None, bias=False: h_t = V h_{t-1} + W x_t, so the state after a zero input is V^k h_0."""
    model = make(4, 2, nonlinearity=None, bias=False)
    h0 = torch.randn(1, 3, 8, dtype=F64)
    out, _ = model(torch.zeros(6, 3, 2, dtype=F64), h0)
    v = model.recurrent_matrix()
    expected = (torch.linalg.matrix_power(v, 6) @ as_complex(h0[0], 4).T).T
    torch.testing.assert_close(as_complex(out[-1], 4), expected)


@pytest.mark.parametrize("nonlinearity", ["modrelu", None])
def test_fused_loop_matches_the_reference_values_and_gradients(nonlinearity):
    torch.manual_seed(3)
    model = nudge_(make(6, 3, nonlinearity=nonlinearity, num_layers=2, bidirectional=True))
    x = torch.randn(7, 4, 3, dtype=F64)
    h0 = torch.randn(4, 4, 12, dtype=F64)
    results = {}
    for implementation in ("fused", "reference"):
        model.implementation = implementation
        model.zero_grad()
        out, h = model(x, h0)
        (out.pow(2).sum() + (h * torch.linspace(-1, 1, 12, dtype=F64)).sum()).backward()
        results[implementation] = (out.detach(), h.detach(), {k: p.grad.clone() for k, p in model.named_parameters()})
    (out_f, h_f, g_f), (out_r, h_r, g_r) = results["fused"], results["reference"]
    torch.testing.assert_close(out_f, out_r, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(h_f, h_r, rtol=1e-12, atol=1e-12)
    for key in g_r:
        torch.testing.assert_close(g_f[key], g_r[key], rtol=1e-9, atol=1e-10, msg=key)


@pytest.mark.parametrize("shape", [(1, 3), (1, 1, 3), (2, 0, 3)], ids=["unbatched-step", "one-step", "batch-0"])
def test_fused_loop_trains_on_one_step_of_one_sequence_and_on_an_empty_batch(shape):
    """Where T·B ≤ 1 the fused loop's (2, T, B, N) layout of the input is the input's own memory; its backward
    ran into autograd's in-place error there, as torch.nn.RNN's does not."""
    torch.manual_seed(4)
    model = nudge_(make(4, 3))
    x = torch.randn(*shape, dtype=F64, requires_grad=True)
    grads = []
    for implementation in ("fused", "reference"):
        model.implementation = implementation
        model.zero_grad()
        x.grad = None
        out, h = model(x)
        (out.pow(2).sum() + h.sum()).backward()
        grads.append([x.grad.clone(), *(p.grad.clone() for p in model.parameters())])
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_model_moved_to_half_precision_says_so_at_its_call(dtype):
    """Complex arithmetic has no half-precision kernels: the constructor refuses such a dtype, and a model moved
    there by .to() is refused at its call in the same terms (it failed deep in a kernel, naming no dtype)."""
    model = make(4, 3, dtype=torch.float32).to(dtype)
    with pytest.raises(TypeError, match=r"torch.float32 or torch.float64.*\.float\(\)") as caught:
        model(torch.randn(5, 2, 3, dtype=dtype))
    assert isinstance(caught.value, RuntimeError)  # what the call raised before, and torch's type for it
    assert model.float()(torch.randn(5, 2, 3))[0].dtype == torch.float32


def test_fused_loop_in_float32_is_as_accurate_as_the_reference():
    """Both implementations in float32 against the same model in float64: outputs and every gradient within
    float32 accuracy (relative to the largest entry), the fused loop no worse than the reference loop."""
    torch.manual_seed(4)
    exact = nudge_(make(32, 3), 0.05)
    model = make(32, 3).float()
    model.load_state_dict({k: v.float() for k, v in exact.state_dict().items()})
    x = torch.randn(20, 8, 3)

    def run(m, inputs):
        m.zero_grad()
        out, _ = m(inputs)
        out.pow(2).sum().backward()
        return [out.detach().double()] + [p.grad.double() for p in m.parameters()]

    reference = run(exact, x.double())
    errors = {}
    for implementation in ("fused", "reference"):
        model.implementation = implementation
        got = run(model, x)
        errors[implementation] = max(((a - b).abs().max() / b.abs().max()).item() for a, b in zip(got, reference))
    # 9e-4 measured for both, set by the gradient through V's float32 composition (matrix_exp, P Θ Pᴴ), which
    # the two share; the loops alone differ by about 1e-5 (outputs)
    assert errors["fused"] < 2e-3, errors
    assert errors["fused"] < 3 * errors["reference"] + 1e-6, errors


@pytest.mark.parametrize("recurrence", [complex_fused, complex_reference], ids=["fused", "reference"])
@pytest.mark.parametrize("modrelu", [True, False])
def test_gradcheck_of_the_recurrence_in_complex128(recurrence, modrelu):
    """With respect to the input projection, h_0, the complex V and modReLU's bias."""
    torch.manual_seed(5)
    n = 3
    projected = torch.randn(4, 2, 2 * n, dtype=F64, requires_grad=True)
    h0 = torch.randn(2, 2 * n, dtype=F64, requires_grad=True)
    v = (0.6 * torch.randn(n, n, dtype=torch.complex128)).requires_grad_()
    bias = (0.3 * torch.randn(n, dtype=F64)).requires_grad_() if modrelu else None
    inputs = (projected, h0, v) + ((bias,) if modrelu else ())
    assert torch.autograd.gradcheck(lambda *a: recurrence(*a[:3], a[3] if modrelu else None), inputs)


@pytest.mark.parametrize("implementation", ["fused", "reference"])
def test_gradcheck_of_the_layer_wrt_every_factor_in_float64(implementation):
    torch.manual_seed(6)
    model = nudge_(make(3, 2))
    model.implementation = implementation
    names, values = zip(*model.named_parameters())
    x = torch.randn(3, 2, 2, dtype=F64, requires_grad=True)

    def f(x, *params):
        return torch.func.functional_call(model, dict(zip(names, params)), (x,))

    assert torch.autograd.gradcheck(f, (x, *[v.detach().clone().requires_grad_() for v in values]))


# --------------------------------------------------------------------------- counting and groups

@pytest.mark.parametrize("options", [{}, {"bias": False}, {"nonlinearity": None},
                                     {"num_layers": 2, "bidirectional": True}])
def test_parameter_count_counts_real_degrees_of_freedom(options):
    """Per cell: W_ih 2N·in, b 2N, modReLU N, A N², T N(N−1), θ N, γ N."""
    n, i = 5, 3
    cls = nnrnn.MODELS[NAME]
    cell = n * n + n * (n - 1) + 2 * n
    per_cell = cell + 2 * n * options.get("bias", True) + n * (options.get("nonlinearity", "modrelu") == "modrelu")
    expected = 2 * n * i + per_cell
    if options.get("num_layers") == 2:
        expected = 2 * expected + 2 * (2 * n * 4 * n + per_cell)
    assert cls.parameter_count(i, n, **options) == expected
    model = nnrnn.create(NAME, i, n, **options)
    unused = sum(2 * (n * n - n * (n - 1) // 2) for _ in model.schur_forms())  # lower_real, lower_imag storage
    assert sum(p.numel() for p in model.parameters()) - unused == expected
    # the read-out of nnrnn.parameter_count sees 2N features
    assert nnrnn.parameter_count(NAME, i, n, 7, **options) == expected + 2 * n * 7 * (
        2 if options.get("bidirectional") else 1) + 7


def test_hidden_size_for_is_the_closest():
    n = nnrnn.hidden_size_for(NAME, 20_000, 10, 9)
    count = lambda k: nnrnn.parameter_count(NAME, 10, k, 9)  # noqa: E731
    assert abs(count(n) - 20_000) <= min(abs(count(n - 1) - 20_000), abs(count(n + 1) - 20_000))


def test_param_groups_put_the_skew_hermitian_generators_under_lr_orth():
    model = make(4, 3, num_layers=2, bidirectional=True)
    groups = {g["name"]: g for g in nnrnn.param_groups(model, 1e-3, 1e-4)}
    orth = [id(p) for p in groups["orthogonal"]["params"]]
    expected = [id(model.parametrizations["weight_hh" + s].original) for s in model.cells]
    assert orth == expected
    everything = orth + [id(p) for p in groups["default"]["params"]]
    assert sorted(everything) == sorted(id(p) for p in model.parameters())
    assert all(isinstance(model.parametrizations["weight_hh" + s][0], ComplexSchurForm) for s in model.cells)


def test_regularization_by_hand():
    model = nudge_(make(4, 3, bidirectional=True))
    expected = sum(0.2 * ((1 - f.gamma) ** 2).sum()
                   + 0.5 * 0.01 * ((f.lower_real.tril(-1) ** 2).sum() + (f.lower_imag.tril(-1) ** 2).sum())
                   for f in model.schur_forms())
    torch.testing.assert_close(model.regularization(0.2, 0.01), expected)


# --------------------------------------------------------------------------- drop-in contract

@pytest.mark.parametrize("mode", ["time_first", "batch_first", "unbatched"])
def test_shapes_and_layouts(mode):
    torch.manual_seed(7)
    model = make(4, 3, num_layers=2, bidirectional=True, batch_first=mode == "batch_first")
    x = torch.randn(6, 2, 3, dtype=F64)
    h0 = torch.randn(4, 2, 8, dtype=F64)
    model.batch_first = False
    out, h = model(x, h0)
    assert out.shape == (6, 2, 16) and h.shape == (4, 2, 8)
    model.batch_first = mode == "batch_first"
    if mode == "batch_first":
        out_b, h_b = model(x.transpose(0, 1), h0)
        torch.testing.assert_close(out_b, out.transpose(0, 1))
        torch.testing.assert_close(h_b, h)
    elif mode == "unbatched":
        out_u, h_u = model(x[:, 1], h0[:, 1])
        torch.testing.assert_close(out_u, out[:, 1])
        torch.testing.assert_close(h_u, h[:, 1])
    assert model.output_size == 8 and model.hidden_size == 4


def test_packed_sequences_match_per_sequence_runs():
    torch.manual_seed(8)
    model = nudge_(make(3, 2, num_layers=2, bidirectional=True))
    lengths = torch.tensor([2, 5, 3])
    x = torch.randn(5, 3, 2, dtype=F64)
    for implementation in ("fused", "reference"):
        model.implementation = implementation
        out, h_n = model(pack_padded_sequence(x, lengths, enforce_sorted=False))
        out, _ = pad_packed_sequence(out)
        for b, length in enumerate(lengths.tolist()):
            single, h_single = model(x[:length, b:b + 1])
            torch.testing.assert_close(out[:length, b], single[:, 0])
            torch.testing.assert_close(h_n[:, b], h_single[:, 0])


def test_whole_model_save_load_deepcopy_state_dict_and_training_after():
    torch.manual_seed(9)
    model = nudge_(make(4, 3, num_layers=2))
    x = torch.randn(5, 2, 3, dtype=F64)
    expected = assert_copies_train_apart(model, x, torch.testing.assert_close)
    fresh = make(4, 3, num_layers=2)
    fresh.load_state_dict(model.state_dict())
    torch.testing.assert_close(fresh(x)[0], expected)


def test_reset_parameters_and_generator():
    model = nudge_(make(4, 3))
    model.reset_parameters()
    form = model.schur_form()
    assert torch.all(form.gamma == 1) and torch.all(form.lower_real == 0) and torch.all(form.lower_imag == 0)
    a = make(4, 3, generator=torch.Generator().manual_seed(1))
    b = make(4, 3, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(a.schur_factors()[0], b.schur_factors()[0])


def test_network_read_out_sees_re_and_im():
    from nnrnn.training.config import resolve_config
    from nnrnn.training.network import build
    config = resolve_config({"task": "copy", "model": NAME, "hidden": 6, "T": 5, "batch_size": 2})
    _, net = build(config)
    assert net.readout.in_features == 12
    counted = sum(p.numel() for p in net.parameters()) - 2 * (36 - 15)
    assert counted == nnrnn.parameter_count(NAME, net.rnn.input_size, 6, net.readout.out_features)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="nonlinearity must be 'modrelu' or None"):
        make(nonlinearity="tanh")
    with pytest.raises(ValueError, match="init must be one of random, identity"):
        make(init="cayley")
    with pytest.raises(TypeError, match="dtype must be torch.float32 or torch.float64"):
        nnrnn.create(NAME, 3, 4, dtype=torch.complex64)
    model = make(4, 3)
    with pytest.raises(ValueError, match=r"hx must have shape \(1, 2, 8\)"):
        model(torch.randn(5, 2, 3, dtype=F64), torch.randn(1, 2, 4, dtype=F64))
    with pytest.raises(TypeError, match="input must have the model's dtype"):
        model(torch.randn(5, 2, 3))
    model.implementation = "aten"
    with pytest.raises(ValueError, match="implementation must be one of fused, reference"):
        model(torch.randn(5, 2, 3, dtype=F64))
    assert math.isfinite(float(make().regularization()))


def test_the_command_line_trains_it_and_analyze_refuses_it_in_one_line(tmp_path, capsys):
    from nnrnn_cli import command as cli
    folder = tmp_path / "run"
    tiny = ["--hidden", "4", "--T", "3", "--batch-size", "2", "--no-progress", "--steps", "2", "--eval-every", "2"]
    assert cli.main(["train", "copy", "--model", NAME, "--out", str(folder), *tiny]) == 0
    capsys.readouterr()
    assert cli.main(["analyze", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds a complex nnRNN" in err[0]


def test_doctor_compares_both_parts_of_a_complex_v():
    from nnrnn.doctor.workload import relative
    v = torch.randn(4, 4, dtype=torch.complex128)
    assert relative(v, v) == 0
    assert relative(v + 1e-3j, v) > 0  # a difference in the imaginary part alone is seen


def test_v_is_composed_once_in_inference_and_never_stale():
    """With autograd off V is reused while its parameters are unchanged (stepping one token at a time does not
    recompose it), recomposed after an in-place update, and not saved with the model."""
    model = nudge_(make(4, 3))
    x = torch.randn(1, 2, 3, dtype=F64)
    with torch.no_grad():
        first = model.recurrent_matrix()
        assert model.recurrent_matrix() is first
        h = None
        for _ in range(3):
            _, h = model(x, h)
        assert model.recurrent_matrix() is first
        model.schur_form().gamma.mul_(0.5)
        second = model.recurrent_matrix()
    assert second is not first
    torch.testing.assert_close(second, model.recurrent_matrix().detach())
    restored = copy.deepcopy(model)
    assert restored._v_cache == {}


def test_built_on_meta_then_materialised():
    """device="meta" gives torch.nn.RNN-style shapes without memory; to_empty + reset_parameters a whole model."""
    model = nnrnn.create(NAME, 4, 6, num_layers=2, bidirectional=True, device="meta")
    out, h = model(torch.randn(5, 3, 4, device="meta"))
    assert out.device.type == "meta" and out.shape == (5, 3, 24) and h.shape == (4, 3, 12)
    model.to_empty(device="cpu")
    model.reset_parameters()
    fresh = nnrnn.create(NAME, 4, 6, num_layers=2, bidirectional=True)
    for key, buffer in model.named_buffers():
        assert torch.equal(buffer, dict(fresh.named_buffers())[key]), key
    p = model.schur_factors()[0].detach()
    assert (p.conj().T @ p - torch.eye(6)).abs().max() < 1e-5
    assert torch.isfinite(model(torch.randn(5, 3, 4))[0]).all()


def test_onnx_export_is_refused_in_one_sentence(monkeypatch):
    import nnrnn.models.nnrnn_complex as complex_module
    monkeypatch.setattr(complex_module, "exporting_to_onnx", lambda: True)  # as inside torch.onnx.export
    with pytest.raises(NotImplementedError, match="nnrnn-complex cannot be exported to ONNX"):
        nnrnn.create("nnrnn-complex", 3, 4)(torch.randn(5, 2, 3))
