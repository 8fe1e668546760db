"""The recurrent models of the paper behind one constructor, :func:`create`.

Adding a model is one file in this package (a subclass of :class:`~nnrnn.models.base.RecurrentModel` for a
non-gated one), one line in :data:`MODELS`, and its cell in :mod:`nnrnn.models.stepcells` with a line in
:data:`CELLS`.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.utils import parametrize

from ..errors import OptionError
from ..parametrizations.registration import Parametrization
from ..parametrizations.schur import check_penalty_weights
from ..serialization import allow_weights_only_loading
from .base import RecurrentModel
from .cornn import CoRNN
from .eurnn import EURNN
from .exprnn import ExpRNN
from .gru import GRU
from .lem import LEM
from .lru import LRU
from .lstm import LSTM
from .mingru import MinGRU
from .nngru import NonNormalGRU
from .nnlru import NonNormalLRU
from .nnrnn import NonNormalRNN
from .nnrnn_complex import ComplexNonNormalRNN
from .rnn import OrthogonalInitRNN, VanillaRNN
from .stepcells import (CoRNNCell, ComplexNonNormalRNNCell, EURNNCell, ExpRNNCell, GRUCell, LEMCell, LRUCell,
                        LSTMCell, MinGRUCell, NonNormalGRUCell, NonNormalLRUCell, NonNormalRNNCell,
                        OrthogonalInitRNNCell, VanillaRNNCell)

MODELS: dict[str, type[nn.Module]] = {
    "rnn": VanillaRNN,
    "rnn-orth": OrthogonalInitRNN,
    "eurnn": EURNN,
    "exprnn": ExpRNN,
    "nnrnn": NonNormalRNN,
    "lstm": LSTM,
    "gru": GRU,
    "nngru": NonNormalGRU,
    "nnrnn-complex": ComplexNonNormalRNN,
    "cornn": CoRNN,
    "lem": LEM,
    "lru": LRU,
    "mingru": MinGRU,
    "nnlru": NonNormalLRU,
}
# One step of each model (torch.nn.RNNCell's contract, LSTMCell's for two state vectors; nnrnn/models/stepcells.py)
CELLS: dict[str, type[nn.Module]] = {
    "rnn": VanillaRNNCell,
    "rnn-orth": OrthogonalInitRNNCell,
    "eurnn": EURNNCell,
    "exprnn": ExpRNNCell,
    "nnrnn": NonNormalRNNCell,
    "lstm": LSTMCell,
    "gru": GRUCell,
    "nngru": NonNormalGRUCell,
    "nnrnn-complex": ComplexNonNormalRNNCell,
    "cornn": CoRNNCell,
    "lem": LEMCell,
    "lru": LRUCell,
    "mingru": MinGRUCell,
    "nnlru": NonNormalLRUCell,
}
# torch.load(f) with torch's default weights_only=True reads these models saved whole (nnrnn/serialization.py)
allow_weights_only_loading(*MODELS.values(), *CELLS.values())
# The models the paper compares, which its presets (nnrnn/presets/) and the reproduction grid cover.
PAPER_MODELS = ("rnn", "rnn-orth", "eurnn", "exprnn", "nnrnn", "lstm")


def model_class(name: str) -> type[nn.Module]:
    """The class of model ``name``; an OptionError (a ValueError) listing the names for an unknown one."""
    if name not in MODELS:
        raise OptionError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    return MODELS[name]


def create(name: str, input_size: int, hidden_size: int, *args, **options) -> nn.Module:
    """Build model ``name`` (one of :data:`MODELS`): the rest of torch.nn.RNN's arguments follow in its order
    (``num_layers``, …; torch.nn.LSTM's for ``"lstm"``), then the model's own keywords."""
    return model_class(name)(input_size, hidden_size, *args, **options)


def create_cell(name: str, input_size: int, hidden_size: int, *args, **options) -> nn.Module:
    """Build the cell of model ``name`` (one of :data:`CELLS`): torch.nn.RNNCell's arguments follow in its order
    (``bias``, then ``nonlinearity`` for a non-gated model), then the model's own keywords."""
    model_class(name)  # an unknown name: the same error as create's
    return CELLS[name](input_size, hidden_size, *args, **options)


def orthogonal_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The generators of every orthogonal or unitary factor (expRNN's A, nnRNN's and nnGRU's P, the complex
    nnRNN's skew-Hermitian A), as each :class:`~nnrnn.parametrizations.registration.Parametrization` says."""
    found = []
    for module in model.modules():
        if not parametrize.is_parametrized(module):
            continue
        for plist in module.parametrizations.values():
            if isinstance(plist[0], Parametrization):
                found.extend(plist[0].generators(plist))
    return found


def param_groups(model: nn.Module, lr: float, lr_orth: float) -> list[dict]:
    """Optimizer groups: orthogonal generators under ``lr_orth``, all else under ``lr``.

    Each trainable parameter appears exactly once (frozen ones, e.g. the LSTM's second bias with
    ``init="concat"``, are left out); an empty orthogonal group is left out.
    """
    if not isinstance(model, nn.Module):  # e.g. model.parameters(): the orthogonal generators cannot be found
        raise TypeError(f"model must be the torch.nn.Module itself (param_groups(model, lr, lr_orth)), so that its "
                        f"orthogonal generators can be told apart; got {type(model).__name__}: pass the module, "
                        f"not model.parameters()")
    for name, value in (("lr", lr), ("lr_orth", lr_orth)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    orth = orthogonal_parameters(model)
    orth_ids = {id(p) for p in orth}
    rest = [p for p in model.parameters() if id(p) not in orth_ids and p.requires_grad]
    groups = [{"params": rest, "lr": lr, "name": "default"}]
    if orth:
        groups.append({"params": orth, "lr": lr_orth, "name": "orthogonal"})
    return groups


def regularization(model: nn.Module, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
    """The whole model's penalty to add to the loss: δ Σ(1 - γ)² + (t_decay / 2) ‖T‖² summed over every Schur
    form in ``model`` (a scalar tensor, zero when there is none), wherever it sits: an nnRNN, nnGRU or complex
    nnRNN nested at any depth, or a torch module given the constraint by
    :func:`nnrnn.parametrizations.schur`, and every nnlru's decay on its T.  It finds them as :func:`param_groups`
    finds the orthogonal generators,
    each as its :class:`~nnrnn.parametrizations.registration.Parametrization` says, so the two agree on what
    the model holds.  ``delta`` and ``t_decay`` are
    checked as each layer's own ``regularization`` checks them."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (regularization(model, delta, t_decay)); got "
                        f"{type(model).__name__}")
    delta, t_decay = check_penalty_weights(delta, t_decay)
    terms = [plist[0].regularization(delta, t_decay) for module in model.modules()
             if parametrize.is_parametrized(module) for plist in module.parametrizations.values()
             if isinstance(plist[0], Parametrization)]
    terms = [term for term in terms if term is not None]
    # the nnlru's T is a plain (packed) parameter, not a Parametrization: its layer gives its own penalty
    terms += [module.regularization(delta, t_decay) for module in model.modules() if isinstance(module, NonNormalLRU)]
    if terms:
        return sum(terms[1:], terms[0])
    first = next(model.parameters(), None)
    return first.new_zeros(()).real if first is not None else torch.zeros(())


def parameter_count(name: str, input_size: int, hidden_size: int, output_size: int = 0,
                    vocab_size: int | None = None, **options) -> int:
    """Free parameters of model ``name`` plus a linear read-out (hidden_size → output_size, twice
    hidden_size in for a bidirectional model and for the complex nnRNN's [Re h, Im h]) and, with
    ``vocab_size``, an embedding table (vocab_size × input_size) in front of the model.

    Constrained matrices count their degrees of freedom: n(n-1)/2 for an
    orthogonal generator, the free entries of T for nnRNN.
    """
    cls = model_class(name)
    count = cls.parameter_count(input_size, hidden_size, **options)
    if vocab_size:
        count += vocab_size * input_size
    # the complex nnRNN's read-out sees [Re h, Im h]: two real features per unit
    features = hidden_size * cls.REAL_FEATURES_PER_UNIT * (2 if options.get("bidirectional") else 1)
    return count + features * output_size + output_size


def hidden_size_for(name: str, n_params: int, input_size: int, output_size: int, vocab_size: int | None = None,
                    **options) -> int:
    """The hidden size whose :func:`parameter_count` (read-out and embedding included) is closest to
    ``n_params``."""
    if not isinstance(n_params, int) or n_params <= 0:
        raise ValueError(f"n_params must be a positive int; got {n_params!r}")

    def count(n):
        return parameter_count(name, input_size, n, output_size, vocab_size, **options)

    low, high = 1, 2
    while count(high) <= n_params:
        low, high = high, high * 2
    while high - low > 1:  # invariant: count(low) <= n_params < count(high), or low == 1
        mid = (low + high) // 2
        low, high = (mid, high) if count(mid) <= n_params else (low, mid)
    return min((low, high), key=lambda n: (abs(count(n) - n_params), n))


__all__ = ["CELLS", "CoRNN", "CoRNNCell", "ComplexNonNormalRNN", "ComplexNonNormalRNNCell", "EURNN", "EURNNCell",
           "ExpRNN", "ExpRNNCell", "GRU", "GRUCell", "LEM", "LEMCell", "LRU", "LRUCell", "LSTM", "LSTMCell", "MODELS",
           "MinGRU", "MinGRUCell", "NonNormalGRU", "NonNormalGRUCell", "NonNormalLRU", "NonNormalLRUCell",
           "NonNormalRNN", "NonNormalRNNCell", "OrthogonalInitRNN", "OrthogonalInitRNNCell", "PAPER_MODELS",
           "RecurrentModel", "VanillaRNN", "VanillaRNNCell", "create", "create_cell", "hidden_size_for",
           "model_class", "orthogonal_parameters", "param_groups", "parameter_count", "regularization"]
