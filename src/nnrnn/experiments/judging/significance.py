"""The tests the reports' comparisons use, each chosen for its measure, all from :mod:`scipy.stats` (issue 67):

* a per-seed continuous measure (a loss, a bpc, an accuracy): a two-sided Welch test (:func:`welch`, from the
  seeds' values; :func:`welch_summary`, from mean, standard error and seeds alone, where only those are kept, as
  for the paper's published rows), or a permutation test of the difference of means (:func:`permutation`), the
  difference given with a bootstrap interval (:func:`bootstrap_interval`) where the values are at hand;
* counts of seeds that solved: Fisher's exact test (:func:`fisher`);
* times to solve, the unsolved seeds censored at the budget rather than dropped: Kaplan–Meier
  (:func:`kaplan_meier`, ``scipy.stats.ecdf`` on ``CensoredData``) compared by the log-rank test
  (:func:`log_rank`);
* a report's family of comparisons, controlled together for their multiplicity: Benjamini–Hochberg
  (:func:`controlled`, ``scipy.stats.false_discovery_control``).

"Clearly" means a comparison that passes at the level :data:`~.rules.RULES` ``LEVEL`` sets; "not clearly different",
one that does not, said with the smallest difference the design could have detected (:attr:`Test.detectable`), so that
a wide interval from few seeds is not read as agreement.  A comparison with fewer than ``EXPLORATORY_UNDER`` seeds on
a side is exploratory (:attr:`Test.exploratory`), and its sentence says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from . import family
from .rules import rule


@dataclass(frozen=True)
class Test:
    """One comparison's result: the test's name, its two-sided p value, the effect (a − b: a difference of means,
    of shares solved, of median times) with its interval (NaN where the test gives none), the seeds on each side,
    and the smallest effect that could have passed with these seeds (inf where none could, NaN where not
    computed)."""
    test: str
    p: float
    effect: float
    low: float
    high: float
    n: tuple[int, int]
    detectable: float = math.nan
    sides: tuple[str, str] = ("", "")  # what a and b are, for the report's list of its comparisons
    inputs: tuple = ()  # what was compared (values, counts, times), so that two comparisons are told apart

    def named(self, a: str, b: str) -> Test:
        return replace(self, sides=(a, b))

    @property
    def key(self) -> tuple:
        """What identifies this comparison in a family: its test, its sides and what it compared (two pairs of
        models whose seeds came out alike are two comparisons)."""
        return self.test, self.sides, self.inputs

    def _member(self) -> family.Member:
        return family.Member(self.test, *self.sides, ("", ""), self.p, self.effect, self.low, self.high, self.n,
                             "t" if math.isfinite(self.low) else "")

    @property
    def passes(self) -> bool:
        """The comparison passes at the level in force: p below ``LEVEL``, or, in a report's family of comparisons,
        its adjusted p value below it (:mod:`.family`)."""
        return math.isfinite(self.p) and self.p < family.level(self.key, self.p, self._member)

    @property
    def adjusted(self) -> float:
        """Its adjusted p value in the report's family (NaN outside one)."""
        return family.adjusted(self.key) if math.isfinite(self.p) else math.nan

    @property
    def exploratory(self) -> bool:
        """Fewer than ``EXPLORATORY_UNDER`` seeds on a side."""
        return min(self.n) < rule("EXPLORATORY_UNDER")

    def words(self, form: str = ".3g", unit: str = "") -> str:
        """"Welch p = 0.048, difference −775 (95% interval −1540 to −10)", with "; exploratory (3 and 3 seeds)" and,
        for a comparison that does not pass, the smallest difference the design could have detected."""
        what = "difference of Kaplan–Meier medians" if self.test == "log-rank" else \
            "difference of shares" if self.test == "Fisher's exact" else "difference"
        passes = self.passes  # records it in the report's family before its adjusted p value is read
        text = f"{self.test} p = {_p(self.p)}" + adjusted_words(self.adjusted) + (
            f", {what} {self.effect:{form}}{unit}" if math.isfinite(self.effect) else "")
        if math.isfinite(self.low) and math.isfinite(self.high):
            text += f" ({1 - rule('LEVEL'):.0%} interval {self.low:{form}} to {self.high:{form}})"
        if not passes:
            text += (f"; the smallest difference these seeds could show at {rule('LEVEL'):g} is "
                     f"{self.detectable:{form}}{unit}"
                     if math.isfinite(self.detectable) else "; no outcome of these seeds could pass"
                     if math.isinf(self.detectable) else "")
        if self.exploratory:
            text += f"; exploratory ({self.n[0]} and {self.n[1]} seeds)"
        return text


def adjusted_words(adjusted: float) -> str:
    """" (0.12 adjusted over the report's 40 comparisons)" where a report's family is controlled, else ""."""
    fam = family.active()
    if fam is None or not math.isfinite(adjusted):
        return ""
    return f" ({_p(adjusted)} adjusted over the report's {family.size()} comparisons)"


