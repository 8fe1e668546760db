"""The network a run trains: an optional token encoder, the recurrent layer, a linear read-out; built
from a configuration (:mod:`nnrnn.training.config`) and loaded back from a run folder without the trainer."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from . import checkpoint, runfolder
from .config import absolute_dir, model_options
from .options import DEFAULT_EMBEDDING, DEFAULTS, RESUMABLE, flag, saved_options
from ..data.paths import DataNotFound
from ..errors import OptionError, RunNotFound, UserError
from ..models import create
from ..models.init import init_
from ..tasks import make_task, task_class


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
            ``predict_at``.
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
    # .get: a configuration saved before --num-layers had one layer
    rnn = create(config["model"], input_size, config["hidden"], config.get("num_layers", DEFAULTS["num_layers"]),
                 **model_options(config))
    # .get: a configuration saved before the read-out's options had them at their defaults
    return SequenceModel(rnn, output_size, predict_at, encoder,
                         config.get("readout_init", DEFAULTS["readout_init"]),
                         config.get("readout_bias_init", DEFAULTS["readout_bias_init"]))


def build_task(config: dict):
    """The task of a resolved config, its data read (UserError if the data cannot be found or read)."""
    keys = ("seed", "batch_size", *task_class(config["task"]).CONFIG_OPTIONS)
    task_options = {k: config[k] for k in keys if config.get(k) is not None}
    return make_task(config["task"], **task_options)


def build_saved_task(config: dict, data_dir=None):
    """The task of a saved run's ``config``, its data read from (docs/training.md, "Where evaluation finds the
    data"): ``data_dir`` when given; else the folder the run stored, while it holds the data; else, when it no
    longer does (moved, or a relative path from before they were stored absolute), where NNRNN_DATA or the
    per-user cache points."""
    if data_dir is not None:
        if not task_class(config["task"]).has_data_files:  # as train refuses it: an option that does not act
            raise OptionError(f"--data-dir applies to the tasks read from files, not to {config['task']}, whose "
                              f"data is generated; leave it out")
        return build_task({**config, "data_dir": absolute_dir(data_dir)})
    try:
        return build_task(config)
    except DataNotFound:
        if config.get("data_dir") is None:
            raise
        try:
            return build_task({**config, "data_dir": None})
        except DataNotFound as default:
            raise DataNotFound(f"the run's data folder {config['data_dir']} no longer holds its data, and neither "
                               f"does the default place: {default}") from None


def check_weights(net: nn.Module, weights: dict, path, task=None) -> None:
    """UserError unless ``weights`` (a state dict read from ``path``) fits ``net`` name for name and shape.  The
    message names the first difference and the cause it has checked: a read-out whose width differs from what
    ``task``'s data gives (another PTB vocabulary) is the data; anything else is the file and the configuration
    saved with it disagreeing."""
    expected = net.state_dict()
    readout = weights.get("readout.weight")
    if task is not None and readout is not None and readout.shape[0] != task.output_size:
        what = "symbols in its vocabulary" if task.vocab_size else "outputs"
        raise UserError(f"{path} was trained on data with {readout.shape[0]} {what}, and the data read now has "
                        f"{task.output_size}; evaluate it on the data it was trained on (--data-dir)")
    differences = [f"{key} is missing" for key in expected if key not in weights]
    differences += [f"{key} is not part of this network" for key in weights if key not in expected]
    differences += [f"{key} has shape {tuple(weights[key].shape)} where the network has {tuple(value.shape)}"
                    for key, value in expected.items() if key in weights and weights[key].shape != value.shape]
    if differences:
        raise UserError(f"{path} does not fit the network its own configuration describes: {differences[0]}"
                        f"{f' (and {len(differences) - 1} more)' if len(differences) > 1 else ''}; the weights and "
                        f"the configuration in the file disagree, so restore the run's own checkpoint")


def seeded_network(config: dict, task) -> SequenceModel:
    """The network for ``config`` on ``task``, its initial parameters a function of the seed alone."""
    torch.manual_seed(config["seed"])
    return build_network(config, task.input_size, task.output_size, task.predict_at, task.vocab_size)


def build(config: dict):
    """Task and network for a resolved config; the network's initial parameters are a function of the seed."""
    task = build_task(config)
    return task, seeded_network(config, task)


def best_checkpoint(folder: Path) -> Path:
    """The checkpoint a run folder is judged by: ``best.pt`` (best validation score), else ``last.pt``."""
    best = runfolder.best_checkpoint(folder)
    return best if best.exists() else runfolder.last_checkpoint(folder)


