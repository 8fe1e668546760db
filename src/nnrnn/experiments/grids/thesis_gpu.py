"""The ``thesis-gpu`` grid (issue 68, item 5): the thesis grid (:mod:`.thesis`) at a GPU's scale, the same arms,
option sets, hypotheses, rules and report, at the paper's copy size and at longer delays.

The thesis grid was sized for 2 cores: N = 64, batch 16, 2,000 updates, T = 50 to 200.  Here:

* N = :data:`HIDDEN` = 128, the paper's nnRNN on copy (``paper`` preset), every other arm at its parameter count as
  in the thesis grid;
* copy at T = :data:`DELAYS` (the paper's T = 200, and up to the long-memory protocol's T = 1000), with noise
  σ = 0 and 0.03 in the state (the thesis grid's levels: its pilot chose 0.03 at N = 64; at this size the level at
  which the noiseless nnRNN still solves the shortest delay is to be piloted again before the grid runs, and a
  changed level is a changed declaration, recorded as such);
* :data:`UPDATES` updates of :data:`BATCH` sequences (1.28M sequences a run, over twice the 512K of expRNN's copy
  example), validated every :data:`EVAL_EVERY`; 10 seeds per arm, as the thesis grid.

That is 2 option sets × 2 noise levels × 3 delays × 5 arms × 10 seeds = 600 runs.  Its cost on one GPU and on eight
is what ``nnrnn reproduce --scale thesis-gpu --plan`` (with ``--devices``) measures on them, each run's update timed
on the device at its shape; on a CPU the same command gives the CPU's."""
from __future__ import annotations

from ..planning.declaration import Scale
from ..planning.grid import Grid
from ..reporting.sections import Report
from . import thesis
from .thesis import (GPU_BUDGET, GPU_DELAYS, GPU_NAME, NOISE, OPTION_SETS, SEEDS, arm_setting, arms,
                     comparisons_section, hypotheses_section, outcome_section, setting_name)

# its sizes are declared in .thesis (GPU_BUDGET, GPU_DELAYS), whose reports name this grid
NAME, DELAYS, BUDGET = GPU_NAME, GPU_DELAYS, GPU_BUDGET
HIDDEN, UPDATES, BATCH, EVAL_EVERY = BUDGET.hidden, BUDGET.updates, BUDGET.batch, BUDGET.eval_every
# {setting: (option set, σ, T)}, in the order the grid trains and the report shows them
SETTINGS = {setting_name(o, s, T): (o, s, T) for o in OPTION_SETS for s in NOISE for T in DELAYS}


def protocol_section(grid: Grid) -> list[str]:
    return thesis.protocol_section(grid, SETTINGS)


def claim_section(grid: Grid) -> list[str]:
    return thesis.claim_section(grid, SETTINGS)


def mechanism_section(grid: Grid) -> list[str]:
    return thesis.mechanism_section(grid, SETTINGS)


REPORT = Report("The paper's thesis at equal options, at a GPU's scale: the nnRNN with and without its non-normal "
                "part", (hypotheses_section, protocol_section, outcome_section, comparisons_section, claim_section,
                        mechanism_section))

SCALE = Scale(
    name=NAME,
    about="thesis-gpu: the thesis grid at a GPU's scale, N = 128 (the paper's), copy at T = 200, 500, 1000, 10,000 "
          "updates of 128 per run, 10 seeds per arm, 600 runs (--plan with --devices gives its cost on the GPUs "
          "at hand; not run here)",
    seeds=SEEDS,
    report=REPORT,
    settings={setting: arm_setting(arms(o), OPTION_SETS[o], s, T, budget=BUDGET) for setting, (o, s, T)
              in SETTINGS.items()},
)
