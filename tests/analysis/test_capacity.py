"""Linear memory capacity (nnrnn.analysis.capacity) against layers whose capacity is known exactly, in float64:
what the memory report's capacity column (nnrnn.experiments.grids.memory) rests on."""
import pytest
import torch
from torch import nn

from nnrnn.analysis.capacity import memory_capacity


class Linear(nn.Module):
    """h_t = A h_{t−1} + B u_t from h_0 = 0, time first."""

    def __init__(self, a: torch.Tensor, b: torch.Tensor):
        super().__init__()
        self.a, self.b = a, b

    def forward(self, inputs):
        h, out = torch.zeros(inputs.shape[1], self.a.shape[0], dtype=inputs.dtype), []
        for u in inputs:
            h = h @ self.a.T + u @ self.b.T
            out.append(h)
        return torch.stack(out), h


def gaussian(steps=400, batch=40, size=1):
    return torch.randn(steps, batch, size, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


def test_a_delay_line_of_n_units_recalls_exactly_its_last_n_minus_1_inputs_and_nothing_older():
    """h_t = (u_t, ..., u_{t−N+1}): R²_k = 1 for 1 ≤ k ≤ N − 1, 0 beyond (independent inputs), MC = N − 1."""
    n = 6
    line = Linear(torch.diag(torch.ones(n - 1, dtype=torch.float64), -1), torch.eye(n, 1, dtype=torch.float64))
    found = memory_capacity(line, gaussian(), max_delay=12, ridge=1e-10)
    assert found.r2[:n - 1] == pytest.approx([1.0] * (n - 1), abs=1e-8)
    assert max(found.r2[n - 1:]) < 0.01
    assert found.total == pytest.approx(n - 1, abs=0.05)


def test_a_layer_without_recurrence_remembers_nothing_of_the_past():
    """h_t = tanh(B u_t) holds only u_t, so no past input is recalled: MC ≈ 0 (held-out, clipped at 0)."""
    b = torch.randn(8, 1, generator=torch.Generator().manual_seed(1), dtype=torch.float64)

    class Memoryless(nn.Module):
        def forward(self, inputs):
            return torch.tanh(inputs @ b.T), None
    assert memory_capacity(Memoryless(), gaussian(), max_delay=10).total < 0.05


def test_a_leaky_unit_has_the_capacity_a_squared():
    """h_t = a h_{t−1} + u_t: corr(h_t, u_{t−k})² = a^{2k}(1 − a²), summing to a² over k ≥ 1."""
    a = 0.8
    leaky = Linear(torch.tensor([[a]], dtype=torch.float64), torch.ones(1, 1, dtype=torch.float64))
    found = memory_capacity(leaky, gaussian(steps=2000, batch=40), max_delay=40)
    assert found.r2[:3] == pytest.approx([a ** (2 * k) * (1 - a * a) for k in (1, 2, 3)], abs=0.01)
    assert found.total == pytest.approx(a * a, abs=0.02)


def test_a_one_hot_input_is_scored_over_all_its_channels():
    """Copy's inputs are one-hot symbols: a delay line of one-hot vectors recalls each whole vector."""
    symbols = torch.randint(0, 8, (300, 20), generator=torch.Generator().manual_seed(2))
    inputs = nn.functional.one_hot(symbols, 8).double()
    n = 3  # three slots of 8 channels: h_t = (u_t, u_{t−1}, u_{t−2})
    a = torch.kron(torch.diag(torch.ones(n - 1, dtype=torch.float64), -1), torch.eye(8, dtype=torch.float64))
    line = Linear(a, torch.eye(8 * n, 8, dtype=torch.float64))
    found = memory_capacity(line, inputs, max_delay=5, ridge=1e-10)
    assert found.r2[:2] == pytest.approx([1.0, 1.0], abs=1e-8)
    assert found.total == pytest.approx(2.0, abs=0.05)


def test_too_long_a_delay_for_the_sequences_is_refused():
    with pytest.raises(ValueError, match="max_delay"):
        memory_capacity(nn.RNN(1, 4), gaussian(steps=60).float(), max_delay=20)