def network_sizes(task) -> dict:
    """What a checkpoint stores of the network's sizes beside its configuration (:func:`load_saved` builds the
    network from them): the task's input and output widths, where it predicts, its vocabulary."""
    return {"input_size": task.input_size, "output_size": task.output_size, "predict_at": task.predict_at,
            "vocab_size": task.vocab_size}


def _sizes_from_weights(config: dict, weights: dict) -> dict:
    """The sizes of a checkpoint written before checkpoints stored them, read off its weights."""
    input_size = weights["rnn.weight_ih_l0"].shape[1]
    cls = task_class(config["task"])
    vocab_size = None
    if cls.token_inputs:  # the embedding table's rows, or (one-hot) the recurrent layer's input size
        vocab_size = weights["encoder.weight"].shape[0] if "encoder.weight" in weights else input_size
    return {"input_size": input_size, "output_size": weights["readout.weight"].shape[0],
            "predict_at": cls.predict_at, "vocab_size": vocab_size}


class Saved(NamedTuple):
    """A trained network read back from a checkpoint: the network, its run's configuration, the checkpoint's
    whole contents (``step``, ``data``, ...) and the file it came from."""
    net: SequenceModel
    config: dict
    checkpoint: dict
    path: Path


def load_saved(path, device="cpu") -> Saved:
    """The network of a run folder (its :func:`best_checkpoint`) or of a checkpoint file, with its weights, on
    ``device``: rebuilt from the configuration and sizes saved with it alone, without reading the task's data.
    The one loader of trained networks (``nnrnn eval``, ``nnrnn analyze``, :func:`nnrnn.load_run`); a missing
    run is a FileNotFoundError (RunNotFound), an unreadable or inconsistent file a UserError."""
    path = Path(path)
    if not path.exists():
        raise RunNotFound(f"no run folder or checkpoint at {path}", path)
    if path.is_dir():
        if not best_checkpoint(path).is_file():
            raise RunNotFound(f"{path} holds no run: it has no {runfolder.BEST} or {runfolder.LAST}", path)
        path = best_checkpoint(path)
    saved = checkpoint.load(path, map_location=device)
    if path.parent.name == runfolder.CHECKPOINTS and isinstance(saved.get("config"), dict):
        shown = foreign_options(path.parent.parent, saved["config"])
        if shown:  # as a resume refuses it: scored, it would pass for this run's result
            raise UserError(f"{path} is another run's checkpoint, not this run's ({shown}); put the run's own "
                            f"{path.name} back, or give the other run's folder")
    config, weights = saved_options(saved["config"]), saved["model"]
    sizes = saved.get("sizes") or _sizes_from_weights(config, weights)
    net = build_network(config, sizes["input_size"], sizes["output_size"], sizes["predict_at"], sizes["vocab_size"])
    check_weights(net, weights, path)
    net.load_state_dict(weights)
    return Saved(net.to(device), config, saved, path)


def foreign_options(folder: Path, before: dict) -> str:
    """The options that may not change on resume and differ between a checkpoint's configuration ``before`` and
    the run folder's config.json ("" where none do, or the folder has no readable config.json: then the checkpoint's
    configuration is all there is): a checkpoint copied in from another run shows here.  Read wherever a checkpoint
    of a run folder is (a resume, ``nnrnn eval``, ``nnrnn analyze``)."""
    path = runfolder.config_file(folder)
    if not path.is_file():  # a run from before config.json was written first: the checkpoint is all there is
        return ""
    try:
        own = runfolder.read_config(path)
    except UserError:  # a damaged config.json: the checkpoint's configuration is the run's
        return ""
    value = lambda config, key: config.get(key, DEFAULTS.get(key))  # noqa: E731  (options added since: defaults)
    differ = [key for key in sorted(set(own) | set(before))
              if key not in RESUMABLE and key != "out" and value(own, key) != value(before, key)]
    return "; ".join(f"{flag(key)} {value(before, key)!r} there, {value(own, key)!r} in {runfolder.CONFIG}"
                     for key in differ)


def load_model(path) -> tuple[nn.Module, dict]:
    """(network, config) of :func:`load_saved`, on the CPU."""
    saved = load_saved(path)
    return saved.net, saved.config


def initial_network(path) -> nn.Module:
    """The network the run of ``path`` (as :func:`load_saved` takes it) started from, untrained: built from its
    seed as :func:`seeded_network` builds it (torch's global generator is left as it was)."""
    return initial_of(load_saved(path))


def initial_of(saved: Saved) -> nn.Module:
    """:func:`initial_network` of a checkpoint already read."""
    sizes = saved.checkpoint.get("sizes") or _sizes_from_weights(saved.config, saved.checkpoint["model"])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(saved.config["seed"])
        return build_network(saved.config, sizes["input_size"], sizes["output_size"], sizes["predict_at"],
                             sizes["vocab_size"])
