"""Time forward + backward of every model eager and under ``torch.compile``, in steady state.

For each model, one eager copy and one ``torch.compile(model)`` copy with the same weights run the same
batch: forward over all T steps, the sum of the outputs' squares as the loss, backward.  The compiled
copy is first run until it stops recompiling (the compile time is printed, not timed); then eager and
compiled alternate, round-robin over all models, and the table gives the median seconds and the ratio
compiled / eager, and compiled − eager in milliseconds.  Two references are timed the same way:
torch.nn.RNN(relu), which Dynamo does not trace by default (it runs eagerly inside the compiled frame), and
a torch.nn.Linear of the same input and output sizes, whose compiled − eager at small sizes is the fixed
cost that torch.compile adds to any forward and backward on this machine (guards, AOTAutograd's wrappers;
at large sizes inductor's own code for it differs from eager's, and the row is no longer a floor).

Usage::

    python benchmarks/compile_speed.py                          # copy sizes, (220, 10, 128, 10)
    python benchmarks/compile_speed.py --size 100x32x256x1 --only nnrnn,exprnn
"""
from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

import nnrnn  # noqa: E402

BASELINE = "torch.nn.RNN(relu)"
FLOOR = "torch.nn.Linear (floor)"


class LinearFloor(nn.Module):
    """outputs (T, B, N) = Linear(inputs), returned as (outputs, None) like a recurrent layer's."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return self.linear(x), None


def one_update(model: nn.Module, x: torch.Tensor) -> None:
    out, _ = model(x)
    out.pow(2).sum().backward()
    model.zero_grad(set_to_none=True)


def timed(model: nn.Module, x: torch.Tensor) -> float:
    start = time.perf_counter()
    one_update(model, x)
    return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="220x10x128x10", help="TxBxNxI (default the copy task's)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--only", default="", help="comma-separated nnrnn model names (default all)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--backend", default="inductor", help="torch.compile's backend (default inductor; eager: "
                        "Dynamo's tracing alone, fast to compile)")
    args = parser.parse_args(argv)
    try:
        t, b, n, i = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        parser.error(f"--size: expected TxBxNxI such as 220x10x128x10, got {args.size!r}")
    names = [s for s in args.only.split(",") if s] or list(nnrnn.MODELS)
    unknown = [s for s in names if s not in nnrnn.MODELS]
    if unknown:
        parser.error(f"--only: unknown {', '.join(unknown)}; choose from {', '.join(nnrnn.MODELS)}")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x = torch.randn(t, b, i)
    builders = {BASELINE: lambda: nn.RNN(i, n, nonlinearity="relu"), FLOOR: lambda: LinearFloor(i, n)}
    builders.update({name: (lambda name=name: nnrnn.create(name, i, n)) for name in names})
    pairs = {}
    for name, build in builders.items():
        eager = build()
        compiled_model = copy.deepcopy(eager)
        compiled = torch.compile(compiled_model, backend=args.backend)
        start = time.perf_counter()
        for _ in range(3):  # first call compiles; later calls must hit the cache
            one_update(compiled, x)
        print(f"{name}: compiled and warmed up in {time.perf_counter() - start:.1f} s", flush=True)
        one_update(eager, x)
        pairs[name] = (eager, compiled)
    keys = [(name, kind) for name in pairs for kind in (0, 1)]
    times = {key: [] for key in keys}
    for r in range(args.rounds):
        for key in keys[r % len(keys):] + keys[:r % len(keys)]:
            times[key].append(timed(pairs[key[0]][key[1]], x))
    print(f"\ntorch {torch.__version__}, {args.threads} thread(s), (T, B, N, I) = ({t}, {b}, {n}, {i}), "
          f"forward + backward, median of {args.rounds} alternating rounds")
    print(f"{'model':24s} {'eager ms':>9s} {'compiled ms':>12s} {'compiled / eager':>17s} {'compiled − eager ms':>20s}")
    for name in pairs:
        eager, compiled = (statistics.median(times[(name, k)]) for k in (0, 1))
        print(f"{name:24s} {eager * 1e3:9.2f} {compiled * 1e3:12.2f} {compiled / eager:17.2f} "
              f"{(compiled - eager) * 1e3:20.2f}")


if __name__ == "__main__":
    main()
