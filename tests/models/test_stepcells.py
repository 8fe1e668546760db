"""Every model's cell (nnrnn/models/stepcells.py): one for each model of the registry, exported from nnrnn; a one-layer
layer's state dict loads into it and the cell stepped T times is the layer on the same sequence (values and
gradients, float64); torch.nn.RNNCell's and LSTMCell's contract (constructor, shapes, unbatched, the errors' types
against torch's own cells on the same mistakes); a user's own training loop."""
from __future__ import annotations

import pytest
import torch
from torch import nn

import nnrnn
from nnrnn.models.stepcells import Cell

D64 = torch.float64
NAMES = list(nnrnn.MODELS)


def pair(name, input_size=3, hidden_size=4, **options):
    """(layer, cell) of model ``name`` in float64, the cell holding the layer's parameters."""
    torch.manual_seed(0)
    layer = nnrnn.create(name, input_size, hidden_size, dtype=D64, **options)
    cell = nnrnn.create_cell(name, input_size, hidden_size, dtype=D64, **options)
    cell.load_state_dict(layer.state_dict())  # strict: the same names, nothing missing or left over
    return layer, cell


def zero_state(cell, batch=()):
    """The cell's state of zeros, as its ``hx`` takes it (a tensor, or a tuple of two)."""
    states = tuple(torch.zeros(*batch, width, dtype=D64) for width in cell.state_widths())
    return states[0] if len(states) == 1 else states


def random_state(cell, batch=()):
    states = tuple(torch.randn(*batch, width, dtype=D64) for width in cell.state_widths())
    return states[0] if len(states) == 1 else states


def as_layer_state(cell, hx):
    """``hx`` of the cell as its one-layer layer takes it: (1, B, W) each, the LRU's output left out."""
    if isinstance(hx, tuple) and cell.OUTPUT_IS_SEPARATE:
        return hx[1].unsqueeze(0)
    return tuple(h.unsqueeze(0) for h in hx) if isinstance(hx, tuple) else hx.unsqueeze(0)


def output_of(hx):
    """What a read-out sees of a step: the state, or its first vector."""
    return hx[0] if isinstance(hx, tuple) else hx


def test_every_model_of_the_registry_has_its_cell_exported_from_the_top_level():
    assert set(nnrnn.CELLS) == set(nnrnn.MODELS)
    for name, cell in nnrnn.CELLS.items():
        assert issubclass(cell, nnrnn.MODELS[name]) and issubclass(cell, Cell), name
        assert getattr(nnrnn, cell.__name__) is cell and cell.__name__ in nnrnn.__all__, name
    assert "create_cell" in nnrnn.__all__


