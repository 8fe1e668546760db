"""How fast an nnRNN training update could be on this machine: its unavoidable matrix products, timed.

An update (the one of ``training_update.py``: forward, read-out and cross entropy at every step, backward,
RMSprop step) cannot take less than the matrix products it must do, each run by the fastest kernel torch
has here for its shape:

* ``loops``: the 2T sequential products of a (B × N) state by V, T forward and T backward; each step
  needs the one before, so they cannot be merged.  Timed as T products of each kind, by torch.addmm and
  (where this torch has it) oneDNN's linear with the ``add`` post-op, the faster of the two per round;
* ``weights``: dV = Σ_t δ_tᵀ h_{t-1} as one (N × TB)·(TB × N) product, the input projection (TB × I)·(I × N)
  and its weight's gradient (N × TB)·(TB × I), each by the faster of torch.mm and oneDNN (the update's
  inputs need no gradient, so there is no (TB × N)·(N × I) product);
* ``read-out``: the read-out's linear, cross entropy and their backward and RMSprop step on a fixed H,
  the same work in every model's update;
* ``compose``: the products that composing V = P(Λ + T)Pᵀ and its gradient do in nnrnn today (and with the
  exponential's reference evaluation, Paterson–Stockmeyer: ``nnrnn [reference exponential]``), counted with
  a dispatch mode (matrix products of N × N only), times the time of one N × N product.

``% roof at floor`` is the share of the machine's matrix-product roofline (training_update.py's: the best
2048³ float32 product) that an update taking exactly ``floor`` would reach, with the update's FLOPs counted
as training_update.py counts them (the recurrence and the read-out, not the composition of V): the most any
implementation of that model could show in training_update.py's ``% roof`` column.

Everything else (the nonlinearity, its derivative, the bias gradients, the optimizer's step on V's
factors, Python) is left out, so ``floor`` is a lower bound on the update, not an estimate of it.  All
parts and the full updates are timed in one process, round-robin, median of ``--repeats`` rounds, and
printed as ratios to torch.nn.RNN(relu)'s update in the same rounds.

Usage::

    python benchmarks/speed_floor.py                                  # (100, 128, 512, 1) and PTB's size
    python benchmarks/speed_floor.py --sizes 150x128x1024x200 --repeats 5
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

from training_update import (BASELINE, CLASSES, Roofline, Update, implementations,  # noqa: E402
                             matmul_flops, parse_sizes)

from nnrnn.kernels import onednn  # noqa: E402
from nnrnn.kernels.host import describe_cpu  # noqa: E402

MODELS = (BASELINE, "rnn", "nnrnn", "nnrnn [reference exponential]", "nnrnn [dynamic]")
SQUARES = 10  # N × N products per timed call, so that one call is not a single sub-millisecond sample
PRODUCTS = {"aten.mm.default", "aten.addmm.default", "aten.addmm_.default", "aten.matmul.default",
            "mkldnn._linear_pointwise.default", "mkldnn._linear_pointwise.binary"}


class CountSquareProducts(TorchDispatchMode):
    """Counts the matrix products whose three sides all equal n."""

    def __init__(self, n: int):
        super().__init__()
        self.n, self.count = n, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if str(func) in PRODUCTS and isinstance(out, torch.Tensor) and tuple(out.shape) == (self.n, self.n):
            self.count += 1
        return out


def compose_products(update: Update, n: int) -> int:
    """Matrix products of N × N in composing the model's V and back-propagating through that alone."""
    counter = CountSquareProducts(n)
    with counter:
        update.compose()
    return counter.count


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="medium,large", help="as training_update.py's (default medium,large)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--roofline-n", type=int, default=2048, help="side of the roofline's product (default 2048)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    impls = implementations()
    roofline = Roofline(args.roofline_n)
    roofline.sample(5)
    print(f"{describe_cpu()}; torch {torch.__version__}, {args.threads} thread(s), oneDNN "
          f"{'available' if onednn.kernel() is not None else 'unavailable'}", flush=True)
    for label, (t, b, n, i) in parse_sizes(args.sizes):
        torch.manual_seed(0)
        updates = {name: Update(impls[name][0], (t, b, n, i)) for name in MODELS}
        for update in updates.values():
            update()  # the state the timed updates see (with dynamic trivialization: A just reset)
            update.v_grad = torch.randn(n, n)
        counts = {name: compose_products(updates[name], n) for name in MODELS}
        v, state, z = torch.randn(n, n) / n ** 0.5, torch.randn(b, n), torch.randn(t, b, n)
        h, x, dz = torch.randn(t * b, n), torch.randn(t * b, i), torch.randn(t * b, n)
        w_ih = torch.randn(n, i)
        square_a, square_b = torch.randn(n, n), torch.randn(n, n)
        readout = nn.Linear(n, CLASSES)
        readout_opt = torch.optim.RMSprop(readout.parameters(), lr=1e-4)
        targets = torch.randint(CLASSES, (t * b,))
        hidden = torch.randn(t, b, n, requires_grad=True)

        def loops_addmm():
            for step in range(2 * t):
                torch.addmm(z[step % t], state, v)

        def loops_onednn():
            for step in range(2 * t):
                onednn.kernel().binary(state, z[step % t], v, None, "add")

        def read_out():
            readout_opt.zero_grad(set_to_none=True)
            hidden.grad = None
            F.cross_entropy(readout(hidden).reshape(-1, CLASSES), targets).backward()
            readout_opt.step()

        def squares_mm():
            for _ in range(SQUARES):
                torch.mm(square_a, square_b)

        def squares_onednn():
            for _ in range(SQUARES):
                onednn.kernel()(square_a, square_b, None, "none", [], "")

        parts = {"loops (torch.addmm)": loops_addmm, "read-out": read_out, "N×N (torch.mm)": squares_mm,
                 "dV (torch.mm)": lambda: torch.mm(dz.t(), h),
                 "projection (torch.mm)": lambda: torch.mm(x, w_ih.t()),
                 "dW_ih (torch.mm)": lambda: torch.mm(dz.t(), x)}
        if onednn.kernel() is not None:
            parts.update({"loops (oneDNN)": loops_onednn, "N×N (oneDNN)": squares_onednn,
                          "dV (oneDNN)": lambda: onednn.kernel()(dz.t(), h.t(), None, "none", [], ""),
                          "projection (oneDNN)": lambda: onednn.kernel()(x, w_ih, None, "none", [], ""),
                          "dW_ih (oneDNN)": lambda: onednn.kernel()(dz.t(), x.t(), None, "none", [], "")})
        jobs = {**{name: updates[name] for name in MODELS}, **parts}
        for job in jobs.values():  # warm-up
            job()
        times = {name: [] for name in jobs}
        names = list(jobs)
        for r in range(args.repeats):
            for name in names[r % len(names):] + names[:r % len(names)]:
                times[name].append(timed(jobs[name]))
        med = {name: statistics.median(values) for name, values in times.items()}
        def fastest(part):
            return min(value for key, value in med.items() if key.startswith(part + " ("))
        loops, square = fastest("loops"), fastest("N×N") / SQUARES
        weights = fastest("dV") + fastest("projection") + fastest("dW_ih")
        base = med[BASELINE]
        common = loops + weights + med["read-out"]
        roof = roofline.sample(3)
        flops = matmul_flops((t, b, n, i), 1)  # the non-gated models: one product per step
        print(f"\n{label}: (T, B, N, I) = ({t}, {b}, {n}, {i}), median of {args.repeats} round-robin rounds; "
              f"roofline {roof:.0f} GFLOP/s; the update's {flops / 1e9:.2f} GFLOP (as training_update.py counts)")
        print(f"  torch.nn.RNN(relu) update {base * 1e3:.1f} ms; loops {loops * 1e3:.1f} ms (2T = {2 * t} products), "
              f"weights {weights * 1e3:.1f} ms, read-out {med['read-out'] * 1e3:.1f} ms, "
              f"one N×N product {square * 1e3:.2f} ms")
        print("  parts, ms: " + ", ".join(f"{key} {value * 1e3:.1f}" for key, value in med.items() if key in parts))
        print(f"  {'model':30s} {'N×N products':>12s} {'floor ms':>9s} {'floor × RNN':>12s} {'% roof at floor':>16s} "
              f"{'update ms':>10s} {'update × RNN':>13s} {'% roof':>7s} {'update / floor':>15s}")
        for name in MODELS:
            floor = common + counts[name] * square
            print(f"  {name:30s} {counts[name]:12d} {floor * 1e3:9.1f} {floor / base:12.2f} "
                  f"{100 * flops / floor / 1e9 / roof:16.1f} {med[name] * 1e3:10.1f} {med[name] / base:13.2f} "
                  f"{100 * flops / med[name] / 1e9 / roof:7.1f} {med[name] / floor:15.2f}")


if __name__ == "__main__":
    main()
