"""A run's configuration: the options, their defaults, how a preset and explicit options combine, and
their checks.

A configuration is a plain dict (saved as a run's ``config.json``).  Adding a training option is one
entry in :data:`DEFAULTS`, its check in :func:`validate`, and one flag in :mod:`nnrnn.cli`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from . import presets
from .errors import OptionError, UserError
from .models import model_class
from .models.init import check_scheme
from .parametrizations import TRIANGULAR
from .tasks import task_class

DEFAULTS = {
    "task": "copy",
    "model": "nnrnn",
    "out": "runs/copy-nnrnn",
    "seed": 0,
    "hidden": 128,
    "nonlinearity": None,      # None: the model's default (modReLU for the non-gated models)
    "init": None,              # None: the model's default orthogonal scheme (LSTM: xavier or concat)
    "capacity": None,          # EURNN layers; None: hidden // 2
    "triangular": None,        # nnRNN's T: "strict" (paper, default) or "block"
    "schur_gates": None,       # nngru: W_hr and W_hz in Schur form too (None: False, only W_hn)
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
DEFAULT_STEPS = {"copy": 3000, "adding": 3000}  # tasks without epochs, when neither steps nor epochs is given
LR_SCHEDULES = ("none", "plateau")
# Options that may change between an interrupted run and its --resume.
RESUMABLE = {"eval_batch_size", "steps", "epochs", "log_every", "eval_every", "checkpoint_every", "progress", "device",
             "max_bad_steps", "data_dir", "check_inputs", "stop_after_halvings"}
POSITIVE_INTEGERS = ("hidden", "batch_size", "eval_batch_size", "T", "bptt", "steps", "epochs", "log_every",
                     "eval_every", "checkpoint_every", "max_bad_steps", "capacity", "stop_after_halvings",
                     "rebase_every")


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
        raise OptionError(f"unknown option(s) {', '.join(sorted(unknown))}")
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
    """OptionError naming the first option of ``config`` whose value cannot be used."""
    for key in POSITIVE_INTEGERS:
        value = config.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise OptionError(f"{key} must be a positive integer; got {value!r}")
    seed = config["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 63:
        raise OptionError(f"seed must be a non-negative integer below 2**63; got {seed!r}")
    for key in ("lr", "lr_orth"):
        if not (_number(config[key]) and config[key] > 0):
            raise OptionError(f"{key} must be a positive finite number; got {config[key]!r}")
    for key in ("delta", "t_decay", "clip"):
        if not (_number(config[key]) and config[key] >= 0):
            raise OptionError(f"{key} must be zero or a positive finite number; got {config[key]!r}")
    betas = config["betas"]
    if not (isinstance(betas, (list, tuple)) and len(betas) == 2 and all(_number(b) and 0 <= b < 1 for b in betas)):
        raise OptionError(f"betas must be two numbers in [0, 1); got {betas!r}")
    if config["steps"] and config["epochs"]:
        raise OptionError("give --steps or --epochs, not both")
    if config["epochs"] and not task_class(config["task"]).has_data_files:
        raise OptionError(f"epochs needs a task with a fixed training set; {config['task']} draws fresh batches "
                          f"each update, so give --steps")
    check_device(config["device"])
    if config["optimizer"] not in ("rmsprop", "adam"):
        raise OptionError(f"optimizer must be 'rmsprop' or 'adam'; got {config['optimizer']!r}")
    if not (_number(config["alpha"]) and 0 <= config["alpha"] < 1):
        raise OptionError(f"alpha must be in [0, 1); got {config['alpha']!r}")
    if config["lr_schedule"] not in LR_SCHEDULES:
        raise OptionError(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}; got {config['lr_schedule']!r}")
    model = model_class(config["model"])
    if config["rebase_every"] and "dynamic" not in model.CONFIG_OPTIONS:
        raise OptionError(f"rebase_every moves the base of an orthogonal factor: nnrnn and exprnn have one, "
                          f"{config['model']} does not")
    if config["init"] is not None and "init" in model.CONFIG_OPTIONS and config["init"] not in model.INITS:
        raise OptionError(f"init must be one of {', '.join(model.INITS)} for {config['model']}; "
                          f"got {config['init']!r}")
    allowed = getattr(model, "NONLINEARITIES", None)  # a model that takes fewer than the common four says so
    if config["nonlinearity"] is not None and allowed is not None \
            and (None if config["nonlinearity"] == "none" else config["nonlinearity"]) not in allowed:
        names = ", ".join("none" if a is None else a for a in allowed)
        raise OptionError(f"nonlinearity must be one of {names} for {config['model']}; got {config['nonlinearity']!r}")
    if config["stop_after_halvings"] and config["lr_schedule"] != "plateau":
        raise OptionError("stop_after_halvings needs lr_schedule plateau (it counts that schedule's halvings)")
    if config["shuffle"] not in ("epoch", "fixed"):
        raise OptionError(f"shuffle must be 'epoch' or 'fixed'; got {config['shuffle']!r}")
    if config.get("schur_gates") is not None:  # .get: configs saved before the option existed
        if not isinstance(config["schur_gates"], bool):
            raise OptionError(f"schur_gates must be true or false; got {config['schur_gates']!r}")
        if config["schur_gates"] and "schur_gates" not in model.CONFIG_OPTIONS:
            raise OptionError(f"schur_gates puts a GRU's reset and update gates in Schur form: nngru has them, "
                              f"{config['model']} does not")
    if config["triangular"] not in (None, *TRIANGULAR):
        raise OptionError(f"triangular must be 'strict' or 'block'; got {config['triangular']!r}")
    if not isinstance(config["bias"], bool):
        raise OptionError(f"bias must be true or false; got {config['bias']!r}")
    for key in ("input_init", "bias_init", "readout_init", "readout_bias_init"):
        if config[key] is not None:
            try:
                check_scheme(key, config[key])
            except ValueError as error:
                raise OptionError(str(error)) from None
    embedding = config["embedding"]
    if embedding is not None and (isinstance(embedding, bool) or not isinstance(embedding, int) or embedding < 0):
        raise OptionError(f"embedding must be a non-negative integer (0: one-hot inputs); got {embedding!r}")


def model_options(config: dict) -> dict:
    """The options of ``config`` that the chosen model's constructor takes (its ``CONFIG_OPTIONS``)."""
    cls = model_class(config["model"])
    options = {k: config[k] for k in cls.CONFIG_OPTIONS if k != "dynamic" and config.get(k) is not None}
    if config.get("rebase_every"):
        options["dynamic"] = True
    return options