@pytest.mark.parametrize("name", NAMES)
def test_a_cell_stepped_over_a_sequence_is_its_layer_in_values_and_gradients(name):
    layer, cell = pair(name)
    x = torch.randn(6, 2, 3, dtype=D64)
    hx = random_state(cell, (2,))
    out, h_n = layer(x, as_layer_state(cell, hx))
    state, outputs = hx, []
    for x_t in x:
        state = cell(x_t, state)
        outputs.append(output_of(state))
    stepped = torch.stack(outputs)
    torch.testing.assert_close(stepped, out, rtol=0, atol=1e-10)
    torch.testing.assert_close(as_layer_state(cell, state), h_n, rtol=0, atol=1e-10)
    probe = torch.randn_like(out)
    want = torch.autograd.grad((out * probe).sum(), list(layer.parameters()), allow_unused=True)
    got = torch.autograd.grad((stepped * probe).sum(), list(cell.parameters()), allow_unused=True)
    for g, w in zip(got, want):
        if w is None:
            assert g is None or not g.any()
        else:
            torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_unbatched_steps_and_a_missing_state_as_torch_cells_take_them(name):
    layer, cell = pair(name)
    x = torch.randn(2, 3, dtype=D64)
    out, _ = layer(x.unsqueeze(0))  # one step of the layer from zeros, batched
    first = cell(x)  # hx omitted: zeros
    torch.testing.assert_close(output_of(first), out[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(output_of(cell(x, zero_state(cell, (2,)))), out[0], rtol=0, atol=1e-12)
    single = cell(x[1])  # unbatched: (input_size,) in, (W,) out
    for got, want in zip((single,) if not isinstance(single, tuple) else single,
                         (first,) if not isinstance(first, tuple) else first):
        assert got.shape == want.shape[1:]
        torch.testing.assert_close(got, want[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_constructor_takes_torch_cells_arguments_in_their_order(name):
    cls = nnrnn.CELLS[name]
    cell = cls(3, 4, False, dtype=torch.float64)  # bias, the third positional argument, as torch.nn.RNNCell's
    assert cell.bias is False and cell.input_size == 3 and cell.hidden_size == 4 and cell.num_layers == 1
    assert not any(n.startswith("bias_ih") for n, _ in cell.named_parameters())
    assert cell.weight_ih_l0.dtype == torch.float64
    if issubclass(cls, nnrnn.models.RecurrentModel) or cls is nnrnn.ComplexNonNormalRNNCell:
        assert cls(3, 4, True, None).nonlinearity is None  # nonlinearity follows bias, as in torch.nn.RNNCell
    with pytest.raises(TypeError):
        cls(3, 4, num_layers=2)  # a cell is one layer


# a mistake, and the torch cell that makes the same one
MISTAKES = {
    "3-d input": (lambda c, x, h: c(x.unsqueeze(0), h)),
    "input width": (lambda c, x, h: c(torch.cat([x, x], -1), h)),
    "state batch": (lambda c, x, h: c(x, tuple(s[:1] for s in h) if isinstance(h, tuple) else h[:1])),
    "state width": (lambda c, x, h: c(x, tuple(torch.cat([s, s], -1) for s in h) if isinstance(h, tuple)
                                      else torch.cat([h, h], -1))),
}


def raised(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return error
    return None


@pytest.mark.parametrize("mistake", MISTAKES)
@pytest.mark.parametrize("name", NAMES)
def test_errors_are_of_the_types_torch_cells_raise(name, mistake):
    _, cell = pair(name)
    two = isinstance(zero_state(cell), tuple)
    twin = nn.LSTMCell(3, 4, dtype=D64) if two else nn.RNNCell(3, 4, dtype=D64)
    x = torch.randn(2, 3, dtype=D64)
    theirs = raised(lambda: MISTAKES[mistake](twin, x, (torch.zeros(2, 4, dtype=D64),) * 2 if two
                                              else torch.zeros(2, 4, dtype=D64)))
    ours = raised(lambda: MISTAKES[mistake](cell, x, zero_state(cell, (2,))))
    assert theirs is not None and ours is not None, (theirs, ours)
    assert isinstance(ours, type(theirs)), (type(ours).__mro__, type(theirs))
    assert isinstance(ours, (ValueError, TypeError))  # and, as nnrnn's errors are, one that names the argument


@pytest.mark.parametrize("name", ["nnrnn", "lstm", "lru"])
def test_a_state_of_the_wrong_kind_is_a_type_error(name):
    _, cell = pair(name)
    x = torch.randn(2, 3, dtype=D64)
    wrong = torch.zeros(2, 4, dtype=D64) if isinstance(zero_state(cell), tuple) else (torch.zeros(2, 4),) * 2
    with pytest.raises(TypeError, match="hx must be"):
        cell(x, wrong)
    with pytest.raises(ValueError, match="Expected"):
        cell(x[0], zero_state(cell, (2,)))  # an unbatched input with a batched state


def test_a_users_own_loop_trains_an_nnrnn_cell_with_its_penalty_and_orthogonal_rate():
    torch.manual_seed(0)
    cell = nnrnn.NonNormalRNNCell(2, 8)
    readout = nn.Linear(8, 1)
    groups = nnrnn.param_groups(cell, lr=1e-2, lr_orth=1e-3)
    assert [g["name"] for g in groups] == ["default", "orthogonal"]
    optimizer = torch.optim.Adam(groups + [{"params": readout.parameters(), "lr": 1e-2}])
    x, target = torch.randn(10, 16, 2), torch.randn(16, 1)

    def loss():
        h = None
        for x_t in x:
            h = cell(x_t, h)
        return nn.functional.mse_loss(readout(h), target) + nnrnn.regularization(cell, delta=1e-3)
    first = loss().item()
    for _ in range(30):
        optimizer.zero_grad()
        value = loss()
        value.backward()
        optimizer.step()
    assert loss().item() < 0.8 * first


def test_an_lstm_cell_with_a_projection_steps_as_its_layer():
    layer, cell = pair("lstm", proj_size=2)
    x = torch.randn(5, 3, 3, dtype=D64)
    out, (h_n, c_n) = layer(x)
    hx = None
    for x_t in x:
        hx = cell(x_t, hx)
    assert hx[0].shape == (3, 2) and hx[1].shape == (3, 4)
    torch.testing.assert_close(hx[0], out[-1], rtol=0, atol=1e-10)
    torch.testing.assert_close(hx[1], c_n[0], rtol=0, atol=1e-10)
    with pytest.raises(RuntimeError):  # h_0 as wide as hidden_size: the projection's width is due
        cell(x[0], (torch.zeros(3, 4, dtype=D64), torch.zeros(3, 4, dtype=D64)))


@pytest.mark.parametrize("name", ["nnrnn", "lstm", "lru"])
def test_a_cell_saved_whole_loads_with_a_plain_torch_load(name):
    import io
    _, cell = pair(name)
    buffer = io.BytesIO()
    torch.save(cell, buffer)
    buffer.seek(0)
    # weights_only=True, torch's default since 2.6, said outright so that the oldest torch checks the allow-list too
    loaded = torch.load(buffer, weights_only=True)
    x = torch.randn(2, 3, dtype=D64)
    torch.testing.assert_close(loaded(x), cell(x), rtol=0, atol=0)
