"""Training: one readable loop, configured by a plain dict (see :data:`DEFAULTS`).

A run folder holds

* ``config.json``   every resolved option;
* ``metrics.jsonl`` one JSON object per logged point: step, split, loss, and
  the task's metrics (accuracy, bpc), plus grad_norm for training points;
* ``checkpoints/last.pt`` (for ``--resume``) and ``checkpoints/best.pt`` (best
  validation score);
* ``tensorboard/`` event files and ``curves.png``.

Batches are a pure function of (seed, step) and every state that changes
during training (parameters, optimizer, carried hidden state, step) is in the
checkpoint, so a resumed run continues exactly as if uninterrupted.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import signal
from pathlib import Path

import torch
from torch import nn

from . import checkpoint, distributed, presets, runlock
from .errors import UserError
from .models import create, model_class, param_groups
from .models.init import check_scheme, init_
from .parametrizations import TRIANGULAR, rebase_
from .tasks import make_task, task_class
from .tasks.base import accumulate

DEFAULTS = {
    "task": "copy",
    "model": "nnrnn",
    "out": "runs/copy-nnrnn",
    "seed": 0,
    "hidden": 128,
    "nonlinearity": None,      # None: the model's default (modReLU for the non-gated models)
    "init": None,              # None: the model's default orthogonal scheme (LSTM: glorot or concat)
    "capacity": None,          # EURNN layers; None: hidden // 2
    "triangular": None,        # nnRNN's T: "strict" (paper, default) or "block"
    "bias": True,              # the recurrent layer's input bias b in φ(Vh + W_ih x + b)
    "input_init": None,        # W_ih's scheme (nnrnn.models.init); None: the model's default (xavier)
    "bias_init": None,         # b's scheme; None: the model's default (zeros)
    "readout_init": "xavier",  # the linear read-out's weight
    "readout_bias_init": "zeros",
    "embedding": None,         # token tasks (PTB): embedding size; 0: one-hot inputs; None: the task's default
    "optimizer": "rmsprop",
    "lr": 1e-3,
    "lr_orth": 1e-4,
    "rebase_every": None,      # nnRNN, expRNN: dynamic trivialization, P's base moved every K updates (not the paper's)
    "alpha": 0.99,             # RMSprop smoothing
    "betas": [0.9, 0.999],     # Adam
    "delta": 0.0,              # nnRNN: weight of Σ(1 - γ_i)²
    "t_decay": 0.0,            # nnRNN: weight decay on T (gradient += t_decay · T)
    "clip": 0.0,               # max gradient norm; 0: no clipping
    "lr_schedule": "none",     # "plateau": halve every learning rate after a validation that did not improve
    "stop_after_halvings": None,  # with "plateau": stop once the learning rates were halved this many times
    "batch_size": None,        # None: the task's default
    "eval_batch_size": None,   # psmnist: images per evaluation batch; ptb: parallel evaluation streams
    "T": None,                 # copy / adding sequence length; None: the task's default
    "bptt": 150,               # PTB truncation length
    "permute": True,           # psMNIST: False for sequential MNIST
    "shuffle": "epoch",        # psMNIST: "epoch" (a new order each epoch) or "fixed" (the same order)
    "data_dir": None,
    "steps": None,             # total updates; None: from epochs, else the task's default
    "epochs": None,
    "log_every": 50,
    "eval_every": None,        # None: once per epoch, or every 250 updates for synthetic tasks
    "checkpoint_every": None,  # None: at every evaluation
    "max_bad_steps": 20,       # stop after this many non-finite losses or gradients in a row
    "check_inputs": False,     # raise on NaN/Inf in input batches
    "device": "auto",
    "progress": True,
}
DEFAULT_STEPS = {"copy": 3000, "adding": 3000}
DEFAULT_EMBEDDING = 200  # the paper's code embeds PTB characters in 200 dimensions
LR_SCHEDULES = ("none", "plateau")
PLATEAU_FACTOR = 0.5
# Options that may change between an interrupted run and its --resume.
RESUMABLE = {"eval_batch_size", "steps", "epochs", "log_every", "eval_every", "checkpoint_every", "progress", "device",
             "max_bad_steps", "data_dir", "check_inputs", "stop_after_halvings"}


def resolve_config(options: dict, preset: str | None = None) -> dict:
    """Defaults, then the preset's values for (task, model), then explicit ``options``."""
    config = dict(DEFAULTS)
    config.update({k: v for k, v in options.items() if k in ("task", "model", "bptt") and v is not None})
    task_class(config["task"])   # unknown names fail here with the list of valid ones
    model_class(config["model"])
    if preset:
        config.update(presets.lookup(preset, config["task"], config["model"], config["bptt"]))
        config["preset"] = preset
    unknown = set(options) - set(DEFAULTS) - {"preset"}
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(sorted(unknown))}")
    given = {k: v for k, v in options.items() if v is not None}
    if "steps" in given:  # a length given explicitly replaces the preset's (both given: refused by validate)
        config["epochs"] = None
    if "epochs" in given:
        config["steps"] = None
    config.update(given)
    validate(config)
    return config


