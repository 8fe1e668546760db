"""Copy task, T = 200, `--preset paper`: mean training loss over the last 10% of updates,
as a fraction of the baseline 10 log 8 / (T + 20), for each model.

    python benchmarks/copy_task.py [--steps 3000] [--models nnrnn exprnn rnn lstm] [--out runs/copy-benchmark]

Finished runs in --out are reused; interrupted ones are resumed.
"""
import argparse
import json
import time
from pathlib import Path

from nnrnn.tasks.copy import baseline_loss
from nnrnn.training.config import resolve_config
from nnrnn.training.runlog import read_metrics
from nnrnn.training.train import train


def last_fraction_loss(folder: Path, steps: int, fraction: float = 0.1) -> float:
    """Mean training loss over the last ``fraction`` of updates (train points average their window)."""
    records = [r for r in read_metrics(folder) if r["split"] == "train" and "loss" in r]
    tail = [r for r in records if r["step"] > steps * (1 - fraction)]
    return sum(r["loss"] for r in tail) / len(tail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--T", type=int, default=200)
    parser.add_argument("--models", nargs="+", default=["nnrnn", "exprnn", "rnn", "lstm"])
    parser.add_argument("--out", default="runs/copy-benchmark")
    args = parser.parse_args()
    log_every = max(1, args.steps // 100)  # the last 10% is then exactly 10 logged windows
    baseline = baseline_loss(args.T)
    rows = []
    for model in args.models:
        folder = Path(args.out) / model
        config = resolve_config({"task": "copy", "model": model, "steps": args.steps, "T": args.T,
                                 "log_every": log_every, "progress": False, "out": str(folder)}, "paper")
        start = time.time()
        if not any(r["split"] == "test" for r in read_metrics(folder)):
            train(config, resume=(folder / "checkpoints" / "last.pt").exists())
        loss = last_fraction_loss(folder, args.steps)
        rows.append({"model": model, "hidden": config["hidden"], "last10_loss": loss,
                     "ratio_to_baseline": loss / baseline, "seconds": round(time.time() - start, 1)})
    print(f"copy task T={args.T}, {args.steps} updates, --preset paper; baseline {baseline:.4f}")
    print(f"{'model':8s} {'hidden':>6s} {'last-10% loss':>14s} {'x baseline':>11s}")
    for r in rows:
        print(f"{r['model']:8s} {r['hidden']:6d} {r['last10_loss']:14.5f} {r['ratio_to_baseline']:11.4f}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
