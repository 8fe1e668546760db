"""Every training option, once: :data:`OPTIONS`, a table from which the rest is made.

Each row gives an option's configuration key (a run's ``config.json`` key, and the ``dest`` of its flag), its
default, its command-line form (type, choices, flag, ``nargs``), its help line, the check of its value alone
and whether it may change on ``--resume``.  From the table come :data:`DEFAULTS`, :data:`RESUMABLE`,
:func:`flag` (an option's flag, for messages), :func:`check_values` (the checks ``validate`` runs first) and
:func:`add_arguments` (the ``nnrnn train`` parser's options, the one place they are declared) and
:func:`add_option` (one of them, for another command: ``nnrnn sweep``'s options held fixed).  Checks that
relate several options (a model and its ``init``, ``--steps`` and ``--epochs``) are in
:mod:`nnrnn.training.config`.

Adding a training option: one row here (docs/contributing.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from ..errors import OptionError
from ..models import MODELS
from ..models.cornn import DAMPINGS
from ..models.init import check_scheme
from ..models.lru import R_MAX, R_MIN
from ..parametrizations import TRIANGULAR, check_fixed_gamma, parse_t_init
from ..tasks import TASKS
from . import rates
from .outcome import DIVERGENCE_FACTOR, PATIENCE

NONLINEARITIES = ("modrelu", "tanh", "relu", "elu", "none")
OPTIMIZERS = ("rmsprop", "adam")
LR_SCHEDULES = ("none", "plateau", "step")
SHUFFLES = ("epoch", "fixed")
GROUPS = ("model", "optimisation", "data", "logging")  # the train command's option groups, in its help's order
NO_VALUE = object()  # a flag that takes a value, rather than storing a constant
DEFAULT_EMBEDDING = 200  # the paper's code embeds PTB characters in 200 dimensions (--embedding left out)


# --------------------------------------------------------------------------- checks of one value
# Each takes (key, value) and raises an OptionError naming the option and what it takes.

def _number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def positive_integer(key, value) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise OptionError(f"{key} must be a positive integer; got {value!r}")


def seed(key, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 63:
        raise OptionError(f"{key} must be a non-negative integer below 2**63; got {value!r}")


def positive_number(key, value) -> None:
    if not (_number(value) and value > 0):
        raise OptionError(f"{key} must be a positive finite number; got {value!r}")


def share_of_baseline(key, value) -> None:
    if value is not None and not (_number(value) and 0 < value <= 1):
        raise OptionError(f"{key} must be in (0, 1]; got {value!r}")


def non_negative_number(key, value) -> None:
    if not (_number(value) and value >= 0):
        raise OptionError(f"{key} must be zero or a positive finite number; got {value!r}")


def unit_interval(key, value) -> None:
    if not (_number(value) and 0 <= value < 1):
        raise OptionError(f"{key} must be in [0, 1); got {value!r}")


def closed_unit_interval(key, value) -> None:
    if not (_number(value) and 0 <= value <= 1):
        raise OptionError(f"{key} must be a number in [0, 1]; got {value!r}")


def optional(check: Callable) -> Callable:
    """``check`` for a value that may also be None (the model's own default)."""
    return lambda key, value: None if value is None else check(key, value)


def betas(key, value) -> None:
    if not (isinstance(value, (list, tuple)) and len(value) == 2 and all(_number(b) and 0 <= b < 1 for b in value)):
        raise OptionError(f"{key} must be two numbers in [0, 1); got {value!r}")


def embedding(key, value) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise OptionError(f"{key} must be a non-negative integer (0: one-hot inputs); got {value!r}")


def one_of(*choices) -> Callable:
    """A check that the value is one of ``choices`` (None passes where None is among them)."""
    named = [c for c in choices if c is not None]
    said = " or ".join(repr(c) for c in named) if len(named) == 2 else f"one of {', '.join(map(str, named))}"

    def check(key, value) -> None:
        if value not in choices:
            raise OptionError(f"{key} must be {said}; got {value!r}")
    return check


def boolean(key, value) -> None:
    if not isinstance(value, bool):
        raise OptionError(f"{key} must be true or false; got {value!r}")


def optional_boolean(key, value) -> None:
    if value is not None:
        boolean(key, value)


def init_scheme(key, value) -> None:
    if value is not None:
        try:
            check_scheme(key, value)
        except ValueError as error:
            raise OptionError(str(error)) from None


def library_check(function) -> Callable:
    """A check made by a library function that raises TypeError or ValueError for a bad value (None passes)."""
    def check(key, value) -> None:
        if value is not None:
            try:
                function(value)
            except (TypeError, ValueError) as error:
                raise OptionError(str(error)) from None
    return check


def device_name(key, value) -> None:
    """A device nnrnn can train on, by its name alone (whether this machine has it is
    :func:`nnrnn.training.resources.check_device`'s question, asked when the run starts)."""
    if value == "auto":
        return
    try:
        device = torch.device(value)
    except (RuntimeError, TypeError):
        raise OptionError(f"--device {value!r} is not a device; use auto, cpu, cuda or cuda:N") from None
    if device.type not in ("cpu", "cuda"):
        raise OptionError(f"--device {value}: nnrnn trains on cpu or cuda; use one of those")
    if device.type == "cpu" and device.index not in (None, 0):
        raise OptionError(f"--device {value}: there is one cpu device; use --device cpu")


# --------------------------------------------------------------------------- the table

@dataclass(frozen=True)
class Option:
    name: str                  # the configuration key, and the dest of its flag
    default: object
    help: str
    group: str | None = None   # one of GROUPS; None: the train command places it itself (task, model, out)
    type: Callable | None = None
    choices: tuple | None = None
    check: Callable | None = None  # check(key, value): an OptionError for a value that cannot be used
    resumable: bool = False    # may change between an interrupted run and its --resume
    optimizer: str | None = None  # the one optimizer that reads it (an option given for another is refused)
    flag: str | None = None    # when not --name-with-dashes ("task": a positional argument)
    const: object = NO_VALUE   # a flag that stores this constant (--no-bias: False)
    nargs: int | None = None
    metavar: str | None = None
    # the value a run had whose configuration was saved before the option existed (NO_VALUE: the default)
    before: object = NO_VALUE


O = Option
OPTIONS = (
    O("task", "copy", f"the task: {', '.join(TASKS)}", flag="task"),
    O("model", "nnrnn", f"the recurrent model: {', '.join(MODELS)}"),
    O("out", "runs/copy-nnrnn", "run folder (default: runs/TASK-MODEL)"),
    # model
    O("hidden", 128, "hidden units (of each layer)", "model", int, check=positive_integer),
    O("num_layers", 1, "recurrent layers stacked, each --hidden units wide (the read-out reads the last)", "model", int,
      check=positive_integer),
    O("nonlinearity", None, "the recurrence's nonlinearity (default: the model's, modrelu for the non-gated "
      "models)", "model", choices=NONLINEARITIES),
    O("init", None, "initialisation scheme, each model's own (its class's INITS): orthogonal ones (henaff, cayley, "
      "random); LSTM: xavier, concat or chrono; GRU: xavier, torch or chrono; nnrnn-complex: random (Haar P) or "
      "identity; rnn, lstm, gru: chain:ALPHA or fbchain:BETA, Orhan & Pitkow's chains (default: the model's own)",
      "model", metavar="INIT"),
    O("chrono_tmax", None, "lstm, gru with --init chrono: T_max, the gate biases drawn as log U(1, T_max − 1) "
      "(Tallec & Ollivier 2018; default: the task's sequence length)", "model", float,
      check=optional(positive_number), metavar="T"),
    O("dt", None, "coRNN, LEM: the time step Δt (default: the model's, 0.076 and 1)", "model", float,
      check=optional(positive_number)),
    O("gamma", None, "coRNN: γ, its oscillators' stiffness (default 0.4)", "model", float,
      check=optional(positive_number)),
    O("epsilon", None, "coRNN: ε, their damping (default 8)", "model", float, check=optional(positive_number)),
    O("damping", None, "coRNN: explicit (its released code's step, default) or implicit (its paper's eq. 3)",
      "model", choices=DAMPINGS, check=one_of(None, *DAMPINGS), before="implicit"),
    O("r_min", None, f"LRU: |λ| starts in the ring [r_min, r_max] (default {R_MIN})", "model", float,
      check=optional(closed_unit_interval)),
    O("r_max", None, f"LRU: the ring's outer radius (default {R_MAX})", "model", float,
      check=optional(closed_unit_interval)),
    O("capacity", None, "EURNN layers (default: hidden // 2)", "model", int, check=positive_integer),
    O("triangular", None, "nnRNN's T: strict (the paper's, default), block (eigenvalues stay γe^{±iθ}) or none "
      "(T = 0: V normal, no non-normal part)", "model", choices=TRIANGULAR, check=one_of(None, *TRIANGULAR)),
    O("fixed_gamma", None, "nnRNN: hold every gamma at G instead of training it (needs --delta 0)", "model", float,
      check=library_check(check_fixed_gamma), metavar="G"),
    O("t_init", None, "nnRNN's T at start: zeros (default) or delay:ALPHA", "model", check=library_check(parse_t_init),
      metavar="INIT"),
    O("schur_gates", None, "nngru: the reset and update gates' recurrent matrices in Schur form too (not only "
      "W_hn)", "model", check=optional_boolean, const=True),
    O("bias", True, "no input bias b in φ(Vh + W_ih x + b) (the paper's code has none for nnRNN and expRNN)", "model",
      check=boolean, flag="--no-bias", const=False),
    O("input_init", None, "W_ih: xavier, kaiming, uniform (torch.nn.Linear's), uniform:A or zeros (default: the "
      "model's, xavier)", "model", check=init_scheme, metavar="SCHEME"),
    O("bias_init", None, "input bias b: a scheme as above (default: the model's, zeros)", "model", check=init_scheme,
      metavar="SCHEME"),
    O("readout_init", "xavier", "read-out weight: a scheme as above", "model", check=init_scheme, metavar="SCHEME"),
    O("readout_bias_init", "zeros", "read-out bias: a scheme as above", "model", check=init_scheme,
      metavar="SCHEME"),
    O("state_noise", None, "σ: Gaussian noise of standard deviation σ added to the recurrent state after every step, "
      "in training and evaluation (not the paper's; default: none)", "model", float,
      check=optional(non_negative_number), metavar="SIGMA"),
    O("embedding", None, f"ptb: embedding size (default {DEFAULT_EMBEDDING}; 0: one-hot inputs)", "model", int,
      check=embedding),
    # optimisation
    O("optimizer", "rmsprop", "the optimizer", "optimisation", choices=OPTIMIZERS, check=one_of(*OPTIMIZERS)),
    # without --lr, --lr-orth or a preset a run takes the task's and model's rates (training/rates.py); 1e-3 and
    # 1e-4 stay the table's defaults, which a grid's run names leave out
    O("lr", 1e-3, f"learning rate (of every parameter but the orthogonal factor; default: {rates.describe()})",
      "optimisation", float, check=positive_number),
    O("lr_orth", 1e-4, f"learning rate of the orthogonal factor (default: {rates.describe('lr_orth')})",
      "optimisation", float, check=positive_number),
    O("rebase_every", None, "nnrnn, exprnn: dynamic trivialization, move P's base every K updates (not the "
      "paper's)", "optimisation", int, check=positive_integer, metavar="K"),
    O("alpha", 0.99, "RMSprop smoothing", "optimisation", float, check=unit_interval, optimizer="rmsprop"),
    O("betas", [0.9, 0.999], "Adam betas", "optimisation", float, check=betas, optimizer="adam", nargs=2),
    O("delta", 0.0, "nnRNN: weight of the penalty on (1 - gamma)^2", "optimisation", float,
      check=non_negative_number),
    O("t_decay", 0.0, "nnRNN: weight decay on T (its gradient gains t_decay·T)", "optimisation", float,
      check=non_negative_number),
    O("clip", 0.0, "max gradient norm (0: off)", "optimisation", float, check=non_negative_number),
    O("lr_schedule", "none", "plateau: halve every learning rate after a validation that did not improve (ptb "
      "presets); step: divide them by 10 every --lr-step-epochs epochs (coRNN's and LEM's psMNIST and sMNIST)",
      "optimisation", choices=LR_SCHEDULES, check=one_of(*LR_SCHEDULES)),
    O("lr_step_epochs", None, "with --lr-schedule step: the epochs between two divisions by 10 (default 100)",
      "optimisation", int, check=positive_integer, metavar="E"),
    O("stop_after_halvings", None, "with --lr-schedule plateau: stop once the learning rates were halved K times",
      "optimisation", int, check=positive_integer, resumable=True, metavar="K"),
    O("stop_when_solved", None, "stop once the validation loss is below F times the task's baseline loss (the "
      "loss of the best memoryless prediction) at two validations in a row; the outcome records the update",
      "optimisation", float, check=share_of_baseline, metavar="F"),
    O("seed", 0, "seed of the initial parameters and the data", "optimisation", int, check=seed),
    O("steps", None, "total updates (default: from --epochs, else the task's)", "optimisation", int,
      check=positive_integer, resumable=True),
    O("epochs", None, "total epochs (psmnist, ptb)", "optimisation", int, check=positive_integer, resumable=True),
    # data
    O("batch_size", None, "sequences per update (default: the task's)", "data", int, check=positive_integer),
    O("eval_batch_size", None, "psmnist: images per evaluation batch; ptb: parallel evaluation streams", "data", int,
      check=positive_integer, resumable=True),
    O("T", None, "copy/adding sequence length (default: the task's)", "data", int, check=positive_integer,
      flag="--T"),
    O("bptt", 150, "PTB truncation length (150 or 300 in the paper)", "data", int, check=positive_integer),
    O("permute", True, "psmnist: sequential MNIST, no permutation", "data", flag="--no-permute", const=False),
    O("shuffle", "epoch", "psmnist: a new training order each epoch or the same order every epoch", "data",
      choices=SHUFFLES, check=one_of(*SHUFFLES)),
    O("data_dir", None, "folder with the data files (default: NNRNN_DATA, then nnrnn's usual places; docs/data.md)",
      "data", resumable=True),
    O("check_inputs", False, "stop with an error on NaN or Inf inputs", "data", resumable=True, const=True),
    # logging
    O("log_every", 50, "updates between training points in metrics.jsonl", "logging", int, check=positive_integer,
      resumable=True),
    O("eval_every", None, "updates between validations (default: once per epoch; 250 for copy and adding)",
      "logging", int, check=positive_integer, resumable=True),
    O("checkpoint_every", None, "updates between saves of checkpoints/last.pt (default: at every validation)",
      "logging", int, check=positive_integer, resumable=True),
    O("max_bad_steps", 20, "stop after this many updates in a row with a non-finite loss or gradient", "logging",
      int, check=positive_integer, resumable=True),
    O("divergence_factor", DIVERGENCE_FACTOR, f"the run has diverged, and stops (exit code 3), when {PATIENCE} "
      "logged losses in a row are above this many times the largest of the task's baseline, chance and the "
      "untrained model's loss; 0: only non-finite losses (docs/training.md)", "logging", float,
      check=non_negative_number, resumable=True, metavar="F"),
    O("threads", None, "CPU threads (default: OMP_NUM_THREADS, else the cores free to this process: those it may "
      "run on less those busy with other work; more threads than free cores slows training down many times, "
      "docs/training.md)", "logging", int, check=positive_integer, resumable=True, metavar="N"),
    O("device", "auto", "auto, cpu, cuda, cuda:1 ...", "logging", check=device_name, resumable=True),
    O("cuda_graph", True, "on CUDA, run every update eagerly instead of replaying it from a CUDA graph", "logging",
      check=boolean, resumable=True, flag="--no-cuda-graph", const=False),
    O("progress", True, "no progress bar (the line after each validation and the summary still print)", "logging",
      resumable=True, flag="--no-progress", const=False),
)
del O

BY_NAME = {option.name: option for option in OPTIONS}
DEFAULTS = {option.name: option.default for option in OPTIONS}
RESUMABLE = frozenset(option.name for option in OPTIONS if option.resumable)
# a configuration saved before an option existed: what its run had, where that is not the option's default
BEFORE = {option.name: option.before for option in OPTIONS if option.before is not NO_VALUE}


def flag(key: str) -> str:
    """The command-line flag of configuration key ``key``."""
    option = BY_NAME.get(key)
    if option is not None and option.flag and option.flag.startswith("-"):
        return option.flag
    return "--" + key.replace("_", "-")  # also for the positional task: what --resume's messages have said


def check_values(config: dict) -> None:
    """Each option's own check, in the table's order; the first bad value is an OptionError naming it.  An
    option a saved configuration lacks (it predates the option) is checked at its default."""
    for option in OPTIONS:
        if option.check is not None:
            option.check(called(option.name), config.get(option.name, option.default))


def called(key: str) -> str:
    """How a message names option ``key``: the key, and its flag beside it where the two are spelt differently
    (``num_layers (--num-layers)``), so that a command-line user and a caller of the library both recognise it."""
    shown = flag(key)
    return key if shown == "--" + key else f"{key} ({shown})"


def saved_options(saved: dict) -> dict:
    """A saved configuration ``saved`` with the options it predates at the values its run had (:data:`BEFORE`;
    the others stay absent, at their defaults)."""
    return {**BEFORE, **saved}


def add_arguments(parser, groups: dict | None = None) -> None:
    """The options of the table, as ``parser``'s arguments: ``task`` positional, ``model`` and ``out`` on the
    parser itself, the rest in their groups (``groups`` maps a group's name to an argument group of ``parser``;
    made here when not given).  argparse's own defaults stay None, so that what the user typed can be told from
    what was left out; the help line shows the table's default."""
    groups = groups or {name: parser.add_argument_group(name) for name in GROUPS}
    for option in OPTIONS:
        add_option(parser if option.group is None else groups[option.group], option)


def add_option(where, option: Option, help: str | None = None) -> None:
    """``option`` as an argument of ``where`` (a parser or an argument group), its flag, type, choices and
    default as the table gives them; ``help`` in place of the table's help line (another command's wording,
    ``nnrnn sweep``'s "per trial").  argparse's default stays None (see :func:`add_arguments`)."""
    text = option.help if help is None else help
    if option.flag == option.name:  # positional
        where.add_argument(option.name, help=text)
        return
    shown = " ".join(map(str, option.default)) if isinstance(option.default, list) else option.default
    if not (option.default is None or option.const is not NO_VALUE or "default" in text):
        text = f"{text} (default: {shown})"
    if option.const is not NO_VALUE:
        where.add_argument(flag(option.name), dest=option.name, action="store_const", const=option.const, help=text)
    else:
        where.add_argument(flag(option.name), dest=option.name, type=option.type,
                           choices=list(option.choices) if option.choices else None, nargs=option.nargs,
                           metavar=option.metavar, help=text)