def check_device(name) -> torch.device:
    """The device ``name`` stands for; UserError if it is not one or is not present here."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise OptionError(f"--device {name!r} is not a device; use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UserError(f"--device {name}: no CUDA device is available to this torch ({torch.__version__}); "
                            f"use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UserError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                            f"numbered from 0")
    elif device.type != "cpu":
        raise OptionError(f"--device {name}: nnrnn trains on cpu or cuda; use one of those")
    return device


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
    storage = 4 * (3 * config["hidden"] ** 2 + 4 * config["hidden"])  # weight_hh (+ T, P's skew log), float32
    needed = 4 * storage  # parameter, gradient and two optimizer buffers
    if needed > available:
        raise UserError(f"--hidden {config['hidden']} needs at least {needed / 2 ** 30:,.0f} GiB of memory for its "
                        f"parameters and training state; {available / 2 ** 30:,.1f} GiB are available; lower --hidden")


def total_steps(config: dict, task) -> int:
    """Updates the run trains for: --steps, else --epochs × the task's updates per epoch, else one epoch, else
    the task's default."""
    if config["steps"]:
        return config["steps"]
    if config["epochs"]:
        if task.steps_per_epoch is None:
            raise OptionError(f"--epochs needs a task with a fixed training set; {task.name} draws fresh "
                              f"batches each update, so give --steps")
        return config["epochs"] * task.steps_per_epoch
    if task.steps_per_epoch is not None:
        return task.steps_per_epoch  # one epoch
    return DEFAULT_STEPS.get(task.name, 1000)


def evaluation_interval(config: dict, task) -> int:
    """Updates between validations: --eval-every, else once per epoch, else every 250 updates (tasks that draw
    fresh batches)."""
    return config["eval_every"] or task.steps_per_epoch or 250


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
    """The configuration saved in ``folder``; UserError naming the first option that differs from ``config``
    and may not change on resume."""
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
