"""The fused recurrence (hand-written backward-through-time) against the autograd reference loop."""
import shutil

import pytest
import torch

import nnrnn
from nnrnn.kernels import loops as loop_kernels
from nnrnn.kernels import policy as kernel_policy
from nnrnn.kernels.operations import choose_loops
from nnrnn.kernels.settings import COMPILED, ONEDNN
from nnrnn.models import base
from nnrnn.models.fused import FusedRecurrence, fused_recurrence
from nnrnn.models.recurrence import reference_recurrence

NONLINEARITIES = ["modrelu", "tanh", "relu", "elu", None]
RECURRENT_MODELS = [name for name, cls in nnrnn.MODELS.items() if issubclass(cls, base.RecurrentModel)]


def make_inputs(steps, batch, hidden, inputs, dtype, nonlinearity, seed=0, bias=True, hx_grad=True):
    g = torch.Generator().manual_seed(seed)

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(dtype).requires_grad_()

    x = rand(steps, batch, inputs)
    h0 = rand(batch, hidden, scale=0.5).requires_grad_(hx_grad)
    w = rand(hidden, inputs, scale=0.5)
    b = rand(hidden, scale=0.1) if bias else None
    v = rand(hidden, hidden, scale=1.0 / hidden ** 0.5)
    mb = rand(hidden, scale=0.1) if nonlinearity == "modrelu" else None
    return x, h0, w, b, v, mb


def leaves(args):
    return [t for t in args if isinstance(t, torch.Tensor) and t.requires_grad]