def _p(p: float) -> str:
    return "n/a" if not math.isfinite(p) else f"{p:.2g}" if p >= 1e-3 else "< 0.001"


def _finite(values) -> np.ndarray:
    return np.array([float(v) for v in values if v is not None and math.isfinite(v)], dtype=float)


def welch_df(se_a: float, df_a: float, se_b: float, df_b: float) -> float:
    """The Welch–Satterthwaite degrees of freedom of a difference of two means with standard errors ``se_a``,
    ``se_b`` estimated on ``df_a``, ``df_b`` degrees of freedom."""
    va, vb = se_a ** 2, se_b ** 2
    if not (math.isfinite(va + vb) and df_a > 0 and df_b > 0):  # two single seeds: no estimate of the spread
        return math.nan
    if va + vb == 0:
        return math.inf
    return (va + vb) ** 2 / (va ** 2 / df_a + vb ** 2 / df_b)


def critical(se: float, df: float, level: float | None = None) -> float:
    """The smallest difference of means with standard error ``se`` on ``df`` degrees of freedom that a two-sided
    test at ``level`` (default: the level in force) calls a difference: t_{1 − level/2, df} · se."""
    if not (math.isfinite(se) and df > 0):
        return math.nan
    return float(stats.t.ppf(1 - (rule("LEVEL") if level is None else level) / 2, df)) * se


def welch_summary(mean_a: float, se_a: float, df_a: float, n_a: int, mean_b: float, se_b: float, df_b: float,
                  n_b: int) -> Test:
    """Two-sided Welch test of a − b from each side's mean, standard error and its degrees of freedom (n − 1 for
    an s.e. from n seeds), with the t interval of the difference."""
    se = math.hypot(se_a, se_b)
    df = welch_df(se_a, df_a, se_b, df_b)
    diff = mean_a - mean_b
    if not (math.isfinite(se) and se > 0 and df > 0):
        return Test("Welch", math.nan, diff, math.nan, math.nan, (n_a, n_b))
    p = float(2 * stats.t.sf(abs(diff) / se, df))
    half = critical(se, df)
    return Test("Welch", p, diff, diff - half, diff + half, (n_a, n_b), half,
                inputs=(mean_a, se_a, df_a, n_a, mean_b, se_b, df_b, n_b))


