"""The memory grid (nnrnn.experiments.grids.memory) and its report (nnrnn.experiments.memory): the ladder climbs by
its rule, a second invocation trains nothing new, and the report is written again from its compact data alone."""
import dataclasses
import json

import pytest

from nnrnn.experiments import grid, grids, reproduce
from nnrnn.experiments import report as reports
from nnrnn.experiments.grids import memory as memory_grid
from nnrnn.experiments.memory import REPORT, solved_at
from nnrnn.models import model_class
from nnrnn.tasks.copy import baseline_loss
from nnrnn.training import outcome
from nnrnn.training import train as trainer
from tests.experiments import synthetic

pytestmark = pytest.mark.usefixtures("undrawn_figures")

OPTIONS = {"batch_size": 4, "steps": 6, "eval_every": 2, "log_every": 2, "stop_when_solved": 0.1}


def toy_scale(tune: bool = True) -> dict:
    """Two rungs (T = 4, 8), two models, three seeds; searched (one trial each) at the first rung."""
    rung = {"task": "copy", "hidden": 8, "columns": ("tuned",), "models": ("rnn", "lstm")}
    scale = {"seeds": [0, 1, 2], "report": REPORT, "climb": memory_grid.climb,
             "tasks": {f"copy-{T}": {**rung, "options": {"T": T, **OPTIONS}} for T in (4, 8)}}
    if tune:
        scale["tune"] = {"trials": 1, "share": 0.5, "startup": 1, "settings": ("copy-4",)}
    return scale


def losses(solving: int, T: int) -> list[dict]:
    """Validation records: two in a row below the threshold at updates 4 and 6 when ``solving``, else a single low
    one (update 4) between high ones, which is not solved."""
    low, high = 0.05 * baseline_loss(T), 0.5 * baseline_loss(T)
    values = [high, low, low] if solving else [high, low, high]
    return [{"step": 2 * (i + 1), "split": "valid", "loss": v} for i, v in enumerate(values)]


def test_a_model_climbs_while_at_least_two_of_its_three_seeds_solved_the_last_delay(tmp_path):
    scale = toy_scale(tune=False)
    planned = [synthetic.planned(setting=s, task="copy", label=label, model=label, seed=seed,
                                 options={**spec["options"]}, name=f"{s}-{label}-{seed}")
               for s, spec in scale["tasks"].items() for label in ("a", "b", "c") for seed in (0, 1, 2)]
    made = grid.Grid(tmp_path, "toy", scale, planned)
    solving = {"a": 3, "b": 2, "c": 1}  # seeds that solve, at every rung
    asked = []

    def execute(rung: grid.Grid) -> None:
        asked.append([(r.setting, r.label) for r in rung.planned])
        for r in rung.planned:
            folder = rung.run_folder(r)
            folder.mkdir(parents=True)
            (folder / "metrics.jsonl").write_text("".join(
                json.dumps(x) + "\n" for x in losses(r.seed < solving[r.label], r.options["T"])))
            outcome.write(folder, outcome.Outcome(outcome.LEARNED, "synthetic"))
    climbed = memory_grid.climb(made, execute)
    assert {label for _, label in asked[0]} == {"a", "b", "c"}
    assert {label for _, label in asked[1]} == {"a", "b"}  # c: one seed of three solved
    assert [(r.setting, r.label) for r in climbed.planned] == asked[0] + asked[1]
    assert solved_at(losses(1, 8), OPTIONS | {"T": 8}) == 6 and solved_at(losses(0, 8), OPTIONS | {"T": 8}) is None


def test_a_rung_with_an_unfinished_run_ends_the_climb_there(tmp_path):
    scale = toy_scale(tune=False)
    planned = [synthetic.planned(setting=s, task="copy", label="a", model="a", seed=seed, options=spec["options"],
                                 name=f"{s}-{seed}") for s, spec in scale["tasks"].items() for seed in (0, 1, 2)]
    climbed = memory_grid.climb(grid.Grid(tmp_path, "toy", scale, planned), lambda rung: None)  # nothing trained
    assert {r.setting for r in climbed.planned} == {"copy-4"}


@pytest.fixture
def toy(monkeypatch):
    """The toy ladder as a scale; the LSTM's validations report a loss far below the threshold (it solves every
    delay), the RNN's are measured (it solves none at this size and budget)."""
    monkeypatch.setitem(grids.SCALES, "memory-toy", toy_scale())
    real = trainer.evaluate

    def scripted(net, task, split, device):
        metrics = real(net, task, split, device)
        solving = split == "valid" and isinstance(net.rnn, model_class("lstm"))
        return {**metrics, "loss": 0.01 * task.baseline} if solving else metrics
    monkeypatch.setattr(trainer, "evaluate", scripted)
    return "memory-toy"


def test_the_toy_ladder_runs_resumes_without_training_and_its_report_regenerates(tmp_path, toy):
    out = tmp_path / "grid"
    text = reproduce.reproduce(toy, out, log=[].append).read_text()
    names = sorted(p.name for p in (out / "runs").iterdir() if p.is_dir())
    assert sum(n.startswith("copy-lstm") for n in names) == 6  # both delays
    assert sum(n.startswith("copy-rnn") for n in names) == 3  # the first only: it solved nothing
    assert "| LSTM | 8 (3 of 3 seeds) | 4 ± 0 |" in text
    assert "| RNN | none (T = 4: 0 of 3) |" in text and "| 6 × 4 |" in text
    capacities = json.loads((out / "capacity.json").read_text())
    assert len(capacities) == 9 and all(0 <= c for c in capacities.values())
    before = {n: (out / "runs" / n / "metrics.jsonl").read_text() for n in names}
    logs = []
    assert reproduce.reproduce(toy, out, log=logs.append).read_text() == text  # nothing trained the second time
    # nothing but the cost printed before the start (a ceiling: the rungs the ladder did not reach count) and the
    # report's path
    assert [line for line in logs if "planned runs (" not in line and not line.startswith("report: ")] == [], logs
    assert {n: (out / "runs" / n / "metrics.jsonl").read_text() for n in names} == before
    again = reports.regenerate(out / "data.json", tmp_path / "elsewhere")
    assert again.read_text() == text


def test_the_memory_grid_plans_every_model_at_nnrnns_count_and_tunes_at_one_delay():
    spec = grids.SCALES["memory"]
    searches = grid.searches(spec)
    assert len(searches) == 17 and {s["setting"] for s in searches.values()} == {"copy-50"}
    assert {s["options"]["T"] for s in searches.values()} == {50}
    # a trial is as long as a rung's run, so that it is judged over the run's length
    assert {s["options"]["steps"] for s in searches.values()} == {spec["tasks"]["copy-50"]["options"]["steps"]}
    picks = {"copy": {s["label"]: {} for s in searches.values()}}
    planned = grid.plan(spec, picks=picks)
    assert len(planned) == 17 * 3 * 5 and len({r.budget for r in planned}) == 1
    assert all(r.options["stop_when_solved"] == 0.1 for r in planned)
    normal = next(r for r in planned if r.label == "nnrnn normal")
    assert dataclasses.asdict(normal)["extra"] == {"triangular": "none"}
