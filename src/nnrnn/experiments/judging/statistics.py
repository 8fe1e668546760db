"""The statistics every comparison of the reports uses: a result over seeds (:class:`Stat`) and the rule that says
when two differ (rule TEST, :mod:`.rules`).

Under the rule in force ("welch"), two means differ when a two-sided Welch test passes at the level LEVEL: when
``|a − b| > t_{1 − LEVEL/2, df} · sqrt(se_a² + se_b²)``, df by Welch–Satterthwaite (:mod:`.significance`); a mean is
below a fixed value ``x`` when a one-sample t test says so (``mean + t_{1 − LEVEL/2, n − 1} · se < x``).  A grid
started before the rule is also judged under the rule it started with ("two standard errors": the factor 2 in place
of t, whatever the seeds), and its report shows every verdict that moved.  The rule applies from n = 2 seeds.  A value
from a single seed has no standard error of its own: against a result of several seeds it is given that result's
seed-to-seed standard deviation (se·√n) as its standard error, on that result's degrees of freedom; two single
values are not comparable; against a fixed value it is compared by its mean alone.  The critical difference
(:func:`margin`) is also the smallest gap the rule can see with these seeds: where a claim rests on "not clearly
different", its sentence gives that gap, so that a large s.e. from few seeds is not read as agreement.  Counts of
seeds and censored times to solve have their own tests (:mod:`.significance`).  Under rule FAMILY the level is the
report's family's (:mod:`.family`): the Benjamini–Hochberg level of each comparison given the report's others.

The rule compares finite means only (:func:`below`, :func:`differ`, :func:`order`): a result whose every
seed failed (diverged, or never reached a threshold) is below nothing and nothing is below it.  Each claim
says what such a result means for it, in its sentence:

* a model the claim calls good (nnRNN on copy, psMNIST and PTB; nnRNN with γ held at 0.958, "virtually
  identical") whose every seed failed: the claim does not hold, and the sentence says every seed diverged;
  with some seeds failed (not all) the verdict is at most "partly", and the sentence says how many;
* a model the claim calls worse (RNN, LSTM, the other non-gated models on PTB) whose every seed diverged
  counts as worse, and the sentence says so.

A claim is judged only when every model it names has finished runs; otherwise its verdict says the runs are
missing.  Each claim's ``here`` can end with this scale's size (``scope``), beside the paper's N = 512 / 1024.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from scipy import stats

from . import family
from .rules import rule
from .significance import bootstrap_interval, critical, mean_interval, welch_df


@dataclass(frozen=True)
class Stat:
    """Mean ± standard error over the seeds that gave a value; ``failed`` seeds gave none (diverged, or a
    threshold never reached).  ``resolution``: the spacing of the grid the values lie on (a time to solve is read at
    validations ``eval_every`` updates apart); 0 for values stored at full precision.  ``values``: the seeds' finite
    values in order, where the result was made from them (:meth:`of`; () for a published or derived result), so
    that a difference can be given a bootstrap interval; ``label``: what the result is of, for the report's list of
    comparisons; ``published``: a number of the paper's, which no family of this report's comparisons counts
    (:mod:`.family`)."""
    mean: float
    se: float
    n: int
    failed: int = 0
    resolution: float = 0.0
    values: tuple = ()
    label: str = field(default="", compare=False)
    published: bool = field(default=False, compare=False)

    @classmethod
    def of(cls, values, resolution: float = 0.0, label: str = "") -> Stat:
        values = list(values)
        ok = [float(v) for v in values if v is not None and math.isfinite(v)]
        failed = len(values) - len(ok)
        if not ok:
            return cls(math.nan, math.nan, 0, failed, resolution, label=label)
        se = math.nan
        if len(ok) > 1:
            mean = sum(ok) / len(ok)
            se = math.sqrt(sum((v - mean) ** 2 for v in ok) / (len(ok) - 1) / len(ok))
        return cls(sum(ok) / len(ok), se, len(ok), failed, resolution, tuple(ok), label)

    def scaled(self, k: float) -> Stat:
        """The same result in units k times smaller (a share as a percentage: k = 100)."""
        return replace(self, mean=k * self.mean, se=k * self.se, resolution=k * self.resolution,
                       values=tuple(k * v for v in self.values))

    def named(self, label: str) -> Stat:
        return replace(self, label=label)

    @property
    def empty(self) -> bool:
        return self.n == 0

    def err(self) -> float:
        return 0.0 if math.isnan(self.se) else self.se

    def show(self, digits: int, failed: str = "diverged") -> str:
        if self.empty:
            return failed if self.failed else "no runs"
        form = "g" if abs(self.mean) >= 1e5 else "f"  # a run that blew up without diverging
        text = f"{self.mean:.{digits}{form}}" + ("" if math.isnan(self.se) else f" ± {self.se:.{digits}{form}}")
        return text + (f" ({self.failed} of {self.n + self.failed} seeds {failed})" if self.failed else "")


def labelled(table: dict, suffix: str = "", names=str) -> dict:
    """{label: Stat} with every result that names nothing named by its key as ``names`` shows it, and ``suffix``,
    for the report's list of comparisons (None stays None)."""
    return {key: s if s is None or s.label else s.named(f"{names(key)}{suffix}") for key, s in table.items()}


