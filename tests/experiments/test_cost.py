"""A grid's cost before it starts: the formula, the placement of runs on slots, a cached estimate that measures
nothing, and one real measurement at a tiny shape."""
import json
import time

import pytest

from nnrnn.experiments import grids
from nnrnn.experiments.grids import paper as paper_grid
from nnrnn.experiments.planning import cost, grid
from nnrnn.experiments.planning.declaration import Scale, Setting


@pytest.fixture
def tiny(monkeypatch):
    scale = Scale(name="tiny", seeds=(0, 1), report=paper_grid.REPORT,
                  settings={"copy": Setting(task="copy", hidden=8, columns=("hidden",), options={
                      "T": 5, "batch_size": 4, "steps": 10, "eval_every": 5, "log_every": 5})})
    monkeypatch.setitem(grids.SCALES, "tiny", scale)
    return grid.plan(scale, models=["rnn", "lstm"])


def test_a_run_costs_its_updates_evaluations_saves_start_and_floor():
    times, counts = cost.Times(2.0, 0.5, 0.1, 0.3), cost.Counts(10, 2, 4, 3, 5)
    assert cost.run_seconds(times, counts, 7.0) == pytest.approx(7 + 2 + 10 * 0.5 + (2 * 4 + 3) * 0.1 + 5 * 0.3)


def test_wall_time_places_the_longest_runs_first_on_the_slot_that_frees_first():
    one = cost.Estimate(3, 0, [3600.0, 3600.0, 7200.0], 1, "CPU", 36.0)
    two = cost.Estimate(3, 0, [3600.0, 3600.0, 7200.0], 2, "CPU", 36.0)
    assert one.wall_hours == pytest.approx(4.01) and two.wall_hours == pytest.approx(2.01)
    assert two.device_hours == pytest.approx(4.02)  # each slot's process starts once
    assert "2 CPU slots" in two.line() and "about 4.0 h of CPU time" in two.line()


def test_the_counts_follow_the_options(tiny):
    config = cost.resolve_config({**tiny[0].options, "device": "cpu"}, tiny[0].preset)
    counts = cost.count(config)
    assert (counts.updates, counts.validations, counts.saves) == (10, 2, 2)
    assert counts.valid_batches >= 1 and counts.test_batches >= 1


def test_a_cached_estimate_measures_nothing_and_takes_well_under_a_second(tiny, monkeypatch):
    measured = []
    monkeypatch.setattr(cost, "measure", lambda config: measured.append(config["model"]) or cost.Times(0, 1, 0, 0))
    first = cost.estimate(tiny, [], ["cpu"])
    assert sorted(measured) == ["lstm", "rnn"]  # one shape per model: the seeds share it
    assert first.seconds[0] == pytest.approx(1.0 + 10 * 1)  # the planted floor and 10 updates of 1 s

    def refuse(*args):
        raise AssertionError("a cached shape was measured or counted again")
    for name in ("measure", "measure_floor", "count", "measure_process"):
        monkeypatch.setattr(cost, name, refuse)
    begin = time.perf_counter()
    again = cost.estimate(tiny, [], ["cpu"])
    assert time.perf_counter() - begin < 0.5
    assert again == first


def test_measuring_times_a_real_run_at_its_shape(tiny, monkeypatch):
    monkeypatch.undo()  # the real measuring functions (the cache stays the test's own below)
    config = cost.resolve_config({**tiny[0].options, "device": "cpu", "progress": False}, tiny[0].preset)
    times = cost.Costs("cpu", 1).measure(config)
    assert 0 < times.update_s < 5 and 0 < times.batch_s < 5 and 0 < times.save_s < 5 and times.start_s >= 0


def test_a_time_measured_on_a_busy_machine_serves_this_estimate_and_is_not_cached(tiny, monkeypatch):
    readings = iter([(0.0, 0.0), (2.0, 0.0)] * 50)  # over each measurement, other processes kept 2 cores busy
    monkeypatch.setattr(cost.tuning, "cpu_seconds", lambda: next(readings))
    monkeypatch.setattr(cost.time, "monotonic", iter(range(0, 200)).__next__)  # one second per measurement
    logs = []
    busy = cost.estimate(tiny, [], ["cpu"], logs.append)
    assert busy.runs == len(tiny) and busy.device_hours > 0
    assert any("not cached" in line for line in logs)
    saved = json.loads(cost.cache_path().read_text()) if cost.cache_path().is_file() else {}
    assert not saved.get("shapes") and not saved.get("floor")  # nothing measured busy was kept



WRONG_STRUCTURES = [
    {"shapes": [], "counts": "x", "floor": None, "process": 3},  # parts that are not tables
    {"shapes": {"K": [1, 2]}, "counts": {"K": 5}, "floor": {"K": "fast"}, "process": {"K": {}}},  # foreign entries
    "every entry of the right part, wrong fields",
]


@pytest.mark.parametrize("structure", range(len(WRONG_STRUCTURES)))
def test_a_cache_of_this_format_and_another_structure_is_measured_again_not_a_traceback(structure, tiny,
                                                                                       monkeypatch):
    monkeypatch.setattr(cost, "measure", lambda config: cost.Times(0, 1, 0, 0))
    good = cost.estimate(tiny, [], ["cpu"])
    saved = json.loads(cost.cache_path().read_text())
    if structure < 2:
        broken = {"format": cost.FORMAT, **WRONG_STRUCTURES[structure]}
    else:  # the keys kept, every value of the wrong shape or type
        broken = {"format": cost.FORMAT,
                  "shapes": {key: {"update_s": "1"} for key in saved["shapes"]},
                  "counts": {key: {**value, "updates": -1} for key, value in saved["counts"].items()},
                  "floor": {key: float("nan") for key in saved["floor"]},
                  "process": {key: True for key in saved["process"]}}
    cost.cache_path().write_text(json.dumps(broken))
    assert cost.estimate(tiny, [], ["cpu"]) == good  # measured again, as with no cache
    assert json.loads(cost.cache_path().read_text())["shapes"] == saved["shapes"]  # and the cache made sound
