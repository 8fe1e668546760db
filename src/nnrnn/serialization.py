"""What ``torch.load(f)`` (``weights_only=True``, torch's default) needs to load a whole nnrnn model.

torch's restricted unpickler builds only the classes and calls only the functions on its allow-list.
A model saved whole with ``torch.save(model, f)`` names nnrnn's model classes, its parametrizations,
two torch containers of ``torch.nn.utils.parametrize``, the function that rebuilds a constrained
module (:func:`nnrnn.parametrizations.registration._rebuild`) and the builtin ``set`` a module's state holds.
``import nnrnn`` adds exactly these
(:func:`safe_globals`) to the allow-list, through ``torch.serialization.add_safe_globals``: the model
classes when :mod:`nnrnn.models` is imported, each parametrization class when it is defined (a subclass of
:class:`~nnrnn.parametrizations.registration.Parametrization`, whose definition registers it).  This module
imports no model: :mod:`nnrnn.models` hands it its classes.

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

from .parametrizations.registration import PARAMETRIZATIONS, _rebuild

TORCH_CONTAINERS = (parametrize.ParametrizationList, torch.nn.ModuleDict, torch.nn.ModuleList)
# a module's state holds sets (torch.nn.Module's _non_persistent_buffers_set): the newer torch allows them by default,
# 2.4.1, the oldest nnrnn supports, only when told
BUILTINS = (set,)
MODEL_CLASSES: list[type] = []  # nnrnn.models hands its classes to allow_weights_only_loading on import


def safe_globals() -> list:
    """Everything on the allow-list: the model classes, the parametrizations, ``_rebuild``, torch's containers and the
    builtin containers a module's state holds."""
    return [*MODEL_CLASSES, *PARAMETRIZATIONS, _rebuild, *TORCH_CONTAINERS, *BUILTINS]


def allow_weights_only_loading(*model_classes: type) -> None:
    """Add :func:`safe_globals`, with ``model_classes``, to torch's allow-list (``import nnrnn`` has done it
    for :data:`nnrnn.MODELS`; calling it again is harmless).  torch before 2.4 has no allow-list to add to
    (and loads with ``weights_only=False`` by default): nothing to do there."""
    MODEL_CLASSES.extend(cls for cls in model_classes if cls not in MODEL_CLASSES)
    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals(safe_globals())
