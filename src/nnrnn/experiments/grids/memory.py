"""The ``memory`` grid (issue 59): the memory horizon of every model, the copy task over a ladder of delays.

Every model runs at nnRNN's parameter count at N = HIDDEN = 64 (the tuned column's size machinery), stacked as
deep as its paper stacks it (``paper_depth``: the LRU and nnLRU 6 layers, minGRU 3, the others 1), its options
tuned once (the scale's ``tune``: the same search for every model, at the rung T = TUNE_RUNG only, each trial as long
as a rung's run and judged by the area under its validation curve), on copy at T = 50, 100, 200, 400, 800 in turn.
A run stops once solved (``--stop-when-solved 0.1``: validation loss below a tenth of the memoryless baseline
10 log 8 / (T + 20) at two validations in a row, every EVAL_EVERY updates) or at its budget of UPDATES updates of
BATCH sequences, the same at every delay.  A model climbs to the next delay only while at least SOLVED_BY of its 3
seeds solved the last (:func:`climb`): the ladder is adaptive, so the grid is planned rung by rung from the results
of the last, deterministically (finished runs are read back, interrupted ones resume).

Why N = 64: at N = 32 with the paper's rates no model solved T = 50 within 3,000 updates (expRNN reached 12% of the
baseline, nnRNN 29%, the LSTM stayed at it); at N = 64 nnRNN solved T = 50 at update 1,150 and expRNN (lr
2e-3) in 300 (2026-11-28, single runs, ``nnrnn train copy --hidden 64 --T 50 --batch-size 16 --stop-when-solved
0.1``).

Budget (2 cores, ``--jobs 2``).  One update (forward, backward, optimizer step) at T = 800, batch 16, one thread,
each label at its size here, median of 3 on the 2-core AMD EPYC (Zen 4) while other work shared it, 2026-11-28: 15
to 50 ms for the RNNs, the nnRNN and its variants, expRNN, EURNN, the LSTM, the LRU and the nnLRU; 130 to 300 ms for
the GRU, nnGRU, complex nnRNN, minGRU, coRNN and LEM (cells stepped in Python); 1.39 s for one seed of every label.
An update costs about (T + 20) / 820 of that at delay T, so one update of all 51 runs is 0.36 s at T = 50, 0.61 s at
100, 1.12 s at 200, 2.15 s at 400 and 4.2 s at 800.  With U = UPDATES = 2,000 updates per delay:

* the planning case, every model solving T = 50, 100, 200 half-way through its budget and failing T = 400:
  (0.5 × (0.36 + 0.61 + 1.12) + 2.15) U ≈ 6,400 core-seconds;
* the search: 17 labels × 5 trials × U updates at T = 50 ≈ 5 × 0.12 U ≈ 1,200 core-seconds (fewer where a trial
  solves early);
* validations (10 batches, forward only, every 50 updates): about 6% more.

That is about 8,000 core-seconds, 1 h 7 min on 2 cores.  The ceiling, every model solving every delay only at its
budget's end, is 8.4 U ≈ 17,000 core-seconds (2 h 20 min) plus the search; the rungs are barriers (the next is
planned once the last has finished), so a rung with fewer runs than cores leaves one idle; the grid resumes across
sittings.
"""
from __future__ import annotations

import dataclasses

from ...models import PAPER_MODELS
from ..grid import TUNE_SEED, TUNED, Grid, finished, metrics
from ..memory import REPORT, SOLVED_BY, SOLVED_SHARE, copy_setting, solved_at
from .modern import CHAIN_ELU

RUNGS = (50, 100, 200, 400, 800)  # the delays T, in the order a model climbs them

UPDATES, BATCH, EVAL_EVERY = 2000, 16, 50  # the budget per delay (docstring), validated every 50
HIDDEN = 64  # nnRNN's units, every other model at its parameter count (docstring: why not 32)
TUNE_RUNG = 50
MEMORY_MODELS = PAPER_MODELS + ("gru", "nngru", "nnrnn-complex", "cornn", "lem", "lru", "mingru", "nnlru")
VARIANTS = {
    **CHAIN_ELU,
    # the paper's thesis isolated: the nnRNN without its non-normal part (T ≡ 0, V = PΛPᵀ normal)
    "nnrnn normal": {"model": "nnrnn", "triangular": "none"},
    # T started as the delay line of the paper's §3, at the α the beyond grid uses (docs/design.md)
    "nnrnn delay": {"model": "nnrnn", "t_init": "delay:0.02"},
}


def rung(T: int) -> dict:
    """One rung of the ladder: copy at delay ``T`` with the grid's budget, every model at nnRNN's count."""
    return {"task": "copy", "hidden": HIDDEN, "paper_depth": True, "columns": (TUNED,), "models": MEMORY_MODELS,
            "variants": VARIANTS,
            "options": {"T": T, "batch_size": BATCH, "steps": UPDATES, "eval_every": EVAL_EVERY,
                        "log_every": EVAL_EVERY, "stop_when_solved": SOLVED_SHARE}}


def solved(grid: Grid, planned) -> bool:
    """Whether a finished run solved its rung (:func:`nnrnn.experiments.memory.solved_at`, from its records)."""
    return solved_at(metrics(grid.run_folder(planned)), planned.options) is not None


def climb(grid: Grid, execute) -> Grid:
    """Train the ladder rung by rung (the grid's settings in order) with ``execute(grid)``, which trains the runs of
    a grid not finished and resumes interrupted ones: rung k's runs are those of the labels at least
    :data:`~nnrnn.experiments.memory.SOLVED_BY` of whose seeds solved rung k − 1 (every label at the first).
    Returns ``grid`` with the runs planned so far, which the report reads; it stops at a rung some of whose runs did
    not finish (another process trains them: the next invocation goes on from there)."""
    climbing = list(dict.fromkeys(r.label for r in grid.planned))
    planned = []
    for setting in grid.settings:
        runs = [r for r in grid.planned if r.setting == setting and r.label in climbing]
        if not runs:
            break
        planned += runs
        execute(dataclasses.replace(grid, planned=runs))
        if not all(finished(grid.run_folder(r)) for r in runs):
            break
        climbing = [label for label in climbing if sum(solved(grid, r) for r in runs if r.label == label) >= SOLVED_BY]
    return dataclasses.replace(grid, planned=planned)


NAME = "memory"
SCALE = {
    "about": "memory: the longest copy delay (T = 50 to 800) each model solves within a fixed budget, every model at "
             "nnRNN's parameter count and tuned alike, with its linear memory capacity (about 1 h with --jobs 2 on "
             "2 cores, 47 min measured: a model stops climbing at its first unsolved delay, so --plan's count of "
             "every delay is an upper bound; it resumes across sittings)",
    "seeds": [0, 1, 2],
    "report": REPORT,
    "climb": climb,
    "tune": {"trials": 5, "share": 1.0, "seed": TUNE_SEED, "startup": 3, "settings": (copy_setting(TUNE_RUNG),)},
    "tasks": {copy_setting(T): rung(T) for T in RUNGS},
}
