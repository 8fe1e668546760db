"""nnrnn: the non-normal RNN (Kerg, Goyette et al., NeurIPS 2019), its baselines, tasks and theory."""
from . import parametrizations
from .models import (ComplexNonNormalRNN, EURNN, GRU, LSTM, MODELS, ExpRNN, NonNormalGRU, NonNormalRNN, OrthogonalInitRNN, VanillaRNN, create,
                     hidden_size_for, param_groups, parameter_count)

__version__ = "0.1.0"

__all__ = ["ComplexNonNormalRNN", "EURNN", "GRU", "LSTM", "MODELS", "ExpRNN", "NonNormalGRU", "NonNormalRNN", "OrthogonalInitRNN", "VanillaRNN", "create",
           "hidden_size_for", "param_groups", "parameter_count", "parametrizations"]
