"""``nnrnn eval RUN``: score a run's best checkpoint on a split."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import UserError
from ..kernels.policy import used_line
from ..training.network import best_checkpoint, load_saved
from ..training.evaluation import evaluate_saved


def add_arguments(p) -> None:
    p.description = ("Score a run's best checkpoint (checkpoints/best.pt, the best validation score; last.pt for a "
                     "run that has none yet) or a given checkpoint file on a split.")
    p.add_argument("run", help="run folder or checkpoint file")
    p.add_argument("--split", default="test", choices=["valid", "test"], help="the split to score")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON object (for scripts)")
    p.add_argument("--data-dir", dest="data_dir",
                   help="the data's folder (default: the run's own, else NNRNN_DATA or the cache; docs/training.md)")


def main(args) -> int:
    given = Path(args.run)
    path = best_checkpoint(given) if given.is_dir() else given
    if given.is_dir() and not path.is_file():
        raise UserError(f"no checkpoint at {given}: it holds no checkpoints/best.pt or last.pt, so it is not a run "
                        f"folder (`nnrnn runs {given}` lists the runs inside it)")
    saved = load_saved(path)
    metrics = evaluate_saved(saved, split=args.split, data_dir=args.data_dir)
    if args.json:
        print(json.dumps(metrics))
        return 0
    step = saved.checkpoint.get("step")
    which = {"best.pt": "the best validation score's", "last.pt": "the last"}.get(path.name, "the given")
    print(f"{args.split} split, {which} checkpoint {path}" + (f" (after update {step})" if step is not None else ""))
    print("  ".join(f"{name} {value:.6g}" for name, value in metrics.items()))
    print(used_line())
    return 0
