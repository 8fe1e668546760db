"""The rules the verdicts are judged by, as data: every threshold and window a claim uses, each with its reason, in
one table (:data:`RULES`), and the words of a verdict.

Rules before runs: a grid records the fingerprint and values of these rules in its plan when it starts
(:func:`nnrnn.experiments.reproduce.reproduce`); a report whose rules changed since prints, for each verdict that
moved, the verdict under the rules at the start beside the new one, and names the change
(:func:`nnrnn.experiments.grids.paper.rules_section`).  The claims read a rule through :func:`rule`, so the same
code judges under the rules in force or under a grid's recorded ones (:func:`judged_by`).

How two results are compared is in :mod:`.statistics` (rule TEST) and :mod:`.significance`.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
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
UNEQUAL = "not judged at these sizes (unequal N)"
NOT_JUDGED = "not judged"


@dataclass(frozen=True)
class Rule:
    value: float | str
    reason: str
    # for a rule added to judge something the code judged otherwise (or not at all) before it existed: the value that
    # gives that earlier behaviour, which a grid started before the rule is shown under (:func:`as_recorded`)
    before: float | str | None = None


# the values of the rule SCORED_BY: what a run's result in a report's tables is
BEST_TEST = "the best checkpoint's test score"
COPY_LAST_VALID = "copy: the last validation loss; the others: the best checkpoint's test score"

RULES: dict[str, Rule] = {
    "SOLVED_SHARE": Rule(0.1, "copy: \"solved\" is a validation loss below 10% of the baseline (the loss of always "
                              "predicting the blank): a model that recalls most symbols is far below it, one that "
                              "learned nothing stays at it"),
    "NEAR_ZERO": Rule(0.1, "copy's \"T = 0\": ‖T‖_F below 10% of ‖Θ‖_F, a triangle that carries a hundredth of Θ's "
                           "energy"),
    "SPIKE": Rule(100.0, "a training gradient norm two orders of magnitude above the run's median is an explosion: the "
                         "ordinary spread of gradient norms between batches of a run that trains well is a few times "
                         "its median, not 100 times"),
    "WARM_UP": Rule(0.0, "the share of a run's first updates left out of the gradient-norm claim: none, since the "
                         "claim says \"throughout training\" (a window of 10% was added while cpu-long ran, and it "
                         "turned a verdict towards the claim: issue 49)"),
    "LEARNED": Rule(0.1, "supplementary Table 7's γ = 1 runs that \"did not converge\": diverged, or a best "
                         "validation bpc less than 10% below the first (stopped learning at its start); not a "
                         "gradient spike, since every model's largest norms come in its first updates"),
    "ROUGHLY_UNIFORM": Rule(0.25, "angles \"roughly uniformly\" distributed: their concentration (0 uniform on [0, π], "
                                  "1 all equal) clearly below a quarter of the way to all equal"),
    "STRONGLY_ALIGNED": Rule(0.5, "angles that \"strongly align\": their concentration clearly above half way from "
                                  "uniform to all equal (a rule relative to copy would call any PTB concentration "
                                  "above copy's strong)"),
    "STILL_MOVING": Rule(0.2, "a validation curve with more than a fifth of its whole change in its last fifth is "
                              "still moving at the end: a row that rests on it says so"),
    "AMPLIFIES": Rule(2.0, "Fig. 1b, α \"contributes significantly to the strength\": the peak at least doubled"),
    "NOT_DEGRADED": Rule(0.9, "Fig. 1c, \"does not significantly degrade\", \"almost optimal\": at least 90% of the "
                              "reference"),
    "DEGRADED_ON": Rule("J_tot", "Fig. 1c's β claim is judged on J_tot = Σ_k J(k), where the information is, not at "
                                 "the worst single k (k = N − 1, where J ≈ 4e-6, which made the paper's own curves "
                                 "fail its sentence)"),
    "RETAINS_MOST": Rule(1.01, "Fig. 1c, the delay line \"retains the most\": no other curve more than 1% above it at "
                               "any k < N"),
    "TABLE3_TOLERANCE": Rule(0.025, "supplementary Table 3: a J_tot within 2.5% of the paper's is reported as close"),
    "ROUNDING": Rule(1e-9, "exact statements (Propositions 1 and 2, Θᴺ = 0): equal up to this relative rounding"),
    "NO_T": Rule(1e-3, "the beyond report: ‖T‖/‖Θ‖ below this is T = 0 but for rounding, and its delay line means "
                       "nothing"),
    "ORDER_ON": Rule("per-entry", "the supplement's order of T's strength, copy < psMNIST < PTB, compared like with "
                                  "like: ‖T‖/‖Θ‖ grows with N for entries of one size (T has N(N−1)/2 entries, Λ's "
                                  "blocks about 2N), and the tasks ran at different N, so the order is judged on T's "
                                  "root-mean-square entry over Λ's; before this rule the order was not judged at "
                                  "unequal N (issue 49)", before="fraction"),
    "BACKPROP_GROWTH": Rule("power law", "the supplement's \"during backpropagation\" (its figure: \"growing "
                                         "polynomially\") and §3's \"gradients explode polynomially in time rather "
                                         "than exponentially\": over the steps back from the loss to the largest "
                                         "norm, log‖∂L/∂h‖ fits a power law in the steps back, log(s + 1), at least "
                                         "as well (R²) as a straight line in s (an exponential); judged on the first "
                                         "seed's probe, as the paper shows one example; before this rule the half "
                                         "was not judged (issue 49)", before="not judged"),
    "GAP_SHARED": Rule("cancel", "the gap to expRNN at fixed hidden units against the fixed parameter count: where "
                                 "nnRNN's runs are the same in both columns, the difference of the two gaps is "
                                 "expRNN(hidden) − expRNN(params), and nnRNN's variance is not counted (twice)"),
    "SCORED_BY": Rule(BEST_TEST, "every protocol scores a run by its best checkpoint's test score (the checkpoint "
                                 "of lowest validation loss, scored once on the test sequences): copy alone was "
                                 "scored by its last validation loss, one evaluation at the end of a run whose "
                                 "loss can spike there, and that ranked the nnRNN 13th on copy (issue 59)",
                      before=COPY_LAST_VALID),
    "ZERO_SE": Rule("borrow", "a standard error of 0 from several seeds (values that agree to their stored or "
                              "validated resolution) says nothing of the spread: such a result takes its resolution, "
                              "or else the other result's seed-to-seed spread, as a single seed does"),
    "TEST": Rule("welch", "two results over seeds differ when a two-sided Welch test of their means passes at the "
                          "level LEVEL (:mod:`.significance`; the difference at which it passes is t_{1 − LEVEL/2, df} "
                          "combined standard errors, df by Welch–Satterthwaite); before this rule, when more than two "
                          "combined standard errors apart, which at 2 to 3 seeds passes differences a test does not "
                          "(issue 67)", before="two standard errors"),
    "LEVEL": Rule(0.05, "the level every test of the reports passes at: two-sided, 5%"),
    "FAMILY": Rule("benjamini-hochberg", "a report's comparisons are one family, controlled together for their "
                                         "multiplicity: a comparison passes (\"clearly\") when its Benjamini–Hochberg "
                                         "adjusted p value over the family is below LEVEL (:mod:`.family` says what "
                                         "each report's family holds); before this rule each comparison passed at "
                                         "LEVEL alone, so that of many comparisons some passed by chance (issue 67)",
                   before="none"),
    "EXPLORATORY_UNDER": Rule(5, "a comparison with fewer seeds than this on a side is exploratory: its sentence says "
                                 "so"),
}

_ACTIVE: contextvars.ContextVar[dict | None] = contextvars.ContextVar("rules", default=None)


def values() -> dict:
    """{name: value} of the rules in force."""
    return _ACTIVE.get() or {name: r.value for name, r in RULES.items()}


def rule(name: str):
    """The value of rule ``name`` in force (the current table, or the one :func:`judged_by` set)."""
    table = _ACTIVE.get()
    if table is not None and name in table:
        return table[name]
    return RULES[name].value


@contextlib.contextmanager
def judged_by(table: dict):
    """Judge under ``table`` ({name: value}, as a grid's plan records it) inside the block; a rule it lacks (added
    since) takes its current value."""
    token = _ACTIVE.set({**{name: r.value for name, r in RULES.items()}, **table})
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def as_recorded(table: dict) -> dict:
    """The whole table of rules as a grid recorded them (``table``): a rule added since takes its ``before`` value
    where it has one (the behaviour before it existed), else its value now."""
    return {name: table[name] if name in table else r.value if r.before is None else r.before
            for name, r in RULES.items()}


def fingerprint(table: dict | None = None) -> str:
    """A short digest of the rules' values: equal fingerprints, equal rules."""
    table = values() if table is None else table
    return hashlib.sha256(json.dumps(table, sort_keys=True).encode()).hexdigest()[:12]


def changed(table: dict) -> list[str]:
    """The rules whose value in ``table`` differs from the current one, in words: "WARM_UP 0.1 → 0 (reason)"."""
    now = {name: r.value for name, r in RULES.items()}
    lines = []
    for name in sorted(set(now) | set(table)):
        if name not in table:
            before = RULES[name].before
            lines.append(f"{name} added: {_shown(now[name])}"
                         + ("" if before is None else f" (before it: {_shown(before)})"))
        elif name not in now:
            lines.append(f"{name} removed (was {table[name]})")
        elif table[name] != now[name]:
            lines.append(f"{name} {table[name]} → {now[name]} ({RULES[name].reason})")
    return lines


def _shown(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def not_converged() -> str:
    """What "did not converge" means for supplementary Table 7's γ = 1 runs, in words."""
    return (f"diverged, or stopped learning at its start: its best validation bpc less than {rule('LEARNED'):.0%} "
            "below its first")
