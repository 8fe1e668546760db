"""The nnlru's update time against the LRU's and torch.nn.GRU's at equal parameter counts: one layer, forward and
backward, each model as it trains (``implementation = "auto"`` for the two LRUs).

The nnlru at ``--hidden`` N (state size N) sets the parameter count; the LRU and the GRU take the hidden size whose
count (read-out of ``--outputs`` included, :func:`nnrnn.hidden_size_for`) is closest to it.  The three run in one
process, alternating, after a warm-up; the table gives each one's median and its ratio to the nnlru's.  A shared
machine's speed moves between runs, so only the ratios, measured side by side, are comparable.

Usage::

    python benchmarks/nnlru_speed.py                         # T = 784, batch 128, N = 64, input 1, 10 outputs
    python benchmarks/nnlru_speed.py --steps 200 --batch 32 --hidden 32 --repeats 9
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

import nnrnn  # noqa: E402
from nnrnn.kernels.host import describe_cpu  # noqa: E402
from scan_speed import update_seconds  # noqa: E402


def models(hidden: int, inputs: int, outputs: int, device: str) -> dict[str, tuple[torch.nn.Module, int, int]]:
    """{name: (one layer, its hidden size, its parameter count with the read-out)} at the nnlru's count."""
    target = nnrnn.parameter_count("nnlru", inputs, hidden, outputs)
    found = {}
    for name in ("nnlru", "lru", "gru"):
        size = hidden if name == "nnlru" else nnrnn.hidden_size_for(name, target, inputs, outputs)
        torch.manual_seed(0)
        layer = torch.nn.GRU(inputs, size) if name == "gru" else nnrnn.create(name, inputs, size)
        found[name] = (layer.to(device), size, nnrnn.parameter_count(name, inputs, size, outputs))
    return found


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=784)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=64, help="the nnlru's N (its state size too)")
    parser.add_argument("--inputs", type=int, default=1)
    parser.add_argument("--outputs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda, cuda:1, ...")
    args = parser.parse_args(argv)
    where = (torch.cuda.get_device_name(args.device) if torch.device(args.device).type == "cuda"
             else f"{torch.get_num_threads()} threads")
    print(f"one update (forward and backward of one layer) at equal parameter counts: T = {args.steps}, batch "
          f"{args.batch}, input {args.inputs}, {args.repeats} alternating rounds, medians; torch {torch.__version__}, "
          f"{where}; {describe_cpu()}")
    found = models(args.hidden, args.inputs, args.outputs, args.device)
    x = torch.randn(args.steps, args.batch, args.inputs, device=args.device)
    times = {name: [] for name in found}
    for rounds in (1, args.repeats):  # the first round warms up and is dropped
        times = {name: [] for name in found}
        for _ in range(rounds):
            for name, (layer, _, _) in found.items():
                times[name].append(update_seconds(layer, x))
    base = statistics.median(times["nnlru"])
    print(f"{'model':8} {'hidden':>7} {'params':>8} {'update (s)':>11} {'/ nnlru':>8}")
    for name, (_, size, count) in found.items():
        median = statistics.median(times[name])
        print(f"{name:8} {size:7d} {count:8d} {median:11.4f} {median / base:8.2f}")


if __name__ == "__main__":
    main()
