"""A run's configuration: the options, their defaults, how a preset and explicit options combine, and
their checks.

A configuration is a plain dict (saved as a run's ``config.json``).  Adding a training option is one
entry in :data:`DEFAULTS`, its check in :func:`validate`, and one flag in :mod:`nnrnn.cli`.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch

from .. import presets
from ..errors import OptionError, UserError
from ..models import MODELS, model_class
from ..models.init import CHAINS, accepts_init, check_scheme
from ..parametrizations import TRIANGULAR, check_fixed_gamma, parse_t_init
from ..tasks import TASKS, task_class
from . import runfolder

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
    "fixed_gamma": None,       # nnRNN: hold every γ_i at this value (supplement Table 7: 1, 0.958); None: trained
    "t_init": None,            # nnRNN's T at initialisation: "zeros" (paper, default) or "delay:ALPHA"
    "schur_gates": None,       # nngru: W_hr and W_hz in Schur form too (None: False, only W_hn)
    "dt": None,                # coRNN, LEM: the time step Δt; None: the model's default
    "gamma": None,             # coRNN: γ, the oscillators' stiffness; None: the model's default
    "epsilon": None,           # coRNN: ε, their damping; None: the model's default
    "r_min": None,             # LRU: |λ| starts uniform in area over the ring [r_min, r_max]; None: 0.9
    "r_max": None,             # None: 0.999
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
    "data_dir": None,          # stored absolute, so that a run can be evaluated from another folder
    "steps": None,             # total updates; None: from epochs, else the task's default
    "epochs": None,
    "log_every": 50,
    "eval_every": None,        # None: once per epoch, or every 250 updates for synthetic tasks
    "checkpoint_every": None,  # None: at every evaluation
    "max_bad_steps": 20,       # stop after this many non-finite losses or gradients in a row
    "check_inputs": False,     # raise on NaN/Inf in input batches
    "cuda_graph": True,        # on CUDA, replay each fixed-shape update from a CUDA graph (training/step.py)
    "device": "auto",
    "progress": True,
}
LR_SCHEDULES = ("none", "plateau")
# Options that may change between an interrupted run and its --resume.
RESUMABLE = {"eval_batch_size", "steps", "epochs", "log_every", "eval_every", "checkpoint_every", "progress", "device",
             "max_bad_steps", "data_dir", "check_inputs", "stop_after_halvings", "cuda_graph"}
OPTIMIZER_OPTIONS = {"alpha": "rmsprop", "betas": "adam"}  # options that only one optimizer reads
FLAGS = {"T": "--T", "bias": "--no-bias", "permute": "--no-permute", "progress": "--no-progress",
         "cuda_graph": "--no-cuda-graph"}
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
    config["data_dir"] = absolute_dir(config["data_dir"])
    validate(config)
    for key in given:
        reason = inapplicable(key, config)
        if reason:
            raise OptionError(reason)
    return config


def absolute_dir(path):
    """``path`` (a folder given on the command line) made absolute against the current folder, ``~`` expanded,
    without following links; None stays None.  A run stores its data folder so: a relative one would be read
    against wherever ``nnrnn eval`` is later run."""
    if path is None or not isinstance(path, (str, os.PathLike)):
        return path  # None, or a value validate refuses
    return os.path.normpath(Path(path).expanduser().absolute())


def flag(key: str) -> str:
    """The command-line flag of configuration key ``key``."""
    return FLAGS.get(key, "--" + key.replace("_", "-"))


def _model_keys(cls) -> tuple[str, ...]:
    """The configuration keys that act on a model of class ``cls``: its constructor's and its training options."""
    return tuple(k for k in cls.CONFIG_OPTIONS + cls.TRAIN_OPTIONS if k != "dynamic")


def inapplicable(key: str, config: dict) -> str | None:
    """Why option ``key``, given explicitly, would not act in ``config``'s run (one sentence naming the option
    and what it applies to), or None when it acts.  :func:`resolve_config` refuses every option given explicitly
    that does not act, whatever its value; options a preset sets are not checked (a preset covers several
    models and tasks)."""
    task, model = task_class(config["task"]), model_class(config["model"])
    task_keys = {k for name in TASKS for k in task_class(name).CONFIG_OPTIONS}
    if key in task_keys and key not in task.CONFIG_OPTIONS:
        users = [name for name in TASKS if key in task_class(name).CONFIG_OPTIONS]
        return f"{flag(key)} applies to the {' and '.join(users)} task{'s' * (len(users) > 1)}, not to {config['task']}"
    model_keys = {k for cls in MODELS.values() for k in _model_keys(cls)}
    if key in model_keys and key not in _model_keys(model):
        users = [name for name, cls in MODELS.items() if key in _model_keys(cls)]
        return f"{flag(key)} applies to {', '.join(users)}, not to {config['model']}"
    if key in OPTIMIZER_OPTIONS and config["optimizer"] != OPTIMIZER_OPTIONS[key]:
        return f"{flag(key)} applies to --optimizer {OPTIMIZER_OPTIONS[key]}, not to {config['optimizer']}"
    return None


