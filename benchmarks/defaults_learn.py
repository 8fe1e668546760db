"""Does each task's default learn? `nnrnn train TASK` with every option at its default (the default model,
nnRNN, its default size and length and the task's default learning rates), judged as every run is judged
(nnrnn.training.outcome): its best validation loss against the task's baseline.

    python benchmarks/defaults_learn.py [--tasks copy adding psmnist ptb] [--data-dir ../shared/data]
                                        [--out runs/defaults-benchmark] [--small] [--steps N]

--small trains each task at the small sizes of tests/training/test_outcome.py's defaults test instead (a minute
in all on 2 cores). Prints one row per task: the outcome, best validation loss, baseline, chance and wall time;
the runs stay in --out (finished ones are reused: their outcome is read back).
"""
import argparse
import contextlib
import time
from pathlib import Path

from nnrnn.errors import TrainingDiverged
from nnrnn.training import outcome
from nnrnn.training.config import resolve_config
from nnrnn.training.train import train

# tests/training/test_outcome.py's small sizes: short sequences, a few hundred updates at most
SMALL = {"copy": {"hidden": 32, "T": 20, "steps": 300, "eval_every": 100},
         "adding": {"hidden": 32, "T": 20, "steps": 600, "eval_every": 200},
         "psmnist": {"hidden": 32, "batch_size": 32, "steps": 100, "eval_every": 50},
         "ptb": {"hidden": 64, "bptt": 50, "steps": 40, "eval_every": 40, "eval_batch_size": 100}}


def run(task: str, out: Path, data_dir: str | None, small: bool, steps: int | None
        ) -> tuple[outcome.Outcome | None, float]:
    options = {"task": task, "progress": False, "out": str(out / task), **(SMALL[task] if small else {})}
    if steps:  # shortened (the smoke test): validations at its end
        options.update(steps=steps, eval_every=steps)
    if task in ("psmnist", "ptb"):
        options["data_dir"] = data_dir
    start = time.time()
    if outcome.read(out / task) is None:
        with open(out / f"{task}.log", "w") as log, contextlib.redirect_stdout(log):
            try:
                train(resolve_config(options), overwrite=True)
            except TrainingDiverged:
                pass  # recorded in the run folder
    return outcome.read(out / task), time.time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=list(SMALL))
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", default="runs/defaults-benchmark")
    parser.add_argument("--small", action="store_true", help="the test's small sizes instead of the defaults")
    parser.add_argument("--steps", type=int, help="every run this many updates (to check the script itself)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{'task':8s} {'outcome':14s} {'best valid loss':>15s} {'baseline':>9s} {'chance':>7s} {'wall s':>7s}")
    for task in args.tasks:
        ended, seconds = run(task, out, args.data_dir, args.small, args.steps)
        if ended is None:
            print(f"{task:8s} no outcome (see {out / f'{task}.log'})")
            continue
        best = f"{ended.best:.4g}" if ended.best is not None else "-"
        print(f"{task:8s} {ended.name:14s} {best:>15s} {ended.baseline:>9.4g} {ended.chance:>7.4g} {seconds:>7.0f}",
              flush=True)


if __name__ == "__main__":
    main()
