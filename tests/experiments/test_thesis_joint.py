"""The thesis-joint grid (nnrnn.experiments.grids.thesis_joint, nnrnn.experiments.planning.joint): one search for
every arm of the thesis grid together, its first trial the published set, each trial's arms at the same drawn
options, resumed without training anything finished again, and the grid trained and reported under its pick."""
import json
import signal
from pathlib import Path

import pytest
from helpers import undraw

from nnrnn.errors import Interrupted
from nnrnn.experiments import grids, reproduce
from nnrnn.experiments.grids import SCALES, thesis, thesis_joint
from nnrnn.experiments.planning import cost, grid, joint
from nnrnn.experiments.planning.declaration import inside
from nnrnn.training.options import DEFAULTS

TOY = thesis_joint.joint_scale("thesis-joint-toy", delays=(5,), noise=(0.0,), seeds=(0, 1),
                               budget=thesis.Budget(hidden=8, updates=4, batch=4, eval_every=2), search_at=(0.0, 5),
                               trials=2, startup=1)
SCHUR = ("delta", "t_decay")


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """The toy joint grid run once through ``reproduce``: its folder, report and log."""
    with pytest.MonkeyPatch.context() as patched:
        undraw(patched)
        patched.setitem(grids.SCALES, TOY.name, TOY)
        out = tmp_path_factory.mktemp("joint") / "grid"
        logs = []
        text = reproduce.reproduce(TOY.name, out, log=logs.append).read_text()
        yield out, text, logs


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())


def test_the_grid_declares_one_search_of_every_arm_at_the_middle_setting_on_a_seed_of_its_own():
    spec = SCALES["thesis-joint"]
    search = spec.joint
    assert spec.tune is None and search.setting == thesis.setting_name("joint", 0.03, 100)
    assert search.seed not in spec.seeds and search.seed not in thesis.SEEDS
    assert set(grid.joint_arms(spec)) == {thesis.REFERENCE, "exprnn", *thesis.ARMS}
    kind, low, high = search.space["lr_orth"]  # its own dimension, holding a nearly fixed and a moving basis
    assert kind == "log" and low < 1e-6 and high > 1e-4
    # the thesis grid's settings, every one under the joint pick alone
    assert [(s, T) for _, s, T in thesis_joint.option_sets(grid.Grid(Path("."), spec.name, spec)).values()] == \
        [(s, T) for o, s, T in thesis.SETTINGS.values() if o == "published"]


def test_the_first_trial_is_the_published_set_and_a_point_of_the_space(ran):
    search = SCALES["thesis-joint"].joint
    assert search.first == {k: thesis.published()[k] for k in search.space}
    assert all(inside(v, search.space[k]) for k, v in search.first.items())
    out, _, _ = ran
    first, *_ = json.loads((out / "trials.json").read_text())["joint"]
    assert first["number"] == 0 and first["params"] == search.first and first["published"] == joint.FIRST


def test_under_the_published_pick_the_grid_plans_the_thesis_grids_published_runs():
    spec = SCALES["thesis-joint"]
    arms = grid.joint_arms(spec)
    picks = {"copy": {label: joint.arm_pick(arm, spec.joint.first) for label, arm in arms.items()}}
    names = sorted(r.name for r in grid.plan(spec, seeds=[0], picks=picks))
    published = sorted(r.name for r in grid.plan(SCALES["thesis"], seeds=[0])
                       if thesis.SETTINGS[r.setting][0] == "published")
    assert len(names) == 30 and names == published


