"""The parallel scans against their loops: the LRU's odd-even scan, minGRU's log-space scan and the nnlru's
odd-even scan with matrix powers, each timed against the same layer computing time step by step
(``implementation = "loop"``), forward and backward of one layer.

Each (model, T) pair runs the two implementations in one process, alternating, after a warm-up; the table gives
each one's median and the ratio loop / scan (above 1: the scan is faster).  A shared machine's speed moves between
runs, so only the ratios, measured side by side, are comparable.

Usage::

    python benchmarks/scan_speed.py                       # T = 784 and 1000, batch 128, N = 128, input 1
    python benchmarks/scan_speed.py --steps 784 --batch 64 --hidden 256 --repeats 9
    python benchmarks/scan_speed.py --device cuda          # on a GPU, synchronised around each update
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

import nnrnn  # noqa: E402
from nnrnn.kernels.host import describe_cpu  # noqa: E402

SCANNED = ("lru", "mingru", "nnlru")


def update_seconds(model: torch.nn.Module, x: torch.Tensor) -> float:
    """One forward and backward of ``model`` on ``x``, in seconds (a GPU's queue drained before and after)."""
    synchronize(x.device)
    start = time.perf_counter()
    out, _ = model(x)
    out.pow(2).mean().backward()
    model.zero_grad(set_to_none=True)
    synchronize(x.device)
    return time.perf_counter() - start


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def ratio(name: str, steps: int, batch: int, hidden: int, inputs: int, repeats: int,
          device: str = "cpu") -> tuple[float, float, float]:
    """(median loop seconds, median scan seconds, their ratio) for one layer of ``name``, alternating."""
    torch.manual_seed(0)
    model = nnrnn.create(name, inputs, hidden).to(device)
    x = torch.randn(steps, batch, inputs, device=device)
    times = {"loop": [], "scan": []}
    for implementation in times:  # warm-up
        model.implementation = implementation
        update_seconds(model, x)
    for _ in range(repeats):
        for implementation in times:
            model.implementation = implementation
            times[implementation].append(update_seconds(model, x))
    loop, scan = statistics.median(times["loop"]), statistics.median(times["scan"])
    return loop, scan, loop / scan


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[784, 1000])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--inputs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--models", nargs="+", default=list(SCANNED), choices=SCANNED)
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda, cuda:1, ...")
    args = parser.parse_args(argv)
    where = (torch.cuda.get_device_name(args.device) if torch.device(args.device).type == "cuda"
             else f"{torch.get_num_threads()} threads")
    print(f"scan against loop, one layer forward and backward: batch {args.batch}, N = {args.hidden}, "
          f"input {args.inputs}, {args.repeats} alternating rounds, medians; torch {torch.__version__}, "
          f"{where}; {describe_cpu()}")
    print(f"{'model':8} {'T':>6} {'loop (s)':>10} {'scan (s)':>10} {'loop/scan':>10}")
    for name in args.models:
        for steps in args.steps:
            loop, scan, r = ratio(name, steps, args.batch, args.hidden, args.inputs, args.repeats,
                                  args.device)
            print(f"{name:8} {steps:6d} {loop:10.4f} {scan:10.4f} {r:10.2f}")


if __name__ == "__main__":
    main()
