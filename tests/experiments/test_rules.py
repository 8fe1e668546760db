"""nnrnn.experiments.judging.rules: every rule in one table with its reason; a grid records them when it starts,
and a report
whose rules changed since says which verdicts moved and which change moves them."""
import dataclasses
import json

import pytest

from nnrnn.experiments import grids
from nnrnn.experiments.grids import paper as paper_grid
from nnrnn.experiments.judging import rules
from nnrnn.experiments.planning import grid
from nnrnn.experiments.planning.declaration import Scale, Search, Setting
from nnrnn.experiments.reporting import report
from tests.experiments import synthetic

COPY = {"T": 20, "batch_size": 4, "steps": 40, "eval_every": 10, "log_every": 5}


pytestmark = pytest.mark.usefixtures("undrawn_figures")  # what is trained and written, not the drawing


@pytest.fixture
def copy_scale(monkeypatch):
    monkeypatch.setitem(grids.SCALES, "copy-only", Scale(name="copy-only", seeds=(0, 1, 2), report=paper_grid.REPORT,
                                                         settings={"copy": Setting(task="copy", hidden=16,
                                                                                   columns=("hidden",),
                                                                                   options=COPY)}))
    return "copy-only"


def test_every_rule_has_a_value_and_a_reason_and_the_fingerprint_follows_the_values():
    assert all(r.reason and r.value is not None for r in rules.RULES.values())
    now = rules.fingerprint()
    assert rules.fingerprint({**rules.values(), "SPIKE": 1000.0}) != now
    with rules.judged_by({"SPIKE": 1000.0}):
        assert rules.rule("SPIKE") == 1000.0 and rules.fingerprint() != now
    assert rules.rule("SPIKE") == rules.RULES["SPIKE"].value and rules.fingerprint() == now
    assert rules.changed({**rules.values(), "SPIKE": 1000.0})[0].startswith("SPIKE 1000.0 → 100.0 (")


def test_a_grid_records_its_rules_when_it_starts_and_keeps_them_when_it_resumes(tmp_path, monkeypatch):
    first = grid.record_plan(tmp_path, "cpu")
    assert first["fingerprint"] == rules.fingerprint() and first["rules"]["WARM_UP"] == rules.RULES["WARM_UP"].value
    monkeypatch.setitem(rules.RULES, "SPIKE", rules.Rule(10.0, "changed while the grid ran"))
    assert grid.record_plan(tmp_path, "cpu") == first  # resumed: the start's record stays
    assert grid.recorded_rules(tmp_path)["SPIKE"] == 100.0


def test_a_grids_report_states_the_search_budget_it_started_with_after_its_scale_changes(tmp_path):
    spec = Scale(name="some", seeds=(0,), report=paper_grid.REPORT,
                 tune=Search(trials=10, share=0.2, seed=100, settings=("copy",)),
                 settings={"copy": Setting(task="copy", hidden=16, columns=("tuned",), options=COPY)})
    grid.record_plan(tmp_path, "some", spec)
    # the record's form of before the declarations were types: the fields given, the settings as a list
    assert json.loads((tmp_path / grid.PLAN).read_text())["tune"] == {"trials": 10, "share": 0.2, "seed": 100,
                                                                       "settings": ["copy"]}
    changed = dataclasses.replace(spec, tune=Search(trials=4, share=1.0, seed=100))  # the scale's module edited
    started = grid.Grid(tmp_path, "some", changed)
    assert started.tune == Search(trials=10, share=0.2, seed=100, settings=("copy",))
    assert grid.Grid(tmp_path / "elsewhere", "some", changed).tune == changed.tune  # nothing recorded


