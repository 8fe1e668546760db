"""nnrnn.experiments.reporting.compact: a grid's report can be computed again from the compact data beside it alone."""
import dataclasses
import json

import pytest

from nnrnn.experiments import grids, reproduce
from nnrnn.experiments.grids import paper as paper_grid
from nnrnn.experiments.planning import grid
from nnrnn.experiments.planning.declaration import Scale, Setting
from nnrnn.experiments.reporting import compact, report
from nnrnn_cli import command as cli
from tests.experiments import synthetic

COPY = {"T": 20, "batch_size": 4, "steps": 40, "eval_every": 10, "log_every": 5}


pytestmark = pytest.mark.usefixtures("undrawn_figures")  # what is trained and written, not the drawing


@pytest.fixture
def copy_scale(monkeypatch):
    monkeypatch.setitem(grids.SCALES, "copy-only", Scale(name="copy-only", seeds=(0, 1, 2), report=paper_grid.REPORT,
                                                         settings={"copy": Setting(task="copy", hidden=16,
                                                                                   columns=("hidden", "params"),
                                                                                   options=COPY)}))
    return "copy-only"


def test_a_report_is_written_again_from_its_compact_data_alone(tmp_path, copy_scale):
    out = tmp_path / "grid"
    made = synthetic.build(out, copy_scale)
    grid.record_plan(out, copy_scale)
    made.notes.write_text("Written by hand.\n")
    first = report.write_report(made).read_text()
    data = made.data
    assert data.is_file() and data.stat().st_size < 3_000_000
    stored = json.loads(data.read_text())
    some = next(iter(stored["folders"].values()))
    assert {"diverged", "finished", "wall_seconds", "records"} <= set(some)
    assert all(set(r) <= set(compact.TRAIN_KEYS) for r in some["records"] if r["split"] == "train")
    # elsewhere, with no run folder at all: the command a reader runs, and the same report
    elsewhere = tmp_path / "elsewhere"
    assert cli.main(["reproduce", "--scale", copy_scale, "--from-data", str(data), "--out", str(elsewhere)]) == 0
    assert (elsewhere / "report.md").read_text() == first
    assert "`nnrnn reproduce --scale copy-only --out OUT`" in first and str(tmp_path) not in first


def test_from_data_names_a_missing_file_in_one_line(tmp_path, capsys, copy_scale):
    assert cli.main(["reproduce", "--scale", copy_scale, "--from-data", str(tmp_path / "none.json")]) == 2
    assert "no compact data at" in capsys.readouterr().err


def test_the_gradient_probe_travels_in_the_compact_data(tmp_path, copy_scale):
    from nnrnn.experiments.reporting.collect import probe_norms
    out = tmp_path / "grid"
    made = synthetic.build(out, copy_scale)
    made.analysis("ptb").mkdir(parents=True)
    made.probe("ptb").write_text(json.dumps({"model": "nnrnn", "gradient": {
        "description": "probe", "norms": [3.0, 2.0, 1.0]}}))
    report.write_report(dataclasses.replace(made, analysis_lines=[]))
    stored = json.loads(made.data.read_text())
    assert stored["probes"] == {"ptb": [3.0, 2.0, 1.0]}
    elsewhere = tmp_path / "elsewhere"
    compact.materialize(stored, elsewhere)
    there = grid.GridFolder(elsewhere)
    assert probe_norms(there, "ptb") == [3.0, 2.0, 1.0] and probe_norms(there, "copy") is None


def test_a_runs_mechanism_record_travels_in_the_compact_data(tmp_path, copy_scale):
    from nnrnn.analysis.mechanism import read_record
    made = synthetic.build(tmp_path / "grid", copy_scale)
    folders = list(dict.fromkeys(made.run_folder(r) for r in made.planned))  # runs of both columns share some
    record = {"measured": True, "step": 40, "cells": {"l0": {"departure": 0.25, "fisher": {"why": "ρ ≥ 1"}}}}
    (folders[0] / "mechanism.json").write_text(json.dumps(record))
    stored = json.loads(compact.write_data(made).read_text())
    assert stored["folders"][folders[0].name]["mechanism"] == record
    assert "mechanism" not in stored["folders"][folders[1].name]  # a run without one: its entry as before
    elsewhere = tmp_path / "elsewhere"
    compact.materialize(stored, elsewhere)
    there = grid.GridFolder(elsewhere)
    assert read_record(there.runs / folders[0].name) == record and read_record(there.runs / folders[1].name) is None
    # what a report reads of a group of runs: one record of the two, its departure
    from nnrnn.experiments.reporting.collect import mechanism
    group = [next(r for r in made.planned if made.run_folder(r) == folder) for folder in folders[:2]]
    departure = mechanism(there, group)["departure"]
    assert (departure.mean, departure.n, departure.failed) == (0.25, 1, 1)


@pytest.mark.parametrize("folder", ["reproduction-cpu-long", "beyond", "modern", "memory", "thesis", "thesis-joint"])
def test_a_committed_report_is_what_its_committed_data_gives(folder, tmp_path):
    """Anyone can recompute a committed report: written again from the data.json beside it alone (and the notes
    written by hand beside it), it is the report committed."""
    import shutil

    from tests.conftest import HAS_MNIST, HAS_PTB, REPO, SHARED
    committed = REPO / "docs" / folder
    if not (HAS_MNIST and HAS_PTB):
        pytest.skip(f"the report's data section counts the MNIST and PTB files, not found in {SHARED}")
    shutil.copy(committed / "notes.md", tmp_path / "notes.md")
    reproduce.regenerate(grid.GridFolder(committed).data, tmp_path, SHARED)
    assert (tmp_path / "report.md").read_text() == (committed / "report.md").read_text()


@pytest.mark.parametrize("folder", ["beyond", "modern", "memory", "thesis", "thesis-joint"])
def test_writing_a_committed_report_from_its_data_trains_times_and_loads_nothing(folder, tmp_path, monkeypatch):
    """A report only reads: written again from its data.json, nothing loads a checkpoint (torch.load), takes a
    gradient (every training update and every timed update does) or steps an optimizer; what it shows was measured
    while its grid ran."""
    import shutil

    import torch

    from tests.conftest import HAS_MNIST, HAS_PTB, REPO, SHARED
    committed = REPO / "docs" / folder
    if not (HAS_MNIST and HAS_PTB):
        pytest.skip(f"the report's data section counts the MNIST and PTB files, not found in {SHARED}")

    def refused(what):
        def call(*args, **kwargs):
            raise AssertionError(f"writing a report from its data called {what}")
        return call
    monkeypatch.setattr(torch, "load", refused("torch.load"))
    monkeypatch.setattr(torch.Tensor, "backward", refused("Tensor.backward"))
    monkeypatch.setattr(torch.autograd, "backward", refused("torch.autograd.backward"))
    monkeypatch.setattr(torch.autograd, "grad", refused("torch.autograd.grad"))
    monkeypatch.setattr(torch.optim.Optimizer, "step", refused("Optimizer.step"))
    shutil.copy(committed / "notes.md", tmp_path / "notes.md")
    reproduce.regenerate(grid.GridFolder(committed).data, tmp_path, SHARED)
    assert (tmp_path / "report.md").read_text() == (committed / "report.md").read_text()