def test_every_arm_of_a_trial_trains_with_the_same_drawn_options(ran):
    out, _, _ = ran
    folder = grid.GridFolder(out).joint_search
    study = joint.load(folder)
    assert len(study.trials) == 2 and all(t.state.name == "COMPLETE" for t in study.trials)
    for trial in study.trials:
        configs = {label: _config(folder / "runs" / name) for label, name in trial.user_attrs["runs"].items()}
        assert len(configs) == 5
        for label, config in configs.items():
            assert config["seed"] == TOY.joint.seed and config["steps"] == 4
            for option, value in trial.params.items():  # δ and the decay on T on the Schur form's arms alone
                expected = DEFAULTS[option] if option in SCHUR and config["model"] == "exprnn" else value
                assert config[option] == pytest.approx(expected), (trial.number, label, option)
        assert trial.value == pytest.approx(sum(trial.user_attrs["arms"].values()) / 5)


def test_the_toy_grid_runs_end_to_end_and_reports_its_search_trials_and_pick(ran, tmp_path):
    out, text, logs = ran
    assert any("1 joint search of 2 trials, 5 runs each (2 to run)" in line for line in logs)
    picks = json.loads((out / "tuned.json").read_text())["copy"]
    assert set(picks) == {thesis.REFERENCE, "exprnn", *thesis.ARMS}
    pick = picks[thesis.REFERENCE]
    assert set(pick) == set(TOY.joint.space) and not set(SCHUR) & set(picks["exprnn"])
    assert json.loads((out / "plan.json").read_text())["joint"]["trials"] == 2
    for run in grid.plan(TOY, picks={"copy": picks}):  # every run of the grid trained under the pick
        config = _config(grid.GridFolder(out).run_folder(run))
        assert config["lr"] == pick["lr"] and config["lr_orth"] == pick["lr_orth"], run.label
    for heading in ("## The joint search: one option set for every arm", "## What this grid tests", "## What ran",
                    "## Outcome", "## The pre-declared comparisons", "## Mechanism beside outcome"):
        assert heading in text
    rows = [line for line in text.splitlines() if line.startswith(("| 0 ", "| 1 "))]
    assert len(rows) == 2 and rows[0].startswith("| 0 (published") and "pick) |" in "".join(rows)
    if pick == TOY.joint.first:
        assert "**The search found nothing better than the published set**" in text and "**The pick**" not in text
    else:
        assert "**The pick**, trial 1 (value" in text and "left the published set in" in text
    assert f"| joint | nnRNN | rmsprop | {pick['lr']:g} |" in text  # what ran, the option set named
    with pytest.MonkeyPatch.context() as patched:  # the report again from its compact data alone
        patched.setitem(grids.SCALES, TOY.name, TOY)
        assert reproduce.regenerate(out / "data.json", tmp_path / "again").read_text() == text


def test_a_search_nothing_beat_says_so_and_captions_no_pick(ran, tmp_path):
    out, _, _ = ran
    made = grid.Grid(out, TOY.name, TOY)
    first = TOY.joint.first
    trials = [{**t, "value": (0.5 if t["number"] == 0 else 1.0)} for t in thesis_joint.trials_of(made)]
    copied = grid.Grid(tmp_path, TOY.name, TOY)
    copied.trials.write_text(json.dumps({"joint": trials}))
    copied.tuned.write_text(json.dumps({"copy": {"nnrnn": dict(first)}}))
    lines = "\n".join(thesis_joint.pick_lines(copied))
    assert "found nothing better than the published set" in lines and "value 0.500" in lines
    assert "**The pick**" not in lines


def test_a_search_stopped_by_a_signal_goes_on_without_training_anything_finished_again(tmp_path, monkeypatch):
    undraw(monkeypatch)
    monkeypatch.setitem(grids.SCALES, TOY.name, TOY)
    real, trained, stopped = reproduce.train, [], []

    def train(config, resume=False, **hooks):
        trained.append(config["out"])
        if len(trained) == 8 and not stopped:  # the third arm of the second trial
            stopped.append(config["out"])
            raise Interrupted(signal.SIGINT, Path(config["out"]))
        return real(config, resume=resume, **hooks)
    monkeypatch.setattr(reproduce, "train", train)
    with pytest.raises(Interrupted):  # the search alone (the grid's runs resume as every grid's do)
        reproduce.joint_tune(TOY.name, tmp_path, log=lambda line: None)
    before = set(trained[:7])
    assert all(grid.finished(Path(f)) for f in before) and not (tmp_path / "tuned.json").exists()
    trained.clear()
    picks = reproduce.joint_tune(TOY.name, tmp_path, log=lambda line: None)
    assert len(trained) == 3 and not before & set(trained)  # the stopped trial's last three arms, nothing twice
    study = joint.load(grid.GridFolder(tmp_path).joint_search)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "FAIL", "COMPLETE"]
    assert study.trials[2].params == study.trials[1].params  # the stopped trial, again
    assert joint.ended(grid.GridFolder(tmp_path).joint_search) == 2
    trained.clear()
    assert reproduce.joint_tune(TOY.name, tmp_path, log=lambda line: None) == picks and trained == []


