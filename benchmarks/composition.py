"""Composing the nnRNN's V = P(Λ + T)Pᵀ with P = exp(A) and back-propagating through it alone: the exponential's
Taylor programs against its reference evaluation (Paterson–Stockmeyer), in one process.

For each hidden size N, one nnRNN (Cayley init, the paper's) is trained for one update of training_update.py's
(so A is what a first update leaves), then its generator is scaled to each ‖A‖₂ asked for, and the composition
with its gradient (``Update.compose``) is timed with the exponential evaluated both ways, alternating rounds
(``nnrnn.doctor.harness``), median of ``--repeats``.  Printed: the N × N products each does (counted with a
dispatch mode) and the time ratio programs / reference.

Usage::

    python benchmarks/composition.py --sizes 512,1024 --norms 1,2,3.14159 --repeats 11 --threads 1
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

from speed_floor import CountSquareProducts  # noqa: E402
from training_update import Update, implementations  # noqa: E402

from nnrnn.doctor.harness import alternate, medians  # noqa: E402
from nnrnn.kernels.host import describe_cpu  # noqa: E402
from nnrnn.parametrizations import expm  # noqa: E402
from nnrnn.parametrizations.orthogonal import skew  # noqa: E402


def evaluated(update: Update, reference: bool):
    def call():
        kept = expm.REFERENCE_EVALUATION
        expm.REFERENCE_EVALUATION = reference
        try:
            update.compose()
        finally:
            expm.REFERENCE_EVALUATION = kept
    return call


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="512,1024", help="hidden sizes N, comma-separated (default 512,1024)")
    parser.add_argument("--norms", default="1,2,3.14159", help="‖A‖₂ values, comma-separated (default 1,2,π)")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"{describe_cpu()}; torch {torch.__version__}, {args.threads} thread(s)", flush=True)
    print(f"{'N':>5s} {'‖A‖₂':>6s} {'products, programs':>19s} {'reference':>10s} {'programs ms':>12s} "
          f"{'reference ms':>13s} {'ratio':>6s}")
    for n in (int(v) for v in args.sizes.split(",")):
        update = Update(implementations()["nnrnn"][0], (2, 8, n, 1))
        update()
        update.v_grad = torch.randn(n, n)
        original = update.model.parametrizations.weight_hh_l0.original
        start = original.detach().clone()
        for norm in (float(v) for v in args.norms.split(",")):
            with torch.no_grad():
                original.copy_(start * (norm / torch.linalg.matrix_norm(skew(start.double()), 2).item()))
            calls = {"programs": evaluated(update, False), "reference": evaluated(update, True)}
            counts = {}
            for name, call in calls.items():  # also the warm-up
                with CountSquareProducts(n) as counter:
                    call()
                counts[name] = counter.count
            seconds = medians(alternate(calls, args.repeats))
            print(f"{n:5d} {norm:6.3f} {counts['programs']:19d} {counts['reference']:10d} "
                  f"{seconds['programs'] * 1e3:12.1f} {seconds['reference'] * 1e3:13.1f} "
                  f"{seconds['programs'] / seconds['reference']:6.2f}", flush=True)


if __name__ == "__main__":
    main()
