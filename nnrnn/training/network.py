"""The network a run trains: an optional token encoder, the recurrent layer, a linear read-out; built
from a configuration (:mod:`nnrnn.config`) and loaded back from a run folder without the trainer."""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from . import checkpoint, runfolder
from .config import model_options
from ..errors import OptionError
from ..models import create
from ..models.init import init_
from ..tasks import make_task, task_class

DEFAULT_EMBEDDING = 200  # the paper's code embeds PTB characters in 200 dimensions


class OneHot(nn.Module):
    """Token ids (..., ) -> one-hot float vectors (..., vocab_size)."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return nn.functional.one_hot(ids, self.vocab_size).float()


class SequenceModel(nn.Module):
    """encoder → recurrent layer → linear read-out, at every step or at the last one.

    Args:
        rnn: the recurrent layer (any nnrnn model, or a torch RNN).
        output_size: the read-out's width.
        predict_at: ``"all"`` (a prediction at every step) or ``"last"`` (at the last step only): the task's
            ``readout``.
        encoder: ``nn.Embedding`` (initialised U(-0.1, 0.1), as the paper's code does) or :class:`OneHot`
            for token-id inputs; None for tasks that give vectors.
        readout_init, readout_bias_init: schemes of :mod:`nnrnn.models.init` for the read-out.

    Inputs: inputs (L, B, input_size) float, or (L, B) token ids with an encoder; hx (the layer's h_0, or
    None).  Outputs: predictions (L, B, output_size) (``"all"``) or (B, output_size) (``"last"``), and the
    layer's final hidden state.
    """

    def __init__(self, rnn: nn.Module, output_size: int, predict_at: str, encoder: nn.Module | None = None,
                 readout_init: str = "xavier", readout_bias_init: str = "zeros"):
        super().__init__()
        self.encoder = encoder
        self.rnn = rnn
        self.predict_at = predict_at
        features = getattr(rnn, "output_size", rnn.hidden_size)  # the complex nnRNN's: [Re h, Im h], 2N
        self.readout = nn.Linear(features, output_size)
        init_(self.readout.weight, readout_init)
        init_(self.readout.bias, readout_bias_init, fan_in=features)

    def forward(self, inputs: torch.Tensor, hx=None):
        if self.encoder is not None:
            inputs = self.encoder(inputs)
        hidden, hx = self.rnn(inputs, hx)
        if self.predict_at == "last":
            hidden = hidden[-1]
        return self.readout(hidden), hx


def embedding_width(config: dict) -> int:
    """The width token inputs are embedded in: ``embedding``, else :data:`DEFAULT_EMBEDDING`; 0: one-hot."""
    return DEFAULT_EMBEDDING if config.get("embedding") is None else config["embedding"]


def build_network(config: dict, input_size: int, output_size: int, predict_at: str,
                  vocab_size: int | None = None) -> SequenceModel:
    """The network for ``config``: encoder (for token inputs), recurrent layer, read-out."""
    encoder = None
    if vocab_size:
        width = embedding_width(config)
        if width:
            encoder = nn.Embedding(vocab_size, width)
            init_(encoder.weight, "uniform:0.1")
            input_size = width
        else:
            encoder, input_size = OneHot(vocab_size), vocab_size
    elif config.get("embedding"):
        raise OptionError(f"--embedding applies to token inputs (ptb); the {config['task']} task gives vectors")
    rnn = create(config["model"], input_size, config["hidden"], **model_options(config))
    return SequenceModel(rnn, output_size, predict_at, encoder, config.get("readout_init", "xavier"),
                         config.get("readout_bias_init", "zeros"))


def build_task(config: dict):
    """The task of a resolved config, its data read (UserError if the data cannot be found or read)."""
    keys = ("seed", "batch_size", *task_class(config["task"]).CONFIG_OPTIONS)
    task_options = {k: config[k] for k in keys if config.get(k) is not None}
    return make_task(config["task"], **task_options)


def build(config: dict):
    """Task and network for a resolved config; the network's initial parameters are a function of the seed."""
    task = build_task(config)
    torch.manual_seed(config["seed"])
    net = build_network(config, task.input_size, task.output_size, task.readout, task.vocab_size)
    return task, net


def best_checkpoint(folder: Path) -> Path:
    """The checkpoint a run folder is judged by: ``best.pt`` (best validation score), else ``last.pt``."""
    best = runfolder.best_checkpoint(folder)
    return best if best.exists() else runfolder.last_checkpoint(folder)


def load_model(path) -> tuple[nn.Module, dict]:
    """(network, config) from a run folder (its :func:`best_checkpoint`) or a checkpoint file; the network is
    rebuilt from the saved configuration and weights alone, without reading the task's data."""
    path = Path(path)
    if path.is_dir():
        path = best_checkpoint(path)
    saved = checkpoint.load(path)
    config, weights = saved["config"], saved["model"]
    input_size = weights["rnn.weight_ih_l0"].shape[1]
    output_size = weights["readout.weight"].shape[0]
    cls = task_class(config["task"])
    vocab_size = None
    if cls.token_inputs:  # the embedding table's rows, or (one-hot) the recurrent layer's input size
        vocab_size = weights["encoder.weight"].shape[0] if "encoder.weight" in weights else input_size
    net = build_network(config, input_size, output_size, cls.readout, vocab_size)
    net.load_state_dict(weights)
    return net, config
