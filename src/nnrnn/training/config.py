"""A run's configuration: how defaults, a preset and explicit options combine, and the checks that relate several
options.  The options themselves (their defaults, flags, help lines and checks of one value) are the rows of
:data:`nnrnn.training.options.OPTIONS`.

A configuration is a plain dict (saved as a run's ``config.json``).  This module reads no file and probes no
device: a saved run's configuration is read by :mod:`nnrnn.training.runfolder`, the machine by
:mod:`nnrnn.training.resources`.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path

from .. import presets
from ..errors import OptionError, UserError
from ..models import MODELS, model_class
from ..models.init import CHAINS, CHRONO, accepts_init
from ..models.lru import R_MAX, R_MIN
from ..tasks import TASKS, task_class
from .options import BY_NAME, DEFAULTS, RESUMABLE, check_values, flag, saved_options
from .rates import default_rates


def resolve_config(options: dict, preset: str | None = None) -> dict:
    """Defaults, then the preset's values for (task, model) (without a preset, the task's and model's learning
    rates: :func:`nnrnn.training.rates.default_rates`), then explicit ``options``."""
    config = dict(DEFAULTS)
    config.update({k: v for k, v in options.items() if k in ("task", "model", "bptt") and v is not None})
    task_class(config["task"])   # unknown names fail here with the list of valid ones
    model_class(config["model"])
    if preset:
        config.update(presets.lookup(preset, config["task"], config["model"], config["bptt"]))
        config["preset"] = preset
    else:  # the rates that learn on this task with this model, not one rate for all (training/rates.py)
        config.update(default_rates(config["task"], config["model"], config["bptt"]))
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
    reader = BY_NAME[key].optimizer if key in BY_NAME else None
    if reader is not None and config["optimizer"] != reader:
        return f"{flag(key)} applies to --optimizer {reader}, not to {config['optimizer']}"
    return None


def validate(config: dict) -> None:
    """OptionError naming the first option of ``config`` whose value cannot be used: each option's own check
    (:func:`nnrnn.training.options.check_values`), then the checks that relate several."""
    check_values(config)
    _check_length(config)
    _check_model_options(config)


def _check_length(config: dict) -> None:
    """The run's length and its schedule."""
    if config["steps"] and config["epochs"]:
        raise OptionError("give --steps or --epochs, not both")
    if config["epochs"] and not task_class(config["task"]).has_data_files:
        raise OptionError(f"epochs needs a task with a fixed training set; {config['task']} draws fresh batches "
                          f"each update, so give --steps")
    if config["stop_after_halvings"] and config["lr_schedule"] != "plateau":
        raise OptionError("stop_after_halvings needs lr_schedule plateau (it counts that schedule's halvings)")
    if config["lr_step_epochs"] is not None and config["lr_schedule"] != "step":
        raise OptionError("lr_step_epochs needs lr_schedule step (it sets that schedule's epochs)")
    if config["lr_schedule"] == "step" and not task_class(config["task"]).has_data_files:
        raise OptionError(f"lr_schedule step counts epochs, and {config['task']} draws fresh batches each update "
                          "(it has no epochs); use lr_schedule plateau or none")


