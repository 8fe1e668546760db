"""nnrnn.experiments.planning.grid: what the grids know of a task comes from the task's class, so a task added to
nnrnn.tasks needs nothing in grid.py or report.py."""
import dataclasses

import pytest

from nnrnn.experiments import grids
from nnrnn.experiments.judging.words import title
from nnrnn.experiments.planning import grid
from nnrnn.experiments.planning.declaration import Scale, Search, Setting
from tests.experiments.synthetic import planned


@pytest.mark.parametrize(("task", "sizes"), [("copy", (10, 9, None)), ("adding", (2, 1, None)),
                                             ("psmnist", (1, 10, None))])
def test_the_network_sizes_of_a_task_come_from_its_class(task, sizes):
    assert grid.sizes(task) == sizes  # adding: a task no grid runs, a KeyError before


def test_a_setting_is_titled_by_its_task_with_the_length_that_defines_it():
    assert title([planned(setting="adding", task="adding", options={"T": 50})], "adding") == "adding, T = 50"
    assert title([planned(setting="p", task="psmnist")], "p") == "psMNIST"
    assert title([planned(setting="copy-9", task="copy", options={"T": 9})], "copy-9") == "copy, T = 9"


def test_finished_and_diverged_are_the_trainers_outcome(tmp_path):
    from nnrnn.experiments.planning.grid import diverged, finished
    from nnrnn.training import outcome
    for name, is_diverged in ((outcome.LEARNED, False), (outcome.NOT_LEARNED, False), (outcome.DIVERGED, True)):
        folder = tmp_path / name.replace(" ", "-")
        folder.mkdir()
        (folder / "metrics.jsonl").write_text('{"step": 5, "split": "train", "loss": 1.0}\n')  # no test score
        outcome.write(folder, outcome.Outcome(name, "why"))
        assert finished(folder) and diverged(folder) == is_diverged
    older = tmp_path / "older"  # a grid run from before outcomes: its test score, or the DIVERGED marker
    older.mkdir()
    (older / "metrics.jsonl").write_text('{"step": 5, "split": "test", "loss": 1.0}\n')
    assert finished(older) and not diverged(older)
    (older / "DIVERGED").write_text("training diverged\n")
    assert diverged(older)


def test_runs_and_the_grids_agree_on_which_runs_finished(tmp_path):
    from nnrnn.experiments.planning.grid import finished
    from nnrnn.training import outcome
    from nnrnn.training.runlog import run_summary
    logs = {"tested": ['{"step": 5, "split": "train", "loss": 1.0}', '{"step": 5, "split": "test", "loss": 1.0}'],
            # resumed for more updates after its test score: training again, not finished
            "extended": ['{"step": 5, "split": "test", "loss": 1.0}', '{"step": 8, "split": "train", "loss": 0.9}'],
            "stopped": ['{"step": 5, "split": "train", "loss": 1.0}'],
            "learned": ['{"step": 5, "split": "train", "loss": 1.0}']}
    for name, lines in logs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    outcome.write(tmp_path / "learned", outcome.Outcome(outcome.LEARNED, "why"))
    summary = {name: run_summary(tmp_path / name, lambda task: ("loss", "min")) for name in logs}
    assert {name: s["status"] for name, s in summary.items()} == {
        "tested": "finished", "extended": "stopped at 8", "stopped": "stopped at 5", "learned": "learned"}
    assert summary["tested"]["test"] == "loss 1" and summary["extended"]["test"] == "-"  # not the old run's score
    assert {name for name in logs if finished(tmp_path / name)} == {"tested", "learned"}


def test_a_scales_searches_train_on_a_seed_its_tables_do_not_report():
    spec = grids.SCALES["beyond"]
    found = grid.searches(spec, models=["gru"], tasks=["copy"])
    assert found and all(s["options"]["seed"] == spec.tune.seed for s in found.values())
    assert spec.tune.seed not in spec.seeds


def test_paper_depth_stacks_each_model_as_its_paper_does_at_the_grids_parameter_count():
    from nnrnn.models import model_class, parameter_count
    setting = Setting(task="copy", hidden=32, columns=(grid.TUNED,), options={"T": 20, "steps": 10},
                      models=("nnrnn", "lru", "mingru", "gru"))
    spec = Scale(name="depth", seeds=(0,), report=None, settings={"copy": setting})
    flat = {p.label: p for p in grid.plan(spec, searching=True)}
    deep = {p.label: p for p in grid.plan(dataclasses.replace(
        spec, settings={"copy": dataclasses.replace(setting, paper_depth=True)}), searching=True)}
    for entry in deep.values():
        depth = model_class(entry.model).DEPTH
        assert entry.options.get("num_layers", 1) == depth
        if depth == 1:  # a one-layer model plans (and names its run folder) as without the flag
            assert (entry.hidden, entry.name) == (flat[entry.label].hidden, flat[entry.label].name)
            continue
        assert entry.hidden < flat[entry.label].hidden  # each layer narrower, so that the stack fits the count
        io = grid.sizes("copy")
        count = parameter_count(entry.model, io[0], entry.hidden, io[1], num_layers=depth)
        wider = parameter_count(entry.model, io[0], entry.hidden + 1, io[1], num_layers=depth)
        assert abs(count - entry.budget) <= abs(wider - entry.budget)  # the width closest to the budget
    assert {model_class(m).DEPTH for m in ("lru", "nnlru", "mingru")} == {6, 3}  # docs/design.md's sources


