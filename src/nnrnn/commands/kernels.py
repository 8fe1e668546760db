"""``nnrnn kernels``: the kernel policy on this machine, every decision with its reason (nnrnn.kernels.policy); with
``--tune SIZES`` the decisions of an update at those sizes, timed now; with ``--retune`` the cached ones timed again."""
from __future__ import annotations

from ..kernels import report as kernel_report
from ..errors import UserError
from ..models import MODELS
from ..models.cells import scanned_recurrences


def add_arguments(p) -> None:
    p.description = ("The kernel policy on this machine: which kernels run the recurrences, products and projections "
                     "and why (compiling the C++ loops if they are not yet).")
    p.add_argument("--tune", metavar="SIZES", help="time the choices of an update at these sizes now and print "
                   "them (copy, medium, psmnist, large or TxBxN[xI], comma-separated); the results are cached")
    p.add_argument("--retune", action="store_true", help="time again every decision the timings cache holds for "
                   "this machine and show what changed (a timing taken while the machine is busy is not stored)")


def main(args) -> int:
    sizes = None
    if args.tune is not None:
        try:
            sizes = kernel_report.parse_sizes(args.tune)
        except ValueError as error:
            raise UserError(f"--tune: {error}") from None
    print("\n".join(kernel_report.lines()))
    if sizes:
        print("\nmeasured now (" + ", ".join(f"{t}x{b}x{n}x{i}" for t, b, n, i in sizes) + "):")
        print("\n".join(kernel_report.tune(sizes)))
    if args.retune:
        print("\ncached decisions, timed again:")
        print("\n".join(kernel_report.retune(scanned_recurrences(MODELS.values()))))
    return 0
