"""The learning rates a run takes when neither ``--lr``/``--lr-orth`` nor a preset gives them: rates that learn.

One rate for every task and model did not: at 1e-3 nnRNN's psMNIST diverged (a loss of 10⁴ against chance's
ln 10) and its adding run ended far above the baseline.  So the defaults are the paper's own rates for the task
and model (``paper.json``, the supplement's Tables 4-6: nnRNN 5e-4 and 1e-6 on copy, 2e-4 and 2e-5 on psMNIST,
8e-4 and 8e-5 on PTB), the copy task's for the adding problem, which the paper does not train (measured: nnRNN
at 128 units learns it at these rates, benchmarks/defaults_learn.py), and :data:`FALLBACK` for a model the paper
gives no rate for.  ``tests/training/test_outcome.py`` trains each task's default run at a small size and checks
that it learns; the benchmark does so at the default sizes.
"""
from __future__ import annotations

from .. import presets
from ..tasks import TASKS

FALLBACK = {"lr": 1e-3, "lr_orth": 1e-4}  # a model outside the paper (gru, nngru, nnrnn-complex, ...)
SOURCE = "paper"
BORROWED = {"adding": "copy"}  # a task outside the paper: the rates of the task it is like (fresh random batches)


def default_rates(task: str, model: str, bptt: int | None = None) -> dict:
    """{"lr": ..., "lr_orth": ...} for ``task`` and ``model`` (see the module docstring)."""
    table = BORROWED.get(task, task)
    if not presets.covers(SOURCE, table, model, bptt):
        return dict(FALLBACK)
    values = presets.lookup(SOURCE, table, model, bptt)
    return {key: values.get(key, FALLBACK[key]) for key in FALLBACK}


def describe(key: str = "lr") -> str:
    """The default ``key`` (lr or lr_orth) of nnRNN, the default model, per task, for ``nnrnn train --help``."""
    shown = ", ".join(f"{task} {default_rates(task, 'nnrnn')[key]:g}" for task in TASKS)
    return (f"the task's and model's, the paper's rate (nnrnn: {shown}; adding takes copy's), {FALLBACK[key]:g} for "
            f"a model the paper does not train")
