"""EURNN: the efficient unitary RNN of Jing et al. (2017), real orthogonal version.

V is a product of ``capacity`` layers of 2×2 Givens rotations ("tunable
space"): layer ℓ rotates unit pairs (0,1), (2,3), … when ℓ is even and
(1,2), (3,4), … when ℓ is odd, each pair by its own angle φ:

    [h_a, h_b] <- [cos φ · h_a - sin φ · h_b,  sin φ · h_a + cos φ · h_b]

so V is exactly orthogonal (det +1) for any angles.  Capacity L gives
⌈L/2⌉·⌊N/2⌋ + ⌊L/2⌋·⌊(N-1)/2⌋ angles; L = N reaches all of SO(N).  The
default L = max(2, N // 2) is our reading of the paper's parameter-matched
sizes (EURNN 256 ~ 18.9K, 1024 ~ 269K parameters), which imply about N/2
layers.  Angles start U(-π, π) as in Jing et al.'s code.  The complex
(unitary) variant and the FFT-style layout are not implemented.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .base import RecurrentModel


def layer_pairs(n: int, odd: bool) -> tuple[torch.Tensor, torch.Tensor]:
    start = 1 if odd else 0
    first = torch.arange(start, max(n - 1, start), 2)  # empty, not an error, for n = 1
    return first, first + 1


def default_capacity(hidden_size: int) -> int:
    return max(2, hidden_size // 2)


class EURNN(RecurrentModel):
    def __init__(self, input_size: int, hidden_size: int, nonlinearity="modrelu", bias: bool = True,
                 batch_first: bool = False, capacity: int | None = None):
        super().__init__(input_size, hidden_size, nonlinearity, bias, batch_first)
        self.capacity = default_capacity(hidden_size) if capacity is None else capacity
        if not isinstance(self.capacity, int) or self.capacity <= 0:
            raise ValueError(f"capacity must be a positive int; got {capacity!r}")
        n = hidden_size
        even_a, even_b = layer_pairs(n, odd=False)
        odd_a, odd_b = layer_pairs(n, odd=True)
        self.register_buffer("even_partner", self._partner(n, even_a, even_b), persistent=False)
        self.register_buffer("odd_partner", self._partner(n, odd_a, odd_b), persistent=False)
        self.n_even = (self.capacity + 1) // 2
        self.n_odd = self.capacity // 2
        self.even_angles = nn.Parameter(torch.empty(self.n_even, len(even_a)).uniform_(-math.pi, math.pi))
        self.odd_angles = nn.Parameter(torch.empty(self.n_odd, len(odd_a)).uniform_(-math.pi, math.pi))

    @staticmethod
    def _partner(n: int, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        partner = torch.arange(n)
        partner[a], partner[b] = b, a
        return partner

    @staticmethod
    def _coefficients(angles: torch.Tensor, n: int, odd: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-row cosine and signed sine of one layer (1 and 0 for unpaired rows)."""
        c, s = torch.cos(angles), torch.sin(angles)
        cos = angles.new_ones(n)
        sin = angles.new_zeros(n)
        a, b = layer_pairs(n, odd)
        a, b = a.to(angles.device), b.to(angles.device)
        cos = cos.index_put((a,), c).index_put((b,), c)
        sin = sin.index_put((a,), -s).index_put((b,), s)
        return cos, sin

    def recurrent_matrix(self) -> torch.Tensor:
        n = self.hidden_size
        v = torch.eye(n, dtype=self.even_angles.dtype, device=self.even_angles.device)
        for layer in range(self.capacity):
            odd = layer % 2 == 1
            angles = self.odd_angles[layer // 2] if odd else self.even_angles[layer // 2]
            partner = self.odd_partner if odd else self.even_partner
            cos, sin = self._coefficients(angles, n, odd)
            v = cos[:, None] * v + sin[:, None] * v[partner]
        return v

    @classmethod
    def parameter_count(cls, input_size, hidden_size, bias=True, nonlinearity="modrelu", capacity=None, **_) -> int:
        n = hidden_size
        layers = default_capacity(n) if capacity is None else capacity
        angles = (layers + 1) // 2 * (n // 2) + layers // 2 * ((n - 1) // 2)
        return cls.shared_parameter_count(input_size, n, bias, nonlinearity) + angles