def rule_words() -> str:
    """The rule in force, in words, for a report's methods."""
    if rule("TEST") == "two standard errors":
        return ("Two means differ when they are more than two combined standard errors apart; a mean is below a "
                "fixed value when it is more than two standard errors below it.")
    return (f"Two means differ when a two-sided Welch test of their seeds passes at {rule('LEVEL'):g} (the gap "
            f"t_{{1 − {rule('LEVEL'):g}/2, df}} · sqrt(se_a² + se_b²), df by Welch–Satterthwaite: about 4.3 combined "
            "standard errors at 3 seeds a side, 2.3 at 5); a mean is below a fixed value when a one-sample t test "
            f"says so at the same level. A comparison with fewer than {rule('EXPLORATORY_UNDER')} seeds on a side "
            "is exploratory, and its sentence says so; seeds that solved are compared by Fisher's exact test, and "
            "times to solve, the unsolved seeds censored at the budget, by the log-rank test "
            "(`src/nnrnn/experiments/judging/significance.py`)."
            + (" A report's comparisons are controlled together: each passes when its Benjamini–Hochberg adjusted p "
               "value over the report's family is below the level (rule FAMILY, "
               "`src/nnrnn/experiments/judging/family.py`; the list at the report's end)."
               if rule("FAMILY") == family.BH else ""))


def _own_error(a: Stat) -> float:
    """a's own standard error: NaN for a single seed; at least what its resolution leaves unknown (the s.e. of a
    value rounded to a grid of that spacing, resolution/√12 per seed); NaN for an s.e. of exactly 0 without a
    resolution (seeds that agree to their stored precision say nothing of the spread; the rule ZERO_SE)."""
    if a.n < 2:
        return math.nan
    se = a.err()
    if a.resolution:
        se = max(se, a.resolution / math.sqrt(12 * a.n))
    return math.nan if se == 0 and rule('ZERO_SE') == "borrow" else se


def _error(a: Stat, other: Stat) -> float:
    """a's standard error, or where it has none of its own (a single seed, an s.e. of 0) the other result's
    seed-to-seed standard deviation (NaN when neither has one)."""
    own = _own_error(a)
    if not math.isnan(own):
        return own
    theirs = _own_error(other)
    return theirs * math.sqrt(other.n) if not math.isnan(theirs) else math.nan


def _freedom(a: Stat, other: Stat) -> float:
    """The degrees of freedom of a's standard error: n − 1 for its own, the other's n − 1 for one it borrowed."""
    return a.n - 1 if not math.isnan(_own_error(a)) else other.n - 1


def margin(a: Stat, b: Stat) -> float:
    """The smallest gap between two means that the rule calls a difference (NaN for two single values, which the
    rule cannot compare): t_{1 − LEVEL/2, df} · sqrt(se_a² + se_b²) under the Welch test, 2·sqrt(se_a² + se_b²)
    under the two-standard-error rule a grid may have started with."""
    se_a, se_b = _error(a, b), _error(b, a)
    se = math.hypot(se_a, se_b)
    if rule("TEST") == "two standard errors":
        return 2 * se
    return critical(se, welch_df(se_a, _freedom(a, b), se_b, _freedom(b, a)), _level(a, b))


def _token(a: Stat) -> tuple:
    """What identifies a result in a family of comparisons (NaN, which equals nothing, as None)."""
    return tuple(None if isinstance(v, float) and math.isnan(v) else v
                 for v in (a.label, a.mean, a.se, a.n, a.failed, a.resolution, a.values))


def _level(a: Stat, b: Stat) -> float:
    """The level the Welch test of a against b passes at: LEVEL, or under a report's family its controlled level
    (:func:`.family.level`); the paper's published numbers against each other are outside any family."""
    if (a.published and b.published) or _token(a) == _token(b):  # the paper's own rows; one result against itself
        return rule("LEVEL")
    return family.level(("Welch", frozenset((_token(a), _token(b)))), p_value(a, b), lambda: _member(a, b))


def _member(a: Stat, b: Stat) -> family.Member:
    low, high = bootstrap_interval(a.values, b.values)
    return family.Member("Welch", a.label, b.label, (_shown(a), _shown(b)), p_value(a, b), a.mean - b.mean, low,
                         high, (a.n + a.failed, b.n + b.failed), "bootstrap" if math.isfinite(low) else "")


def _shown(a: Stat) -> str:
    """A result in a report's list of comparisons: "0.817 ± 0.0067 (3 seeds)", with the seeds that gave none."""
    text = f"{a.mean:.4g}" + ("" if math.isnan(a.se) else f" ± {a.se:.2g}")
    return text + (f" ({a.n} of {a.n + a.failed} seeds; {a.failed} gave none)" if a.failed else "")


