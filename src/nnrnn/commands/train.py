"""``nnrnn train TASK``: train a model on a task, or resume a run."""
from __future__ import annotations

import json
from pathlib import Path

from .. import presets
from ..analysis.mechanism import write_record
from ..errors import OptionError
from ..training import distributed, options, rates, runfolder
from ..training.config import resolve_config, resume_config
from ..training.options import DEFAULTS
from ..training.resources import choose_threads
from ..training.train import train


def add_arguments(p) -> None:
    p.description = (
        f"Train MODEL on TASK. Options left out come from --preset, then from the defaults shown. Without a "
        f"preset a model trains with those defaults (its learning rate: {rates.describe()}), not with all of the "
        f"paper's hyperparameters: nnRNN with delta {DEFAULTS['delta']:g}, "
        f"t_decay {DEFAULTS['t_decay']:g} and an input bias; --preset paper gives the paper's (`nnrnn presets`). "
        f"Prints a line after every validation and a summary at the end, its outcome (learned, did not learn, "
        f"diverged: exit code 3), then the final metrics as one JSON line.")
    groups = {name: p.add_argument_group(name) for name in options.GROUPS}
    p.add_argument("--preset", help=f"hyperparameters for (task, model): {', '.join(presets.preset_names())} (each "
                   f"listed by `nnrnn presets`)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from checkpoints/last.pt, with its "
                   "own options (only the length, logging, device and evaluation options may be given again)")
    p.add_argument("--overwrite", action="store_true", help="replace the run in --out (its checkpoints, metrics, "
                   "logs and plots) instead of refusing")
    options.add_arguments(p, groups)


def main(args) -> int:
    if args.resume and args.overwrite:
        raise OptionError("give --resume or --overwrite, not both")
    typed = {k: v for k, v in vars(args).items()  # what the user typed: argparse leaves the rest None
             if k in options.BY_NAME and v is not None}
    if typed.get("out") == "":
        raise OptionError("--out must name a folder; got an empty string")
    out = Path(typed.get("out") or f"runs/{args.task}-{typed.get('model', 'nnrnn')}")
    typed["out"] = str(out)
    threads, why = choose_threads(typed.get("threads"), keep_own=args.resume)
    if threads is not None:
        typed["threads"] = threads
    last = None
    if args.resume:  # a resumed run keeps its own options; only those typed again, and allowed to change, differ
        saved, last = runfolder.saved_run(out)
        config = resume_config(out, saved, typed, args.preset)
    else:
        config = resolve_config(typed, args.preset)
    if why is not None:
        print(f"[nnrnn] {why}", flush=True)
    try:
        result = train(config, resume=args.resume, overwrite=args.overwrite, last=last, on_end=write_record)
    finally:
        distributed.cleanup()
    if result:  # rank 0 only
        print(json.dumps(result))
    return 0
