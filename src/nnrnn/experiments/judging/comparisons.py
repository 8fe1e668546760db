"""A comparison of two results by the rule (:mod:`.statistics`) in words: :func:`compare` and :func:`relation`
say one comparison, shared by the claims' sentences and the grids' reports."""
from __future__ import annotations

import math

from .rules import rule
from .significance import adjusted_words, bootstrap_interval
from .statistics import Stat, adjusted_p, comparable, exploratory, margin, missing, order, p_value, ranking
from .words import name


def _needs(a: Stat, b: Stat, form: str, unit: str = "") -> str:
    return f"(the rule needs a gap above {margin(a, b):{form}}{unit} with these seeds)"


def _tested(a: Stat, b: Stat) -> str:
    """" (Welch p = 0.03 (0.06 adjusted over the report's 40 comparisons), difference −0.012 (95% bootstrap interval
    −0.02 to −0.005); exploratory: 3 and 3 seeds)" for two results the rule compares: the test's p value, adjusted
    over the report's family where one is controlled, the difference with a bootstrap interval where both hold
    per-seed values, and whether a side has too few seeds for more than an exploratory comparison; "" under the
    two-standard-error rule."""
    if rule("TEST") == "two standard errors" or not comparable(a, b):
        return ""
    p = p_value(a, b)
    margin(a, b)  # the comparison made: a member of the report's family, whose adjusted p value follows
    words = (f"Welch p = {p:.2g}" if p >= 1e-3 else "Welch p < 0.001") + adjusted_words(adjusted_p(a, b))
    low, high = bootstrap_interval(a.values, b.values)
    if math.isfinite(low):
        words += (f", difference {a.mean - b.mean:.3g} ({1 - rule('LEVEL'):.0%} bootstrap interval {low:.3g} to "
                  f"{high:.3g})")
    if exploratory(a, b):
        words += f"; exploratory: {a.n + a.failed} and {b.n + b.failed} seeds"
    return f" ({words})"


def _versus(sign: int, lower: str, higher: str, same: str = "not clearly different from") -> str:
    """The words of an :func:`~.statistics.order`: ``lower`` for −1, ``higher`` for 1, ``same`` for 0."""
    return {-1: lower, 1: higher, 0: same}[sign]


def relation(a: Stat, b: Stat) -> str:
    """"clearly below", "clearly above" or "not clearly different from" by the rule, and "not comparable with"
    when either has no finite value."""
    return _versus(order(a, b), "clearly below", "clearly above") if comparable(a, b) else "not comparable with"


def compare(a_label: str, a, b_label: str, b, digits: int = 3, lower_is_better: bool = True,
            failed: str = "diverged") -> tuple[str, int]:
    """One sentence comparing two results by the rule, and its sign (:func:`~.statistics.ranking`): 1 when a is
    better than b by the rule (:func:`~.statistics.margin`), −1 when worse, 0 when neither (or a result is
    missing); "not clearly different" carries the smallest gap the rule could see with these seeds.  ``failed`` says
    what a seed without a value did ("diverged", or "never solved" for a time to solve)."""
    sign = ranking(a, b, lower_is_better)
    if missing(a, b):
        return f"{name(a_label)} against {name(b_label)}: runs missing", 0
    if a.empty and b.empty:
        return f"{name(a_label)} and {name(b_label)}: every seed {failed}", 0
    if a.empty or b.empty:  # every seed of one failed: that one is the worse
        verb = "worse than" if a.empty else "better than"
    else:
        verb = _versus(sign, "clearly worse than", "clearly better than")
    gap = f" {_needs(a, b, f'.{digits}f')}" if sign == 0 and comparable(a, b) else ""
    return (f"{name(a_label)} {a.show(digits, failed)} is {verb} {name(b_label)} {b.show(digits, failed)}{gap}"
            + _tested(a, b), sign)