def _number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def validate(config: dict) -> None:
    for key in ("hidden", "batch_size", "eval_batch_size", "T", "bptt", "steps", "epochs", "log_every", "eval_every",
                "checkpoint_every", "max_bad_steps", "capacity", "stop_after_halvings", "rebase_every"):
        value = config.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise ValueError(f"{key} must be a positive integer; got {value!r}")
    seed = config["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 63:
        raise ValueError(f"seed must be a non-negative integer below 2**63; got {seed!r}")
    for key in ("lr", "lr_orth"):
        if not (_number(config[key]) and config[key] > 0):
            raise ValueError(f"{key} must be a positive finite number; got {config[key]!r}")
    for key in ("delta", "t_decay", "clip"):
        if not (_number(config[key]) and config[key] >= 0):
            raise ValueError(f"{key} must be zero or a positive finite number; got {config[key]!r}")
    betas = config["betas"]
    if not (isinstance(betas, (list, tuple)) and len(betas) == 2 and all(_number(b) and 0 <= b < 1 for b in betas)):
        raise ValueError(f"betas must be two numbers in [0, 1); got {betas!r}")
    if config["steps"] and config["epochs"]:
        raise ValueError("give --steps or --epochs, not both")
    if config["epochs"] and not task_class(config["task"]).has_epochs:
        raise ValueError(f"epochs needs a task with a fixed training set; {config['task']} draws fresh batches "
                         f"each update, so give --steps")
    check_device(config["device"])
    if config["optimizer"] not in ("rmsprop", "adam"):
        raise ValueError(f"optimizer must be 'rmsprop' or 'adam'; got {config['optimizer']!r}")
    if not (_number(config["alpha"]) and 0 <= config["alpha"] < 1):
        raise ValueError(f"alpha must be in [0, 1); got {config['alpha']!r}")
    if config["lr_schedule"] not in LR_SCHEDULES:
        raise ValueError(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}; got {config['lr_schedule']!r}")
    if config["rebase_every"] and config["model"] not in ("nnrnn", "exprnn"):
        raise ValueError(f"rebase_every moves the base of an orthogonal factor: nnrnn and exprnn have one, "
                         f"{config['model']} does not")
    if config["stop_after_halvings"] and config["lr_schedule"] != "plateau":
        raise ValueError("stop_after_halvings needs lr_schedule plateau (it counts that schedule's halvings)")
    if config["shuffle"] not in ("epoch", "fixed"):
        raise ValueError(f"shuffle must be 'epoch' or 'fixed'; got {config['shuffle']!r}")
    if config["triangular"] not in (None, *TRIANGULAR):
        raise ValueError(f"triangular must be 'strict' or 'block'; got {config['triangular']!r}")
    if not isinstance(config["bias"], bool):
        raise ValueError(f"bias must be true or false; got {config['bias']!r}")
    for key in ("input_init", "bias_init", "readout_init", "readout_bias_init"):
        if config[key] is not None:
            check_scheme(key, config[key])
    embedding = config["embedding"]
    if embedding is not None and (isinstance(embedding, bool) or not isinstance(embedding, int) or embedding < 0):
        raise ValueError(f"embedding must be a non-negative integer (0: one-hot inputs); got {embedding!r}")


class OneHot(nn.Module):
    """Token ids (..., ) -> one-hot float vectors (..., vocab_size)."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return nn.functional.one_hot(ids, self.vocab_size).float()


class SequenceModel(nn.Module):
    """An optional token encoder, a recurrent layer, and a linear read-out at every step ("all") or the
    last ("last").

    ``encoder``: ``nn.Embedding`` (initialised U(-0.1, 0.1), as the paper's code does) or
    :class:`OneHot` for tasks whose inputs are token ids; None for tasks that give vectors.
    """

    def __init__(self, rnn: nn.Module, output_size: int, readout: str, encoder: nn.Module | None = None,
                 readout_init: str = "xavier", readout_bias_init: str = "zeros"):
        super().__init__()
        self.encoder = encoder
        self.rnn = rnn
        self.readout_mode = readout
        self.readout = nn.Linear(rnn.hidden_size, output_size)
        init_(self.readout.weight, readout_init)
        init_(self.readout.bias, readout_bias_init, fan_in=rnn.hidden_size)

    def forward(self, inputs: torch.Tensor, state=None):
        if self.encoder is not None:
            inputs = self.encoder(inputs)
        hidden, state = self.rnn(inputs, state)
        if self.readout_mode == "last":
            hidden = hidden[-1]
        return self.readout(hidden), state


def detach_state(state):
    if state is None:
        return None
    if isinstance(state, tuple):
        return tuple(s.detach() for s in state)
    return state.detach()


def model_options(config: dict) -> dict:
    """The options of ``config`` that the chosen model's constructor takes."""
    shared = ("nonlinearity", "input_init", "bias_init", "bias")
    accepted = {"lstm": ("init", "bias"), "rnn": shared, "eurnn": shared + ("capacity",),
                "nnrnn": shared + ("init", "triangular")}
    names = accepted.get(config["model"], shared + ("init",))
    options = {k: config[k] for k in names if config.get(k) is not None}
    if config.get("rebase_every"):
        options["dynamic"] = True
    return options


def build_network(config: dict, input_size: int, output_size: int, readout: str,
                  vocab_size: int | None = None) -> SequenceModel:
    """The network for ``config``: encoder (for token inputs), recurrent layer, read-out."""
    encoder = None
    if vocab_size:
        width = DEFAULT_EMBEDDING if config.get("embedding") is None else config["embedding"]
        if width:
            encoder = nn.Embedding(vocab_size, width)
            init_(encoder.weight, "uniform:0.1")
            input_size = width
        else:
            encoder, input_size = OneHot(vocab_size), vocab_size
    elif config.get("embedding"):
        raise UserError(f"--embedding applies to token inputs (ptb); the {config['task']} task gives vectors")
    rnn = create(config["model"], input_size, config["hidden"], **model_options(config))
    return SequenceModel(rnn, output_size, readout, encoder, config.get("readout_init", "xavier"),
                         config.get("readout_bias_init", "zeros"))


def build_task(config: dict):
    """The task of a resolved config, its data read (UserError if the data cannot be found or read)."""
    task_options = {k: config[k] for k in ("seed", "batch_size", "eval_batch_size", "T", "bptt", "permute",
                                           "data_dir", "shuffle")
                    if config.get(k) is not None}
    return make_task(config["task"], **task_options)


def build(config: dict):
    """Task and network for a resolved config."""
    task = build_task(config)
    torch.manual_seed(config["seed"])
    net = build_network(config, task.input_size, task.output_size, task.readout, task.vocab_size)
    return task, net


def make_optimizer(config: dict, net: nn.Module) -> torch.optim.Optimizer:
    groups = param_groups(net, config["lr"], config["lr_orth"])
    if config["optimizer"] == "adam":
        return torch.optim.Adam(groups, betas=tuple(config["betas"]))
    return torch.optim.RMSprop(groups, alpha=config["alpha"])


def halvings(config: dict, optimizer: torch.optim.Optimizer) -> int:
    """How many times the schedule has halved the learning rates so far (read off the optimizer's state)."""
    return round(math.log2(config["lr"] / optimizer.param_groups[0]["lr"]))


def plateau_reached(config: dict, optimizer: torch.optim.Optimizer) -> bool:
    return bool(config["stop_after_halvings"]) and halvings(config, optimizer) >= config["stop_after_halvings"]


def make_schedule(config: dict, optimizer: torch.optim.Optimizer, mode: str):
    """The learning-rate schedule, or None.  "plateau" is the authors' PTB schedule: after every
    validation whose score is not strictly better than the best so far, every learning rate (lr and
    lr_orth) is halved (their StepLR(step_size=1, gamma=0.5), stepped only then)."""
    if config["lr_schedule"] == "plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode=mode, factor=PLATEAU_FACTOR, patience=0,
                                                          threshold=0.0, eps=0.0)
    return None


def check_device(name) -> torch.device:
    """The device ``name`` stands for; UserError if it is not one or is not present here."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise UserError(f"--device {name!r} is not a device; use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UserError(f"--device {name}: no CUDA device is available to this torch ({torch.__version__}); "
                            f"use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UserError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                            f"numbered from 0")
    elif device.type != "cpu":
        raise UserError(f"--device {name}: nnrnn trains on cpu or cuda; use one of those")
    return device


pick_device = check_device


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_memory(config: dict) -> None:
    """UserError, before anything is allocated, when the model's parameters with their gradients and
    optimizer state alone would not fit in the memory available (a deliberately low estimate: the
    recurrent matrices' n² storage, four copies)."""
    available = available_memory()
    if available is None:
        return
    storage = 4 * (3 * config["hidden"] ** 2 + 4 * config["hidden"])  # weight_hh (+ T, generator), float32
    needed = 4 * storage  # parameter, gradient and two optimizer buffers
    if needed > available:
        raise UserError(f"--hidden {config['hidden']} needs at least {needed / 2 ** 30:,.0f} GiB of memory for its "
                        f"parameters and training state; {available / 2 ** 30:,.1f} GiB are available; lower --hidden")


def total_steps(config: dict, task) -> int:
    if config["steps"]:
        return config["steps"]
    if config["epochs"]:
        if task.steps_per_epoch is None:
            raise ValueError(f"--epochs needs a task with a fixed training set; {task.name} draws fresh "
                             f"batches each update, so give --steps")
        return config["epochs"] * task.steps_per_epoch
    if task.steps_per_epoch is not None:
        return task.steps_per_epoch  # one epoch
    return DEFAULT_STEPS.get(task.name, 1000)


def evaluation_interval(config: dict, task) -> int:
    """Updates between validations: --eval-every, else once per epoch, else every 250 updates (tasks that draw
    fresh batches)."""
    return config["eval_every"] or task.steps_per_epoch or 250


@torch.no_grad()
def evaluate(net: nn.Module, task, split: str, device) -> dict:
    was_training = net.training
    net.eval()
    sums, state = {}, None
    for batch in task.eval_batches(split):
        state = state if batch.carry else None
        outputs, state = net(batch.inputs.to(device), state)
        accumulate(sums, task.loss(outputs, batch.targets.to(device))[1])
    net.train(was_training)
    return task.summarize(sums)


class MetricsLog:
    """Appends JSON lines to metrics.jsonl and mirrors scalars to TensorBoard."""

    def __init__(self, folder: Path, resume_step: int | None):
        self.path = folder / "metrics.jsonl"
        if resume_step is None:
            self.path.write_text("")
        else:  # drop points logged after the checkpoint: the resumed run logs them again
            kept = [line for line in self._lines() if json.loads(line)["step"] <= resume_step]
            checkpoint.atomic_write(self.path, lambda f: f.write("".join(kept).encode()))
        self.file = self.path.open("a")
        self.writer = None
        try:
            from torch.utils.tensorboard import SummaryWriter
            # TensorBoard hides earlier event files' points at purge_step and after: on resume, those after
            # the checkpoint (logged again); in a new run, all of an attempt that died before its first checkpoint
            purge = 0 if resume_step is None else resume_step + 1
            self.writer = SummaryWriter(str(folder / "tensorboard"), purge_step=purge)
        except ImportError:  # TensorBoard is optional for library users
            pass

    def _lines(self):
        return [line for line in self.path.read_text().splitlines(keepends=True) if line.strip()] \
            if self.path.exists() else []

    def log(self, record: dict) -> None:
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        if self.writer is not None:
            for key, value in record.items():
                if key != "step" and isinstance(value, (int, float)):  # the split is a string, part of the tag
                    self.writer.add_scalar(f"{record['split']}/{key}", value, record["step"])

    def close(self) -> None:
        self.file.close()
        if self.writer is not None:
            self.writer.close()


def read_metrics(folder: Path) -> list[dict]:
    path = Path(folder) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def curves_figure(records: list[dict], baseline: float | None = None):
    """A matplotlib Figure with one panel per metric logged (loss, accuracy, bpc, in that order): the
    training and validation points against updates, and the task's baseline on the loss panel;
    None when no record holds a metric (e.g. every update so far was skipped as non-finite)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    metrics = [m for m in ("loss", "accuracy", "bpc") if any(m in r for r in records)]
    if not metrics:
        return None
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.2), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for split, style in (("train", "-"), ("valid", "o-")):
            points = [(r["step"], r[metric]) for r in records if r.get("split") == split and metric in r]
            if points:
                ax.plot(*zip(*points), style, label=split, markersize=3)
        if metric == "loss" and baseline is not None:
            ax.axhline(baseline, color="gray", linestyle="--", label="baseline")
        ax.set_xlabel("update")
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    return fig


def plot_curves(folder: Path, baseline: float | None = None) -> Path | None:
    """curves.png in ``folder``: :func:`curves_figure` of its metrics.jsonl; None when there is nothing to plot."""
    fig = curves_figure(read_metrics(folder), baseline)
    if fig is None:
        return None
    import matplotlib.pyplot as plt
    path = Path(folder) / "curves.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


class StopRequested:
    """Turns SIGINT/SIGTERM into a flag the loop checks, so it can checkpoint before exiting."""

    def __init__(self):
        self.signal = None
        self.previous = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self.previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread: leave signals alone
                pass
        return self

    def _handle(self, signum, frame):
        self.signal = signum

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


class Interrupted(Exception):
    """SIGINT/SIGTERM ended training after a checkpoint; ``advice`` says how to continue."""

    def __init__(self, signum: int, path: Path, advice: str = "continue with --resume"):
        super().__init__(f"stopped by signal {signal.Signals(signum).name}; checkpoint saved to {path}")
        self.signum, self.path, self.advice = signum, path, advice
        self.exit_code = 128 + signum

    def __reduce__(self):  # crosses process boundaries (reproduce --jobs, sweeps)
        return Interrupted, (self.signum, self.path, self.advice)


def read_config(path: Path) -> dict:
    """A run's saved config.json; UserError naming the file if it cannot be read."""
    try:
        saved = json.loads(Path(path).read_text())
    except OSError as error:
        raise UserError(f"cannot read {path} ({error.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UserError(f"{path} is not a valid config.json ({error}); restore it or start a new run") from None
    if not isinstance(saved, dict):
        raise UserError(f"{path} is not a valid config.json (it holds a {type(saved).__name__}, not an object); "
                        f"restore it or start a new run")
    return saved


def check_resume(folder: Path, config: dict) -> dict:
    saved_path = folder / "config.json"
    if not saved_path.is_file():
        raise UserError(f"cannot resume: {folder} has no config.json; start a new run without --resume")
    saved = read_config(saved_path)
    for key in sorted(set(saved) | set(config)):
        if key in RESUMABLE or key == "out":
            continue
        if saved.get(key) != config.get(key):
            raise UserError(f"cannot resume {folder}: option {key} was {saved.get(key)!r} and is now "
                            f"{config.get(key)!r}; use the original value or start a new run")
    return saved


def train(config: dict, resume: bool = False, on_eval=None) -> dict:
    """Train as configured; returns the final metrics ({"valid": ..., "test": ...}).

    ``on_eval(step, record)``, if given, is called after every validation; an
    exception it raises (e.g. ``optuna.TrialPruned``) ends training after the
    last checkpoint has been written.
    """
    folder = Path(config["out"])
    check_memory(config)
    device = check_device(config["device"])
    rank, world = distributed.setup(device)
    # rank 0 writes the run folder and holds its lock; the others only read checkpoints
    with (runlock.hold(folder) if rank == 0 else contextlib.nullcontext()):
        return _train(config, folder, resume, on_eval, device, rank, world)


def _train(config, folder, resume, on_eval, device, rank, world) -> dict:
    last_path, best_path = folder / "checkpoints" / "last.pt", folder / "checkpoints" / "best.pt"
    if resume:
        if not last_path.is_file():
            raise UserError(f"cannot resume: no checkpoint at {last_path}; start the run without --resume")
        check_resume(folder, config)
        if rank == 0 and not os.access(last_path.parent, os.W_OK | os.X_OK):
            raise UserError(f"cannot resume: {last_path.parent} is not writable, so no checkpoint could be saved; "
                            f"make it writable or copy the run elsewhere")
    elif last_path.exists():
        raise UserError(f"{folder} already holds a run; pass --resume to continue it or choose another --out")

    device, main = distributed.local_device(device), rank == 0
    task, net = build(config)
    net.to(device)
    model = net
    if world > 1:  # averages gradients over processes; broadcasts rank 0's parameters at start
        model = torch.nn.parallel.DistributedDataParallel(net, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = make_optimizer(config, net)
    steps = total_steps(config, task)
    eval_every = evaluation_interval(config, task)
    checkpoint_every = config["checkpoint_every"] or eval_every
    monitor, mode = task.monitor
    better = (lambda a, b: a < b) if mode == "min" else (lambda a, b: a > b)
    schedule = make_schedule(config, optimizer, mode)

    start, state, best, window, bad, skipped = 0, None, None, {}, 0, 0
    if resume:
        saved = checkpoint.load(last_path, map_location=device)
        for key in ("task", "model", "hidden"):
            if saved["config"].get(key) != config.get(key):
                raise UserError(f"{last_path} holds a {saved['config'].get('model')} run on "
                                f"{saved['config'].get('task')} with {saved['config'].get('hidden')} hidden units, "
                                f"not the {config.get(key)!r} {key} this run asks for; start a new run elsewhere")
        net.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        if schedule is not None:
            schedule.load_state_dict(saved["schedule"])
        start, best, window, bad = saved["step"], saved["best"], saved["window"], saved["bad_steps"]
        skipped = saved.get("skipped", 0)
        if start > steps:
            raise UserError(f"{folder} is already at update {start}, past the {steps} updates asked for; "
                            f"give a larger --steps (or --epochs) to train further")
        state = distributed.shard_state(saved["state"], rank, world)
        if saved.get("data") is not None and hasattr(task, "check_data_state"):
            task.check_data_state(saved["data"])
        torch.set_rng_state(saved["rng"].cpu())  # loaded onto the device; the CPU generator takes CPU tensors only
    if main:  # on resume too: the options that may change (length, logging) are now these
        checkpoint.atomic_write(folder / "config.json", lambda f: f.write(json.dumps(config, indent=1).encode()))
    if resume and (start == steps or plateau_reached(config, optimizer)):
        if main:
            why = (f"already finished its {steps} updates" if start == steps else
                   f"already stopped after {halvings(config, optimizer)} halvings of the learning rate")
            print(f"[nnrnn] {folder} {why}; nothing to train (give a larger --steps to train further)", flush=True)
        return _result(folder, main)
    log = MetricsLog(folder, start if resume else None) if main else None
    data_state = task.data_state() if hasattr(task, "data_state") else None  # lets --resume verify the data

    def save_last(step):
        full_state = distributed.gather_batch(state, world)  # every rank takes part
        if main:
            checkpoint.save(last_path, {"config": config, "model": net.state_dict(),
                                        "optimizer": optimizer.state_dict(), "step": step, "state": full_state,
                                        "schedule": schedule.state_dict() if schedule is not None else None,
                                        "best": best, "window": window, "bad_steps": bad, "skipped": skipped,
                                        "rng": torch.get_rng_state(), "data": data_state})

    from tqdm import tqdm
    print(f"[nnrnn] {task.describe()}", flush=True)
    print(f"[nnrnn] {config['model']} with {config['hidden']} hidden units, "
          f"{sum(p.numel() for p in net.parameters())} parameter entries, {steps} updates on {device}", flush=True)
    bar = tqdm(total=steps, initial=start, disable=not (config["progress"] and main), unit="upd",
               dynamic_ncols=True)
    target_dim = 1 if task.readout == "all" else 0
    clip = config["clip"] or math.inf
    net.train()
    steps_done = steps
    try:
        with StopRequested() as stop:
            for step in range(start, steps):
                batch = task.train_batch(step)
                inputs = distributed.shard(batch.inputs, rank, world).to(device)
                targets = distributed.shard(batch.targets, rank, world, target_dim).to(device)
                if config["check_inputs"] and not torch.isfinite(inputs).all():
                    raise UserError(f"the input batch of update {step} holds NaN or Inf values; check the data files")
                state = detach_state(state) if batch.carry else None
                outputs, new_state = model(inputs, state)
                loss, stats = task.loss(outputs, targets)
                penalty = net.rnn.regularization(config["delta"], config["t_decay"])
                optimizer.zero_grad(set_to_none=True)
                (loss + penalty).backward()
                grad_norm = float(nn.utils.clip_grad_norm_(net.parameters(), clip))
                finite = math.isfinite(loss.item()) and math.isfinite(grad_norm)
                if world > 1:  # every rank must take the same branch
                    finite = distributed.sum_stats({"ok": (float(finite), 1)}, world)["ok"][0] == world
                done = step + 1
                if finite:
                    bad = 0
                    optimizer.step()
                    if config["rebase_every"] and done % config["rebase_every"] == 0:
                        rebase_(net)
                    state = new_state
                    accumulate(window, {**stats, "grad_norm": (grad_norm, 1)})
                else:  # skipped: parameters and carried state stay as they were before this batch
                    bad += 1
                    skipped += 1
                    if main:
                        log.log({"step": done, "split": "train", "event": "skipped update",
                                 "reason": "non-finite loss or gradient"})
                    if bad >= config["max_bad_steps"]:
                        kept = (f"the last good checkpoint is {last_path}" if last_path.exists()
                                else "no checkpoint had been written yet")
                        raise UserError(f"training diverged: {bad} non-finite losses or gradients in a row at "
                                        f"update {done}; {kept}; lower --lr or set --clip")
                bar.update(1)
                if (done % config["log_every"] == 0 or done == steps) and window:
                    record = {"step": done, "split": "train", **task.summarize(distributed.sum_stats(window, world)),
                              "lr": optimizer.param_groups[0]["lr"]}
                    if main:
                        log.log(record)
                    bar.set_postfix(loss=f"{record['loss']:.4f}")
                    window = {}
                if done % eval_every == 0 or done == steps:
                    if main:
                        record = {"step": done, "split": "valid", **evaluate(net, task, "valid", device)}
                        log.log(record)
                        if math.isfinite(record[monitor]) and (best is None or better(record[monitor], best)):
                            best = record[monitor]
                            checkpoint.save(best_path, {"config": config, "model": net.state_dict(), "step": done,
                                                        "valid": record})
                    if schedule is not None:  # every rank steps on rank 0's score, so all keep one lr
                        schedule.step(distributed.broadcast_float(record[monitor] if main else 0.0, world))
                    if plateau_reached(config, optimizer):  # the validation score has stopped improving
                        if main:
                            log.log({"step": done, "split": "train", "event": "stopped",
                                     "reason": f"learning rates halved {halvings(config, optimizer)} times"})
                        save_last(done)
                        steps_done = done
                        break
                if done % checkpoint_every == 0 or done == steps:
                    save_last(done)
                if main and on_eval is not None and (done % eval_every == 0 or done == steps):
                    on_eval(done, record)
                if stop.signal is not None:
                    save_last(done)
                    raise Interrupted(stop.signal, last_path)
        test = None
        if main and "test" in task.splits and best_path.exists():
            # training is over: score the best-validation parameters with the task already loaded
            net.load_state_dict(checkpoint.load(best_path, map_location=device)["model"])
            test = evaluate(net, task, "test", device)
            log.log({"step": steps_done, "split": "test", **test})
    finally:
        bar.close()
        if main:
            log.close()
            plot_curves(folder, getattr(task, "baseline", None))
    if skipped and (skipped >= steps or skipped > config["max_bad_steps"]):
        how_many = "all of them" if skipped >= steps else f"more than --max-bad-steps {config['max_bad_steps']}"
        raise UserError(f"training diverged: {skipped} of the {steps} updates had a non-finite loss or gradient and "
                        f"were skipped ({how_many}); the results in {folder} are not trustworthy; lower --lr or "
                        f"set --clip")
    last_valid = next((r for r in reversed(read_metrics(folder)) if r["split"] == "valid"), None) if main else None
    if last_valid is not None and not math.isfinite(last_valid[monitor]):
        raise UserError(f"training diverged: the validation {monitor} after update {last_valid['step']} is "
                        f"{last_valid[monitor]}; the results in {folder} are not trustworthy; lower --lr or set --clip")
    return _result(folder, main, test)


def _result(folder: Path, main: bool, test: dict | None = None) -> dict:
    """What train() returns: the last validation record, and the test metrics when they were taken."""
    if not main:
        return {}
    records = read_metrics(folder)
    result = {"valid": next((r for r in reversed(records) if r["split"] == "valid"), None)}
    test = test or next((r for r in reversed(records) if r["split"] == "test"), None)
    if test is not None:
        result["test"] = {k: v for k, v in test.items() if k not in ("step", "split")}
    return result


def evaluate_checkpoint(path: Path, device="cpu", split: str = "test") -> dict:
    """Metrics of a saved model on ``split``."""
    saved = checkpoint.load(path, map_location=device)
    config = saved["config"]
    built_task, net = build(config)
    try:
        net.load_state_dict(saved["model"])
    except RuntimeError:
        raise UserError(f"{path} does not match the model its config describes "
                        f"({config['model']}, hidden {config['hidden']}); the file was altered") from None
    net.to(device)
    return evaluate(net, built_task, split, device)


def load_model(path) -> tuple[nn.Module, dict]:
    """(recurrent layer, config) from a run folder (its best checkpoint) or a checkpoint file."""
    path = Path(path)
    if path.is_dir():
        path = path / "checkpoints" / "best.pt" if (path / "checkpoints" / "best.pt").exists() \
            else path / "checkpoints" / "last.pt"
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
