"""nnrnn.models.noise: every model's ``state_noise`` σ, Gaussian noise added to the state after every step.

What a user relies on: σ = 0 is the model without the option, bit for bit and on the same fast path; σ > 0 is the
documented recurrence with the documented draws, in every layer and direction, in training and in evaluation; the
fast loops compute what the reference loop computes with the same noise; a negative σ is refused naming it."""
import pytest
import torch

import nnrnn
from nnrnn.kernels import policy as kernel_policy
from nnrnn.models import base
from nnrnn.models.fused import FusedRecurrence

NOISY = [name for name, cls in nnrnn.MODELS.items() if "state_noise" in cls.CONFIG_OPTIONS]
RECURRENT = [name for name in NOISY if issubclass(nnrnn.MODELS[name], base.RecurrentModel)]


def states(h_n):
    """h_n's per-layer-and-direction states, as one (cells, B, ·) tensor (a pair of states side by side)."""
    return torch.cat(h_n, -1) if isinstance(h_n, tuple) else h_n


def pair(name, sigma, seed=0, **options):
    """A model with state noise σ and the same model (same parameters) without it."""
    torch.manual_seed(seed)
    noisy = nnrnn.create(name, 3, 6, state_noise=sigma, **options)
    quiet = nnrnn.create(name, 3, 6, **options)
    quiet.load_state_dict(noisy.state_dict())
    return noisy, quiet


def run(model, x, seed=1, hx=None):
    torch.manual_seed(seed)
    return model(x, hx)


def test_every_model_family_takes_state_noise():
    """The option is every model's, which the training configuration passes on (it lists it in CONFIG_OPTIONS)."""
    assert NOISY == list(nnrnn.MODELS)


@pytest.mark.parametrize("name", NOISY)
def test_zero_noise_is_the_model_without_the_option_bit_for_bit(name):
    torch.manual_seed(0)
    without = nnrnn.create(name, 3, 6, num_layers=2)
    torch.manual_seed(0)
    zero = nnrnn.create(name, 3, 6, num_layers=2, state_noise=0.0)
    assert all(torch.equal(a, b) for a, b in zip(without.state_dict().values(), zero.state_dict().values()))
    assert repr(zero) == repr(without)
    x = torch.randn(5, 2, 3)
    before = torch.get_rng_state()
    out_a, h_a = without(x)
    out_b, h_b = zero(x)
    assert torch.equal(out_a, out_b) and torch.equal(states(h_a), states(h_b))
    assert torch.equal(torch.get_rng_state(), before)  # a noiseless model draws nothing


@pytest.mark.parametrize("name", RECURRENT)
def test_noise_keeps_the_fused_path(name, monkeypatch):
    """σ = 0 and σ > 0 both run FusedRecurrence (the noise enters it as an input), once per layer."""
    calls = []
    original = FusedRecurrence.apply
    monkeypatch.setattr(FusedRecurrence, "apply", lambda *a: calls.append(1) or original(*a))
    for sigma in (0.0, 0.1):
        calls.clear()
        nnrnn.create(name, 3, 6, num_layers=2, state_noise=sigma)(torch.randn(4, 2, 3))
        assert calls == [1, 1]


@pytest.mark.parametrize("name", NOISY)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_the_noise_reaches_every_layer_and_direction(name, bidirectional):
    noisy, quiet = pair(name, 0.3, num_layers=3, bidirectional=bidirectional)
    x = torch.randn(6, 2, 3)
    _, h_noisy = run(noisy, x)
    _, h_quiet = run(quiet, x)
    h_noisy, h_quiet = states(h_noisy), states(h_quiet)
    assert h_noisy.shape[0] == 3 * (2 if bidirectional else 1)
    for cell in range(h_noisy.shape[0]):
        assert (h_noisy[cell] - h_quiet[cell]).abs().max() > 1e-3, cell


@pytest.mark.parametrize("name", NOISY)
def test_noise_acts_in_evaluation_too_and_follows_the_seed(name):
    noisy, quiet = pair(name, 0.3)
    noisy.eval()
    quiet.eval()
    x = torch.randn(5, 2, 3)
    with torch.no_grad():
        first, second = run(noisy, x, seed=1)[0], run(noisy, x, seed=2)[0]
        again = run(noisy, x, seed=1)[0]
        assert not torch.allclose(first, run(quiet, x)[0])
    assert torch.equal(first, again) and not torch.equal(first, second)


