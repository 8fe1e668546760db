"""The ``nnrnn`` command line: train, eval, runs, presets, kernels, data, sweep, theory, analyze, reproduce, doctor.

Errors nnrnn expects (:class:`nnrnn.errors.NnrnnError`: a user's mistake, a diverged run, an interrupt)
print one line on stderr and exit with the error's code, 2 for a user's mistake (set NNRNN_DEBUG=1 for the
traceback); anything else is a bug in nnrnn and keeps its traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import textwrap
import threading
from pathlib import Path

from .environment import flag
from .errors import Interrupted, NnrnnError, UserError

class DefaultsFormatter(argparse.HelpFormatter):
    """Help lines end with the option's default where it has one that says something (not None, False or a
    default the help line already states)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (default in (None, False, argparse.SUPPRESS) or "default" in text or action.nargs == 0
                or not (action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE))):
            return text
        shown = " ".join(map(str, default)) if isinstance(default, (list, tuple)) else default
        return f"{text} (default: {shown})".replace("%", "%%") if text else f"(default: {shown})"


class Parser(argparse.ArgumentParser):
    """nnrnn's parsers: one-line errors, defaults in the help, and optionally deferred: a command's parser given
    ``define`` gets its options from ``define(parser)`` when it is used (parsed, or its help shown), since the
    modules that define some commands import torch, which ``nnrnn --help`` and ``--version`` should not wait for."""

    def __init__(self, *args, formatter_class=DefaultsFormatter, define=None, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)
        self._define = define

    def defined(self) -> Parser:
        define, self._define = self._define, None
        if define is not None:
            define(self)
        return self

    def parse_known_args(self, args=None, namespace=None):
        return super(Parser, self.defined()).parse_known_args(args, namespace)

    def format_help(self):
        return super(Parser, self.defined()).format_help()

    def format_usage(self):
        return super(Parser, self.defined()).format_usage()

    def error(self, message):  # argparse's usage block is noise; one line says it
        where = "" if self.prog == "nnrnn" else f"{self.prog.removeprefix('nnrnn ')}: "  # main says "nnrnn: error"
        raise UserError(f"{where}{message} (see {self.prog} --help)")

    def _get_values(self, action, arg_strings):
        # Python before 3.12.7/3.13 drops an option's own value when it is "--" (--n=--), leaving the option
        # the list [] instead of a value (and a TypeError later): read "--" as the value, as newer Pythons do
        if action.option_strings and arg_strings == ["--"] and action.nargs in (None, "?", "*", "+"):
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value if action.nargs in (None, "?") else [value]
        return super()._get_values(action, arg_strings)


class _Into:
    """Stands in for the subparsers object an ``add_*_parser(subparsers)`` function of another module expects:
    its ``add_parser`` hands back the command's deferred parser, given the description it asks for."""

    def __init__(self, parser: Parser):
        self.parser = parser

    def add_parser(self, name, help=None, **kwargs):
        for key, value in kwargs.items():
            setattr(self.parser, key, value)
        return self.parser


# commands whose parser another module defines, and whose modules import torch: (module, function, help).  The
# help line is the one that module gives (tests/test_cli.py checks they agree), here so that `nnrnn --help`
# lists the command without importing its module.
ELSEWHERE = {
    "reproduce": ("nnrnn.experiments.reproduce", "add_reproduce_parser",
                  "run the paper's grid at a scale and write report.md"),
    "doctor": ("nnrnn.doctor", "add_doctor_parser",
               "check training on a device against float64 on the CPU, and time it"),
}


def add_deferred(sub, name: str, help: str, define) -> None:
    sub.add_parser(name, help=help, define=define)


def define_elsewhere(module: str, function: str):
    def define(parser: Parser) -> None:
        import importlib
        getattr(importlib.import_module(module), function)(_Into(parser))
    return define


def add_train_parser(sub) -> None:
    add_deferred(sub, "train", "train a model on a task", define_train_parser)


