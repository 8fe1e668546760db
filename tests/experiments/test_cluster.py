"""A grid through a real local Ray cluster on 127.0.0.1 (no mock of Ray): a worker killed mid-run, the grid still
completes, and every run folder and the report equal the local path's; a search's trials are tasks of their own, one
killed mid-trial, and the search ends with its planned number of trials.  In-process, with a stand-in for the
cluster (:class:`StandInRay`, which kills workers as told and retries as Ray does, up to the task's max_retries):
a dead worker's task is retried, retries spent are reported after the other tasks, a cluster lost mid-grid is one
line; these run where Ray is not installed, so that mutation testing reaches the retry rules."""
import json
import os
import re
import signal
import socket
import threading
import time

import pytest
import torch

from nnrnn.errors import UserError
from nnrnn.experiments import grids, reproduce
from nnrnn.experiments.grids import paper as paper_grid
from nnrnn.experiments.planning import cluster, grid
from nnrnn.experiments.planning.declaration import Scale, Search, Setting
from nnrnn.training.runfolder import best_checkpoint, config_file, last_checkpoint, metrics_file


def _ray():
    return pytest.importorskip("ray", reason="Ray is not installed (pip install 'nnrnn[ray]'); the real cluster "
                                             "path is untested here")


def reproduce_on(address: str, tmp_path, monkeypatch, capsys) -> tuple[int, list[str], float]:
    """``nnrnn reproduce --scale smoke --cluster ADDRESS``: its exit code, its stderr's lines, its seconds."""
    from nnrnn_cli.command import main
    _ray()  # these reach Ray's connection: skipped where it is not installed
    monkeypatch.delenv("NNRNN_DEBUG", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    started = time.monotonic()
    code = main(["reproduce", "--scale", "smoke", "--cluster", address, "--out", str(tmp_path / "grid")])
    return code, capsys.readouterr().err.strip().splitlines(), time.monotonic() - started


def test_cluster_auto_without_a_cluster_is_one_line(tmp_path, monkeypatch, capsys):
    ray = _ray()
    from ray._private.services import find_gcs_addresses  # what `auto` finds besides RAY_ADDRESS
    if ray.is_initialized() or find_gcs_addresses():
        pytest.skip("a Ray cluster is running on this machine: --cluster auto would join it")
    code, lines, _ = reproduce_on("auto", tmp_path, monkeypatch, capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("nnrnn: error: --cluster auto: this machine has joined no Ray cluster")
    assert not (tmp_path / "grid" / "runs").exists()


def test_an_address_where_nothing_answers_fails_within_the_stated_timeout(tmp_path, monkeypatch, capsys):
    """A listening socket whose queue is full: the kernel answers no new connection (Ray waited for minutes)."""
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # fills the queue
            code, lines, seconds = reproduce_on(f"127.0.0.1:{port}", tmp_path, monkeypatch, capsys)
    assert code == 2 and lines == [f"nnrnn: error: --cluster 127.0.0.1:{port}: nothing answered within 1 s; check "
                                   f"the address (the head node's HOST:PORT) and that its cluster is running "
                                   f"(`ray status` on it)"]
    assert seconds < 30  # the timeout, and the command's start


def test_an_address_where_nothing_listens_is_one_line_at_once(tmp_path, monkeypatch, capsys):
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, lines, _ = reproduce_on(f"127.0.0.1:{port}", tmp_path, monkeypatch, capsys)
    assert code == 2 and len(lines) == 1 and "cannot connect (Connection refused)" in lines[0], lines


def test_help_names_every_kind_of_cluster(capsys):
    from nnrnn_cli.command import main
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(word in text for word in ("auto (the cluster this machine joined)", "ADDRESS", "local (a cluster"))


@pytest.fixture
def two_runs(monkeypatch):
    """A 2-run grid long enough to be killed mid-run, with a checkpoint every 10 updates."""
    scale = Scale(name="two", seeds=(0, 1), report=paper_grid.REPORT,
                  settings={"copy": Setting(task="copy", hidden=8, columns=("hidden",), options={
                      "T": 5, "batch_size": 4, "steps": 120, "eval_every": 40, "log_every": 40,
                      "checkpoint_every": 10})})
    monkeypatch.setitem(grids.SCALES, "two", scale)
    return "two"


@pytest.fixture(scope="module")
def local_ray():
    """A Ray cluster of two CPUs on this machine, shared by this module's tests (it takes seconds to start)."""
    ray = _ray()
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
    local, ray_report = (re.sub(r"trained for \d+ minutes?", "trained for M minutes",
                                (tmp_path / side / "report.md").read_text()) for side in ("local", "ray"))
    assert local == ray_report


@pytest.fixture
def searched(monkeypatch):
    """A scale whose tuned column searches one model with published settings in 3 trials, each long enough to be
    killed mid-trial."""
    scale = Scale(name="searched", seeds=(0,), report=paper_grid.REPORT, tune=Search(trials=3, share=1.0),
                  settings={"copy": Setting(task="copy", hidden=8, columns=("tuned",), models=("lstm",), options={
                      "T": 5, "batch_size": 4, "steps": 120, "eval_every": 40, "log_every": 40,
                      "checkpoint_every": 10})})
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


@pytest.mark.subprocess
def test_on_the_real_cluster_a_worker_that_always_dies_spends_its_retries_and_is_reported(tmp_path, local_ray):
    """Every attempt of one task kills its own worker: Ray runs it RETRIES + 1 times (each attempt leaves a mark),
    then the grid reports it, after the other task has run."""
    def work(folder, item, threads, device):
        import os
        import signal
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"attempt-{os.getpid()}").write_text("")
        if item == "dies":
            os.kill(os.getpid(), signal.SIGKILL)
        return f"{folder.name}: ok"
    logs = []
    with pytest.raises(UserError, match="the workers training doomed died"):
        cluster.run_on_cluster(local_ray, [(tmp_path / "doomed", "dies"), (tmp_path / "fine", "lives")], work,
                               "runs", logs.append)
    assert len(list((tmp_path / "doomed").glob("attempt-*"))) == cluster.RETRIES + 1
    assert any("fine: ok" in line for line in logs)  # after the count of runs done, before the time left
    assert any(f"doomed: its worker died {cluster.RETRIES + 1} times" in line for line in logs)


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


# --------------------------------------------------------------------------- in-process, a stand-in for the cluster

class StandInRay:
    """What run_on_cluster uses of Ray, in this process: ``deaths[name]`` is how many times the worker of the task
    for the folder ``name`` dies before one attempt completes; as Ray does, a task whose worker died is run again up
    to its ``max_retries`` times, then ``ray.get`` raises WorkerCrashedError.  ``lost_after``: after that many
    results, the cluster itself is gone (``ray.wait`` raises RaySystemError)."""

    class exceptions:
        class RayError(Exception):
            pass

        class RayTaskError(RayError):
            pass

        class WorkerCrashedError(RayError):
            pass

        class RaySystemError(RayError):
            pass

    def __init__(self, deaths=None, lost_after=None):
        self.deaths, self.lost_after = dict(deaths or {}), lost_after
        self.attempts, self.options, self.returned = {}, {}, 0

    def remote(self, **options):
        self.options = options

        def decorate(function):
            stand_in = self

            class Remote:
                @staticmethod
                def remote(work, folder, item, gpus):
                    name = folder.name
                    for attempt in range(options["max_retries"] + 1):
                        stand_in.attempts[name] = stand_in.attempts.get(name, 0) + 1
                        if stand_in.deaths.get(name, 0) <= attempt:
                            return ("done", function(work, folder, item, gpus))
                    return ("crashed", stand_in.exceptions.WorkerCrashedError(f"the worker of {name} died"))
            return Remote
        return decorate

    def wait(self, refs, num_returns):
        if self.lost_after is not None and self.returned >= self.lost_after:
            raise self.exceptions.RaySystemError("System error: the GCS at 127.0.0.1:6379 is unreachable")
        self.returned += 1
        return refs[:num_returns], refs[num_returns:]

    @staticmethod
    def get(ref):
        kind, value = ref
        if kind == "crashed":
            raise value
        return value


def _units(tmp_path, count=4):
    return [(tmp_path / f"run{i}", i) for i in range(count)]


def _trained(folder, item, threads, device):
    return f"{folder.name}: trained on {device} with {threads} thread"


def test_a_dead_workers_task_is_retried_and_the_grid_completes(tmp_path, monkeypatch):
    fake = StandInRay(deaths={"run1": cluster.RETRIES, "run2": 1})  # run1 dies on every retry but the last
    monkeypatch.setattr(cluster, "connect", lambda address: fake)
    logs = []
    cluster.run_on_cluster("auto", _units(tmp_path), _trained, "runs", logs.append)
    assert fake.options["max_retries"] == cluster.RETRIES and cluster.RETRIES >= 1
    assert fake.attempts == {"run0": 1, "run1": cluster.RETRIES + 1, "run2": 2, "run3": 1}
    assert [line.split(" | ")[0] for line in logs if line.startswith("[")] == [
        f"[{i + 1}/4] run{i}: trained on cpu with 1 thread" for i in range(4)]  # and the time left after it


def test_retries_spent_are_reported_after_every_other_task_has_run(tmp_path, monkeypatch):
    fake = StandInRay(deaths={"run1": cluster.RETRIES + 1})  # one death more than the retries
    monkeypatch.setattr(cluster, "connect", lambda address: fake)
    logs, done = [], []
    with pytest.raises(UserError, match="the workers training run1 died .* run the same command again"):
        cluster.run_on_cluster("auto", _units(tmp_path), lambda *a: done.append(a[0].name) or "ok", "runs",
                               logs.append)
    assert done == ["run0", "run2", "run3"]  # the others ran
    assert fake.attempts["run1"] == cluster.RETRIES + 1
    assert f"[2/4] run1: its worker died {cluster.RETRIES + 1} times; its checkpoint is kept" in [
        line.split(" | ")[0] for line in logs]


def test_a_cluster_lost_mid_grid_is_one_line_saying_the_same_command_continues(tmp_path, monkeypatch, capsys):
    from nnrnn.errors import ClusterLost
    fake = StandInRay(lost_after=2)
    monkeypatch.setattr(cluster, "connect", lambda address: fake)
    with pytest.raises(ClusterLost) as lost:
        cluster.run_on_cluster("10.0.0.5:6379", _units(tmp_path), _trained, "runs", lambda line: None)
    message = str(lost.value)
    assert lost.value.exit_code == 75 and len(message.splitlines()) == 1
    assert "the Ray cluster at 10.0.0.5:6379 failed mid-grid (RaySystemError" in message
    assert "2 of the 4 runs had finished and are kept" in message and "the same command continues" in message


def test_a_runs_own_error_through_the_cluster_is_its_own_one_line(tmp_path, monkeypatch):
    """A run's own failure (a full disk: Ray wraps it in a RayTaskError whose first line is Ray's) is the run's
    own error, as the local path raises it, not a lost cluster."""
    fake = StandInRay()
    full = UserError("cannot write runs/x/checkpoints/last.pt (No space left on device)")

    def wrapped(ref):
        error = fake.exceptions.RayTaskError("ray::_task() (pid=1, ip=127.0.0.1)\nTraceback ...")
        error.cause = full
        raise error
    monkeypatch.setattr(fake, "get", wrapped)
    monkeypatch.setattr(cluster, "connect", lambda address: fake)
    with pytest.raises(UserError) as raised:
        cluster.run_on_cluster("auto", _units(tmp_path, 2), _trained, "runs", lambda line: None)
    assert raised.value is full