def test_a_report_whose_rules_changed_mid_way_shows_each_moved_verdict_then_and_now(tmp_path, copy_scale, monkeypatch):
    built = synthetic.build(tmp_path, copy_scale)
    grid.record_plan(tmp_path, copy_scale)  # the grid starts under today's rules ...
    text = report.write_report(built).read_text()
    assert "They are the rules this grid recorded when it started" in text
    # ... and mid-way "solved" is redefined as a loss below 0.01% of the baseline, which no model reaches
    monkeypatch.setitem(rules.RULES, "SOLVED_SHARE", rules.Rule(0.0001, "a stricter copy criterion"))
    text = report.write_report(built).read_text()
    assert "**The rules changed after this grid started**" in text and "SOLVED_SHARE 0.1 → 0.0001" in text
    section = text.split("**The rules changed after this grid started**")[1].split("## ")[0]
    moved = [line for line in section.splitlines() if line.startswith("| copy")]
    assert moved, section
    # the verdict at the start, beside the one now, and the change that moves it
    solved = next(line for line in moved if "all orthogonal RNNs" in line)
    assert solved.endswith("| holds | **does not hold** | SOLVED_SHARE |")
    claims = text.split("## The paper's claims at this scale")[1]
    assert "all orthogonal RNNs" in claims and "**does not hold**" in claims  # the table itself: the rules now
    plan = json.loads((tmp_path / grid.PLAN).read_text())
    assert plan["rules"]["SOLVED_SHARE"] == 0.1  # the record of the start is not rewritten


def test_a_rule_added_mid_way_is_shown_with_the_verdict_the_behaviour_before_it_gave(tmp_path, copy_scale,
                                                                                   monkeypatch):
    built = synthetic.build(tmp_path, copy_scale)
    grid.record_plan(tmp_path, copy_scale)
    # a rule added after the grid started, whose earlier behaviour ("before") was a stricter copy criterion
    monkeypatch.setitem(rules.RULES, "SOLVED_SHARE", rules.Rule(0.1, "the copy criterion, now a rule of its own",
                                                                before=0.0001))
    recorded = json.loads((tmp_path / grid.PLAN).read_text())
    del recorded["rules"]["SOLVED_SHARE"]
    (tmp_path / grid.PLAN).write_text(json.dumps(recorded))
    assert rules.as_recorded(recorded["rules"])["SOLVED_SHARE"] == 0.0001
    assert rules.as_recorded(recorded["rules"])["SPIKE"] == rules.RULES["SPIKE"].value
    text = report.write_report(built).read_text()
    assert "SOLVED_SHARE added: 0.1 (before it: 0.0001)" in text
    section = text.split("**The rules changed after this grid started**")[1].split("## ")[0]
    solved = next(line for line in section.splitlines() if "all orthogonal RNNs" in line)
    assert solved.endswith("| does not hold | **holds** | SOLVED_SHARE |")


def _spike_last_validation(folder, value: float) -> None:
    """A run whose last validation loss is a spike, its best checkpoint's test score untouched (nnRNN's seed 0 on
    the modern grid's copy)."""
    records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    last = max(i for i, r in enumerate(records) if r["split"] == "valid")
    records[last]["loss"] = value
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_run_is_scored_by_its_best_checkpoints_test_score_and_a_grid_started_before_by_copys_last_validation(
        tmp_path, copy_scale):
    from nnrnn.experiments.reporting import collect
    built = synthetic.build(tmp_path, copy_scale)
    spiked = next(r for r in built.planned if r.label == "nnrnn" and r.seed == 0)
    _spike_last_validation(built.run_folder(spiked), 24.8)
    setting = spiked.setting
    now = collect.results(built, setting)["hidden"]["nnrnn"]
    assert collect.scored("copy").split == "test" and now.mean < 1
    with rules.judged_by({"SCORED_BY": rules.COPY_LAST_VALID}):
        assert collect.scored("copy").split == "valid" and collect.scored("psmnist").split == "test"
        assert collect.results(built, setting)["hidden"]["nnrnn"].mean > 8
    # a grid that started before the rule: its report's table scores now, and the rules section names the change
    grid.record_plan(tmp_path, copy_scale)
    recorded = json.loads((tmp_path / grid.PLAN).read_text())
    del recorded["rules"]["SCORED_BY"]
    (tmp_path / grid.PLAN).write_text(json.dumps(recorded))
    text = report.write_report(built).read_text()
    assert "test loss (baseline" in text and "valid loss (baseline" not in text
    assert f"SCORED_BY added: {rules.BEST_TEST} (before it: {rules.COPY_LAST_VALID})" in text