def define_train_parser(p: Parser) -> None:
    from . import presets
    from .models import MODELS
    from .tasks import TASKS
    from .training.config import DEFAULTS
    p.description = (
        f"Train MODEL on TASK. Options left out come from --preset, then from the defaults shown. Without a "
        f"preset every model trains with those defaults, not with the paper's hyperparameters: nnRNN with lr "
        f"{DEFAULTS['lr']:g}, lr_orth {DEFAULTS['lr_orth']:g}, delta {DEFAULTS['delta']:g}, t_decay "
        f"{DEFAULTS['t_decay']:g} and an input bias; --preset paper gives the paper's (`nnrnn presets`). Prints a "
        f"line after every validation and a summary at the end, then the final metrics as one JSON line.")
    p.add_argument("task", help=f"the task: {', '.join(TASKS)}")
    p.add_argument("--model", help=f"the recurrent model: {', '.join(MODELS)}")
    p.add_argument("--preset", help=f"hyperparameters for (task, model): {', '.join(presets.preset_names())} (each "
                   f"listed by `nnrnn presets`)")
    p.add_argument("--out", help="run folder (default: runs/TASK-MODEL)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from checkpoints/last.pt, with its "
                   "own options (only the length, logging, device and evaluation options may be given again)")
    p.add_argument("--overwrite", action="store_true", help="replace the run in --out (its checkpoints, metrics, "
                   "logs and plots) instead of refusing")
    _add_model_options(p.add_argument_group("model"))
    _add_optimisation_options(p.add_argument_group("optimisation"))
    _add_data_options(p.add_argument_group("data"))
    _add_logging_options(p.add_argument_group("logging"))
    for action in p._actions:  # argparse's own defaults stay None, so that run_train sees what was typed
        default = DEFAULTS.get(action.dest)
        if default is not None and action.option_strings and action.nargs != 0 and "default" not in action.help:
            shown = " ".join(map(str, default)) if isinstance(default, list) else default
            action.help = f"{action.help} (default: {shown})"
    p.set_defaults(func=run_train)


def _add_model_options(g) -> None:
    from .models import MODELS
    g.add_argument("--hidden", type=int, help="hidden units")
    g.add_argument("--nonlinearity", choices=["modrelu", "tanh", "relu", "none"],
                   help="the recurrence's nonlinearity (default: the model's, modrelu for the non-gated models)")
    g.add_argument("--init", choices=list(dict.fromkeys(i for c in MODELS.values() for i in c.INITS)),
                   help="initialisation scheme, each model's own (its class's INITS): orthogonal ones (henaff, "
                        "cayley, random); LSTM: xavier or concat; GRU: xavier or torch; nnrnn-complex: random (Haar "
                        "P) or identity (default: the model's own)")
    g.add_argument("--capacity", type=int, help="EURNN layers (default: hidden // 2)")
    g.add_argument("--triangular", choices=["strict", "block"],
                   help="nnRNN's T: strict (the paper's, default) or block (eigenvalues stay γe^{±iθ})")
    g.add_argument("--fixed-gamma", dest="fixed_gamma", type=float, metavar="G",
                   help="nnRNN: hold every gamma at G instead of training it (needs --delta 0)")
    g.add_argument("--t-init", dest="t_init", metavar="INIT", help="nnRNN's T at start: zeros (default) or delay:ALPHA")
    g.add_argument("--schur-gates", dest="schur_gates", action="store_const", const=True,
                   help="nngru: the reset and update gates' recurrent matrices in Schur form too (not only W_hn)")
    g.add_argument("--no-bias", dest="bias", action="store_const", const=False,
                   help="no input bias b in φ(Vh + W_ih x + b) (the paper's code has none for nnRNN and expRNN)")
    g.add_argument("--input-init", dest="input_init", metavar="SCHEME",
                   help="W_ih: xavier, kaiming, uniform (torch.nn.Linear's), uniform:A or zeros (default: the "
                        "model's, xavier)")
    g.add_argument("--bias-init", dest="bias_init", metavar="SCHEME",
                   help="input bias b: a scheme as above (default: the model's, zeros)")
    g.add_argument("--readout-init", dest="readout_init", metavar="SCHEME", help="read-out weight: a scheme as above")
    g.add_argument("--readout-bias-init", dest="readout_bias_init", metavar="SCHEME",
                   help="read-out bias: a scheme as above")
    g.add_argument("--embedding", type=int, help="ptb: embedding size (default 200; 0: one-hot inputs)")