def _number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def validate(config: dict) -> None:
    """OptionError naming the first option of ``config`` whose value cannot be used."""
    _check_numbers(config)
    _check_schedule(config)
    _check_model_options(config)


def _check_numbers(config: dict) -> None:
    """The options that are numbers: integers, rates, penalties, betas."""
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
    embedding = config["embedding"]
    if embedding is not None and (isinstance(embedding, bool) or not isinstance(embedding, int) or embedding < 0):
        raise OptionError(f"embedding must be a non-negative integer (0: one-hot inputs); got {embedding!r}")


def _check_schedule(config: dict) -> None:
    """The run's length, device, optimizer, schedule and data order."""
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
    if config["stop_after_halvings"] and config["lr_schedule"] != "plateau":
        raise OptionError("stop_after_halvings needs lr_schedule plateau (it counts that schedule's halvings)")
    if config["shuffle"] not in ("epoch", "fixed"):
        raise OptionError(f"shuffle must be 'epoch' or 'fixed'; got {config['shuffle']!r}")


def _check_model_options(config: dict) -> None:
    """The options the model and its read-out take, against what the chosen model accepts."""
    model = model_class(config["model"])
    if config["init"] is not None and "init" in model.CONFIG_OPTIONS and not accepts_init(model.INITS, config["init"]):
        names = ", ".join(f"{i}:GAIN" if i in CHAINS else i for i in model.INITS)
        raise OptionError(f"init must be one of {names} for {config['model']}; got {config['init']!r}")
    for key in ("dt", "gamma", "epsilon", "r_min", "r_max"):
        value = config.get(key)  # .get: configs saved before these options existed
        if value is not None and not (_number(value) and value > 0 if key in ("dt", "gamma", "epsilon")
                                      else _number(value) and 0 <= value <= 1):
            kind = "a positive finite number" if key in ("dt", "gamma", "epsilon") else "a number in [0, 1]"
            raise OptionError(f"{key} must be {kind}; got {value!r}")
    if (config.get("r_min") or 0.9) >= (config.get("r_max") or 0.999):
        raise OptionError(f"r_min must be below r_max; got {config.get('r_min')!r} and {config.get('r_max')!r}")
    allowed = getattr(model, "NONLINEARITIES", None)  # a model that takes fewer than the common four says so
    if config["nonlinearity"] is not None and allowed is not None \
            and (None if config["nonlinearity"] == "none" else config["nonlinearity"]) not in allowed:
        names = ", ".join("none" if a is None else a for a in allowed)
        raise OptionError(f"nonlinearity must be one of {names} for {config['model']}; got {config['nonlinearity']!r}")
    if config.get("schur_gates") is not None:  # .get: configs saved before the option existed
        if not isinstance(config["schur_gates"], bool):
            raise OptionError(f"schur_gates must be true or false; got {config['schur_gates']!r}")
        if config["schur_gates"] and "schur_gates" not in model.CONFIG_OPTIONS:
            raise OptionError(f"schur_gates puts a GRU's reset and update gates in Schur form: nngru has them, "
                              f"{config['model']} does not")
    if config["triangular"] not in (None, *TRIANGULAR):
        raise OptionError(f"triangular must be 'strict' or 'block'; got {config['triangular']!r}")
    for key, check in (("fixed_gamma", check_fixed_gamma), ("t_init", parse_t_init)):
        if config.get(key) is not None:
            try:
                check(config[key])
            except (TypeError, ValueError) as error:
                raise OptionError(str(error)) from None
    if config.get("fixed_gamma") is not None and config["delta"]:
        raise OptionError(f"fixed_gamma holds every gamma at {config['fixed_gamma']}, so delta "
                          f"({config['delta']}) would penalise nothing; give delta 0 (--delta 0)")
    for key in ("bias", "cuda_graph"):
        if not isinstance(config.get(key, True), bool):  # .get: configs saved before cuda_graph existed
            raise OptionError(f"{key} must be true or false; got {config[key]!r}")
    for key in ("input_init", "bias_init", "readout_init", "readout_bias_init"):
        if config[key] is not None:
            try:
                check_scheme(key, config[key])
            except ValueError as error:
                raise OptionError(str(error)) from None


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
    elif device.index not in (None, 0):
        raise OptionError(f"--device {name}: there is one cpu device; use --device cpu")
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