def _check_model_options(config: dict) -> None:
    """The options the model takes, against what the chosen model accepts."""
    model = model_class(config["model"])
    if config["init"] is not None and "init" in model.CONFIG_OPTIONS and not accepts_init(model.INITS, config["init"]):
        names = ", ".join(f"{i}:GAIN" if i in CHAINS else i for i in model.INITS)
        raise OptionError(f"init must be one of {names} for {config['model']}; got {config['init']!r}")
    r_min, r_max = (R_MIN if config.get("r_min") is None else config["r_min"],
                    R_MAX if config.get("r_max") is None else config["r_max"])
    if r_min >= r_max:
        raise OptionError(f"r_min must be below r_max; got {config.get('r_min')!r} and {config.get('r_max')!r}")
    allowed = model.NONLINEARITIES  # a model that takes fewer than the common four says so
    if config["nonlinearity"] is not None and allowed is not None \
            and (None if config["nonlinearity"] == "none" else config["nonlinearity"]) not in allowed:
        names = ", ".join("none" if a is None else a for a in allowed)
        raise OptionError(f"nonlinearity must be one of {names} for {config['model']}; got {config['nonlinearity']!r}")
    if config.get("chrono_tmax") is not None and "chrono_tmax" in model.CONFIG_OPTIONS and config["init"] != CHRONO:
        raise OptionError(f"chrono_tmax (--chrono-tmax) is T_max of the chrono initialisation; give --init chrono "
                          f"with it, or leave it out (got --init {config['init'] or 'the default'})")
    if config.get("chrono_tmax") is not None and config["chrono_tmax"] <= 2:
        raise OptionError(f"chrono_tmax (--chrono-tmax) must be above 2 (the biases are log U(1, T_max − 1)); "
                          f"got {config['chrono_tmax']!r}")
    if config.get("schur_gates") and "schur_gates" not in model.CONFIG_OPTIONS:  # .get: configs saved before it
        raise OptionError(f"schur_gates puts a GRU's reset and update gates in Schur form: nngru has them, "
                          f"{config['model']} does not")
    if config.get("fixed_gamma") is not None and config["delta"]:
        raise OptionError(f"fixed_gamma holds every gamma at {config['fixed_gamma']}, so delta "
                          f"({config['delta']}) would penalise nothing; give delta 0 (--delta 0)")
    if config.get("triangular") == "none" and config.get("t_init") not in (None, "zeros"):
        raise OptionError(f"t_init {config['t_init']} sets T, and triangular none holds T at zero; give t_init zeros "
                          f"or triangular strict or block (--t-init, --triangular)")


def model_options(config: dict) -> dict:
    """The options of ``config`` that the chosen model's constructor takes (its ``CONFIG_OPTIONS``); with the chrono
    initialisation and no ``chrono_tmax``, T_max is the task's sequence length."""
    cls = model_class(config["model"])
    options = {k: config[k] for k in cls.CONFIG_OPTIONS if k != "dynamic" and config.get(k) is not None}
    if options.get("init") == CHRONO and "chrono_tmax" not in options:  # T_max by default the task's whole sequence
        options["chrono_tmax"] = float(task_class(config["task"]).sequence_length(config))
    if config.get("rebase_every"):
        options["dynamic"] = True
    return options


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


def resume_config(folder: Path, saved: dict | None, typed: dict, preset: str | None = None) -> dict:
    """The configuration a resumed run continues with: ``saved``, the run's own
    (:func:`nnrnn.training.runfolder.saved_run`), with the options typed on the resume line applied where they
    may change (:data:`~nnrnn.training.options.RESUMABLE`).  A typed option that may not change and differs
    from the run's is a UserError naming it, its old and its new value.  ``saved`` None (a folder claimed, then
    stopped before its options were written): a new start with what was typed."""
    if saved is None:
        return resolve_config(typed, preset)
    folder = Path(folder)
    unknown = sorted(set(saved) - set(DEFAULTS) - {"preset"})  # a typo in a hand-edited config.json
    if unknown:
        close = difflib.get_close_matches(unknown[0], DEFAULTS, n=1)
        raise UserError(f"cannot resume {folder}: its saved options hold an unknown option {unknown[0]!r}"
                        + (f"; did you mean {close[0]!r}?" if close else "")
                        + " Correct its config.json or start a new run")
    # options added to nnrnn since the run began: the values the run had (saved_options), else the defaults
    config = {**DEFAULTS, **saved_options(saved), "out": str(folder)}
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
    saved = saved_options(saved)
    for key in sorted(set(saved) | set(config)):
        if key in RESUMABLE or key in ("out", "preset"):
            continue
        if saved.get(key, DEFAULTS.get(key)) != config.get(key, DEFAULTS.get(key)):
            raise UserError(f"cannot resume {where}: option {key} was {saved.get(key)!r} and is now "
                            f"{config.get(key)!r}; use the original value or start a new run")
