"""Time one generation step of every model against torch.nn.RNN(relu): a single token in, the state carried.

Each step is ``out, h = model(x_t, h)`` with x_t of shape (1, B, I), under ``torch.no_grad()``, as a
sampling loop runs it.  All implementations run in one process, round-robin (a block of steps of each, in
an order rotated every round), after a warm-up; the table gives the median time per step and its ratio
to torch.nn.RNN(relu)'s.  nnrnn's models compose V (the LRUs: their eigenvalues and transition) once and
reuse it while no parameter changes (nnrnn/models/base.py, ``kept``); the column "recomposed" times the same
step with that cache defeated (a parameter touched before every step), which is what each step cost before.

Usage::

    python benchmarks/stepping.py                      # N = 128, B = 1, I = 10
    python benchmarks/stepping.py --hidden 512 --batch 8
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

import nnrnn  # noqa: E402
from nnrnn.kernels.host import describe_cpu  # noqa: E402

BASELINE = "torch.nn.RNN(relu)"


def builders(input_size: int, hidden: int) -> dict:
    models = {BASELINE: lambda: nn.RNN(input_size, hidden, nonlinearity="relu"),
              "torch.nn.LSTM": lambda: nn.LSTM(input_size, hidden)}
    for name in nnrnn.MODELS:
        models[name] = (lambda name=name: nnrnn.create(name, input_size, hidden))
    return models


def touch(model: nn.Module) -> None:
    """Bump one recurrent parameter's version counter without changing its value (defeats the V cache, and the
    LRU's kept eigenvalues, which ν's logarithm enters)."""
    for name, p in model.named_parameters():
        if "weight_hh" in name or "angles" in name or "nu_log" in name:
            p.add_(0.0)
            return


def time_steps(model, x, steps: int, recompose: bool) -> float:
    h = None
    start = time.perf_counter()
    for t in range(steps):
        if recompose:
            touch(model)
        _, h = model(x[t:t + 1], h)
    return (time.perf_counter() - start) / steps


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--input", type=int, default=10)
    parser.add_argument("--steps", type=int, default=200, help="steps per timed block")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    models = {name: build().eval() for name, build in builders(args.input, args.hidden).items()}
    x = torch.randn(args.steps, args.batch, args.input)
    timings = {(name, recompose): [] for name in models for recompose in (False, True)
               if not (recompose and name.startswith("torch"))}
    names = list(timings)
    with torch.no_grad():
        for key in names:  # warm-up
            time_steps(models[key[0]], x, 20, key[1])
        for r in range(args.rounds):
            for key in names[r % len(names):] + names[:r % len(names)]:
                timings[key].append(time_steps(models[key[0]], x, args.steps, key[1]))
    base = statistics.median(timings[(BASELINE, False)])
    print(f"host: {describe_cpu()}, {torch.backends.cpu.get_cpu_capability()}; "
          f"torch {torch.__version__}, {args.threads} thread(s); one step of (1, {args.batch}, {args.input}) "
          f"into {args.hidden} units, no_grad, median of {args.rounds} rounds of {args.steps} steps")
    print(f"{'model':22s} {'µs/step':>8s} {'× RNN':>6s} {'recomposed µs':>14s} {'× RNN':>6s}")
    for name in models:
        cached = statistics.median(timings[(name, False)])
        line = f"{name:22s} {cached * 1e6:8.1f} {cached / base:6.2f}"
        if (name, True) in timings:
            again = statistics.median(timings[(name, True)])
            line += f" {again * 1e6:14.1f} {again / base:6.2f}"
        print(line)


if __name__ == "__main__":
    main()