def bootstrap_interval(a, b, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A percentile bootstrap interval (level ``1 − LEVEL``) of mean(a) − mean(b), each side resampled on its own;
    NaN with fewer than 2 values on a side."""
    a, b = _finite(a), _finite(b)
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        d = float(a.mean() - b.mean())
        return d, d
    result = stats.bootstrap((a, b), _difference, n_resamples=resamples, confidence_level=1 - rule("LEVEL"),
                             method="percentile", **_generator(stats.bootstrap, seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def mean_interval(a, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A percentile bootstrap interval (level ``1 − LEVEL``) of mean(a); NaN with fewer than 2 values."""
    a = _finite(a)
    if len(a) < 2:
        return math.nan, math.nan
    if np.ptp(a) == 0:
        return float(a[0]), float(a[0])
    result = stats.bootstrap((a,), np.mean, n_resamples=resamples, confidence_level=1 - rule("LEVEL"),
                             method="percentile", **_generator(stats.bootstrap, seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _difference(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def _generator(function, seed: int) -> dict:
    """A seeded generator under the name ``function`` takes it by: ``rng`` from scipy 1.15, ``random_state``
    before (the oldest scipy the project supports is 1.13)."""
    key = "rng" if "rng" in function.__code__.co_varnames else "random_state"
    return {key: np.random.default_rng(seed)}


def welch(a, b) -> Test:
    """Two-sided Welch test of mean(a) − mean(b) over the seeds' finite values, with a bootstrap interval of the
    difference and the smallest difference the test could have passed with these seeds."""
    xa, xb = _finite(a), _finite(b)
    if len(xa) < 2 or len(xb) < 2:
        return Test("Welch", math.nan, float(xa.mean() - xb.mean()) if len(xa) and len(xb) else math.nan,
                    math.nan, math.nan, (len(xa), len(xb)))
    se_a, se_b = xa.std(ddof=1) / math.sqrt(len(xa)), xb.std(ddof=1) / math.sqrt(len(xb))
    result = stats.ttest_ind(xa, xb, equal_var=False)
    low, high = bootstrap_interval(xa, xb)
    detectable = critical(math.hypot(se_a, se_b), welch_df(se_a, len(xa) - 1, se_b, len(xb) - 1))
    return Test("Welch", float(result.pvalue), float(xa.mean() - xb.mean()), low, high, (len(xa), len(xb)),
                detectable, inputs=(tuple(xa), tuple(xb)))


def permutation(a, b, resamples: int = 9999, seed: int = 0) -> Test:
    """Two-sided permutation test of mean(a) − mean(b) (exact where the seeds' relabellings number fewer than
    ``resamples``), with a bootstrap interval of the difference."""
    xa, xb = _finite(a), _finite(b)
    if not (len(xa) and len(xb)):
        return Test("permutation", math.nan, math.nan, math.nan, math.nan, (len(xa), len(xb)))
    result = stats.permutation_test((xa, xb), _difference, permutation_type="independent", alternative="two-sided",
                                    n_resamples=resamples, **_generator(stats.permutation_test, seed))
    low, high = bootstrap_interval(xa, xb)
    # the smallest p value any outcome can reach is 2 / C(n_a + n_b, n_a): at or above the level, none can pass
    none_can = 2 / math.comb(len(xa) + len(xb), len(xa)) >= rule("LEVEL")
    return Test("permutation", float(result.pvalue), float(xa.mean() - xb.mean()), low, high, (len(xa), len(xb)),
                math.inf if none_can else math.nan, inputs=(tuple(xa), tuple(xb)))


def fisher(solved_a: int, seeds_a: int, solved_b: int, seeds_b: int) -> Test:
    """Fisher's exact test (two-sided) of the seeds that solved, k_a of n_a against k_b of n_b; the effect is the
    difference of the shares solved, and ``detectable`` the smallest difference of shares any outcome of these seed
    counts could pass with (inf where none could: 3 seeds against 3 pass with no outcome at 5%)."""
    table = [[solved_a, seeds_a - solved_a], [solved_b, seeds_b - solved_b]]
    p = float(stats.fisher_exact(table).pvalue) if seeds_a and seeds_b else math.nan
    effect = solved_a / seeds_a - solved_b / seeds_b if seeds_a and seeds_b else math.nan
    passing = [abs(i / seeds_a - j / seeds_b) for i in range(seeds_a + 1) for j in range(seeds_b + 1)
               if stats.fisher_exact([[i, seeds_a - i], [j, seeds_b - j]]).pvalue < rule("LEVEL")]
    return Test("Fisher's exact", p, effect, math.nan, math.nan, (seeds_a, seeds_b), min(passing, default=math.inf),
                inputs=(solved_a, seeds_a, solved_b, seeds_b))


def censored(times, budget: float) -> stats.CensoredData:
    """Times to solve as censored data: a seed that solved at update t is observed at t; one that did not (None, or
    NaN) is right-censored at the ``budget``, so it counts as "not solved by then" rather than being dropped."""
    times = list(times)
    solved = [float(t) for t in times if t is not None and math.isfinite(t)]
    return stats.CensoredData(uncensored=solved, right=[float(budget)] * (len(times) - len(solved)))


def kaplan_meier(times, budget: float):
    """The Kaplan–Meier estimate of the share not yet solved against updates (``scipy.stats.ecdf`` on
    :func:`censored`): an ``ECDFResult`` whose ``sf`` is that share."""
    return stats.ecdf(censored(times, budget))


def median_time(times, budget: float) -> float:
    """The Kaplan–Meier median time to solve: the first update at which at most half the seeds remain unsolved;
    inf when more than half never solved within the budget."""
    times = list(times)
    if not times:
        return math.nan
    if not any(t is not None and math.isfinite(t) for t in times):
        return math.inf
    sf = kaplan_meier(times, budget).sf
    below = [q for q, s in zip(sf.quantiles, sf.probabilities) if s <= 0.5]
    return float(below[0]) if below else math.inf


def log_rank(times_a, budget_a: float, times_b, budget_b: float) -> Test:
    """The log-rank test (two-sided) of two sets of times to solve, the unsolved seeds censored at their budgets;
    the effect is the difference of the Kaplan–Meier medians (inf where a side's median was not reached)."""
    a, b = censored(times_a, budget_a), censored(times_b, budget_b)
    n = (len(list(times_a)), len(list(times_b)))
    m_a, m_b = median_time(times_a, budget_a), median_time(times_b, budget_b)
    effect = m_a - m_b if not (math.isinf(m_a) and math.isinf(m_b)) else math.nan
    if not (a.num_censored() < n[0] or b.num_censored() < n[1]):  # neither side solved: nothing to compare
        return Test("log-rank", math.nan, effect, math.nan, math.nan, n)
    inputs = tuple(tuple(None if t is None or not math.isfinite(t) else float(t) for t in times)
                   for times in (times_a, times_b)) + (budget_a, budget_b)
    return Test("log-rank", float(stats.logrank(a, b).pvalue), effect, math.nan, math.nan, n, inputs=inputs)


def controlled(ps) -> list[float]:
    """Benjamini–Hochberg adjusted p values of a family of comparisons (``scipy.stats.false_discovery_control``),
    in their order; a NaN p value (a comparison that could not be made) stays NaN and is not counted
    (:func:`.family.controlled`, which a report's family of comparisons is controlled by)."""
    return family.controlled(ps)
