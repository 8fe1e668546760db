"""Where the time of one compiled training update goes, against eager: torch.profiler's table for each.

One eager model and a ``torch.compile`` copy with the same weights run the same batch (forward, the sum of
the outputs' squares, backward), warmed up first; then each is profiled over ``--updates`` updates and the
operators with the most self CPU time are printed, with the total.  Wrapper rows such as
"CompiledFunction", "CompiledFunctionBackward", "## Call CompiledFxGraph …" and "Torch-Compiled Region"
are what compiling adds around the same kernels.

Usage::

    python benchmarks/compile_profile.py                         # rnn at the copy task's sizes
    python benchmarks/compile_profile.py --model nnrnn --size 100x128x512x1
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import torch
from torch.profiler import profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

import nnrnn  # noqa: E402
from compile_speed import one_update  # noqa: E402  (the same update as the timing benchmark)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="rnn", choices=list(nnrnn.MODELS))
    parser.add_argument("--size", default="220x10x128x10", help="TxBxNxI (default the copy task's)")
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--rows", type=int, default=14)
    parser.add_argument("--backend", default="inductor", help="torch.compile's backend (default inductor; eager: "
                        "Dynamo's tracing alone, fast to compile)")
    args = parser.parse_args(argv)
    try:
        t, b, n, i = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        parser.error(f"--size: expected TxBxNxI such as 220x10x128x10, got {args.size!r}")
    torch.manual_seed(0)
    eager = nnrnn.create(args.model, i, n)
    compiled = torch.compile(copy.deepcopy(eager), backend=args.backend)
    x = torch.randn(t, b, i)
    for _ in range(3):
        one_update(compiled, x)
        one_update(eager, x)
    totals = {}
    for name, model in (("eager", eager), ("compiled", compiled)):
        with profile() as prof:
            for _ in range(args.updates):
                one_update(model, x)
        averages = prof.key_averages()
        totals[name] = sum(e.self_cpu_time_total for e in averages) / 1e3
        print(f"== {name}: {totals[name]:.1f} ms self CPU over {args.updates} updates")
        print(averages.table(sort_by="self_cpu_time_total", row_limit=args.rows))
    print(f"compiled / eager self CPU time: {totals['compiled'] / totals['eager']:.3f}")


if __name__ == "__main__":
    main()
