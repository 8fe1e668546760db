"""The ``nnrnn`` command line: train, eval, presets, data, sweep, theory, analyze, reproduce, doctor.

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
import threading
from pathlib import Path

from .environment import flag
from .errors import Interrupted, NnrnnError, UserError

class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's usage block is noise; one line says it
        raise UserError(f"{self.prog}: {message} (see {self.prog} --help)")

    def _get_values(self, action, arg_strings):
        # Python before 3.12.7/3.13 drops an option's own value when it is "--" (--n=--), leaving the option
        # the list [] instead of a value (and a TypeError later): read "--" as the value, as newer Pythons do
        if action.option_strings and arg_strings == ["--"] and action.nargs in (None, "?", "*", "+"):
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value if action.nargs in (None, "?") else [value]
        return super()._get_values(action, arg_strings)


def add_train_parser(sub) -> None:
    from . import models
    p = sub.add_parser("train", help="train a model on a task", description="Train MODEL on TASK. "
                       "Options left out come from --preset, then from the defaults in nnrnn/config.py.")
    p.add_argument("task", help="copy, adding, psmnist or ptb")
    p.add_argument("--model", help="rnn, rnn-orth, eurnn, exprnn, nnrnn, lstm, gru, nngru or nnrnn-complex (default nnrnn)")
    p.add_argument("--preset", help="paper (fixed hidden units) or paper-params (fixed parameter count)")
    p.add_argument("--out", help="run folder (default runs/TASK-MODEL)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from checkpoints/last.pt, with its "
                   "own options (only the length, logging, device and evaluation options may be given again)")
    p.add_argument("--overwrite", action="store_true", help="replace the run in --out (its checkpoints, metrics, "
                   "logs and plots) instead of refusing")
    g = p.add_argument_group("model")
    g.add_argument("--hidden", type=int)
    g.add_argument("--nonlinearity", choices=["modrelu", "tanh", "relu", "none"])
    g.add_argument("--init", choices=list(dict.fromkeys(i for c in models.MODELS.values() for i in c.INITS)),
                   help="orthogonal initialisation scheme (henaff, cayley, random); LSTM: xavier or concat "
                        "(glorot: the earlier name of xavier); GRU: xavier or torch; nnrnn-complex: random "
                        "(Haar P) or identity")
    g.add_argument("--capacity", type=int, help="EURNN layers")
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
                   help="W_ih: xavier, kaiming, uniform (torch.nn.Linear's), uniform:A or zeros")
    g.add_argument("--bias-init", dest="bias_init", metavar="SCHEME", help="input bias b: a scheme as above")
    g.add_argument("--readout-init", dest="readout_init", metavar="SCHEME", help="read-out weight: a scheme as above")
    g.add_argument("--readout-bias-init", dest="readout_bias_init", metavar="SCHEME",
                   help="read-out bias: a scheme as above")
    g.add_argument("--embedding", type=int, help="ptb: embedding size (default 200; 0: one-hot inputs)")
    g = p.add_argument_group("optimisation")
    g.add_argument("--optimizer", choices=["rmsprop", "adam"])
    g.add_argument("--lr", type=float)
    g.add_argument("--lr-orth", dest="lr_orth", type=float, help="learning rate of the orthogonal factor")
    g.add_argument("--rebase-every", dest="rebase_every", type=int, metavar="K",
                   help="nnrnn, exprnn: dynamic trivialization, move P's base every K updates (not the paper's)")
    g.add_argument("--alpha", type=float, help="RMSprop smoothing")
    g.add_argument("--betas", type=float, nargs=2, help="Adam betas")
    g.add_argument("--delta", type=float, help="nnRNN: weight of the penalty on (1 - gamma)^2")
    g.add_argument("--t-decay", dest="t_decay", type=float, help="nnRNN: weight decay on T (its gradient gains t_decay·T)")
    g.add_argument("--clip", type=float, help="max gradient norm (0: off)")
    g.add_argument("--lr-schedule", dest="lr_schedule", choices=["none", "plateau"],
                   help="plateau: halve every learning rate after a validation that did not improve (ptb presets)")
    g.add_argument("--stop-after-halvings", dest="stop_after_halvings", type=int, metavar="K",
                   help="with --lr-schedule plateau: stop once the learning rates were halved K times")
    g.add_argument("--seed", type=int)
    g.add_argument("--steps", type=int, help="total updates")
    g.add_argument("--epochs", type=int, help="total epochs (psmnist, ptb)")
    g = p.add_argument_group("data")
    g.add_argument("--batch-size", dest="batch_size", type=int)
    g.add_argument("--eval-batch-size", dest="eval_batch_size", type=int,
                   help="psmnist: images per evaluation batch; ptb: parallel evaluation streams")
    g.add_argument("--T", dest="T", type=int, help="copy/adding sequence length")
    g.add_argument("--bptt", type=int, help="PTB truncation length (150 or 300 in the paper)")
    g.add_argument("--no-permute", dest="permute", action="store_const", const=False,
                   help="psmnist: sequential MNIST, no permutation")
    g.add_argument("--shuffle", choices=["epoch", "fixed"],
                   help="psmnist: a new training order each epoch (default) or the same order every epoch")
    g.add_argument("--data-dir", dest="data_dir")
    g.add_argument("--check-inputs", dest="check_inputs", action="store_const", const=True,
                   help="stop with an error on NaN or Inf inputs")
    g = p.add_argument_group("logging")
    g.add_argument("--log-every", dest="log_every", type=int)
    g.add_argument("--eval-every", dest="eval_every", type=int)
    g.add_argument("--checkpoint-every", dest="checkpoint_every", type=int)
    g.add_argument("--max-bad-steps", dest="max_bad_steps", type=int)
    g.add_argument("--device", help="auto, cpu, cuda, cuda:1 ...")
    g.add_argument("--no-cuda-graph", dest="cuda_graph", action="store_const", const=False,
                   help="on CUDA, run every update eagerly instead of replaying it from a CUDA graph")
    g.add_argument("--no-progress", dest="progress", action="store_const", const=False)
    p.set_defaults(func=run_train)


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
    from .training.network import best_checkpoint
    from .training.train import evaluate_checkpoint
    folder = Path(args.run)
    path = best_checkpoint(folder) if folder.is_dir() else folder
    print(json.dumps(evaluate_checkpoint(path, split=args.split, data_dir=args.data_dir)))
    return 0


def run_presets(args) -> int:
    from . import presets
    names = [args.name] if args.name else presets.preset_names()
    for name in names:
        preset = presets.load(name)
        print(f"{name}: {preset.get('_description', '')}")
        for table, models in preset.items():
            if table.startswith("_"):
                continue
            for model, options in models.items():
                print(f"  {table:8s} {model:9s} " + " ".join(f"{k}={v}" for k, v in options.items()))
        for table, variants in preset.get("_variants", {}).items():  # not reachable by --model: its options
            for label, options in variants.items():
                print(f"  {table:8s} {label} (a variant: --model {options['model']} with these options) "
                      + " ".join(f"{k}={v}" for k, v in options.items() if k != "model"))
    return 0


def make_parser() -> Parser:
    parser = Parser(prog="nnrnn", description="Non-normal RNNs and their baselines: train, evaluate, analyse.")
    from . import __version__
    parser.add_argument("--version", action="version", version=f"nnrnn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_train_parser(sub)
    p = sub.add_parser("eval", help="evaluate a run's best checkpoint")
    p.add_argument("run", help="run folder or checkpoint file")
    p.add_argument("--split", default="test", choices=["valid", "test"])
    p.add_argument("--data-dir", dest="data_dir",
                   help="the data's folder (default: the run's own, else NNRNN_DATA or the cache; docs/training.md)")
    p.set_defaults(func=run_eval)
    p = sub.add_parser("presets", help="list the hyperparameter presets")
    p.add_argument("name", nargs="?")
    p.set_defaults(func=run_presets)
    p = sub.add_parser("kernels", help="show which kernels run the recurrences here (compiling the C++ "
                       "loops if they are not yet)")
    p.set_defaults(func=run_kernels)
    from .analysis.cli import add_analyze_parser, add_theory_parser
    from .data.cli import add_data_parser
    from .doctor import add_doctor_parser
    from .experiments.reproduce import add_reproduce_parser
    from .experiments.sweep import add_sweep_parser
    add_data_parser(sub)
    add_sweep_parser(sub)
    add_theory_parser(sub)
    add_analyze_parser(sub)
    add_reproduce_parser(sub)
    add_doctor_parser(sub)
    return parser


def run_kernels(args) -> int:
    import torch

    from . import kernels
    loops = kernels.recurrence_loops()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("compiled recurrence loops: " + (f"yes (cached in {kernels.extensions_dir()})" if loops
                                           else f"no, Python loops instead ({kernels.loops_unavailable_reason()})"))
    print(f"oneDNN products: {kernels.onednn_status()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = make_parser().parse_args(argv)
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

    A Ctrl-C during start-up (importing torch, which ``import nnrnn`` no longer does, and the modules the
    parser needs) prints ``nnrnn: interrupted`` and exits 130 at once, without a traceback; from then on
    Ctrl-C is Python's KeyboardInterrupt again, which :func:`main` (or here, around it) reports the same way."""
    starting = threading.current_thread() is threading.main_thread()
    if starting:
        previous = signal.signal(signal.SIGINT, _interrupted_at_start)
    try:
        try:
            if flag("NNRNN_KEEP_FREED_MEMORY", default=True):
                from .kernels import keep_freed_memory  # imports torch
                keep_freed_memory()
            make_parser()  # imports what the commands' parsers need (torch included), while Ctrl-C exits at once
        finally:
            if starting:
                signal.signal(signal.SIGINT, previous)
        code = main(argv)
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