def adjusted_p(a: Stat, b: Stat) -> float:
    """The adjusted p value of a against b in the report's family (NaN outside one)."""
    return family.adjusted(("Welch", frozenset((_token(a), _token(b)))))


def p_value(a: Stat, b: Stat) -> float:
    """The two-sided Welch p value of a − b (NaN where the rule cannot compare them)."""
    se_a, se_b = _error(a, b), _error(b, a)
    se = math.hypot(se_a, se_b)
    if a.empty or b.empty or not (math.isfinite(se) and se > 0):
        return math.nan
    return float(2 * stats.t.sf(abs(a.mean - b.mean) / se, welch_df(se_a, _freedom(a, b), se_b, _freedom(b, a))))


def exploratory(*results: Stat) -> bool:
    """Some side has fewer seeds than EXPLORATORY_UNDER (its failed seeds counted)."""
    return any(s is not None and s.n + s.failed < rule("EXPLORATORY_UNDER") for s in results)


def below(a: Stat, b: Stat) -> bool:
    """a's mean below b's by more than the rule's margin (:func:`margin`); False when either has no finite value
    (each claim says itself what a result whose every seed failed means for it) or both are single seeds."""
    return not a.empty and not b.empty and a.mean + margin(a, b) < b.mean


def differ(a: Stat, b: Stat) -> bool:
    """|a − b| above the rule's margin (:func:`margin`); False when either has no finite value."""
    return below(a, b) or below(b, a)


def order(a: Stat, b: Stat) -> int:
    """−1 when a is clearly below b by the rule, 1 when clearly above, 0 when neither (or either has no finite
    value)."""
    return -1 if below(a, b) else 1 if below(b, a) else 0


def comparable(a: Stat, b: Stat) -> bool:
    """Both have a finite value and the rule has a margin for them (not two single seeds)."""
    return not (a.empty or b.empty or math.isnan(margin(a, b)))


def ranking(a, b, lower_is_better: bool = True) -> int:
    """1 when a is better than b by the rule (lower is better when ``lower_is_better``), −1 when worse, 0 when
    neither or when a result is missing or every seed of both failed; a result whose every seed failed is worse
    than one with values."""
    if missing(a, b) or (a.empty and b.empty):
        return 0
    if a.empty or b.empty:
        return -1 if a.empty else 1
    return order(a, b) * (-1 if lower_is_better else 1)


def _value_margin(a: Stat, x: float) -> float:
    """How far a's mean must lie from the fixed value ``x`` for the rule to call it below or above: a one-sample t
    test's t_{1 − LEVEL/2, n − 1} · se, at the level of the report's family where one is controlled (2·se under the
    two-standard-error rule; 0 for a single seed, compared by its mean)."""
    if a.n < 2 or rule("TEST") == "two standard errors":
        return 2 * a.err()
    if not a.err():
        return 0.0
    key = ("one-sample t", _token(a), x)
    if a.published:
        return critical(a.err(), a.n - 1)
    return critical(a.err(), a.n - 1, family.level(key, value_p(a, x), lambda: _value_member(a, x)))


def value_p(a: Stat, x: float) -> float:
    """The two-sided one-sample t test's p value of a's mean against ``x``."""
    return float(2 * stats.t.sf(abs(a.mean - x) / a.err(), a.n - 1))


def _value_member(a: Stat, x: float) -> family.Member:
    low, high = mean_interval(a.values)
    return family.Member("one-sample t", a.label, "", (_shown(a), f"{x:.4g}"), value_p(a, x), a.mean - x,
                         low - x, high - x, (a.n + a.failed, 0), "bootstrap" if math.isfinite(low) else "")


def below_value(a: Stat, x: float) -> bool:
    return not a.empty and a.mean + _value_margin(a, x) < x


def above_value(a: Stat, x: float) -> bool:
    return not a.empty and a.mean - _value_margin(a, x) > x


def last_fifth_share(points) -> float:
    """How much of a curve's whole change came in the last fifth of the updates: ``points`` are (update, value) in
    order, and the share is |v_end − v_cut| / |v_end − v_first|, where v_cut is the value at the last point at or
    before 80% of the last update (0 for a flat curve; NaN with fewer than 5 points).  Measured over updates, not
    over evaluations, so a grid evaluated at uneven intervals is read alike."""
    points = list(points)
    if len(points) < 5:
        return math.nan
    cut = max(i for i, (step, _) in enumerate(points) if step <= 0.8 * points[-1][0])
    total = abs(points[-1][1] - points[0][1])
    return abs(points[-1][1] - points[cut][1]) / total if total else 0.0


def missing(*stats) -> bool:
    """Some result has no runs at all (as opposed to runs whose every seed failed)."""
    return any(s is None or (s.empty and not s.failed) for s in stats)


def all_failed(stat) -> bool:
    """Runs, and every seed of them failed."""
    return stat is not None and stat.empty and stat.failed > 0
