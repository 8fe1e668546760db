"""``nnrnn kernels``: which kernels run the recurrences here."""
from __future__ import annotations

import torch

from .. import kernels


def add_arguments(p) -> None:
    p.description = "Which kernels run the recurrences on this machine, compiling the C++ loops if they are not yet."


def run(args) -> int:
    loops = kernels.recurrence_loops()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("compiled recurrence loops: " + (f"yes (cached in {kernels.extensions_dir()})" if loops
                                           else f"no, Python loops instead ({kernels.loops_unavailable_reason()})"))
    print(f"oneDNN products: {kernels.onednn_status()}")
    return 0
