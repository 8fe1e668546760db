"""The non-normal RNN (Kerg, Goyette et al. 2019)."""
from __future__ import annotations

import torch

from ..parametrizations import free_triangular_entries, schur
from ..parametrizations.orthogonal import INITS
from .base import RecurrentModel


class NonNormalRNN(RecurrentModel):
    """h_t = φ(V h_{t-1} + W_ih x_t + b),  V = P (Λ + T) Pᵀ, per layer and direction.

    Arguments as :class:`~nnrnn.models.base.RecurrentModel`, which are torch.nn.RNN's in its order
    (``NonNormalRNN(input_size, hidden_size, num_layers=1, nonlinearity="modrelu", bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None)``; the default
    nonlinearity is the paper's modReLU), then these keywords:

    * ``init``: P's scheme, 'cayley' (default), 'henaff' or 'random'; θ ~ U(0, 2π), γ = 1, T = 0;
    * ``triangular``: T strictly lower triangular, "strict" (the paper's, default), or "block";
    * ``generator``: a ``torch.Generator`` for a reproducible P, θ;
    * ``dynamic``: P = B exp(A) with a base B moved by :func:`nnrnn.parametrizations.rebase_`
      (dynamic trivialization; off, as in the paper, by default);
    * ``input_init``, ``bias_init``: see :mod:`nnrnn.models.init`.

    P = exp(A) orthogonal (A skew-symmetric, expRNN) and Λ = blockdiag(γ_i R(θ_i)); see
    :mod:`nnrnn.parametrizations.schur` for the exact form and odd sizes.  With
    ``nonlinearity=None, bias=False``: h_t = V h_{t-1} + W_ih x_t exactly.
    """

    def __init__(self, *args, init: str = "cayley", triangular: str = "strict",
                 generator: torch.Generator | None = None, dynamic: bool = False, **kwargs):
        if init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
        self.init, self.triangular, self._generator, self.dynamic = init, triangular, generator, bool(dynamic)
        super().__init__(*args, **kwargs)
        del self._generator  # only needed while the factors are drawn; not picklable

    def _make_recurrent(self, suffix, factory):
        name = "weight_hh" + suffix
        self.register_parameter(name, torch.nn.Parameter(torch.empty(self.hidden_size, self.hidden_size, **factory)))
        schur(self, name, init=self.init, generator=self._generator, triangular=self.triangular, dynamic=self.dynamic)

    def _reset_recurrent(self, suffix):
        plist = self.parametrizations["weight_hh" + suffix]
        plist[0].reset_(plist.original)

    def _compose(self, suffix):
        return getattr(self, "weight_hh" + suffix)

    def _recurrent_parameters(self, suffix):
        plist = self.parametrizations["weight_hh" + suffix]
        form = plist[0]
        return [plist.original, form.theta, form.gamma, form.lower] + ([form.base] if form.dynamic else [])

    @property
    def schur_form(self):
        """The :class:`~nnrnn.parametrizations.SchurForm` of the first layer (forward direction)."""
        return self.parametrizations["weight_hh_l0"][0]

    def schur_forms(self) -> list:
        """The :class:`~nnrnn.parametrizations.SchurForm` of every layer and direction, in
        :attr:`cells` order (l0, l0_reverse, l1, …)."""
        return [self.parametrizations["weight_hh" + s][0] for s in self.cells]

    def schur_factors(self, layer: int = 0, direction: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(P, Λ, T) with V = P (Λ + T) Pᵀ, for one layer and direction."""
        plist = self.parametrizations["weight_hh" + self.cell(layer, direction)]
        return plist[0].factors(plist.original)

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        """Σ over layers and directions of δ Σ_i (1 - γ_i)² + (t_decay / 2) ‖T‖²_F: the paper's δ penalty and
        a gradient t_decay · T, the weight decay on T of the authors' code (see
        :meth:`~nnrnn.parametrizations.SchurForm.regularization`)."""
        return sum(self.parametrizations["weight_hh" + s][0].regularization(delta, t_decay) for s in self.cells)

    @classmethod
    def parameter_count(cls, input_size, hidden_size, bias=True, nonlinearity="modrelu", num_layers=1,
                        bidirectional=False, triangular="strict", **_) -> int:
        n = hidden_size
        per_cell = n * (n - 1) // 2 + free_triangular_entries(n, triangular) + n // 2 + (n + 1) // 2
        return (cls.shared_parameter_count(input_size, n, bias, nonlinearity, num_layers, bidirectional)
                + cls.cells_count(num_layers, bidirectional) * per_cell)
