"""nnrnn: the non-normal RNN (Kerg, Goyette et al., NeurIPS 2019), its baselines, tasks and theory.

``import nnrnn`` imports torch and the models, as any library built on torch does; importing the models puts
them on torch's ``weights_only`` allow-list, so that a plain ``torch.load(f)`` reads a model saved whole
(why that is safe: :mod:`nnrnn.serialization`).  The ``nnrnn`` command starts without this import: its
entry point, :mod:`nnrnn_cli`, parses the command line first and imports nnrnn for the command it runs.
"""
from __future__ import annotations

import importlib.metadata

import torch

from . import environment  # noqa: F401 - before the check, so that the command line can read NNRNN_DEBUG after it
from .dependencies import check_torch

check_torch(torch.__version__)  # before the models: an older torch fails on them with a traceback of its own
from . import parametrizations  # noqa: E402
from .models import (CELLS, EURNN, GRU, LEM, LRU, LSTM, MODELS, CoRNN, CoRNNCell, ComplexNonNormalRNN,  # noqa: E402
                     ComplexNonNormalRNNCell, EURNNCell, ExpRNN, ExpRNNCell, GRUCell, LEMCell, LRUCell, LSTMCell,
                     MinGRU, MinGRUCell, NonNormalGRU, NonNormalGRUCell, NonNormalLRU, NonNormalLRUCell, NonNormalRNN,
                     NonNormalRNNCell, OrthogonalInitRNN, OrthogonalInitRNNCell, VanillaRNN, VanillaRNNCell, create,
                     create_cell, hidden_size_for, param_groups, parameter_count, regularization)
from .serialization import allow_weights_only_loading  # noqa: E402

try:  # the version is pyproject.toml's, read from the installed package's metadata
    __version__ = importlib.metadata.version("nnrnn")
except importlib.metadata.PackageNotFoundError:  # a source tree on PYTHONPATH, never installed
    __version__ = "unknown (not installed: pip install -e .)"

__all__ = ["CELLS", "CoRNN", "CoRNNCell", "ComplexNonNormalRNN", "ComplexNonNormalRNNCell", "EURNN", "EURNNCell",
           "ExpRNN", "ExpRNNCell", "GRU", "GRUCell", "LEM", "LEMCell", "LRU", "LRUCell", "LSTM", "LSTMCell", "MODELS",
           "MinGRU", "MinGRUCell", "NonNormalGRU", "NonNormalGRUCell", "NonNormalLRU", "NonNormalLRUCell",
           "NonNormalRNN", "NonNormalRNNCell", "OrthogonalInitRNN", "OrthogonalInitRNNCell", "VanillaRNN",
           "VanillaRNNCell", "allow_weights_only_loading", "create", "create_cell", "hidden_size_for", "load_run",
           "param_groups", "parameter_count", "parametrizations", "regularization"]


def load_run(path, device="cpu"):
    """The network an ``nnrnn train`` run trained, from its run folder (the best validation score's
    checkpoint, ``checkpoints/best.pt``, else ``last.pt``) or from a checkpoint file, in eval mode on
    ``device``.  It is the command line's whole network, ``torch.nn.Module`` ``SequenceModel``: ``.encoder``
    (PTB's embedding, else None), ``.rnn`` (the recurrent layer, e.g. an :class:`NonNormalRNN`) and
    ``.readout`` (a ``torch.nn.Linear``); ``net(inputs)`` takes the task's inputs time first, (L, B, features)
    or (L, B) token ids, and returns (predictions, final state).  The run's options are in its config.json.
    A missing run is a ``FileNotFoundError`` (:class:`nnrnn.errors.RunNotFound`), an unreadable one a
    :class:`nnrnn.errors.UserError`."""
    from .training.network import load_saved  # training sits above the models: imported when a run is loaded
    return load_saved(path, device).net.eval()
