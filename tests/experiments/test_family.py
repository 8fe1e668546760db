"""nnrnn.experiments.judging.family: a report's comparisons controlled together (Benjamini–Hochberg, rule FAMILY), so
that "clearly" means a comparison that passes after the family's control; each claim row names the comparisons it
rests on, and a report lists them with their tests, p values and intervals."""
import math
import re

import numpy as np
import pytest
from scipy import stats

from nnrnn.experiments import grids
from nnrnn.experiments.grids import paper as paper_grid
from nnrnn.experiments.judging import family, rules, significance, statistics
from nnrnn.experiments.judging.comparisons import compare
from nnrnn.experiments.judging.statistics import Stat
from nnrnn.experiments.planning import grid
from nnrnn.experiments.planning.declaration import Scale, Setting
from nnrnn.experiments.reporting import report
from tests.experiments import synthetic

pytestmark = pytest.mark.usefixtures("undrawn_figures")


def test_the_level_a_comparison_passes_at_is_benjamini_hochbergs_given_the_others():
    rng = np.random.default_rng(0)
    for _ in range(50):
        ps = list(np.concatenate([rng.uniform(0, 0.02, rng.integers(0, 5)), rng.uniform(0, 1, rng.integers(1, 12))]))
        adjusted = stats.false_discovery_control(ps)
        for i, p in enumerate(ps):
            level = family.bh_level(p, ps[:i] + ps[i + 1:])
            assert (p <= level) == (adjusted[i] <= rules.rule("LEVEL")), (ps, i)


def _pair(shift: float, k: int):
    """Two results of 6 seeds of spread about 1.9 whose means are ``shift`` + 0.2 apart (p ≈ 0.85 at shift 0)."""
    seeds = (0.0, 1.0, 2.5, 3.0, 4.0, 5.5)
    return Stat.of(k + v for v in seeds), Stat.of(k + shift + 0.2 + v for v in seeds)


def test_a_comparison_that_passes_alone_does_not_pass_among_many_that_do_not():
    a, b = Stat.of([0.0, 0.1, 0.2, 0.3, 0.4]), Stat.of([0.35, 0.45, 0.55, 0.65, 0.75])
    p = statistics.p_value(a, b)
    assert p < rules.rule("LEVEL") and statistics.below(a, b)  # alone: it passes
    nulls = [_pair(0.0, seed) for seed in range(10)]

    def written():
        return statistics.below(a, b), [statistics.differ(x, y) for x, y in nulls]

    (passes, _), controlled = family.control(written)
    members = controlled.members[family.DEFAULT]
    assert not passes and len(members) == 11
    ps = [m.p for m in members.values()]
    assert ps[0] == pytest.approx(p)
    assert controlled.adjusted(family.DEFAULT, next(iter(members))) == pytest.approx(
        stats.false_discovery_control(ps)[0])
    # the same comparison beside comparisons that all pass: it passes again
    strong = [_pair(5.0, seed) for seed in range(10)]
    (passes, _), _ = family.control(lambda: (statistics.below(a, b), [statistics.differ(x, y) for x, y in strong]))
    assert passes


def test_a_grid_started_before_the_rule_is_judged_each_comparison_alone():
    a, b = Stat.of([0.0, 0.1, 0.2, 0.3, 0.4]), Stat.of([0.35, 0.45, 0.55, 0.65, 0.75])
    nulls = [_pair(0.0, seed) for seed in range(10)]
    assert rules.as_recorded({})["FAMILY"] == "none"
    with rules.judged_by({"FAMILY": "none"}):
        (passes, _), controlled = family.control(
            lambda: (statistics.below(a, b), [statistics.differ(x, y) for x, y in nulls]))
    assert passes and not controlled.members


def test_the_papers_numbers_a_result_against_itself_and_a_judging_again_are_in_no_family():
    paper_a, paper_b = Stat(1.47, 0.003, 5, published=True), Stat(1.49, 0.002, 5, published=True)
    a, b = Stat.of([0.0, 0.1, 0.2]), Stat.of([0.5, 0.6, 0.7])

    def written():
        statistics.below(paper_a, paper_b)
        statistics.differ(a, a)
        with family.unrecorded():
            statistics.below(b, a)
        return statistics.below_value(a, 1.0)

    passes, controlled = family.control(written)
    assert passes and [m.test for m in controlled.members[family.DEFAULT].values()] == ["one-sample t"]


def test_fishers_and_the_log_rank_test_are_members_and_pass_only_after_the_control():
    def written():
        strong = significance.log_rank([100.0, 110, 120, 130, 140, 150], 1000, [None] * 6, 1000)
        weak = significance.fisher(5, 5, 0, 5)
        return [strong.passes, weak.passes] + [significance.fisher(3, 5, 2, 5).passes for _ in range(1)] + [
            significance.log_rank([500.0 + 10 * i, 600, 700], 1000, [520.0 + i, 610, 690], 1000).passes
            for i in range(8)], weak.words()

    (passing, words), controlled = family.control(written)
    assert passing[0] and not any(passing[2:])
    assert "adjusted over the report's 11 comparisons" in words
    assert len(controlled.members[family.DEFAULT]) == 11


def test_a_difference_of_per_seed_results_is_given_its_bootstrap_interval():
    a, b = Stat.of([1000.0, 800.0, 1200.0]), Stat.of([1700.0, 1800.0, 1825.0])
    assert a.values == (1000.0, 800.0, 1200.0)
    sentence, _ = compare("nnrnn", a, "lstm", b, 0)
    low, high = significance.bootstrap_interval(a.values, b.values)
    assert f"95% bootstrap interval {low:.3g} to {high:.3g}" in sentence and high < 0
    assert "exploratory: 3 and 3 seeds" in sentence
    published = Stat(1.47, 0.003, 5, published=True)
    assert "bootstrap" not in compare("nnrnn", published, "lstm", Stat(1.5, 0.003, 5), 3)[0]


def test_a_report_lists_its_comparisons_and_each_claim_row_cites_those_it_rests_on(tmp_path, monkeypatch):
    monkeypatch.setitem(grids.SCALES, "copy-only", Scale(name="copy-only", seeds=(0, 1, 2), report=paper_grid.REPORT,
                                                         settings={"copy": Setting(
        task="copy", hidden=16, columns=("hidden",), options={"T": 20, "batch_size": 4, "steps": 40,
                                                              "eval_every": 10, "log_every": 5})}))
    built = synthetic.build(tmp_path, "copy-only")
    grid.record_plan(tmp_path, "copy-only")
    text = report.write_report(built).read_text()
    listed = text.split("## The report's comparisons, controlled together")[1].split("\n## ")[0]
    rows = [line for line in listed.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert rows and all(line.count(" | ") == 9 for line in rows)
    claims = text.split("## The paper's claims at this scale")[1].split("\n## ")[0]
    copy_rows = [line for line in claims.splitlines() if line.startswith("| copy (")]
    assert copy_rows and all("tests: the report's comparisons " in line for line in copy_rows)
    cited = {int(n) for line in copy_rows
             for n in re.findall(r"\d+", line.split("tests: the report's comparisons ")[1].split(" (")[0])}
    assert all("(all exploratory: fewer than 5 seeds a side)" in line for line in copy_rows)  # 3 seeds here
    assert cited <= {int(line.split(" | ")[0][2:]) for line in rows}
    # a p value the list gives passes exactly when its adjusted p value is below the level
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        adjusted = 0.0 if cells[7] == "< 0.001" else math.nan if cells[7] == "n/a" else float(cells[7])
        assert (cells[8] == "yes") == (adjusted < rules.rule("LEVEL")), line
