"""nnrnn.models.init's chrono initialisation (Tallec & Ollivier 2018) of the LSTM and the GRU, against its formula:
b_f ~ log(U(1, T_max − 1)) and b_i = −b_f for the LSTM's forget and input gates, b_z ~ log(U(1, T_max − 1)) for the
GRU's update gate (torch's convention, h_t = (1 − z) n + z h_{t-1}: z near 1 keeps the state); the other inits as
they were."""
import math

import pytest
import torch

import nnrnn

N, T_MAX = 64, 100.0


def gate(bias: torch.Tensor, index: int, gates: int) -> torch.Tensor:
    return bias.detach().chunk(gates)[index]


@pytest.mark.parametrize("num_layers", [1, 2])
def test_lstm_chrono_biases_follow_the_formula(num_layers):
    torch.manual_seed(0)
    model = nnrnn.create("lstm", 3, N, num_layers, init="chrono", chrono_tmax=T_MAX)
    for layer in range(num_layers):
        b_ih, b_hh = getattr(model, f"bias_ih_l{layer}"), getattr(model, f"bias_hh_l{layer}")
        b_i, b_f, b_g, b_o = b_ih.detach().chunk(4)
        u = b_f.exp()  # U(1, T_max − 1) drawn
        assert u.min() >= 1 and u.max() <= T_MAX - 1
        assert u.max() - u.min() > 0.8 * (T_MAX - 2)  # spread over the interval, not a constant
        assert 0.3 < (u < T_MAX / 2).float().mean() < 0.7  # uniform in u, not in log u
        torch.testing.assert_close(b_i, -b_f, rtol=0, atol=0)
        assert torch.equal(b_g, torch.zeros(N)) and torch.equal(b_o, torch.zeros(N))
        assert torch.equal(b_hh.detach(), torch.zeros(4 * N)) and b_hh.requires_grad


def test_lstm_chrono_forget_gate_starts_with_the_stated_time_constants():
    """With zero input and state the forget gate is σ(b_f) = u / (1 + u), so the cell's time constant 1 / (1 − f) is
    1 + u: spread over [2, T_max], the range chrono is after."""
    torch.manual_seed(1)
    model = nnrnn.create("lstm", 3, N, init="chrono", chrono_tmax=T_MAX)
    b_f = gate(model.bias_ih_l0, 1, 4)
    time_constant = 1 / (1 - torch.sigmoid(b_f.double()))
    torch.testing.assert_close(time_constant, 1 + b_f.double().exp(), rtol=1e-5, atol=1e-6)
    assert time_constant.min() >= 2 - 1e-6 and time_constant.max() <= T_MAX + 1e-6


def test_gru_chrono_update_gate_keeps_the_state():
    torch.manual_seed(0)
    model = nnrnn.create("gru", 3, N, init="chrono", chrono_tmax=T_MAX)
    b_r, b_z, b_n = model.bias_ih_l0.detach().chunk(3)
    u = b_z.exp()
    assert u.min() >= 1 and u.max() <= T_MAX - 1 and u.max() - u.min() > 0.8 * (T_MAX - 2)
    assert torch.equal(b_r, torch.zeros(N)) and torch.equal(b_n, torch.zeros(N))
    assert torch.equal(model.bias_hh_l0.detach(), torch.zeros(3 * N))
    # zero input and recurrent weights: z = σ(b_z) ≥ 1/2 and n = 0, so one step keeps z·h_0 of the state
    with torch.no_grad():
        model.weight_hh_l0.zero_()
    h0 = torch.ones(1, 1, N)
    _, h1 = model(torch.zeros(1, 1, 3), h0)
    torch.testing.assert_close(h1[0, 0], torch.sigmoid(b_z), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, gates, kept", [("lstm", 4, (0, 1)), ("gru", 3, (1,))])
def test_chrono_draws_follow_the_seed_and_reset_parameters_redraws(name, gates, kept):
    torch.manual_seed(5)
    a = nnrnn.create(name, 3, N, init="chrono", chrono_tmax=T_MAX)
    torch.manual_seed(5)
    b = nnrnn.create(name, 3, N, init="chrono", chrono_tmax=T_MAX)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    before = a.bias_ih_l0.detach().clone()
    a.reset_parameters()
    assert not torch.equal(gate(a.bias_ih_l0, kept[0], gates), gate(before, kept[0], gates))
    assert gate(a.bias_ih_l0, kept[0], gates).exp().max() <= T_MAX - 1


@pytest.mark.parametrize("name, gates", [("lstm", 4), ("gru", 3)])
def test_the_default_init_is_drawn_as_before(name, gates):
    """init left out: 'xavier', Glorot normal blocks and zero biases, in each model's order of draws (the LSTM each
    gate's input block then its recurrent block; the GRU every input block, then every recurrent block), written
    out here from the same seed."""
    torch.manual_seed(0)
    model = nnrnn.create(name, 3, 8)
    torch.manual_seed(0)
    ih, hh = [], []
    for _ in range(gates):
        ih.append(torch.nn.init.xavier_normal_(torch.empty(8, 3)))
        if name == "lstm":
            hh.append(torch.nn.init.xavier_normal_(torch.empty(8, 8)))
    if name == "gru":
        hh = [torch.nn.init.xavier_normal_(torch.empty(8, 8)) for _ in range(gates)]
    assert model.init == "xavier" and model.chrono_tmax is None
    assert torch.equal(model.weight_ih_l0.detach(), torch.cat(ih))
    assert torch.equal(model.weight_hh_l0.detach(), torch.cat(hh))
    assert torch.equal(model.bias_ih_l0.detach(), torch.zeros(gates * 8))
    assert torch.equal(model.bias_hh_l0.detach(), torch.zeros(gates * 8))


@pytest.mark.parametrize("name", ["lstm", "gru"])
@pytest.mark.parametrize("options, error, text", [
    ({"init": "chrono"}, ValueError, "needs chrono_tmax"),
    ({"init": "chrono", "chrono_tmax": 2}, ValueError, "chrono_tmax must be a finite number above 2"),
    ({"init": "chrono", "chrono_tmax": math.inf}, ValueError, "chrono_tmax must be a finite number above 2"),
    ({"init": "chrono", "chrono_tmax": "100"}, TypeError, "chrono_tmax must be a number"),
    ({"init": "chrono", "chrono_tmax": 100, "bias": False}, ValueError, "needs bias=True"),
    ({"chrono_tmax": 100}, ValueError, "chrono_tmax is T_max of init='chrono'"),
])
def test_bad_chrono_arguments_are_refused_naming_them(name, options, error, text):
    with pytest.raises(error, match=text):
        nnrnn.create(name, 3, 8, **options)


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_the_cell_takes_chrono_too(name):
    torch.manual_seed(0)
    cell = nnrnn.CELLS[name](3, N, init="chrono", chrono_tmax=T_MAX)
    b = gate(cell.bias_ih_l0, 1, 4 if name == "lstm" else 3)
    assert b.exp().min() >= 1 and b.exp().max() <= T_MAX - 1


@pytest.mark.parametrize("model", ["lstm", "gru"])
def test_the_repr_shows_an_init_away_from_its_default_and_its_t_max(model):
    assert repr(nnrnn.create(model, 3, 4, init="chrono", chrono_tmax=50)).endswith(
        "init='chrono', chrono_tmax=50)")
    assert "init" not in repr(nnrnn.create(model, 3, 4))
