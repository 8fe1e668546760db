"""nnrnn.experiments.judging.significance: each measure's test, as the reports' sentences rely on them."""
import math

import pytest
from scipy import stats

from nnrnn.experiments.judging import rules, significance, statistics
from nnrnn.experiments.judging.statistics import Stat


def test_welch_from_values_is_scipys_two_sided_welch_with_a_bootstrap_interval():
    a, b = [1000.0, 800.0, 1200.0], [1700.0, 1800.0, 1825.0]
    test = significance.welch(a, b)
    assert test.p == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue)
    assert test.effect == pytest.approx(-775.0)
    assert test.low < test.effect < test.high and test.high < 0
    assert test.passes and test.exploratory  # 3 seeds a side: exploratory however small p is


def test_welch_from_summaries_agrees_with_scipys_from_stats():
    test = significance.welch_summary(1.0, 0.1, 2, 3, 1.5, 0.12, 4, 5)
    want = stats.ttest_ind_from_stats(1.0, 0.1 * math.sqrt(3), 3, 1.5, 0.12 * math.sqrt(5), 5, equal_var=False)
    assert test.p == pytest.approx(want.pvalue)
    # the interval's half width is the smallest difference that passes: at it, p is the level
    edge = significance.welch_summary(test.detectable, 0.1, 2, 3, 0.0, 0.12, 4, 5)
    assert edge.p == pytest.approx(rules.rule("LEVEL"))


def test_fisher_says_when_no_outcome_of_the_seeds_could_pass():
    test = significance.fisher(2, 3, 0, 3)
    assert test.p == pytest.approx(0.4) and not test.passes and math.isinf(test.detectable)
    assert "no outcome of these seeds could pass" in test.words()
    five = significance.fisher(5, 5, 0, 5)
    assert five.passes and not five.exploratory and five.detectable <= 1.0


def test_log_rank_censors_the_unsolved_seeds_rather_than_dropping_them():
    solved = [1000.0, 800.0, 1200.0]
    with_unsolved = significance.log_rank(solved, 2000, [1700.0, 1800.0, None], 2000)
    dropped = significance.log_rank(solved, 2000, [1700.0, 1800.0], 2000)
    assert with_unsolved.p < dropped.p  # an unsolved seed is evidence of slowness, not absent
    assert significance.kaplan_meier([1.0, 2.0, None], 5).sf.probabilities[-1] == pytest.approx(1 / 3)
    assert significance.median_time([None, None, 5.0], 10) == math.inf
    assert math.isnan(significance.log_rank([None], 10, [None], 10).p)


def test_a_permutation_test_of_three_seeds_against_three_cannot_pass_at_five_percent():
    test = significance.permutation([1, 2, 3], [4, 5, 6.5])
    assert test.p == pytest.approx(0.1) and math.isinf(test.detectable)


def test_the_family_is_controlled_by_benjamini_hochberg_and_skips_comparisons_not_made():
    adjusted = significance.controlled([0.01, 0.04, math.nan, 0.03])
    assert math.isnan(adjusted[2])
    assert adjusted[:2] + adjusted[3:] == pytest.approx(list(stats.false_discovery_control([0.01, 0.04, 0.03])))


def test_the_rule_is_the_welch_test_now_and_two_standard_errors_for_a_grid_started_before_it():
    a, b = Stat(1.0, 0.1, 3), Stat(1.35, 0.1, 3)  # 2.47 combined s.e. apart: two s.e. passes, Welch at 3 seeds not
    assert not statistics.below(a, b)
    assert statistics.p_value(a, b) > 0.05
    with rules.judged_by(rules.as_recorded({})):  # a grid whose recorded rules predate TEST
        assert statistics.below(a, b)
    assert "TEST" in "; ".join(rules.changed({}))