def test_the_plan_counts_the_searchs_trials_each_a_run_of_every_arm(tmp_path, monkeypatch):
    monkeypatch.setitem(grids.SCALES, TOY.name, TOY)
    monkeypatch.setattr(cost, "cache_path", lambda: tmp_path / "update-times.json")
    costs = cost.Costs("cpu", 1, shape_times=lambda config: cost.Times(0.0, 1.0, 0.0, 0.0),
                       floor_time=lambda config: 0.0, process_time=lambda: 0.0,
                       run_counts=lambda config: cost.Counts(config["steps"], 0, 0, 0, 0))
    found = []
    monkeypatch.setattr(reproduce, "estimate", lambda runs, searches, slots, log: found.append(
        cost.estimate(runs, searches, slots, log, costs)) or found[-1])
    logs = []
    assert reproduce.reproduce(TOY.name, tmp_path / "grid", log=logs.append, plan_only=True) is None
    (estimate,) = found
    assert estimate.runs == 10 and estimate.trials == 2
    # 10 grid runs of 4 updates, and 2 trials of 5 arms of 4 updates each, at a second an update
    assert sum(estimate.seconds) == pytest.approx(10 * 4 + 2 * 5 * 4)
    assert "1 joint search of 2 trials, 5 runs each (2 to run); 10 runs and 2 search trials" in logs[-1]
    assert not (tmp_path / "grid" / "plan.json").exists()


def test_the_joint_grids_declaration_is_checked_as_its_module_is_imported(tmp_path):
    import importlib.util
    module = tmp_path / "badjoint.py"
    module.write_text("from nnrnn.experiments.grids.thesis_joint import joint_scale\n"
                      "from nnrnn.experiments.planning.grid import TUNE_SEED\n"
                      "NAME = 'bad-joint'\n"
                      "SCALE = joint_scale(NAME, seeds=(0, TUNE_SEED))\n")
    spec = importlib.util.spec_from_file_location("badjoint", module)
    with pytest.raises(ValueError, match="grid 'bad-joint', joint: seed 100 is one of the grid's seeds"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_a_trial_whose_arm_diverged_is_pruned_and_picks_nothing(tmp_path):
    import dataclasses

    from nnrnn.training import outcome

    def train(todo):  # every arm learns but expRNN, which diverges (written as runs end, nothing trained)
        for folder, run in todo.items():
            folder.mkdir(parents=True)
            (folder / "metrics.jsonl").write_text(json.dumps({"step": 4, "split": "valid", "loss": 1.0}) + "\n")
            name = outcome.DIVERGED if run.model == "exprnn" else outcome.LEARNED
            outcome.write(folder, outcome.Outcome(name, "scripted"))
    search = dataclasses.replace(TOY.joint, trials=1)
    study = joint.run_joint(tmp_path / "joint", search, grid.joint_arms(TOY), train, log=lambda line: None)
    (trial,) = study.trials
    assert trial.state.name == "PRUNED" and trial.user_attrs["stopped"] == "diverged"
    assert trial.user_attrs["reason"] == "exprnn diverged" and joint.pick(study) is None
    assert joint.ended(tmp_path / "joint") == 1