@pytest.mark.parametrize("implementation", ["fused", "reference"])
@pytest.mark.parametrize("nonlinearity", ["modrelu", "tanh", None])
def test_rnn_noise_is_the_documented_recurrence(implementation, nonlinearity):
    """h_t = φ(V h_{t-1} + W_ih x_t + b) + σ ε_t, each layer drawing its (T, B, N) block of ε in turn from the global
    generator, before its loop; written out step by step here."""
    sigma, steps, batch, n = 0.2, 6, 3, 5
    torch.manual_seed(0)
    model = nnrnn.create("nnrnn", 3, n, num_layers=2, nonlinearity=nonlinearity, state_noise=sigma,
                         dtype=torch.float64)
    model.implementation = implementation
    x = torch.randn(steps, batch, 3, dtype=torch.float64)
    torch.manual_seed(4)
    out, h_n = model(x)
    torch.manual_seed(4)
    inputs = x
    for layer in range(2):
        eps = torch.randn(steps, batch, n, dtype=torch.float64)
        suffix = f"_l{layer}"
        v, w = model.recurrent_matrix(layer), getattr(model, "weight_ih" + suffix)
        b = getattr(model, "bias_ih" + suffix)
        h, outs = torch.zeros(batch, n, dtype=torch.float64), []
        for t in range(steps):
            z = h @ v.T + inputs[t] @ w.T + b
            if nonlinearity == "modrelu":
                mb = getattr(model, "modrelu_bias" + suffix)
                z = torch.sign(z) * torch.relu(z.abs() + mb)
            elif nonlinearity == "tanh":
                z = torch.tanh(z)
            h = z + sigma * eps[t]
            outs.append(h)
        inputs = torch.stack(outs)
        torch.testing.assert_close(h_n[layer], h, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out, inputs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("nonlinearity", ["modrelu", "tanh", "relu", "elu", None])
def test_fused_with_noise_matches_the_reference_in_float64(nonlinearity):
    torch.manual_seed(0)
    model = nnrnn.create("nnrnn", 3, 6, nonlinearity=nonlinearity, state_noise=0.3, dtype=torch.float64)
    x = torch.randn(7, 2, 3, dtype=torch.float64, requires_grad=True)
    hx = torch.randn(1, 2, 6, dtype=torch.float64, requires_grad=True)
    leaves = [*model.parameters(), x, hx]
    results = {}
    for implementation in ("fused", "reference"):
        model.implementation = implementation
        out, h_n = run(model, x, hx=hx)
        loss = (out * torch.linspace(-1, 1, out.numel(), dtype=torch.float64).view_as(out)).sum() + h_n.square().sum()
        results[implementation] = (out, h_n, torch.autograd.grad(loss, leaves))
    (out_f, h_f, g_f), (out_r, h_r, g_r) = results["fused"], results["reference"]
    torch.testing.assert_close(out_f, out_r, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(h_f, h_r, rtol=1e-12, atol=1e-12)
    for a, b in zip(g_f, g_r):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loops", ["compiled", "onednn", "aten"])
def test_fused_with_noise_matches_the_reference_on_each_loop(loops, monkeypatch):
    """float32, each of the fused recurrence's loops forced (tests/models/test_fused.py does so without noise)."""
    from nnrnn.kernels import extension, onednn, settings
    if loops == "onednn" and onednn.kernel() is None:
        pytest.skip("this torch build has no oneDNN linear kernel")
    if loops == "compiled" and not (settings.current().cpp and extension.recurrence_loops()):
        pytest.skip("the compiled recurrence loops are off or did not build here")
    monkeypatch.setenv("NNRNN_LOOPS", loops)
    kernel_policy.reset()
    torch.manual_seed(0)
    model = nnrnn.create("nnrnn", 3, 12, state_noise=0.2)
    x = torch.randn(20, 3, 3)
    grads = {}
    for implementation in ("fused", "reference"):
        model.implementation = implementation
        out, h_n = run(model, x)
        grads[implementation] = (out, torch.autograd.grad(out.square().sum() + h_n.sum(), list(model.parameters())))
    def relative_error(a, b):  # of the norm, as tests/models/test_fused.py compares float32 loops
        return ((a - b).norm() / b.norm()).item()
    assert relative_error(grads["fused"][0], grads["reference"][0]) <= 1e-5
    for a, b in zip(grads["fused"][1], grads["reference"][1]):
        assert relative_error(a, b) <= 1e-5
    monkeypatch.delenv("NNRNN_LOOPS")
    kernel_policy.reset()


@pytest.mark.parametrize("name", NOISY)
def test_the_cell_adds_the_noise_of_one_step(name):
    """One step of a cell with noise is the noiseless step plus σ ε, ε (B, state width) drawn from the global
    generator (a state of two vectors: one block for both, side by side)."""
    sigma = 0.25
    torch.manual_seed(0)
    cell = nnrnn.CELLS[name](3, 6, state_noise=sigma)
    quiet = nnrnn.CELLS[name](3, 6)
    quiet.load_state_dict(cell.state_dict())
    x = torch.randn(2, 3)
    hx = quiet(x)  # a state that is not zero
    torch.manual_seed(3)
    step, expected = states(cell(x, hx)), states(quiet(x, hx))
    if cell.OUTPUT_IS_SEPARATE:  # the LRUs' (y, s): the noise is in the state s, y is read from it
        step, expected = step[:, cell.hidden_size:], expected[:, cell.hidden_size:]
    torch.manual_seed(3)
    eps = torch.randn(1, 2, step.shape[-1])[0]
    torch.testing.assert_close(step, expected + sigma * eps, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", NOISY)
@pytest.mark.parametrize("bad, error", [(-0.1, ValueError), (float("inf"), ValueError), (float("nan"), ValueError),
                                        ("0.1", TypeError), (True, TypeError), (None, TypeError)])
def test_a_bad_state_noise_is_refused_naming_it(name, bad, error):
    with pytest.raises(error, match="state_noise"):
        nnrnn.create(name, 3, 6, state_noise=bad)
    with pytest.raises(error, match="state_noise"):
        nnrnn.CELLS[name](3, 6, state_noise=bad)


def test_the_repr_shows_the_noise():
    assert "state_noise=0.1" in repr(nnrnn.create("nnrnn", 3, 6, state_noise=0.1))
    assert "state_noise" not in repr(nnrnn.create("nnrnn", 3, 6))


@pytest.mark.parametrize("name", ["lstm", "gru", "nngru"])
def test_gated_noise_is_torchs_cell_plus_the_noise_at_every_step(name):
    """The noisy layer over T steps is torch's own cell (torch.nn.LSTMCell / GRUCell, the same weights) stepped T
    times with σ ε_t added to the state, ε one (T, B, width) block drawn before the loop ([h, c] for the LSTM)."""
    sigma, steps, batch, n = 0.3, 5, 2, 6
    torch.manual_seed(0)
    model = nnrnn.create(name, 3, n, state_noise=sigma, dtype=torch.float64)
    lstm = name == "lstm"
    cell = (torch.nn.LSTMCell if lstm else torch.nn.GRUCell)(3, n, dtype=torch.float64)
    with torch.no_grad():
        for key in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, key).copy_(getattr(model, key + "_l0"))
    x = torch.randn(steps, batch, 3, dtype=torch.float64)
    torch.manual_seed(2)
    out, h_n = model(x)
    torch.manual_seed(2)
    eps = sigma * torch.randn(steps, batch, 2 * n if lstm else n, dtype=torch.float64)
    h = c = torch.zeros(batch, n, dtype=torch.float64)
    for t in range(steps):
        if lstm:
            h, c = cell(x[t], (h, c))
            h, c = h + eps[t, :, :n], c + eps[t, :, n:]
        else:
            h = cell(x[t], h) + eps[t]
        torch.testing.assert_close(out[t], h, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(states(h_n)[0], torch.cat([h, c], -1) if lstm else h, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", NOISY)
def test_noise_with_packed_and_batch_first_inputs(name):
    """Packed: each sequence's h_n is its state after its last real step (the noise included); batch-first gives the
    time-first result transposed."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    noisy, _ = pair(name, 0.3)
    x = torch.randn(5, 2, 3)
    packed = pack_padded_sequence(x, torch.tensor([5, 3]), enforce_sorted=False)
    out, h_n = run(noisy, packed)
    padded, _ = pad_packed_sequence(out)
    last = states(h_n)[0]
    width = padded.shape[-1]
    if not nnrnn.CELLS[name].OUTPUT_IS_SEPARATE:  # the LRUs' h_n is their state s, not the output
        torch.testing.assert_close(last[1, :width], padded[2, 1], rtol=0, atol=0)
        torch.testing.assert_close(last[0, :width], padded[4, 0], rtol=0, atol=0)
    assert padded[3:, 1].abs().max() == 0  # past its end, nothing (not noise) in the padding
    first = run(noisy, x)[0]
    noisy.batch_first = True
    torch.testing.assert_close(run(noisy, x.transpose(0, 1))[0].transpose(0, 1), first)


@pytest.mark.parametrize("name", [n for n in NOISY if getattr(nnrnn.MODELS[n], "SCANNED", None) is not None])
def test_scanned_models_with_noise_give_their_loops_result(name):
    """The LRUs take the noise as one more input of their linear recurrence, so their scan runs with it and agrees
    with their loop; minGRU's log-space scan cannot (its terms must be positive), so with noise it loops, whatever
    ``implementation`` says."""
    torch.manual_seed(0)
    model = nnrnn.create(name, 3, 6, state_noise=0.2, dtype=torch.float64)
    x = torch.randn(9, 2, 3, dtype=torch.float64)
    results = {}
    for implementation in ("scan", "loop"):
        model.implementation = implementation
        results[implementation] = run(model, x)
    torch.testing.assert_close(results["scan"][0], results["loop"][0], rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(states(results["scan"][1]), states(results["loop"][1]), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("nonlinearity", ["modrelu", None])
def test_complex_fused_with_noise_matches_its_reference_in_float64(nonlinearity):
    """The complex nnRNN's fused loops take the noise as one more input (V n_{t−1}); its reference adds n_t to
    [Re h_t, Im h_t] step by step. Values and gradients agree."""
    torch.manual_seed(0)
    model = nnrnn.create("nnrnn-complex", 3, 5, nonlinearity=nonlinearity, state_noise=0.3, dtype=torch.float64)
    x = torch.randn(6, 2, 3, dtype=torch.float64)
    results = {}
    for implementation in ("fused", "reference"):
        model.implementation = implementation
        out, h_n = run(model, x)
        results[implementation] = (out, torch.autograd.grad(out.square().sum() + h_n.sum(), list(model.parameters())))
    torch.testing.assert_close(results["fused"][0], results["reference"][0], rtol=1e-10, atol=1e-12)
    for a, b in zip(results["fused"][1], results["reference"][1]):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-10)
