"""nnrnn: the non-normal RNN (Kerg, Goyette et al., NeurIPS 2019), its baselines, tasks and theory.

The names below are imported on first use (PEP 562), so that the ``nnrnn`` command's start, before its
Ctrl-C handler is in place, does not import torch: ``nnrnn.create``, ``from nnrnn import MODELS`` and
``nnrnn.errors`` work as before.  Importing :mod:`nnrnn.models` (on first use of a model, or at once when
torch is already imported, as in any program that uses both) lets ``torch.load(f)`` with torch's default
``weights_only=True`` read a model saved whole (why that is safe: :mod:`nnrnn.serialization`).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_FROM_MODELS = ("CoRNN", "ComplexNonNormalRNN", "EURNN", "GRU", "LEM", "LRU", "LSTM", "MODELS", "MinGRU", "ExpRNN",
                "NonNormalGRU", "NonNormalRNN", "OrthogonalInitRNN", "VanillaRNN", "create", "hidden_size_for",
                "param_groups", "parameter_count", "regularization")

__all__ = ["CoRNN", "ComplexNonNormalRNN", "EURNN", "GRU", "LEM", "LRU", "LSTM", "MODELS", "MinGRU", "ExpRNN",
           "NonNormalGRU", "NonNormalRNN", "OrthogonalInitRNN", "VanillaRNN", "allow_weights_only_loading", "create",
           "hidden_size_for", "load_run", "param_groups", "parameter_count", "parametrizations", "regularization"]

if TYPE_CHECKING:  # for type checkers and editors; at run time, __getattr__ below
    from . import parametrizations
    from .models import (EURNN, GRU, LEM, LRU, LSTM, MODELS, CoRNN, ComplexNonNormalRNN, ExpRNN, MinGRU,
                         NonNormalGRU, NonNormalRNN, OrthogonalInitRNN, VanillaRNN, create, hidden_size_for,
                         param_groups, parameter_count, regularization)
    from .serialization import allow_weights_only_loading


def load_run(path, device="cpu"):
    """The network an ``nnrnn train`` run trained, from its run folder (the best validation score's
    checkpoint, ``checkpoints/best.pt``, else ``last.pt``) or from a checkpoint file, in eval mode on
    ``device``.  It is the command line's whole network, ``torch.nn.Module`` ``SequenceModel``: ``.encoder``
    (PTB's embedding, else None), ``.rnn`` (the recurrent layer, e.g. an :class:`NonNormalRNN`) and
    ``.readout`` (a ``torch.nn.Linear``); ``net(inputs)`` takes the task's inputs time first, (L, B, features)
    or (L, B) token ids, and returns (predictions, final state).  The run's options are in its config.json.
    A missing or unreadable run is a :class:`nnrnn.errors.UserError`."""
    from .training.network import load_model
    net, _ = load_model(path)
    return net.to(device).eval()


def __getattr__(name: str):
    if name in _FROM_MODELS:
        value = getattr(importlib.import_module(".models", __name__), name)
    elif name == "allow_weights_only_loading":  # the models first: importing them hands their classes over
        importlib.import_module(".models", __name__)
        value = importlib.import_module(".serialization", __name__).allow_weights_only_loading
    elif name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    else:  # a submodule: nnrnn.parametrizations, nnrnn.errors, nnrnn.kernels, ...
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _ModelsAfterTorch:
    """A finder on ``sys.meta_path`` until torch is imported: torch's own loader runs, then nnrnn.models is
    imported, so that a program that imports nnrnn before torch can ``torch.load`` a model saved whole, and
    the ``nnrnn`` command still starts without torch."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        exec_torch = spec.loader.exec_module

        def exec_module(module):
            exec_torch(module)
            # torch imported by an nnrnn module being imported: importing the models now would meet that module
            # half made; if it is nnrnn.models, it hands its classes over itself when done
            if not any(getattr(getattr(sub, "__spec__", None), "_initializing", False)
                       for key, sub in list(sys.modules.items()) if key.startswith(f"{__name__}.")):
                importlib.import_module(".models", __name__)

        spec.loader.exec_module = exec_module
        return spec


if "torch" in sys.modules:  # a program that uses torch: torch.load can read nnrnn's models from now on
    importlib.import_module(".models", __name__)
else:
    sys.meta_path.insert(0, _ModelsAfterTorch())