def check_memory(config: dict, task=None) -> None:
    """UserError, before anything is allocated, when a deliberately low estimate of what training needs does
    not fit in the memory available: the recurrent matrices' n² storage, four copies (parameter, gradient,
    two optimizer buffers), and with ``task`` the activations of one update, three float32 (steps × batch ×
    hidden) blocks (the layer's outputs, their gradient, the pre-activations' gradient), or one for an
    evaluation batch."""
    available = available_memory()
    if available is None:
        return
    n = config["hidden"]
    needed = 4 * 4 * (3 * n ** 2 + 4 * n)  # weight_hh (+ T, P's skew log), float32, four copies
    if needed > available:
        raise UserError(f"--hidden {n} needs at least {needed / 2 ** 30:,.0f} GiB of memory for its "
                        f"parameters and training state; {available / 2 ** 30:,.1f} GiB are available; lower --hidden")
    if task is None:
        return
    (steps, batch), (eval_steps, eval_batch) = task.batch_shapes()
    activations = 4 * n * max(3 * steps * batch, eval_steps * eval_batch)
    if needed + activations > available:
        raise UserError(f"a training update of {batch} sequences of {steps} steps at {n} hidden units (or an "
                        f"evaluation batch of {eval_batch}) needs at least {(needed + activations) / 2 ** 30:,.1f} "
                        f"GiB of memory; {available / 2 ** 30:,.1f} GiB are available; lower --batch-size, "
                        f"--eval-batch-size, the sequence length or --hidden")


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
    return task.default_steps


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


def saved_config(folder: Path) -> dict:
    """The configuration of the run in ``folder``: its last checkpoint's (the state a resume continues), else
    its config.json (a run that died before its first checkpoint); UserError if it has neither."""
    from . import checkpoint
    last = runfolder.last_checkpoint(folder)
    if last.is_file():
        saved = checkpoint.load(last).get("config")
        if not isinstance(saved, dict):
            raise UserError(f"{last} holds no run configuration; it was not written by nnrnn's trainer")
        return saved
    if runfolder.config_file(folder).is_file():
        return read_config(runfolder.config_file(folder))
    runfolder.check_not_foreign(folder)  # a folder of the user's own: the advice is another --out, not a new start
    raise UserError(f"cannot resume: {folder} holds no nnrnn run (no {runfolder.LAST}, no {runfolder.CONFIG}); "
                    f"start the run without --resume")


def resume_config(folder: Path, typed: dict, preset: str | None = None) -> dict:
    """The configuration a resumed run continues with: the run's own (:func:`saved_config`), with the options
    typed on the resume line applied where they may change (:data:`RESUMABLE`).  A typed option that may not
    change and differs from the run's is a UserError naming it, its old and its new value."""
    folder = Path(folder)
    if folder.is_dir() and not any((folder / name).is_file() for name in (runfolder.LAST, runfolder.CONFIG)) \
            and (folder / runfolder.MARKER).is_file():
        return resolve_config(typed, preset)  # claimed, then stopped before its options were written: a new start
    saved = saved_config(folder)
    config = {**DEFAULTS, **saved, "out": str(folder)}  # options added to nnrnn since the run began: defaults
    if preset is not None and preset != saved.get("preset"):
        raise UserError(f"cannot resume {folder}: --preset was {saved.get('preset')!r} and is now {preset!r}; "
                        f"leave --preset out (a resumed run keeps its options) or start a new run")
    lengths = {"steps", "epochs"} & set(typed)
    if len(lengths) == 1:  # one length replaces the other, as for a new run
        config[({"steps", "epochs"} - lengths).pop()] = None
    for key, value in typed.items():
        if key == "out":
            continue
        if key in RESUMABLE:
            config[key] = absolute_dir(value) if key == "data_dir" else value
        elif config.get(key) != value:
            raise UserError(f"cannot resume {folder}: {flag(key)} was {config.get(key)!r} and is now {value!r}; "
                            f"on --resume only {', '.join(flag(k) for k in sorted(RESUMABLE))} may change, so "
                            f"leave it out or start a new run")
    validate(config)
    return config


def check_resumable(saved: dict, config: dict, where: Path) -> None:
    """UserError naming the first option that differs between a checkpoint's configuration ``saved`` and the
    resumed run's ``config`` and may not change on resume."""
    for key in sorted(set(saved) | set(config)):
        if key in RESUMABLE or key in ("out", "preset"):
            continue
        if saved.get(key, DEFAULTS.get(key)) != config.get(key, DEFAULTS.get(key)):
            raise UserError(f"cannot resume {where}: option {key} was {saved.get(key)!r} and is now "
                            f"{config.get(key)!r}; use the original value or start a new run")
