"""``nnrnn sweep TASK --model NAME --trials N ...``: an Optuna search of the supplement's hyperparameters."""
from __future__ import annotations

import sys

import optuna

from ..errors import Interrupted, OptionError, UserError
from ..experiments.planning.summary import summary
from ..experiments.planning.sweep import PRUNE_STARTUP_TRIALS, PRUNE_WARMUP_FRACTION, run_sweep
from ..training.options import BY_NAME, add_option
from ..training.resources import choose_threads

# The training options every trial holds fixed, each declared by nnrnn train's table (nnrnn.training.options), with
# the help line said per trial where the table's would mislead; the searched ones are
# nnrnn.experiments.planning.searching's.
HELD_FIXED = {"steps": "updates per trial", "epochs": "epochs per trial (psmnist, ptb)",
              "hidden": "hidden units (default: the preset's, else nnrnn train's)", "batch_size": None, "T": None,
              "bptt": None, "permute": None, "nonlinearity": None, "clip": None,
              "seed": "training seed, the same in every trial",
              "eval_every": "updates between validations (pruning points)", "log_every": None,
              "max_bad_steps": "end a trial after this many updates in a row with a non-finite loss or gradient",
              "data_dir": None, "device": None,
              "threads": "CPU threads of every trial (default: OMP_NUM_THREADS, else the cores free to this process, "
                         "as nnrnn train chooses them; docs/training.md, Threads)"}
TRAIN_PASS_THROUGH = (*HELD_FIXED, "preset")


def add_arguments(p) -> None:
    p.description = ("Search the hyperparameters of the paper's supplement for MODEL on TASK. Each trial is a run "
                     "folder OUT/trial-NNNN; processes given the same --storage and --study share one search. See "
                     "docs/sweep.md.")
    p.add_argument("task", help="copy, adding, psmnist or ptb")
    p.add_argument("--model", default="nnrnn", help="a model of `nnrnn train --model` (default nnrnn)")
    p.add_argument("--trials", type=int, help="trials this process runs (each process sharing a study runs its own)")
    p.add_argument("--total-trials", dest="total_trials", type=int,
                   help="stop once the study holds this many trials, whichever process ran them")
    p.add_argument("--timeout", type=float, help="start no new trial after this many seconds")
    p.add_argument("--storage", help="Optuna storage: sqlite:///PATH, postgresql://..., mysql://..., "
                   "journal:PATH (default sqlite:///OUT/study.db)")
    p.add_argument("--study", help="study name (default TASK-MODEL)")
    p.add_argument("--out", help="folder of the trial runs (default runs/sweep-TASK-MODEL)")
    p.add_argument("--summary", action="store_true", help="print the best trials of the study and exit")
    p.add_argument("--top", type=int, default=10, help="trials the summary lists (default 10)")
    g = p.add_argument_group("pruning")
    g.add_argument("--prune-startup", dest="prune_startup", type=int, default=PRUNE_STARTUP_TRIALS,
                   help=f"finished trials before any pruning (default {PRUNE_STARTUP_TRIALS})")
    g.add_argument("--prune-warmup", dest="prune_warmup", type=int,
                   help=f"updates of a trial before it may be pruned (default {PRUNE_WARMUP_FRACTION:g} of --steps)")
    g.add_argument("--no-prune", dest="prune", action="store_false", help="run every trial to the end")
    g = p.add_argument_group("training options held fixed in every trial")
    g.add_argument("--preset", help="a preset of `nnrnn presets` (paper, paper-params, ...): sizes and defaults; "
                   "searched options override it")
    for name, text in HELD_FIXED.items():
        add_option(g, BY_NAME[name], text)


def main(args) -> int:
    for name in ("out", "storage", "study"):  # an empty value would otherwise fall back to the default
        if getattr(args, name) == "":
            raise OptionError(f"--{name} must not be empty; leave it out for the default")
    out = args.out or f"runs/sweep-{args.task}-{args.model}"
    study = args.study or f"{args.task}-{args.model}"
    if args.summary:
        summary(out=out, storage=args.storage, study=study, top=args.top,
                searches={"task": args.task, "model": args.model})
        return 0
    if args.trials is None:
        raise UserError("nnrnn sweep: give --trials N, the number of trials this process runs (or --summary)")
    if args.trials <= 0:
        raise UserError(f"nnrnn sweep: --trials must be a positive integer; got {args.trials}")
    if args.prune_startup < 0 or (args.prune_warmup is not None and args.prune_warmup < 0):
        raise UserError("nnrnn sweep: --prune-startup and --prune-warmup must be zero or positive")
    options = {k: getattr(args, k) for k in TRAIN_PASS_THROUGH if getattr(args, k) is not None}
    options["threads"], why = choose_threads(options.get("threads"))  # as nnrnn train: not more than are free
    if why is not None:
        print(f"[sweep] {why}", flush=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the [sweep] lines say it more briefly
    try:
        run_sweep(args.task, args.model, args.trials, storage=args.storage, study=args.study, out=out,
                  train_options=options, pruner=None if args.prune else optuna.pruners.NopPruner(),
                  prune_startup=args.prune_startup, prune_warmup=args.prune_warmup,
                  total_trials=args.total_trials, timeout=args.timeout)
    except Interrupted as exc:
        print(f"nnrnn: {exc}; that trial is marked failed; run the same command again to go on with the search",
              file=sys.stderr)
        return exc.exit_code
    print()
    summary(out=out, storage=args.storage, study=study, top=args.top)
    return 0
