"""The ``nnrnn`` command: :data:`COMMANDS`, the one table of its commands, and the start that parses before
importing torch.

This package is not :mod:`nnrnn`: ``import nnrnn`` imports torch (as any library built on torch does), so the
command's entry point lives beside it and imports nnrnn only for the command it runs.  ``nnrnn --help`` and
``--version`` read this table and import nothing else.  Each command is a module of :mod:`nnrnn.commands`
with ``add_arguments(parser)`` (its options and its description) and ``main(args) -> int`` (the exit
code); its help line is the table's.  A command's parser gets its options when it is used (parsed, or its
help shown): that is when its module, and torch, are imported.

Errors nnrnn expects (:class:`nnrnn.errors.NnrnnError`: a user's mistake, a diverged run, an interrupt)
print one line on stderr and exit with the error's code, 2 for a user's mistake (set NNRNN_DEBUG=1 for the
traceback); anything else is a bug in nnrnn and keeps its traceback.
"""
from __future__ import annotations

import argparse
import difflib
import importlib
import importlib.metadata
import os
import signal
import sys
import threading

NOT_INSTALLED = "unknown (not installed: pip install -e .)"

# name: (module of nnrnn.commands, help line).  The order is the order `nnrnn --help` lists them in.
COMMANDS = {
    "train": ("train", "train a model on a task"),
    "eval": ("eval", "evaluate a run's best checkpoint"),
    "runs": ("runs", "list the runs in folders, with their results"),
    "presets": ("presets", "list the hyperparameter presets"),
    "kernels": ("kernels", "show the kernel policy: which kernels run here and why (--tune SIZES: time them now)"),
    "data": ("data", "download the data sets (MNIST, Penn Treebank characters)"),
    "sweep": ("sweep", "search hyperparameters with Optuna"),
    "theory": ("theory", "reproduce the paper's theory: Table 3, Figure 1(b, c), Propositions 1 and 2"),
    "analyze": ("analyze", "figures and summary.json of a trained model's recurrent matrix"),
    "reproduce": ("reproduce", "run the paper's grid at a scale and write report.md"),
    "doctor": ("doctor", "check training on a device against float64 on the CPU, and time it"),
}


class UsageError(Exception):
    """A mistake in the command line's words, found while parsing (before nnrnn, and its errors, are imported)."""

    exit_code = 2


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
    """nnrnn's parsers, every one of them (commands and subcommands): one-line errors, defaults in the help,
    and, for a command of :data:`COMMANDS`, options defined when it is used (:meth:`defined`)."""

    def __init__(self, *args, formatter_class=DefaultsFormatter, command=None, **kwargs):
        # no abbreviations: --step would silently be --steps, and a later option --stepsize would change its meaning
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, formatter_class=formatter_class, **kwargs)
        self._command = command

    def defined(self) -> Parser:
        """This parser with its command's options: the first call imports the command's module (and torch)."""
        command, self._command = self._command, None
        if command is not None:
            module = importlib.import_module(f"nnrnn.commands.{command}")
            module.add_arguments(self)
            self.set_defaults(handler=module.main)
        return self

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super(Parser, self.defined()).parse_known_args(args, namespace)
        if extras and self.prog != "nnrnn":  # said by the command that did not know it, pointing to its own help
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._did_you_mean(extras)}")
        return namespace, extras

    def _did_you_mean(self, extras: list[str]) -> str:
        """"; did you mean --hidden?" for the first unknown option that is close to one of this parser's."""
        known = [string for action in self._actions for string in action.option_strings]
        for word in extras:
            if word.startswith("-"):
                close = difflib.get_close_matches(word.split("=")[0], known, n=1, cutoff=0.6)
                if close:
                    return f"; did you mean {close[0]}?"
        return ""

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:  # a command's or an option's choices
            choices = [str(choice) for choice in action.choices]
            close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (choose from {', '.join(choices)})")
        super()._check_value(action, value)

    def format_help(self):
        return super(Parser, self.defined()).format_help()

    def format_usage(self):
        return super(Parser, self.defined()).format_usage()

    def error(self, message):  # argparse's usage block is noise; one line says it
        where = "" if self.prog == "nnrnn" else f"{self.prog.removeprefix('nnrnn ')}: "  # main says "nnrnn: error"
        raise UsageError(f"{where}{message} (see {self.prog} --help)")

    def _get_values(self, action, arg_strings):
        # Python before 3.12.7/3.13 drops an option's own value when it is "--" (--n=--), leaving the option
        # the list [] instead of a value (and a TypeError later): read "--" as the value, as newer Pythons do
        if action.option_strings and arg_strings == ["--"] and action.nargs in (None, "?", "*", "+"):
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value if action.nargs in (None, "?") else [value]
        return super()._get_values(action, arg_strings)