def _add_optimisation_options(g) -> None:
    g.add_argument("--optimizer", choices=["rmsprop", "adam"], help="the optimizer")
    g.add_argument("--lr", type=float, help="learning rate (of every parameter but the orthogonal factor)")
    g.add_argument("--lr-orth", dest="lr_orth", type=float, help="learning rate of the orthogonal factor")
    g.add_argument("--rebase-every", dest="rebase_every", type=int, metavar="K",
                   help="nnrnn, exprnn: dynamic trivialization, move P's base every K updates (not the paper's)")
    g.add_argument("--alpha", type=float, help="RMSprop smoothing")
    g.add_argument("--betas", type=float, nargs=2, help="Adam betas")
    g.add_argument("--delta", type=float, help="nnRNN: weight of the penalty on (1 - gamma)^2")
    g.add_argument("--t-decay", dest="t_decay", type=float,
                   help="nnRNN: weight decay on T (its gradient gains t_decay·T)")
    g.add_argument("--clip", type=float, help="max gradient norm (0: off)")
    g.add_argument("--lr-schedule", dest="lr_schedule", choices=["none", "plateau"],
                   help="plateau: halve every learning rate after a validation that did not improve (ptb presets)")
    g.add_argument("--stop-after-halvings", dest="stop_after_halvings", type=int, metavar="K",
                   help="with --lr-schedule plateau: stop once the learning rates were halved K times")
    g.add_argument("--seed", type=int, help="seed of the initial parameters and the data")
    g.add_argument("--steps", type=int, help="total updates (default: from --epochs, else the task's)")
    g.add_argument("--epochs", type=int, help="total epochs (psmnist, ptb)")


def _add_data_options(g) -> None:
    g.add_argument("--batch-size", dest="batch_size", type=int, help="sequences per update (default: the task's)")
    g.add_argument("--eval-batch-size", dest="eval_batch_size", type=int,
                   help="psmnist: images per evaluation batch; ptb: parallel evaluation streams")
    g.add_argument("--T", dest="T", type=int, help="copy/adding sequence length (default: the task's)")
    g.add_argument("--bptt", type=int, help="PTB truncation length (150 or 300 in the paper)")
    g.add_argument("--no-permute", dest="permute", action="store_const", const=False,
                   help="psmnist: sequential MNIST, no permutation")
    g.add_argument("--shuffle", choices=["epoch", "fixed"],
                   help="psmnist: a new training order each epoch or the same order every epoch")
    g.add_argument("--data-dir", dest="data_dir",
                   help="folder with the data files (default: NNRNN_DATA, then nnrnn's usual places; docs/data.md)")
    g.add_argument("--check-inputs", dest="check_inputs", action="store_const", const=True,
                   help="stop with an error on NaN or Inf inputs")


def _add_logging_options(g) -> None:
    g.add_argument("--log-every", dest="log_every", type=int, help="updates between training points in metrics.jsonl")
    g.add_argument("--eval-every", dest="eval_every", type=int,
                   help="updates between validations (default: once per epoch; 250 for copy and adding)")
    g.add_argument("--checkpoint-every", dest="checkpoint_every", type=int,
                   help="updates between saves of checkpoints/last.pt (default: at every validation)")
    g.add_argument("--max-bad-steps", dest="max_bad_steps", type=int,
                   help="stop after this many updates in a row with a non-finite loss or gradient")
    g.add_argument("--device", help="auto, cpu, cuda, cuda:1 ...")
    g.add_argument("--no-cuda-graph", dest="cuda_graph", action="store_const", const=False,
                   help="on CUDA, run every update eagerly instead of replaying it from a CUDA graph")
    g.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                   help="no progress bar (the line after each validation and the summary still print)")