def test_a_stacks_units_read_as_layers_times_width_in_the_tables():
    assert planned(hidden=10, options={"num_layers": 6}).units == "6 × 10"
    assert planned(hidden=64, options={}).units == planned(hidden=64, options={"num_layers": 1}).units == "64"


def test_a_grids_file_on_a_full_disk_keeps_the_previous_one_and_is_one_line(tmp_path, monkeypatch):
    """report.md, data.json, the plan and the picks were written in place: a full disk truncated the previous one
    and was a traceback."""
    import errno
    import os

    from nnrnn.errors import UserError
    report = tmp_path / "report.md"
    grid.write_whole(report, "the previous report\n")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(UserError, match="cannot write .*report.md \\(No space left on device\\).* run the same "
                                        "command again"):
        grid.write_whole(report, "a new report\n")
    assert report.read_text() == "the previous report\n" and sorted(p.name for p in tmp_path.iterdir()) == [
        "report.md"]


def test_a_grids_figure_on_a_full_disk_keeps_the_previous_one_and_is_one_line(tmp_path, monkeypatch):
    import errno

    import matplotlib.figure

    from nnrnn.errors import UserError
    from nnrnn.experiments.reporting import figures
    path = tmp_path / "curves-copy.png"
    path.write_bytes(b"the previous figure")

    def full(fig, fname, *args, **kwargs):
        open(fname, "wb").write(b"half a fig")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", full)
    with pytest.raises(UserError, match="cannot write .*curves-copy.png \\(No space left on device\\)"):
        figures.save_whole(matplotlib.figure.Figure(), path)
    assert path.read_bytes() == b"the previous figure" and [p.name for p in tmp_path.iterdir()] == [path.name]


def test_paper_optimizer_trains_each_model_with_its_papers_over_the_tasks_procedure():
    """Issue 67: the task's procedure fixed RMSprop for every model the paper's preset does not cover, and a fixed
    option won over the Adam a search derived from the paper, so coRNN, LEM, the LRU and the nnLRU trained RMSprop
    where the grid meant Adam.  With ``paper_optimizer`` the plan gives each its paper's; what the grid gives
    explicitly still wins."""
    from nnrnn.models import model_class
    from nnrnn.training.config import resolve_config
    setting = {"task": "copy", "hidden": 16, "columns": (grid.TUNED,), "options": {"T": 20, "steps": 10},
               "models": ("nnrnn", "cornn", "lru", "gru")}

    def optimizers(**changes):
        spec = Scale(name="optimizers", seeds=(0,), report=None, settings={"copy": Setting(**{**setting, **changes})})
        return {p.label: resolve_config(p.options, p.preset)["optimizer"] for p in grid.plan(spec, searching=True)}

    procedure = optimizers()
    assert procedure == dict.fromkeys(setting["models"], "rmsprop")  # the paper's copy procedure: RMSprop for all
    assert optimizers(paper_optimizer=True) == {m: model_class(m).PAPER_OPTIMIZER or procedure[m]
                                                for m in setting["models"]} == \
        {"nnrnn": "rmsprop", "cornn": "adam", "lru": "adam", "gru": "rmsprop"}
    explicit = {**setting["options"], "optimizer": "rmsprop"}
    assert set(optimizers(paper_optimizer=True, options=explicit).values()) == {"rmsprop"}
    # and a search of such a grid holds it fixed: every trial trains it
    spec = Scale(name="optimizers", seeds=(0,), report=None, tune=Search(trials=1, share=1.0),
                 settings={"copy": Setting(**setting, paper_optimizer=True)})
    assert {s["model"]: s["options"]["optimizer"] for s in grid.searches(spec).values()}["cornn"] == "adam"


def test_the_grids_that_claim_each_models_papers_optimizer_plan_it():
    """The memory and modern reports say "each model with its paper's optimizer": their plans give it."""
    from nnrnn.models import model_class
    for scale in ("memory",):
        for search in grid.searches(grids.SCALES[scale]).values():
            paper = model_class(search["model"]).PAPER_OPTIMIZER
            if paper:
                assert search["options"]["optimizer"] == paper, search["label"]
    assert all(setting.paper_optimizer for setting in grids.SCALES["modern"].settings.values())
