"""The rules the verdicts are judged by: the words of a verdict and every threshold and window a claim uses.

The two-standard-error rule itself is in :mod:`.statistics`; the claims (:mod:`.verdicts`, :mod:`.theory_verdicts`)
and the data they read (:mod:`.collect`) take their thresholds from here and from nowhere else.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    """One row of a report's claim table: the claim in the paper's words, its numbers there, this grid's numbers and
    the verdict."""
    claim: str     # the paper's words
    paper: str     # its numbers there
    here: str      # this grid's numbers
    verdict: str


HOLDS, PARTLY, FAILS = "holds", "partly", "does not hold"
UNTESTED = "not tested yet (runs missing)"
UNJUDGED = "cannot be judged (one seed on each side)"
SOLVED_SHARE = 0.1  # copy: "solved" = loss below 10% of the baseline
NEAR_ZERO = 0.1     # copy's T "≈ 0": ‖T‖_F below 10% of ‖Θ‖_F
# A training gradient norm two orders of magnitude above the run's median is an explosion: the ordinary
# spread of gradient norms between batches of a run that trains well is a few times its median, not 100 times.
SPIKE = 100.0

# What "did not converge" means for supplementary Table 7's γ = 1 runs (docs/design.md, "Runs that did not
# converge"): a run that stopped learning at its start.  Not a gradient spike: every model's largest norms come in
# its first updates (up to 2×10⁴ times the median for γ = 1 runs that then train as well as nnRNN)
LEARNED = 0.1
NOT_CONVERGED = (f"diverged, or stopped learning at its start: its best validation bpc less than {LEARNED:.0%} below "
                 "its first")
# "Throughout training" is judged after the first updates, where every model's largest norms come
WARM_UP = 0.1


# --------------------------------------------------------------------------------------------- theory
# §3 and the supplement's Table 3 and Propositions, judged on the numbers nnrnn.analysis.theory computes
# (transient_numbers, fisher_memory_numbers, table3, proposition1_numbers, proposition2_numbers).  There are no
# seeds here: the transients are means over an ensemble of initial conditions, whose standard error the rule
# uses; everything else is deterministic arithmetic, judged against the fixed thresholds below.
AMPLIFIES = 2.0         # "contributes significantly to the strength": the peak at least doubled
NOT_DEGRADED = 0.9      # "does not significantly degrade", "almost optimal": J(k) at least 90% of the reference
RETAINS_MOST = 1.01     # "retains the most": no other curve more than 1% above the delay line at any k < N
TABLE3_TOLERANCE = 0.025
ROUNDING = 1e-9         # exact statements: equal up to this (relative) rounding

NO_T = 1e-3  # ‖T‖/‖Θ‖ below this: T is zero but for rounding, and its delay line means nothing