def run_train(args) -> int:
    from .training import distributed
    from .training.config import resolve_config, resume_config
    from .errors import OptionError
    from .training.train import train
    if args.resume and args.overwrite:
        raise OptionError("give --resume or --overwrite, not both")
    typed = {k: v for k, v in vars(args).items()  # what the user typed: argparse leaves the rest None
             if k not in ("command", "func", "resume", "overwrite", "preset") and v is not None}
    if typed.get("out") == "":
        raise OptionError("--out must name a folder; got an empty string")
    out = Path(typed.get("out") or f"runs/{args.task}-{typed.get('model', 'nnrnn')}")
    typed["out"] = str(out)
    # a resumed run keeps its own options; only those typed again, and allowed to change, differ
    config = resume_config(out, typed, args.preset) if args.resume else resolve_config(typed, args.preset)
    try:
        result = train(config, resume=args.resume, overwrite=args.overwrite)
    finally:
        distributed.cleanup()
    if result:  # rank 0 only
        print(json.dumps(result))
    return 0


def run_eval(args) -> int:
    from .training import checkpoint
    from .training.network import best_checkpoint
    from .training.train import evaluate_checkpoint
    given = Path(args.run)
    path = best_checkpoint(given) if given.is_dir() else given
    if given.is_dir() and not path.is_file():
        raise UserError(f"no checkpoint at {given}: it holds no checkpoints/best.pt or last.pt, so it is not a run "
                        f"folder (`nnrnn runs {given}` lists the runs inside it)")
    metrics = evaluate_checkpoint(path, split=args.split, data_dir=args.data_dir)
    if args.json:
        print(json.dumps(metrics))
        return 0
    step = checkpoint.load(path).get("step")
    which = {"best.pt": "the best validation score's", "last.pt": "the last"}.get(path.name, "the given")
    print(f"{args.split} split, {which} checkpoint {path}" + (f" (after update {step})" if step is not None else ""))
    print("  ".join(f"{name} {value:.6g}" for name, value in metrics.items()))
    from .kernel_policy import used_line
    print(used_line())
    return 0


