"""nnrnn: the non-normal RNN (Kerg, Goyette et al., NeurIPS 2019), its baselines, tasks and theory."""
from . import parametrizations
from .models import (EURNN, LSTM, MODELS, ExpRNN, NonNormalRNN, OrthogonalInitRNN, VanillaRNN, create,
                     hidden_size_for, param_groups, parameter_count)
from .serialization import allow_weights_only_loading

# so that torch.load(f) with torch's default weights_only=True loads a model saved whole (why this is safe:
# nnrnn/serialization.py)
allow_weights_only_loading()

__version__ = "0.1.0"

__all__ = ["EURNN", "LSTM", "MODELS", "ExpRNN", "NonNormalRNN", "OrthogonalInitRNN", "VanillaRNN",
           "allow_weights_only_loading", "create", "hidden_size_for", "param_groups", "parameter_count",
           "parametrizations"]
