"""A grid through a real local Ray cluster on 127.0.0.1 (no mock of Ray): a worker killed mid-run, the grid still
completes, and every run folder and the report equal the local path's; a search's trials are tasks of their own, one
killed mid-trial, and the search ends with its planned number of trials."""
import json
import os
import re
import signal
import threading
import time

import pytest
import torch

from nnrnn.errors import UserError
from nnrnn.experiments.planning import cluster, grid
from nnrnn.experiments.grids import paper as paper_grid
from nnrnn.experiments import grids, reproduce
from nnrnn.training.runfolder import best_checkpoint, config_file, last_checkpoint, metrics_file

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'nnrnn[ray]'); the cluster path is "
                                        "untested here")


@pytest.fixture
def two_runs(monkeypatch):
    """A 2-run grid long enough to be killed mid-run, with a checkpoint every 10 updates."""
    scale = {"seeds": [0, 1], "report": paper_grid.REPORT,
             "tasks": {"copy": {"hidden": 8, "columns": ("hidden",), "options": {
        "T": 5, "batch_size": 4, "steps": 120, "eval_every": 40, "log_every": 40, "checkpoint_every": 10}}}}
    monkeypatch.setitem(grids.SCALES, "two", scale)
    return "two"


@pytest.fixture(scope="module")
def local_ray():
    """A Ray cluster of two CPUs on this machine, shared by this module's tests (it takes seconds to start)."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}}, _system_config=cluster.STARTED_HERE)
    yield "local"
    ray.shutdown()


def _kill_one_worker(runs, pattern: str, killed: list, stop: threading.Event):
    """SIGKILL the worker training a run of ``runs``/``pattern`` as soon as it has written a checkpoint (its pid is
    in the run's lock)."""
    while not stop.is_set() and not killed:
        for folder in runs.glob(pattern) if runs.is_dir() else ():
            lock = folder / ".lock"
            if last_checkpoint(folder).is_file() and not best_checkpoint(folder).is_file() and lock.is_file():
                text = lock.read_text().strip()
                if text.isdigit() and int(text) != os.getpid():
                    os.kill(int(text), signal.SIGKILL)
                    killed.append(folder.name)
                    return
        time.sleep(0.05)


def _final(folder):
    saved = torch.load(last_checkpoint(folder), map_location="cpu", weights_only=False)
    rows = [{k: v for k, v in json.loads(line).items() if k not in ("time", "seconds", "wall")}
            for line in metrics_file(folder).read_text().splitlines()]
    return saved["model"], rows


@pytest.mark.subprocess
def test_a_grid_through_a_local_ray_cluster_survives_a_killed_worker(tmp_path, two_runs, local_ray):
    local_log, cluster_log, killed, stop = [], [], [], threading.Event()
    reproduce.reproduce(two_runs, tmp_path / "local", models=["nnrnn"], log=local_log.append)
    killer = threading.Thread(target=_kill_one_worker, args=(tmp_path / "ray" / "runs", "*/", killed, stop))
    killer.start()
    try:
        reproduce.reproduce(two_runs, tmp_path / "ray", models=["nnrnn"], log=cluster_log.append, cluster=local_ray)
    finally:
        stop.set()
        killer.join()
    assert killed, "no worker was killed mid-run"
    assert any("on the Ray cluster" in line for line in cluster_log)
    assert sum(line.startswith("[") for line in cluster_log) == 2  # one line per run
    for planned in grid.plan(grids.SCALES[two_runs], models=["nnrnn"]):
        here, there = (grid.GridFolder(tmp_path / side).run_folder(planned) for side in ("local", "ray"))
        (params, rows), (params_ray, rows_ray) = _final(here), _final(there)
        assert rows == rows_ray
        assert all(torch.equal(params[k], params_ray[k]) for k in params)
        assert json.loads(config_file(there).read_text())["device"] == "cpu"  # the device it trained on
    # the same report, but for the sum of the runs' wall times (a measured time, different on every machine)
    local, ray_report = (re.sub(r"trained for \d+ minutes", "trained for M minutes",
                                (tmp_path / side / "report.md").read_text()) for side in ("local", "ray"))
    assert local == ray_report


@pytest.fixture
def searched(monkeypatch):
    """A scale whose tuned column searches one model with published settings in 3 trials, each long enough to be
    killed mid-trial."""
    scale = {"seeds": [0], "report": paper_grid.REPORT, "tune": {"trials": 3, "share": 1.0}, "tasks": {"copy": {
        "hidden": 8, "columns": ("tuned",), "models": ("lstm",), "options": {
            "T": 5, "batch_size": 4, "steps": 120, "eval_every": 40, "log_every": 40, "checkpoint_every": 10}}}}
    monkeypatch.setitem(grids.SCALES, "searched", scale)
    return "searched"


@pytest.mark.subprocess
def test_each_search_trial_is_a_task_and_a_killed_one_is_run_again(tmp_path, searched, local_ray):
    logs, killed, stop = [], [], threading.Event()
    (name, search), = grid.searches(grids.SCALES[searched]).items()
    killer = threading.Thread(target=_kill_one_worker, args=(tmp_path / "searches", "*/trial-*/", killed, stop))
    killer.start()
    try:
        picks = reproduce.tune(searched, tmp_path, log=logs.append, where=reproduce.Where(cluster=local_ray))
    finally:
        stop.set()
        killer.join()
    assert killed, "no trial's worker was killed mid-trial"
    # the new study's first trial, which queues the published settings, runs alone: they are queued once
    assert logs[0].startswith("1 search trials to run first on the Ray cluster")
    assert any(line.startswith("2 search trials to run on the Ray cluster") for line in logs)
    assert sum(line.startswith("[") for line in logs) == 3  # one line per trial: three tasks
    assert reproduce.ended_trials(tmp_path / "searches" / name, search) == 3  # the killed trial is not counted
    study = reproduce._study(tmp_path / "searches" / name, search)
    assert sum("published_from" in t.user_attrs for t in study.trials) == 1
    assert "lr" in picks["copy"]["lstm"]


def test_without_ray_the_cluster_option_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # an import of ray now fails as if not installed
    with pytest.raises(UserError, match=r"pip install 'nnrnn\[ray\]'"):
        cluster.ray_module()


def test_a_cluster_started_here_runs_its_tasks_at_the_drivers_priority(monkeypatch):
    """Ray's default niceness of 15 let a busy core starve the workers (torch's import 20× slower); a cluster
    nnrnn starts (``local``) sets it to 0, one it joins keeps its own configuration."""
    calls = []

    class FakeRay:
        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**options):
            calls.append(options)

    monkeypatch.setitem(__import__("sys").modules, "ray", FakeRay)
    cluster.connect("local")
    cluster.connect("auto")
    assert calls[0]["_system_config"]["worker_niceness"] == 0
    assert "_system_config" not in calls[1]
