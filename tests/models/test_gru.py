"""The GRUs: ``gru`` (torch.nn.GRU with nnrnn's interface) and ``nngru`` (its W_hn, and with ``schur_gates``
W_hr and W_hz, in the nnRNN's Schur form), against torch.nn.GRU on the same weights and against the
reference loop written from torch.nn.GRU's documented equations."""
import math

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import nnrnn
from nnrnn.models.gru import GATES, gru_reference
from nnrnn.parametrizations import StackedSchurForm, free_triangular_entries
from helpers import assert_copies_train_apart

F64 = torch.float64


def torch_gru(model) -> nn.GRU:
    """A torch.nn.GRU with ``model``'s architecture and (composed) weights."""
    twin = nn.GRU(model.input_size, model.hidden_size, model.num_layers, bias=model.bias,
                  batch_first=model.batch_first, bidirectional=model.bidirectional, dtype=model.weight_ih_l0.dtype)
    with torch.no_grad():
        for s in model.cells:
            for kind in ("weight_ih", "weight_hh") + (("bias_ih", "bias_hh") if model.bias else ()):
                getattr(twin, kind + s).copy_(getattr(model, kind + s))
    return twin


def nudge_(model, scale=0.3, seed=0):
    """Move every Schur factor off its initial value (γ ≠ 1, T ≠ 0, other angles), so that every term counts."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for form in model.schur_forms():
            form.gamma.copy_(1 + scale * (torch.rand(form.gamma.shape, generator=gen, dtype=F64) - 0.5))
            form.lower.copy_(scale * torch.randn(form.lower.shape, generator=gen, dtype=F64))
            form.theta.add_(torch.randn(form.theta.shape, generator=gen, dtype=F64))
        for name, p in model.named_parameters():
            if "bias" in name:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen, dtype=F64))


VARIANTS = [("gru", {}), ("nngru", {}), ("nngru", {"schur_gates": True}), ("nngru", {"triangular": "block"})]
IDS = ["gru", "nngru", "nngru-gates", "nngru-block"]


# --------------------------------------------------------------------------- torch.nn.GRU parity

@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("name,options", VARIANTS, ids=IDS)
def test_stacked_layers_match_torch_gru_and_the_reference_loop(name, options, bidirectional):
    """Two layers, batch_first, with and without h_0: the fast path (torch's kernel on the composed weight),
    torch.nn.GRU holding the same weights and the reference loop agree to 1e-10 in float64."""
    torch.manual_seed(0)
    model = nnrnn.create(name, 3, 5, 2, batch_first=True, bidirectional=bidirectional, dtype=F64, **options)
    if name == "nngru":
        nudge_(model)
    twin = torch_gru(model)
    x = torch.randn(4, 7, 3, dtype=F64)
    h0 = torch.randn(2 * (2 if bidirectional else 1), 4, 5, dtype=F64)
    for hx in (None, h0):
        out, h_n = model(x, hx)
        ref_out, ref_h = twin(x, hx)
        torch.testing.assert_close(out, ref_out, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(h_n, ref_h, rtol=1e-10, atol=1e-10)
        model.implementation = "reference"
        loop_out, loop_h = model(x, hx)
        model.implementation = "torch"
        torch.testing.assert_close(loop_out, ref_out, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(loop_h, ref_h, rtol=1e-10, atol=1e-10)


def test_reference_loop_is_torch_grus_equations_written_out():
    """gru_reference against the equations of torch.nn.GRU's documentation, gate by gate, one step at a time."""
    torch.manual_seed(1)
    n, i = 4, 3
    w_ih, w_hh = torch.randn(3 * n, i, dtype=F64), torch.randn(3 * n, n, dtype=F64)
    b_ih, b_hh = torch.randn(3 * n, dtype=F64), torch.randn(3 * n, dtype=F64)
    x, h = torch.randn(5, 2, i, dtype=F64), torch.randn(2, n, dtype=F64)
    out, h_n = gru_reference(x, h, w_ih, w_hh, b_ih, b_hh)
    (w_ir, w_iz, w_in), (w_hr, w_hz, w_hn) = w_ih.chunk(3), w_hh.chunk(3)
    (b_ir, b_iz, b_in), (b_hr, b_hz, b_hn) = b_ih.chunk(3), b_hh.chunk(3)
    for t in range(5):
        r = torch.sigmoid(x[t] @ w_ir.T + b_ir + h @ w_hr.T + b_hr)
        z = torch.sigmoid(x[t] @ w_iz.T + b_iz + h @ w_hz.T + b_hz)
        c = torch.tanh(x[t] @ w_in.T + b_in + r * (h @ w_hn.T + b_hn))
        h = (1 - z) * c + z * h
        torch.testing.assert_close(out[t], h, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(h_n, h)


@pytest.mark.parametrize("name,options", VARIANTS, ids=IDS)
def test_gradients_of_the_fast_path_equal_the_reference_loops(name, options):
    torch.manual_seed(2)
    model = nnrnn.create(name, 3, 6, 2, bidirectional=True, dtype=F64, **options)
    if name == "nngru":
        nudge_(model)
    x = torch.randn(6, 3, 3, dtype=F64)
    grads = {}
    for implementation in ("torch", "reference"):
        model.implementation = implementation
        model.zero_grad()
        out, h = model(x)
        (out.pow(2).sum() + h.sum()).backward()
        grads[implementation] = {k: p.grad.clone() for k, p in model.named_parameters()}
    assert grads["torch"].keys() == grads["reference"].keys()
    for key, value in grads["torch"].items():
        torch.testing.assert_close(value, grads["reference"][key], rtol=1e-9, atol=1e-10, msg=key)


@pytest.mark.parametrize("implementation", ["torch", "reference"])
@pytest.mark.parametrize("schur_gates", [False, True])
def test_gradcheck_wrt_input_state_and_every_factor(implementation, schur_gates):
    torch.manual_seed(3)
    model = nnrnn.create("nngru", 2, 4, dtype=F64, schur_gates=schur_gates)
    nudge_(model)
    model.implementation = implementation
    names, values = zip(*model.named_parameters())
    x = torch.randn(3, 2, 2, dtype=F64, requires_grad=True)
    h0 = torch.randn(1, 2, 4, dtype=F64, requires_grad=True)

    def f(x, h0, *params):
        out, h = torch.func.functional_call(model, dict(zip(names, params)), (x, h0))
        return out, h

    assert torch.autograd.gradcheck(f, (x, h0, *[v.detach().clone().requires_grad_() for v in values]))


# --------------------------------------------------------------------------- the Schur form

@pytest.mark.parametrize("dtype,n,atol", [(F64, 16, 1e-9), (torch.float32, 16, 1e-4), (torch.float32, 512, 5e-3)])
@pytest.mark.parametrize("schur_gates", [False, True])
def test_each_constrained_gate_is_its_own_schur_form(dtype, n, atol, schur_gates):
    """W = P (Λ + T) Pᵀ per constrained gate with P orthogonal (‖PᵀP − I‖ at rounding), T strictly lower
    triangular, Λ's blocks γ R(θ); the free gates are plain blocks of the stacked weight; each gate has its own P."""
    torch.manual_seed(4)
    model = nnrnn.create("nngru", 3, n, dtype=dtype, schur_gates=schur_gates, init="random" if n < 100 else "cayley")
    if dtype == F64:
        nudge_(model)
    ps = []
    for gate in GATES:
        w = model.recurrent_matrix(gate=gate).detach()
        if gate != "new" and not schur_gates:
            with pytest.raises(ValueError, match="constrained"):
                model.schur_factors(gate=gate)
            plist = model.parametrizations.weight_hh_l0
            torch.testing.assert_close(w, plist.original0.chunk(2)[GATES.index(gate)], rtol=0, atol=0)
            continue
        p, lam, t = (f.detach() for f in model.schur_factors(gate=gate))
        eye = torch.eye(n, dtype=dtype)
        assert (p.T @ p - eye).norm() < (1e-12 if dtype == F64 else 1e-4 * math.sqrt(n))
        assert torch.equal(t, t.tril(-1))
        torch.testing.assert_close(w, p @ (lam + t) @ p.T, rtol=0, atol=atol)
        form = model.schur_form(gate=gate)
        c, s = form.gamma[: n // 2] * torch.cos(form.theta), form.gamma[: n // 2] * torch.sin(form.theta)
        torch.testing.assert_close(lam.diagonal()[0::2], c.detach())
        torch.testing.assert_close(lam.diagonal(-1)[0::2], s.detach())
        ps.append(p)
    if schur_gates:
        assert not torch.allclose(ps[0], ps[2]), "the gates share P"


def test_block_triangular_nngru_has_the_documented_spectrum():
    """With triangular='block', W_hn's eigenvalues are exactly γ_i e^{±iθ_i}, for any T."""
    torch.manual_seed(5)
    model = nnrnn.create("nngru", 3, 8, dtype=F64, triangular="block")
    nudge_(model, scale=0.5)
    form = model.schur_form()
    z = form.gamma.detach() * torch.exp(1j * form.theta.detach())
    expected = torch.cat([z, z.conj()])
    got = torch.linalg.eigvals(model.recurrent_matrix())
    distance = (got[:, None] - expected[None, :]).abs()
    assert distance.min(1).values.max() < 1e-9 and distance.min(0).values.max() < 1e-9


def test_regularization_is_every_schur_forms_penalty():
    torch.manual_seed(6)
    model = nnrnn.create("nngru", 3, 5, 2, bidirectional=True, dtype=F64, schur_gates=True)
    nudge_(model)
    forms = model.schur_forms()
    assert len(forms) == 4 * 3
    expected = sum(0.3 * ((1 - f.gamma) ** 2).sum() + 0.5 * 0.01 * (f.lower.tril(-1) ** 2).sum() for f in forms)
    torch.testing.assert_close(model.regularization(0.3, 0.01), expected)
    assert nnrnn.create("gru", 3, 5).regularization(0.3, 0.01) == 0


# --------------------------------------------------------------------------- counting and groups

@pytest.mark.parametrize("options", [{}, {"bias": False}, {"num_layers": 2, "bidirectional": True}])
def test_gru_parameter_count_is_torch_grus(options):
    torch_count = sum(p.numel() for p in nn.GRU(3, 7, **options).parameters())
    assert nnrnn.MODELS["gru"].parameter_count(3, 7, **options) == torch_count
    assert sum(p.numel() for p in nnrnn.create("gru", 3, 7, **options).parameters()) == torch_count


@pytest.mark.parametrize("n", [1, 2, 6, 7])
@pytest.mark.parametrize("triangular", ["strict", "block"])
@pytest.mark.parametrize("schur_gates", [False, True])
def test_nngru_parameter_count_counts_degrees_of_freedom(n, triangular, schur_gates):
    """Per cell: W_ih 3N·I, biases 6N, a free gate N², a Schur-form gate N(N-1)/2 + T's entries + N//2 + ⌈N/2⌉."""
    i = 3
    schur = n * (n - 1) // 2 + free_triangular_entries(n, triangular) + n // 2 + (n + 1) // 2
    per_cell = 3 * n * i + 6 * n + (3 * schur if schur_gates else 2 * n * n + schur)
    cls = nnrnn.MODELS["nngru"]
    assert cls.parameter_count(i, n, triangular=triangular, schur_gates=schur_gates) == per_cell
    # the same count from the tensors: generator storage counts its strict lower triangle, lower its free entries
    model = nnrnn.create("nngru", i, n, triangular=triangular, schur_gates=schur_gates)
    entries = sum(p.numel() for p in model.parameters())
    unused = sum(n * n - n * (n - 1) // 2 + n * n - free_triangular_entries(n, triangular) for _ in model.schur_forms())
    assert entries - unused == per_cell
    stacked = 4 * per_cell + 2 * 3 * n * (2 * n - i)  # four cells; layer 1 reads both directions (2N)
    assert cls.parameter_count(i, n, num_layers=2, bidirectional=True, triangular=triangular,
                               schur_gates=schur_gates) == stacked


def test_hidden_size_for_is_the_closest():
    for name, options in (("gru", {}), ("nngru", {}), ("nngru", {"schur_gates": True})):
        n = nnrnn.hidden_size_for(name, 20_000, 10, 9, **options)
        count = lambda k: nnrnn.parameter_count(name, 10, k, 9, **options)  # noqa: E731
        assert abs(count(n) - 20_000) <= min(abs(count(n - 1) - 20_000), abs(count(n + 1) - 20_000))


@pytest.mark.parametrize("schur_gates", [False, True])
def test_param_groups_put_exactly_the_generators_under_lr_orth(schur_gates):
    model = nnrnn.create("nngru", 3, 5, 2, bidirectional=True, schur_gates=schur_gates)
    groups = {g["name"]: g for g in nnrnn.param_groups(model, 1e-3, 1e-4)}
    orth = {id(p) for p in groups["orthogonal"]["params"]}
    expected = set()
    for s in model.cells:
        plist = model.parametrizations["weight_hh" + s]
        assert isinstance(plist[0], StackedSchurForm)
        expected |= {id(getattr(plist, f"original{i}")) for i in plist[0].generator_indices()}
        if not schur_gates:  # the free W_hr, W_hz train at lr
            assert id(plist.original0) in {id(p) for p in groups["default"]["params"]}
    assert orth == expected and len(orth) == 4 * (3 if schur_gates else 1)
    assert len(nnrnn.param_groups(nnrnn.create("gru", 3, 5), 1e-3, 1e-4)) == 1


# --------------------------------------------------------------------------- drop-in contract

@pytest.mark.parametrize("name,options", VARIANTS, ids=IDS)
def test_packed_sequences_match_per_sequence_runs(name, options):
    torch.manual_seed(7)
    model = nnrnn.create(name, 3, 4, 2, bidirectional=True, dtype=F64, **options)
    lengths = torch.tensor([5, 2, 4])
    x = torch.randn(5, 3, 3, dtype=F64)
    packed = pack_padded_sequence(x, lengths, enforce_sorted=False)
    for implementation in ("torch", "reference"):
        model.implementation = implementation
        out, h_n = model(packed)
        out, _ = pad_packed_sequence(out)
        for b, length in enumerate(lengths.tolist()):
            single, h_single = model(x[:length, b:b + 1])
            torch.testing.assert_close(out[:length, b], single[:, 0], rtol=1e-10, atol=1e-10)
            torch.testing.assert_close(h_n[:, b], h_single[:, 0], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name,options", VARIANTS, ids=IDS)
def test_unbatched_and_batch_first_inputs(name, options):
    torch.manual_seed(8)
    model = nnrnn.create(name, 3, 4, dtype=F64, **options)
    x, h0 = torch.randn(6, 2, 3, dtype=F64), torch.randn(1, 2, 4, dtype=F64)
    out, h = model(x, h0)
    for implementation in ("torch", "reference"):
        model.implementation = implementation
        out_u, h_u = model(x[:, 1], h0[:, 1])
        torch.testing.assert_close(out_u, out[:, 1], rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(h_u, h[:, 1], rtol=1e-10, atol=1e-10)
        model.batch_first = True
        out_b, _ = model(x.transpose(0, 1), h0)
        model.batch_first = False
        torch.testing.assert_close(out_b, out.transpose(0, 1), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("schur_gates", [False, True])
def test_whole_model_save_load_deepcopy_and_training_after(schur_gates):
    torch.manual_seed(9)
    model = nnrnn.create("nngru", 3, 5, 2, schur_gates=schur_gates)
    x = torch.randn(4, 2, 3)

    def unchanged(output, expected):
        assert torch.allclose(output, expected), "the copy shares parameters with the original"
    expected = assert_copies_train_apart(model, x, unchanged)
    state = model.state_dict()
    fresh = nnrnn.create("nngru", 3, 5, 2, schur_gates=schur_gates)
    fresh.load_state_dict(state)
    torch.testing.assert_close(fresh(x)[0], expected)


def test_assigning_a_constrained_weight_is_refused():
    model = nnrnn.create("nngru", 3, 4)
    with pytest.raises(ValueError, match="cannot be assigned directly"):
        model.weight_hh_l0 = torch.zeros(12, 4)


def test_reset_parameters_redraws_the_factors_and_the_free_blocks():
    torch.manual_seed(10)
    model = nnrnn.create("nngru", 3, 6)
    nudge_(model)
    free = model.parametrizations.weight_hh_l0.original0.detach().clone()
    model.reset_parameters()
    form = model.schur_form()
    assert torch.all(form.gamma == 1) and torch.all(form.lower == 0)
    assert not torch.equal(free, model.parametrizations.weight_hh_l0.original0)
    assert torch.all(model.bias_hh_l0 == 0)


def test_generator_makes_p_and_theta_reproducible():
    a = nnrnn.create("nngru", 3, 6, generator=torch.Generator().manual_seed(1), init="random")
    b = nnrnn.create("nngru", 3, 6, generator=torch.Generator().manual_seed(1), init="random")
    torch.testing.assert_close(a.schur_factors()[0], b.schur_factors()[0])
    torch.testing.assert_close(a.schur_form().theta, b.schur_form().theta)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="init must be one of henaff, cayley, random"):
        nnrnn.create("nngru", 3, 4, init="xavier")
    with pytest.raises(ValueError,
                       match="init must be 'xavier', 'torch', 'chrono', 'chain:GAIN' or 'fbchain:GAIN' for the GRU"):
        nnrnn.create("gru", 3, 4, init="cayley")
    with pytest.raises(ValueError, match="triangular must be 'strict' or 'block'"):
        nnrnn.create("nngru", 3, 4, triangular="upper")
    with pytest.raises(TypeError, match="schur_gates must be True or False"):
        nnrnn.create("nngru", 3, 4, schur_gates="yes")
    with pytest.raises(ValueError, match="gate must be one of reset, update, new"):
        nnrnn.create("gru", 3, 4).recurrent_matrix(gate="cell")
    with pytest.raises(ValueError, match="layer must be in"):
        nnrnn.create("nngru", 3, 4).recurrent_matrix(1)
    model = nnrnn.create("gru", 3, 4)
    model.implementation = "fused"
    with pytest.raises(ValueError, match="implementation must be one of auto, torch, reference"):
        model(torch.randn(2, 3))


def test_the_paper_preset_has_no_gru():
    from nnrnn.training.config import resolve_config
    from nnrnn.errors import OptionError
    for model in ("gru", "nngru"):
        with pytest.raises(OptionError, match=f"no settings for model '{model}'"):
            resolve_config({"task": "copy", "model": model}, "paper")


def test_schur_gates_is_a_training_option_of_nngru_only():
    from nnrnn.training.config import resolve_config
    from nnrnn.errors import OptionError
    from nnrnn.training.network import build_network
    config = resolve_config({"task": "copy", "model": "nngru", "hidden": 5, "schur_gates": True})
    net = build_network(config, 3, 2, "all")
    assert net.rnn.schur_gates and len(net.rnn.schur_forms()) == 3
    assert not build_network(resolve_config({"task": "copy", "model": "nngru", "hidden": 5}),
                             3, 2, "all").rnn.schur_gates
    with pytest.raises(OptionError, match=r"schur_gates \(--schur-gates\) must be true or false"):
        resolve_config({"task": "copy", "model": "nngru", "schur_gates": "yes"})
    with pytest.raises(OptionError, match="nngru has them, gru does not"):
        resolve_config({"task": "copy", "model": "gru", "schur_gates": True})



def test_nngru_composes_its_schur_forms_once_while_stepping_without_grad_and_never_stale():
    """One token at a time under no_grad (generation) reuses the composed weights while no parameter changed;
    after an optimizer step, and after a write through ``.data`` followed by a mode switch, each step gives what
    a model loaded from the same state gives; the composed weights are not saved with the model."""
    import copy

    from helpers import steps_match_a_loaded_twin
    torch.manual_seed(3)
    model = nnrnn.create("nngru", 3, 6, num_layers=2, schur_gates=True).eval()
    forms = [plist[0] for plist in model.parametrizations.values()]
    calls = []
    hooks = [form.register_forward_hook(lambda *_: calls.append(1)) for form in forms]
    x = torch.randn(1, 2, 3)

    with torch.no_grad():
        h = None
        for _ in range(3):
            _, h = model(x, h)
    assert len(calls) == len(forms)  # each Schur form composed once for three steps
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model(torch.randn(4, 2, 3))[0].pow(2).sum().backward()
    optimizer.step()
    twin = lambda: nnrnn.create("nngru", 3, 6, num_layers=2, schur_gates=True).eval()  # noqa: E731
    steps_match_a_loaded_twin(model, twin(), x)
    next(forms[1].parameters()).data.mul_(0.5)  # moves no version counter: a mode switch drops the cache
    model.train().eval()
    steps_match_a_loaded_twin(model, twin(), x)
    for hook in hooks:
        hook.remove()
    assert "_inference_weights" not in copy.deepcopy(model).__dict__