def relative_error(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


@pytest.mark.parametrize("steps", [2, 4])  # 2: dV's sum over steps after the first has one term
@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
def test_gradcheck_float64(nonlinearity, steps):
    x, h0, w, b, v, mb = make_inputs(steps, 2, 5, 3, torch.float64, nonlinearity)

    def f(x, h0, w, b, v, *mb):
        return FusedRecurrence.apply(x, h0, w, b, v, nonlinearity, mb[0] if mb else None)

    args = (x, h0, w, b, v) + ((mb,) if mb is not None else ())
    assert torch.autograd.gradcheck(f, args, eps=1e-6, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
@pytest.mark.parametrize("bias", [True, False])
def test_float32_matches_reference(nonlinearity, bias):
    x, h0, w, b, v, mb = make_inputs(30, 4, 16, 3, torch.float32, nonlinearity, seed=1, bias=bias)
    args = (x, h0, w, b, v)
    out_f, h_f = fused_recurrence(*args, nonlinearity, mb)
    out_r, h_r = reference_recurrence(*args, nonlinearity, mb)
    assert relative_error(out_f, out_r) <= 1e-5
    assert relative_error(h_f, h_r) <= 1e-5
    # a loss on every step and on h_T, as a model's read-out plus a final-state loss would be
    g = torch.Generator().manual_seed(2)
    weights = torch.randn(out_f.shape, generator=g)
    weights_h = torch.randn(h_f.shape, generator=g)
    params = leaves(args + (mb,))
    grads_f = torch.autograd.grad((out_f * weights).sum() + (h_f * weights_h).sum(), params)
    grads_r = torch.autograd.grad((out_r * weights).sum() + (h_r * weights_h).sum(), params)
    for gf, gr in zip(grads_f, grads_r):
        assert relative_error(gf, gr) <= 1e-5


def compiled_loops_or_skip():
    """The compiled loops; a failure where a C++ compiler exists (they must build there), else a skip; a skip too
    where NNRNN_CPP=0 turns them off (the oldest torch's suite: they need a newer torch, docs/testing.md)."""
    from nnrnn.kernels import extension, settings
    if not settings.current().cpp:
        pytest.skip("NNRNN_CPP=0: the compiled recurrence loops are off")
    if extension.recurrence_loops() is None:
        if shutil.which("c++") or shutil.which("g++"):
            pytest.fail(f"the C++ recurrence loops did not build: {extension.loops_unavailable_reason()}")
        pytest.skip("no C++ compiler here, so no compiled recurrence loops")
    return extension.recurrence_loops()


@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
@pytest.mark.parametrize("loops", ["compiled", "onednn", "aten"])
def test_float32_matches_reference_on_each_loop(nonlinearity, loops, monkeypatch):
    """Each implementation of the two loops (compiled, Python with oneDNN, Python with torch.mm),
    forced regardless of size."""
    from nnrnn.kernels import onednn
    if loops == "onednn" and onednn.kernel() is None:
        pytest.skip("this torch build has no oneDNN linear kernel")
    if loops == "compiled":
        compiled_loops_or_skip()
    monkeypatch.setenv("NNRNN_LOOPS", loops)
    kernel_policy.reset()  # the policy reads the environment once
    x, h0, w, b, v, mb = make_inputs(25, 3, 12, 2, torch.float32, nonlinearity, seed=5)
    args = (x, h0, w, b, v)
    out_f, h_f = fused_recurrence(*args, nonlinearity, mb)
    out_r, h_r = reference_recurrence(*args, nonlinearity, mb)
    assert relative_error(out_f, out_r) <= 1e-5
    # batch-first weights, so that the incoming gradient is a non-contiguous view
    weights = torch.randn(3, 25, 12, generator=torch.Generator().manual_seed(6))
    params = leaves(args + (mb,))
    grads_f = torch.autograd.grad((out_f.transpose(0, 1) * weights).sum() + h_f.sum(), params)
    grads_r = torch.autograd.grad((out_r.transpose(0, 1) * weights).sum() + h_r.sum(), params)
    for gf, gr in zip(grads_f, grads_r):
        assert relative_error(gf, gr) <= 1e-5



def test_elu_goes_to_python_loops_where_the_compiled_ones_are_asked_for(monkeypatch):
    """recurrence_loops.cpp has no ELU: the policy gives it to the Python loops even when compiled loops are forced."""
    compiled_loops_or_skip()
    monkeypatch.setenv("NNRNN_LOOPS", "compiled")
    kernel_policy.reset()  # the policy reads the environment once
    h = torch.zeros(5, 3, 12)
    assert choose_loops(h, "relu") == COMPILED  # compiled, where it computes the nonlinearity
    assert choose_loops(h, "elu") != COMPILED
    x, h0, w, b, v, _ = make_inputs(25, 3, 12, 2, torch.float32, "elu", seed=5)
    out_f, _ = fused_recurrence(x, h0, w, b, v, "elu", None)
    assert relative_error(out_f, reference_recurrence(x, h0, w, b, v, "elu", None)[0]) <= 1e-5


@pytest.mark.parametrize("loops", ["compiled", "onednn", "aten"])
def test_incoming_gradient_laid_out_batch_first(loops, monkeypatch):
    """A loss on batch_first outputs alone sends the loops a gradient whose strides are (B, T, N)'s, dense
    but not contiguous; each loop must read it as such (and write ∂L/∂z in its own layout)."""
    from nnrnn.kernels import onednn
    if loops == "onednn" and onednn.kernel() is None:
        pytest.skip("this torch build has no oneDNN linear kernel")
    if loops == "compiled":
        compiled_loops_or_skip()
    monkeypatch.setenv("NNRNN_LOOPS", loops)
    kernel_policy.reset()  # the policy reads the environment once
    x, h0, w, b, v, mb = make_inputs(7, 3, 6, 2, torch.float32, "modrelu", seed=8)
    weights = torch.randn(3, 7, 6, generator=torch.Generator().manual_seed(9))
    params = leaves((x, h0, w, b, v, mb))
    out_f, _ = fused_recurrence(x, h0, w, b, v, "modrelu", mb)
    out_r, _ = reference_recurrence(x, h0, w, b, v, "modrelu", mb)
    grads_f = torch.autograd.grad((out_f.transpose(0, 1) * weights).sum(), params)
    grads_r = torch.autograd.grad((out_r.transpose(0, 1) * weights).sum(), params)
    for gf, gr in zip(grads_f, grads_r):
        assert relative_error(gf, gr) <= 1e-5


def test_onednn_is_chosen_only_where_it_is_faster(monkeypatch):
    from nnrnn.kernels import onednn, operations
    if onednn.kernel() is None:
        pytest.skip("this torch build has no oneDNN linear kernel")
    x = torch.zeros(1)
    monkeypatch.setenv("NNRNN_CPP", "0")  # the choice between the two Python loops
    kernel_policy.reset()  # the policy reads the environment once
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")  # the thresholds' rule
    assert operations.use_onednn(x, 128, 512) and operations.use_onednn(x, 10, 512)
    assert not operations.use_onednn(x, 10, 128)  # the copy task: per-call overhead dominates
    assert not operations.use_onednn(x.double(), 128, 512)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")  # MKL is as fast or faster
    kernel_policy.reset()
    assert not operations.use_onednn(x, 128, 512)


@pytest.mark.parametrize("preferred,size,expected", [
    (False, (220, 10, 128), "compiled"), (False, (100, 32, 256), "compiled"), (False, (100, 10, 512), "compiled"),
    (False, (100, 128, 256), "aten"), (False, (100, 128, 512), "aten"), (False, (150, 128, 1024), "aten"),
    (True, (220, 10, 128), "compiled"), (True, (100, 32, 512), "compiled"),
    (True, (100, 64, 512), "onednn"), (True, (150, 128, 1024), "onednn"),
])
def test_loops_chosen_per_size_and_processor(preferred, size, expected, monkeypatch):
    """The measured crossovers (benchmarks/recurrence_loops.py): compiled loops below B·N² = 2²² with MKL
    (AVX2), below 2²⁴ with oneDNN (AVX-512); the products issued from Python above."""
    from nnrnn.kernels import onednn
    compiled_loops_or_skip()
    if expected == "onednn" and onednn.kernel() is None:
        pytest.skip("this torch build has no oneDNN linear kernel")
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512" if preferred else "AVX2")
    assert choose_loops(torch.zeros(size)) == expected
    assert choose_loops(torch.zeros(size, dtype=torch.float64)) == "aten"


def test_modrelu_bias_gradient_in_chunks(monkeypatch):
    x, h0, w, b, v, mb = make_inputs(9, 6, 3, 2, torch.float64, "modrelu", seed=4)  # B > N
    out, _ = fused_recurrence(x, h0, w, b, v, "modrelu", mb)
    whole, = torch.autograd.grad(out.sum(), mb)
    monkeypatch.setattr(loop_kernels, "CHUNK_ELEMENTS", 2 * 6 * 3)  # two steps a chunk, the last one short
    out, _ = fused_recurrence(x, h0, w, b, v, "modrelu", mb)
    chunked, = torch.autograd.grad(out.sum(), mb)
    torch.testing.assert_close(chunked, whole)


def test_modrelu_zero_preactivation_matches_reference():
    """z = 0 exactly (zero input, zero state, zero bias): sign(0) = 0 must win over relu(b_mod) > 0."""
    x = torch.zeros(3, 2, 4, requires_grad=True)
    h0 = torch.zeros(2, 5)
    w = torch.randn(5, 4, requires_grad=True)
    b = torch.zeros(5, requires_grad=True)
    v = torch.randn(5, 5, requires_grad=True)
    mb = torch.full((5,), 0.1, requires_grad=True)
    out_f, _ = fused_recurrence(x, h0, w, b, v, "modrelu", mb)
    out_r, _ = reference_recurrence(x, h0, w, b, v, "modrelu", mb)
    assert torch.equal(out_f, out_r) and not out_f.any()
    gf = torch.autograd.grad(out_f.sum(), [x, w, b, v, mb])
    gr = torch.autograd.grad(out_r.sum(), [x, w, b, v, mb])
    for a, c in zip(gf, gr):
        torch.testing.assert_close(a, c)


@pytest.mark.parametrize("nonlinearity", ["modrelu", "tanh"])
def test_single_step(nonlinearity):
    x, h0, w, b, v, mb = make_inputs(1, 3, 6, 2, torch.float64, nonlinearity, seed=3)
    args = (x, h0, w, b, v)
    out_f, h_f = fused_recurrence(*args, nonlinearity, mb)
    out_r, h_r = reference_recurrence(*args, nonlinearity, mb)
    assert out_f.shape == (1, 3, 6) and h_f.shape == (3, 6)
    torch.testing.assert_close(out_f, out_r)
    torch.testing.assert_close(h_f, out_f[0])
    params = leaves(args + (mb,))
    for gf, gr in zip(torch.autograd.grad(h_f.sum(), params), torch.autograd.grad(h_r.sum(), params)):
        torch.testing.assert_close(gf, gr)


def test_modrelu_without_its_bias_is_refused():
    x, h0, w, b, v, _ = make_inputs(3, 2, 4, 2, torch.float64, None)
    with pytest.raises(ValueError, match="modrelu needs modrelu_bias"):
        fused_recurrence(x, h0, w, b, v, "modrelu", None)


def test_zero_steps_returns_h0():
    x, h0, w, b, v, mb = make_inputs(0, 3, 6, 2, torch.float32, "modrelu")
    out, h_n = fused_recurrence(x, h0, w, b, v, "modrelu", mb)
    out_r, h_r = reference_recurrence(x, h0, w, b, v, "modrelu", mb)
    assert out.shape == out_r.shape == (0, 3, 6)
    assert h_n is h0 and h_r is h0


def test_h_n_is_its_own_tensor():
    x, h0, w, b, v, mb = make_inputs(5, 2, 4, 3, torch.float32, "relu")
    out, h_n = fused_recurrence(x, h0, w, b, v, "relu", mb)
    assert torch.equal(h_n, out[-1]) and h_n.data_ptr() != out[-1].data_ptr()


@pytest.mark.parametrize("name", RECURRENT_MODELS)
def test_models_use_the_fused_path_by_default(name, monkeypatch):
    model = nnrnn.create(name, 3, 8)
    assert model.implementation == "fused"
    calls = []
    original = FusedRecurrence.apply
    monkeypatch.setattr(FusedRecurrence, "apply", lambda *a: calls.append(1) or original(*a))
    model(torch.randn(4, 2, 3))
    assert calls == [1]


@pytest.mark.parametrize("name", RECURRENT_MODELS)
def test_model_fused_equals_reference_with_hx(name):
    torch.manual_seed(0)
    model = nnrnn.create(name, 3, 8, batch_first=True)
    x = torch.randn(2, 7, 3)
    hx = torch.randn(1, 2, 8, requires_grad=True)
    params = [p for p in model.parameters()] + [hx]
    out_f, h_f = model(x, hx)
    grads_f = torch.autograd.grad(out_f.square().sum() + h_f.sum(), params)
    model.implementation = "reference"
    out_r, h_r = model(x, hx)
    grads_r = torch.autograd.grad(out_r.square().sum() + h_r.sum(), params)
    assert relative_error(out_f, out_r) <= 1e-5 and relative_error(h_f, h_r) <= 1e-5
    for gf, gr in zip(grads_f, grads_r):
        assert relative_error(gf, gr) <= 1e-5


def test_unknown_implementation_is_rejected():
    model = nnrnn.create("rnn", 2, 4)
    model.implementation = "cuda-magic"
    with pytest.raises(ValueError, match="implementation"):
        model(torch.randn(3, 1, 2))
    assert set(base.IMPLEMENTATIONS) == {"fused", "reference"}


def test_no_grad_forward_matches():
    x, h0, w, b, v, mb = make_inputs(6, 2, 5, 3, torch.float32, "modrelu")
    with torch.no_grad():
        out_f, _ = fused_recurrence(x, h0, w, b, v, "modrelu", mb)
        out_r, _ = reference_recurrence(x, h0, w, b, v, "modrelu", mb)
    assert not out_f.requires_grad
    torch.testing.assert_close(out_f, out_r)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
def test_cuda_matches_cpu(nonlinearity):
    args = make_inputs(12, 3, 16, 4, torch.float64, nonlinearity, seed=5)
    cpu_out, _ = fused_recurrence(*args[:5], nonlinearity, args[5])
    cpu_grads = torch.autograd.grad(cpu_out.sum(), leaves(args))
    cuda_args = [a.detach().cuda().requires_grad_(a.requires_grad) if a is not None else None for a in args]
    out, _ = fused_recurrence(*cuda_args[:5], nonlinearity, cuda_args[5])
    assert out.is_cuda
    torch.testing.assert_close(out.cpu(), cpu_out)
    for gc, gg in zip(cpu_grads, torch.autograd.grad(out.sum(), leaves(cuda_args))):
        torch.testing.assert_close(gg.cpu(), gc)


def test_sizes_that_take_onednn_match_the_reference(monkeypatch):
    """Where oneDNN is preferred, B·N² = 2²⁴, N = 512 and T = 40 take the oneDNN path with dV summed over
    two chunks.  tanh, because over many steps one unit of modReLU or relu may round to the other side of
    its kink in one kernel and not the other, which moves the gradient by ~1e-3 (neither is then the more
    exact)."""
    from nnrnn.kernels import onednn
    if onednn.kernel() is None:
        pytest.skip("this torch build has no oneDNN linear kernel")
    monkeypatch.setenv("NNRNN_ONEDNN", "1")
    kernel_policy.reset()  # the policy reads the environment once
    steps, batch, hidden = 40, 64, 512
    assert choose_loops(torch.zeros(steps, batch, hidden)) == ONEDNN
    assert steps > loop_kernels.DV_CHUNK_ELEMENTS // (batch * hidden) + 1
    x, h0, w, b, v, _ = make_inputs(steps, batch, hidden, 3, torch.float32, "tanh", seed=7)
    assert_matches_reference(x, h0, w, b, v, "tanh", None)


def test_copy_task_sizes_take_the_compiled_loops_and_match_the_reference():
    """No forcing: the copy task's sizes (T = 220, B = 10, N = 128) with nnRNN's modReLU run in the
    compiled loops, and agree with the reference loop, the modReLU bias gradient included."""
    compiled_loops_or_skip()
    steps, batch, hidden = 220, 10, 128
    assert choose_loops(torch.zeros(steps, batch, hidden)) == COMPILED
    x, h0, w, b, v, mb = make_inputs(steps, batch, hidden, 10, torch.float32, "modrelu", seed=9)
    assert_matches_reference(x, h0, w, b, v, "modrelu", mb)


@pytest.mark.parametrize("nonlinearity", ["modrelu", "relu", "tanh"])
def test_compiled_loops_split_over_threads_match_the_reference(nonlinearity, monkeypatch):
    """From B·N² = 2²¹ the compiled loops split each step's columns over torch's threads; N = 250 is no
    multiple of the 16-column blocks, so the last block is short."""
    compiled_loops_or_skip()
    if torch.get_num_threads() < 2:
        pytest.skip("one thread: the steps are not split")
    monkeypatch.setenv("NNRNN_LOOPS", "compiled")
    kernel_policy.reset()  # the policy reads the environment once
    x, h0, w, b, v, mb = make_inputs(8, 40, 250, 3, torch.float32, nonlinearity, seed=11)
    assert_matches_reference(x, h0, w, b, v, nonlinearity, mb)


def assert_matches_reference(x, h0, w, b, v, nonlinearity, mb):
    out_f, h_f = fused_recurrence(x, h0, w, b, v, nonlinearity, mb)
    out_r, h_r = reference_recurrence(x, h0, w, b, v, nonlinearity, mb)
    assert relative_error(out_f, out_r) <= 1e-5
    weights = torch.randn(out_f.shape, generator=torch.Generator().manual_seed(8))
    params = leaves((x, h0, w, b, v, mb))
    grads_f = torch.autograd.grad((out_f * weights).sum() + h_f.sum(), params)
    grads_r = torch.autograd.grad((out_r * weights).sum() + h_r.sum(), params)
    for gf, gr in zip(grads_f, grads_r):
        assert relative_error(gf, gr) <= 1e-5
