"""Time the fused recurrence's time loops alone, every implementation this machine has, at one size.

The loops are the two sequential parts of a non-gated model's update (nnrnn/kernels/loops.py):

* forward: h_t = φ(V h_{t-1} + z_t) for t = 1..T, in place over H (T × B × N);
* backward: ∂L/∂z_t = φ'(z_t) ⊙ (∂L/∂h_t + Vᵀ ∂L/∂z_{t+1}) for t = T..1;

each 2TBN² matrix-product flops.  The implementations: ``compiled`` (nnrnn/kernels/csrc, one brgemm call per
step, split over threads by output columns), ``onednn`` (oneDNN's inner product issued from Python per
step) and ``aten`` (torch.addmm per step, MKL's sgemm).  ``chosen`` is what ``choose_loops`` (the kernel policy)
picks for this shape on this machine.  All run in one process, round-robin, after a warm-up; the table gives
medians, GFLOP/s and the share of the float32 matrix-product roofline (the best of torch.mm and oneDNN
on 2048³, sampled between rounds).

Usage::

    python benchmarks/recurrence_loops.py                          # (T, B, N) = (100, 128, 512), modReLU
    python benchmarks/recurrence_loops.py --size 150x128x1024 --repeats 5
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

from nnrnn.kernels import extension, onednn  # noqa: E402
from nnrnn.kernels import loops as loop_kernels  # noqa: E402
from nnrnn.kernels.operations import choose_loops  # noqa: E402
from nnrnn.kernels.settings import ATEN, COMPILED, ONEDNN  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from training_update import Roofline  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="100x128x512", help="TxBxN")
    parser.add_argument("--nonlinearity", default="modrelu", choices=["relu", "tanh", "modrelu"])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--roofline-n", type=int, default=2048, help="side of the roofline's product (default 2048)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    steps, batch, n = (int(v) for v in args.size.split("x"))
    torch.manual_seed(0)
    v = torch.linalg.qr(torch.randn(n, n))[0]
    h0 = torch.randn(batch, n) * 0.1
    z = torch.randn(steps, batch, n) * 0.1
    grad = torch.randn(steps, batch, n)
    bias = torch.full((n,), -0.01) if args.nonlinearity == "modrelu" else None
    h = z.clone()
    loop_kernels.forward_loop(h, h0, v, args.nonlinearity, bias, choose_loops(h, args.nonlinearity))
    options = [ATEN]
    if onednn.kernel() is not None:
        options.append(ONEDNN)
    if extension.recurrence_loops() is not None:
        options.append(COMPILED)
    work = {}
    for loops in options:
        work[f"{loops} forward"] = (lambda loops=loops: loop_kernels.forward_loop(z.clone(), h0, v, args.nonlinearity,
                                                                           bias, loops))
        work[f"{loops} backward"] = (lambda loops=loops: loop_kernels.backward_loop(grad, h, args.nonlinearity, v,
                                                                             loops, None))
    roofline = Roofline(args.roofline_n)
    roofline.sample(3)
    times = {name: [] for name in work}
    for fn in work.values():
        fn()  # warm-up
    names = list(work)
    for r in range(args.repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.perf_counter()
            work[name]()
            times[name].append(time.perf_counter() - start)
        roofline.sample()
    flops = 2 * steps * batch * n * n
    chosen = choose_loops(h, args.nonlinearity)
    print(f"(T, B, N) = ({steps}, {batch}, {n}), {args.nonlinearity}, {torch.get_num_threads()} threads, "
          f"{args.repeats} rounds; roofline {roofline.best:.0f} GFLOP/s ({roofline.best_kernel}); chosen: {chosen}")
    print(f"{'loops':22s} {'median ms':>10s} {'GFLOP/s':>8s} {'% roof':>7s} {'× chosen':>9s}")
    for name in names:
        median = statistics.median(times[name])
        reference = statistics.median(times[f"{chosen} {name.split()[1]}"])
        print(f"{name:22s} {1e3 * median:10.1f} {flops / median / 1e9:8.1f} "
              f"{100 * flops / median / 1e9 / roofline.best:7.1f} {median / reference:9.2f}")


if __name__ == "__main__":
    main()