def version() -> str:
    """nnrnn's version, read from its package metadata (pyproject.toml's, written there once), so that
    ``--version`` imports no torch; a source tree on PYTHONPATH that was never installed has none."""
    try:
        return importlib.metadata.version("nnrnn")
    except importlib.metadata.PackageNotFoundError:
        return NOT_INSTALLED


def make_parser() -> Parser:
    """The whole command line, from :data:`COMMANDS`; building it imports no command module."""
    parser = Parser(prog="nnrnn", description="Non-normal RNNs and their baselines: train, evaluate, analyse.")
    parser.add_argument("--version", action="version", version=f"nnrnn {version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, (module, text) in COMMANDS.items():
        sub.add_parser(name, help=text, command=module)
    return parser


def _report(exc: BaseException) -> int | None:
    """The exit code after printing an error nnrnn expects (one line), or None for any other exception."""
    if isinstance(exc, UsageError):
        print(f"nnrnn: error: {exc}", file=sys.stderr)
        return exc.exit_code
    dependencies = sys.modules.get("nnrnn.dependencies")  # imported first by nnrnn, as errors is
    missing = dependencies.missing_extra(exc) if dependencies is not None else None
    if missing:  # a package of the cli extra, which `pip install nnrnn` leaves out
        print(f"nnrnn: error: this command needs {missing}, which comes with nnrnn's cli extra: "
              f"pip install 'nnrnn[cli]'", file=sys.stderr)
        return 2
    errors = sys.modules.get("nnrnn.errors")  # an error of nnrnn's own comes from a command that imported nnrnn
    if errors is None or not isinstance(exc, errors.NnrnnError):
        return None
    # from sys.modules: after a failed `import nnrnn` (an older torch) importing nnrnn.environment would fail again
    environment = sys.modules.get("nnrnn.environment") or importlib.import_module("nnrnn.environment")
    if environment.flag("NNRNN_DEBUG") and not isinstance(exc, errors.Interrupted):
        raise exc
    print(errors.one_line(exc), file=sys.stderr)
    return exc.exit_code


def main(argv: list[str] | None = None, started=None) -> int:
    """Parse ``argv`` and run its command; ``started(args)``, if given, is called in between."""
    try:
        args = make_parser().parse_args(argv)
        if started is not None:
            started(args)
        return args.handler(args)
    except KeyboardInterrupt:
        print("nnrnn: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        code = _report(exc)
        if code is None:
            raise
        return code


def _interrupted_at_start(signum, frame) -> None:
    """SIGINT while nnrnn is starting: nothing has been written yet, so leave at once.  Raising
    KeyboardInterrupt instead is not safe there: a library being imported may swallow it (NumPy inside
    torch's import does) and fail later with an unrelated traceback."""
    os.write(2, b"nnrnn: interrupted\n")
    os._exit(130)


def entry(argv: list[str] | None = None) -> None:
    """The ``nnrnn`` command (and ``python -m nnrnn_cli``, ``python -m nnrnn``): :func:`main` in a process of
    its own, whose freed memory is kept for reuse (:func:`nnrnn.kernels.keep_freed_memory`) unless
    NNRNN_KEEP_FREED_MEMORY is 0, false, no or off.  :func:`main` itself leaves the calling process's allocator
    as it is.

    A Ctrl-C during start-up (parsing, which imports the command's module and torch) prints ``nnrnn:
    interrupted`` and exits 130 at once, without a traceback; from then on Ctrl-C is Python's KeyboardInterrupt
    again, which :func:`main` (or here, around it) reports the same way."""
    starting = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _interrupted_at_start) if starting else None

    def started(args) -> None:
        nonlocal starting
        try:
            from nnrnn.environment import flag  # the command's module has imported nnrnn by now
            if flag("NNRNN_KEEP_FREED_MEMORY", default=True):
                from nnrnn.kernels.memory import keep_freed_memory
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