def format_value(value) -> str:
    """A preset's or a run's value in a table: floats to 4 significant digits."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return " ".join(map(format_value, value))
    return str(value)


def format_table(header: list[str], rows: list[list[str]], indent: str = "") -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    return [indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in (header, *rows)]


def format_preset(name: str, task: str | None, model: str | None) -> list[str]:
    """Preset ``name``'s tables (those of ``task``, rows of ``model`` when given): per task, the options every
    model shares on one line, then a row per model of the options that differ; [] when none is left."""
    from . import presets
    preset = presets.load(name)
    lines = []
    for table, models in preset.items():
        if table.startswith("_") or (task and table.split("-")[0] != task):
            continue
        variants = {label: options for label, options in preset.get("_variants", {}).get(table, {}).items()}
        rows = {m: o for m, o in models.items() if not model or m == model}
        rows.update({f"{label}*": o for label, o in variants.items() if not model or o["model"] == model})
        if not rows:
            continue
        shared = {k: v for k, v in next(iter(models.values())).items()
                  if all(k in o and o[k] == v for o in (*models.values(), *variants.values()))}
        keys = list(dict.fromkeys(k for o in rows.values() for k in o if k not in shared and k != "model"))
        lines += ["", *textwrap.wrap(f"{table}, every model: " + " ".join(f"{k}={format_value(v)}" for k, v in
                                                                         shared.items()),
                                     width=110, initial_indent="  ", subsequent_indent="    ")]
        cells = [[label, *(format_value(o[k]) if k in o else "-" for k in keys)] for label, o in rows.items()]
        lines += format_table(["model", *keys], cells, indent="    ")
        notes = ["-: not set, so nnrnn train's default"] if any("-" in row for row in cells) else []
        notes += [f"*: a variant, not a model: --model {o['model']} with the options of its row"
                  for label, o in rows.items() if label.endswith("*")][:1]
        lines += [f"    ({'; '.join(notes)})"] if notes else []
    header = textwrap.wrap(f"{name}: {preset.get('_description', '')}", width=110, subsequent_indent="  ")
    return header + lines if lines else []


def run_presets(args) -> int:
    from . import presets
    names = [args.name] if args.name else presets.preset_names()
    shown = [format_preset(name, args.task, args.model) for name in names]
    if not any(shown):
        raise UserError(f"no preset has settings for {' and '.join(filter(None, (args.task, args.model)))}; "
                        f"`nnrnn presets` lists them all")
    print("\n\n".join("\n".join(lines) for lines in shown if lines))
    return 0


def run_runs(args) -> int:
    from .tasks import task_class
    from .training.runlog import find_runs, run_summary
    rows = []
    for folder in args.folders:
        if not Path(folder).is_dir():
            raise UserError(f"no folder {folder}; give folders that hold run folders (such as runs)")
        for run in find_runs(Path(folder)):
            summary = run_summary(run, lambda task: task_class(task).monitor)
            rows.append([str(run), summary["task"], summary["model"], str(summary["hidden"]), str(summary["step"]),
                         summary["best"], summary["test"], summary["status"]])
    if not rows:
        raise UserError(f"no runs in {', '.join(args.folders)} (a run folder holds config.json and metrics.jsonl)")
    print("\n".join(format_table(["run", "task", "model", "hidden", "updates", "best validation", "test",
                                   "status"], rows)))
    return 0


def make_parser() -> Parser:
    """The whole command line.  Building it imports neither torch nor NumPy: the commands that need them
    import them when they run (or, for commands defined elsewhere, when their parser is used)."""
    parser = Parser(prog="nnrnn", description="Non-normal RNNs and their baselines: train, evaluate, analyse.")
    from . import __version__
    parser.add_argument("--version", action="version", version=f"nnrnn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_train_parser(sub)
    p = sub.add_parser("eval", help="evaluate a run's best checkpoint",
                       description="Score a run's best checkpoint (checkpoints/best.pt, the best validation score; "
                                   "last.pt for a run that has none yet) or a given checkpoint file on a split.")
    p.add_argument("run", help="run folder or checkpoint file")
    p.add_argument("--split", default="test", choices=["valid", "test"], help="the split to score")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON object (for scripts)")
    p.add_argument("--data-dir", dest="data_dir",
                   help="the data's folder (default: the run's own, else NNRNN_DATA or the cache; docs/training.md)")
    p.set_defaults(func=run_eval)
    p = sub.add_parser("runs", help="list the runs in folders, with their results",
                       description="A table of the run folders in FOLDER (and below it): task, model, hidden units, "
                                   "updates done, best validation score, test score and whether it finished.")
    p.add_argument("folders", nargs="+", metavar="FOLDER", help="a folder of runs, such as runs, or a run folder")
    p.set_defaults(func=run_runs)
    p = sub.add_parser("presets", help="list the hyperparameter presets",
                       description="The presets' options per task and model (nnrnn/presets/*.json); floats to 4 "
                                   "significant digits.")
    p.add_argument("name", nargs="?", help="one preset (default: all of them)")
    p.add_argument("--task", help="only this task's tables (ptb: both truncation lengths)")
    p.add_argument("--model", help="only this model's rows")
    p.set_defaults(func=run_presets, imports_torch=False)
    p = sub.add_parser("kernels", help="show the kernel policy: which kernels run here and why (compiling the C++ "
                       "loops if they are not yet)")
    p.add_argument("--tune", metavar="SIZES", help="time the choices of an update at these sizes now and print "
                   "them (copy, medium, psmnist, large or TxBxN[xI], comma-separated); the results are cached")
    p.set_defaults(func=run_kernels)
    from .analysis.cli import add_analyze_parser, add_theory_parser
    from .experiments.sweep import add_sweep_parser
    add_deferred(sub, "data", "download the data sets (MNIST, Penn Treebank characters)",
                 define_elsewhere("nnrnn.data.cli", "add_data_parser"))
    add_sweep_parser(sub)
    add_theory_parser(sub)
    add_analyze_parser(sub)
    for name, (module, function, text) in ELSEWHERE.items():
        add_deferred(sub, name, text, define_elsewhere(module, function))
    return parser


def run_kernels(args) -> int:
    from . import kernel_report
    sizes = None
    if args.tune is not None:
        try:
            sizes = kernel_report.parse_sizes(args.tune)
        except ValueError as error:
            raise UserError(f"--tune: {error}") from None
    print("\n".join(kernel_report.lines()))
    if sizes:
        print("\nmeasured now (" + ", ".join(f"{t}x{b}x{n}x{i}" for t, b, n, i in sizes) + "):")
        print("\n".join(kernel_report.tune(sizes)))
    return 0


def main(argv: list[str] | None = None, started=None) -> int:
    """Parse ``argv`` and run its command; ``started(args)``, if given, is called in between."""
    try:
        args = make_parser().parse_args(argv)
        if started is not None:
            started(args)
        return args.func(args)
    except Interrupted as exc:
        print(f"nnrnn: {exc}; {exc.advice}", file=sys.stderr)
        return exc.exit_code
    except NnrnnError as exc:
        if flag("NNRNN_DEBUG"):
            raise
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"nnrnn: error: {message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("nnrnn: interrupted", file=sys.stderr)
        return 130


def _interrupted_at_start(signum, frame) -> None:
    """SIGINT while nnrnn is starting: nothing has been written yet, so leave at once.  Raising
    KeyboardInterrupt instead is not safe there: a library being imported may swallow it (NumPy inside
    torch's import does) and fail later with an unrelated traceback."""
    os.write(2, b"nnrnn: interrupted\n")
    os._exit(130)


def entry(argv: list[str] | None = None) -> None:
    """The ``nnrnn`` command (and ``python -m nnrnn``): :func:`main` in a process of its own, whose freed
    memory is kept for reuse (:func:`nnrnn.kernels.keep_freed_memory`) unless NNRNN_KEEP_FREED_MEMORY is
    0, false, no or off.  :func:`main` itself leaves the calling process's allocator as it is.

    A Ctrl-C during start-up (parsing, then importing torch for a command that needs it, which ``import
    nnrnn`` and the parser do not) prints ``nnrnn: interrupted`` and exits 130 at once, without a traceback;
    from then on Ctrl-C is Python's KeyboardInterrupt again, which :func:`main` (or here, around it) reports
    the same way."""
    starting = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _interrupted_at_start) if starting else None

    def started(args) -> None:
        nonlocal starting
        try:
            if getattr(args, "imports_torch", True):
                import torch  # noqa: F401  (here, where a Ctrl-C exits at once: see _interrupted_at_start)
                if flag("NNRNN_KEEP_FREED_MEMORY", default=True):
                    from .kernels import keep_freed_memory
                    keep_freed_memory()
        finally:
            if starting:
                signal.signal(signal.SIGINT, previous)
                starting = False

    try:
        try:
            code = main(argv, started)
        finally:
            if starting:  # main stopped before the command started (--help, a mistake in the arguments)
                signal.signal(signal.SIGINT, previous)
        sys.stdout.flush()
    except KeyboardInterrupt:  # between start-up and main's own handler, or while it was printing
        print("nnrnn: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:  # output piped into a reader that stopped early, e.g. `nnrnn presets | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the flush at exit fails no more
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    entry()
