"""A grid's runs and searches as tasks of a Ray cluster (``nnrnn reproduce --cluster auto|ADDRESS``).

Each run, and each trial of a search, is one Ray task that asks for one GPU, or for one CPU (it trains on one
thread).  A run's task calls the same function the local path calls, on the same run folder; a trial's task runs one
trial of the search's Optuna study, whose storage (Optuna's journal file in the search's folder, which it supports on a
shared filesystem: :func:`.storage.search_storage`) all its trials share.  The folders must be
on a filesystem every node sees (``--out`` on a shared filesystem).  A run's folder, its checkpoints and its lock are
what make it resumable, so the cluster changes nothing of what a run is: a task whose worker dies (killed, a node
lost) is retried by Ray up to :data:`RETRIES` times and resumes from the run's last checkpoint, losing only the
updates since.  A trial's task killed leaves its trial unended (not counted) and its retry runs a new trial, so a
search ends with its planned number of ended trials.  A second invocation of the same command keeps finished runs
and trials and resumes interrupted runs, as locally.  Ray's own progress and dashboard are Ray's; this prints one
line per run or trial, as the local path prints one per run.

Ray is optional (``pip install 'nnrnn[ray]'``): it is imported only when a cluster is asked for."""
from __future__ import annotations

import socket
from pathlib import Path

from ...errors import ClusterLost, NnrnnError, UserError
from ...training.pace import Countdown

RETRIES = 3  # a task whose worker died is run again this many times before the grid gives up on it
INSTALL = "--cluster needs Ray, which is not installed: pip install 'nnrnn[ray]'"


def ray_module():
    """The ``ray`` package; UserError saying how to install it when it is missing."""
    try:
        import ray
    except ImportError:
        raise UserError(INSTALL) from None
    return ray


# Ray starts its task workers at niceness 15, below every other process: beside one busy core a worker
# took 38.5 s to import torch instead of 1.9 s (2-core AMD EPYC, 2026-11-28).  A cluster started here for
# this grid runs its tasks, which are the grid's work, at the driver's priority.
STARTED_HERE = {"worker_niceness": 0}


CONNECT_TIMEOUT_S = 10  # an ADDRESS where nothing answers: Ray itself retries for minutes, saying nothing
NAMED = ("auto", "local")  # the addresses that are not a host's


def connect(address: str):
    """Ray, connected to the cluster at ``address`` (once per process); ``local`` starts one on this machine,
    its workers at the driver's priority (:data:`STARTED_HERE`).  UserError, in one line, when there is no cluster
    to join: ``auto`` on a machine that joined none, an address where nothing answers within
    :data:`CONNECT_TIMEOUT_S` seconds, or that Ray cannot connect to."""
    ray = ray_module()
    if not ray.is_initialized():
        if address not in NAMED:
            check_reachable(address)
        try:
            ray.init(address=address, log_to_driver=False,
                     **({"_system_config": STARTED_HERE} if address == "local" else {}))
        except ConnectionError as error:  # Ray's own: no cluster at that address
            if address == "auto":
                raise UserError("--cluster auto: this machine has joined no Ray cluster (`ray start --head` starts "
                                "one); give its ADDRESS, or --cluster local to start one for this grid") from None
            raise UserError(f"--cluster {address}: Ray cannot connect there ({str(error).splitlines()[0]}); "
                            f"check the address (the head node's HOST:PORT, `ray status` on it)") from None
    return ray


def check_reachable(address: str) -> None:
    """UserError unless something answers at ``address`` (HOST:PORT, or ray://HOST:PORT) within
    :data:`CONNECT_TIMEOUT_S` seconds: Ray, given an address where nothing listens, waits for minutes."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # not HOST:PORT: Ray's own parsing says what is wrong with it
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except TimeoutError:
        raise UserError(f"--cluster {address}: nothing answered within {CONNECT_TIMEOUT_S} s; check the address "
                        f"(the head node's HOST:PORT) and that its cluster is running (`ray status` on it)") from None
    except OSError as error:
        raise UserError(f"--cluster {address}: cannot connect ({error.strerror or error}); check the address (the "
                        f"head node's HOST:PORT) and that its cluster is running (`ray status` on it)") from None


def cluster_slots(address: str) -> tuple[int, bool]:
    """(how many runs the cluster at ``address`` trains at once, whether on GPUs): one per GPU, else one per CPU."""
    resources = connect(address).cluster_resources()
    gpus = int(resources.get("GPU", 0))
    return (gpus, True) if gpus else (max(1, int(resources.get("CPU", 1))), False)


def _task(work, folder: Path, item, gpus: bool) -> str:
    """In a Ray worker: ``work`` on the GPU Ray gave this task (Ray sets CUDA_VISIBLE_DEVICES to it alone, so it is
    ``cuda:0`` here), or on the CPU on one thread."""
    return work(folder, item, None if gpus else 1, "cuda:0" if gpus else "cpu")


def _run_error(error, ray) -> Exception:
    """What a run's own failure through the cluster raises: its own error where it is nnrnn's (a full disk, a
    refusal: its one line, as the local path prints it, not Ray's wrapped traceback), else Ray's."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, NnrnnError) else error


def run_on_cluster(address: str, units: list, work, what: str, log=print, gpus: bool = False) -> None:
    """``work(folder, item, threads, device)`` for every (folder, item) of ``units`` (several may share a folder: a
    search's trials) as tasks of the Ray cluster at ``address`` (``auto``: the one this machine has joined;
    ``local``: a new one on this machine), one GPU or one CPU each; one line per finished task, as
    :func:`.reproduce.run_all` prints."""
    if not units:
        return
    ray = connect(address)
    remote = ray.remote(num_gpus=1 if gpus else 0, num_cpus=1, max_retries=RETRIES)(_task)
    log(f"{len(units)} {what} on the Ray cluster at {address}, {'one GPU' if gpus else 'one CPU'} each")
    # absolute paths: a worker's working directory is not this process's
    running = {remote.remote(work, Path(folder).resolve(), item, gpus): Path(folder) for folder, item in units}
    countdown, failed, finished = Countdown(len(units)), [], 0
    # a task whose worker died (killed, out of memory, its node lost) is retried by Ray; these are what ray.get
    # raises once the retries are spent: the grid goes on with the other tasks and reports it at the end
    died = tuple(getattr(ray.exceptions, name) for name in ("WorkerCrashedError", "OutOfMemoryError", "NodeDiedError")
                 if hasattr(ray.exceptions, name))
    try:
        while running:
            ready, _ = ray.wait(list(running), num_returns=1)
            folder = running.pop(ready[0])
            try:
                line = ray.get(ready[0])
                finished += 1
            except died:
                failed.append(folder.name)
                line = f"{folder.name}: its worker died {RETRIES + 1} times; its checkpoint is kept"
            log(f"{countdown.done()} {line}{countdown.left()}")
    except ray.exceptions.RayError as error:
        raise _run_error(error, ray) if isinstance(error, ray.exceptions.RayTaskError) else ClusterLost(
            f"the Ray cluster at {address} failed mid-grid ({type(error).__name__}: "
            f"{str(error).strip().splitlines()[0] if str(error).strip() else 'no message'}); {finished} of the "
            f"{len(units)} {what} had finished and are kept; once the cluster is back, the same command continues "
            f"(interrupted runs resume from their last checkpoints)") from None
    if failed:
        raise UserError(f"the workers training {', '.join(failed)} died (killed, or out of memory); run the same "
                        f"command again to continue (finished runs are kept, interrupted ones resume)")
