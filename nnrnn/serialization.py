"""What ``torch.load(f)`` (``weights_only=True``, torch's default) needs to load a whole nnrnn model.

torch's restricted unpickler builds only the classes and calls only the functions on its allow-list.
A model saved whole with ``torch.save(model, f)`` names nnrnn's model classes, its parametrizations,
two torch containers of ``torch.nn.utils.parametrize`` and the function that rebuilds a constrained
module (:func:`nnrnn.parametrizations.registration._rebuild`).  ``import nnrnn`` adds exactly these
(:data:`SAFE_GLOBALS`) to the allow-list, through ``torch.serialization.add_safe_globals``.

Why that is safe.  For an allowed class the unpickler does ``cls.__new__(cls)`` and then
``instance.__setstate__(state)`` (or a ``__dict__`` update); none of these classes defines a
``__setstate__`` of its own beyond ``torch.nn.Module``'s and ``torch.nn.LSTM``'s, which only store
the state.  ``_rebuild`` does the same for its ``base`` and then lets torch generate the
parametrized subclass and its properties: it refuses a ``base`` that is not a ``torch.nn.Module``
class and names that are not the module's own parametrized tensors, and since the unpickler hands it
only objects it built itself, ``base`` is a class the allow-list already admitted.  Nothing here
imports a module, evaluates a string or calls a function named by the file.
"""
from __future__ import annotations

import torch
from torch.nn.utils import parametrize

from .models import MODELS
from .parametrizations import MatrixExpOrthogonal, SchurForm, StackedSchurForm
from .parametrizations.registration import _rebuild
from .parametrizations.unitary import ComplexSchurForm

SAFE_GLOBALS = [*MODELS.values(), SchurForm, MatrixExpOrthogonal, StackedSchurForm, ComplexSchurForm, _rebuild,
                parametrize.ParametrizationList, torch.nn.ModuleDict, torch.nn.ModuleList]


def allow_weights_only_loading() -> None:
    """Add :data:`SAFE_GLOBALS` to torch's allow-list (``import nnrnn`` has done it; calling it again is
    harmless).  torch before 2.4 has no allow-list to add to (and loads with ``weights_only=False`` by
    default): nothing to do there."""
    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals(SAFE_GLOBALS)
