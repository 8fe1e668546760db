"""Data parallelism under ``torchrun``: each process takes an equal slice of every batch,
DistributedDataParallel averages the gradients, and rank 0 alone writes files.

An error on one process reaches every process (:func:`failures_shared`): the failing rank posts its one line in
the launcher's key-value store (the TCPStore at MASTER_ADDR:MASTER_PORT that torchrun's processes meet at), and
a thread on every other rank, watching that store, prints the same line and ends its process with the same exit
code, wherever its main thread waits (a collective, DDP's setup).  Without it a rank that refused (a run folder in
use, a checkpoint it cannot read) left the others waiting in a collective until gloo's 30-minute timeout.

Started without torchrun (no WORLD_SIZE in the environment) everything here is a no-op.
"""
from __future__ import annotations

import atexit
import contextlib
import datetime
import json
import os
import signal
import sys
import threading
import time

import torch
import torch.distributed as dist

from ..errors import NnrnnError, UserError, one_line

WATCH_EVERY_S = 0.1  # how often a rank looks for another's failure in the store
ACKNOWLEDGE_S = 10.0  # how long a failing rank waits for the others to have printed its line before it exits


def setup(device: torch.device) -> tuple[int, int]:
    """(rank, world size); initialises the process group when launched by torchrun."""
    world = world_size()
    if world == 1:
        return 0, 1
    if device.type == "cuda" and "LOCAL_RANK" in os.environ:
        # NCCL runs its collectives (barrier included) on the current CUDA device: each rank its own GPU,
        # not all of them GPU 0
        torch.cuda.set_device(local_device(device))
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    _Watcher.start(dist.get_rank(), world)
    return dist.get_rank(), world


class _Watcher:
    """The thread that ends this process when another rank has failed (:func:`failures_shared`), and this rank's
    side of the exchange: one per process, started by :func:`setup`."""

    current: _Watcher | None = None

    def __init__(self, rank: int, world: int):
        self.rank, self.world = rank, world
        # a key per torchrun restart: an elastic restart meets in the same store, where a failure of the last
        # attempt is still posted
        self.key = f"nnrnn/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/failure"
        self.store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                                   timeout=datetime.timedelta(seconds=30))
        self.speaking = threading.Lock()  # held by whichever of this process's threads prints its last line
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.watch, name="nnrnn-failure-watch", daemon=True)

    @classmethod
    def start(cls, rank: int, world: int) -> None:
        if cls.current is None and "MASTER_ADDR" in os.environ and "MASTER_PORT" in os.environ:
            cls.current = cls(rank, world)
            cls.current.thread.start()

    def watch(self) -> None:
        while not self.stopped.wait(WATCH_EVERY_S):
            try:
                if not self.store.check([self.key]):
                    continue
                failure = json.loads(self.store.get(self.key))
            except (RuntimeError, ValueError):  # the store's host has gone; the launcher ends the rest
                return
            if failure["rank"] == self.rank:
                continue
            said = self.speaking.acquire(blocking=False)  # False: this rank is failing itself and says its own
            if said:
                print(failure["line"], file=sys.stderr, flush=True)
            self.store.add(f"{self.key}/done", 1)
            if said:
                self.linger()
                os._exit(failure["code"])
            return

    def linger(self) -> None:
        """Wait (at most :data:`ACKNOWLEDGE_S`) until the failing ranks are leaving: torchrun's agent ends every
        process once one has exited, and a failing rank killed while it said its line would exit -15, not 2."""
        deadline = time.monotonic() + ACKNOWLEDGE_S
        try:
            while self.store.add(f"{self.key}/left", 0) < 1 and time.monotonic() < deadline:
                time.sleep(WATCH_EVERY_S)
        except RuntimeError:  # the store's host (a failing rank 0) has gone
            pass

    def leave(self) -> None:
        """At the failing process's exit (atexit, its line printed): tell the others, and let the agent's SIGTERM,
        which follows their exit, not change the exit code of a process that is ending anyway."""
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with contextlib.suppress(RuntimeError):
            self.store.add(f"{self.key}/left", 1)

    def tell(self, error: BaseException) -> None:
        """Post ``error``'s line and exit code for the other ranks, and wait (at most :data:`ACKNOWLEDGE_S`) until
        they have printed it (each rank adds one to ``done`` once it has said its line, the failing ones included):
        this process's exit may take the store with it (rank 0 hosts it outside torchrun)."""
        if not self.speaking.acquire(blocking=False):  # the watcher is saying another rank's line and exits
            while True:
                time.sleep(1)
        if isinstance(error, NnrnnError):
            line, code = one_line(error), error.exit_code
        else:  # a bug: its traceback is this rank's; the others say where it is
            line, code = (f"nnrnn: error: rank {self.rank} stopped with an internal error "
                          f"({type(error).__name__}); see its traceback"), 1
        self.stopped.set()
        try:
            self.store.set(self.key, json.dumps({"rank": self.rank, "line": line, "code": code}))
            self.store.add(f"{self.key}/done", 1)
            deadline = time.monotonic() + ACKNOWLEDGE_S
            while self.store.add(f"{self.key}/done", 0) < self.world and time.monotonic() < deadline:
                time.sleep(WATCH_EVERY_S)
        except RuntimeError:  # the store is gone: the others are ending already
            return
        atexit.register(self.leave)


@contextlib.contextmanager
def failures_shared():
    """An exception leaving the ``with`` block on one rank ends every rank, each printing the same line
    (:class:`_Watcher`); the process group is then torn down without the barrier of :func:`cleanup`, which the
    others would never reach."""
    try:
        yield
    except BaseException as error:
        watcher = _Watcher.current
        if watcher is not None and dist.is_initialized() and not isinstance(error, SystemExit):
            watcher.tell(error)
            _Watcher.current = None
            dist.destroy_process_group()
        raise


def local_device(device: torch.device) -> torch.device:
    if device.type == "cuda" and "LOCAL_RANK" in os.environ and device.index is None:
        return torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    return device


def collective_device() -> torch.device:
    """Where the tensors of a collective must be: NCCL reduces CUDA tensors only (a CPU tensor fails with
    "No backend type associated with device type cpu"), gloo CPU ones."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def shard(tensor: torch.Tensor, rank: int, world: int, dim: int = 1) -> torch.Tensor:
    """This rank's equal slice of the batch dimension."""
    if world == 1:
        return tensor
    size = tensor.shape[dim]
    if size % world:
        raise UserError(f"the batch size {size} does not split evenly over {world} processes; "
                        f"choose a --batch-size divisible by {world}")
    return tensor.narrow(dim, rank * (size // world), size // world)


def sum_stats(stats: dict, world: int) -> dict:
    """Sum metric totals and counts over all processes (every rank must call it)."""
    if world == 1 or not stats:
        return stats
    names = sorted(stats)
    values = torch.tensor([[float(stats[n][0]), float(stats[n][1])] for n in names], dtype=torch.float64,
                          device=collective_device())
    dist.all_reduce(values)
    return {n: (values[i, 0].item(), values[i, 1].item()) for i, n in enumerate(names)}


def broadcast_float(value: float, world: int) -> float:
    """Rank 0's ``value`` on every rank (every rank must call it)."""
    if world == 1:
        return value
    tensor = torch.tensor([float(value)], dtype=torch.float64, device=collective_device())
    dist.broadcast(tensor, src=0)
    return tensor.item()


def gather_batch(state, world: int):
    """Reassemble a carried hidden state (or (h, c) tuple) split over ranks along dim 1."""
    if world == 1 or state is None:
        return state
    if isinstance(state, tuple):
        return tuple(gather_batch(s, world) for s in state)
    parts = [torch.empty_like(state) for _ in range(world)]
    dist.all_gather(parts, state.contiguous())
    return torch.cat(parts, 1)


def shard_state(state, rank: int, world: int):
    if world == 1 or state is None:
        return state
    if isinstance(state, tuple):
        return tuple(shard_state(s, rank, world) for s in state)
    return shard(state, rank, world, dim=1)


def cleanup() -> None:
    """Tear the process group down on every rank together.  Rank 0 works on after training (the test split,
    the plots) while the others are done; a rank that destroyed its group and exited while rank 0 was still
    connected was seen to abort (SIGABRT in gloo) about once in fifteen launches.  The barrier makes every
    rank wait for rank 0 first."""
    if _Watcher.current is not None:
        _Watcher.current.stopped.set()
        _Watcher.current = None
    if dist.is_initialized():
        try:
            dist.barrier()
        finally:
            dist.destroy_process_group()


def world_size() -> int:
    """The processes torchrun started (WORLD_SIZE, 1 without it), read where it is parsed: a value that is no
    positive integer is a UserError naming it, not int()'s traceback."""
    value = os.environ.get("WORLD_SIZE", "1")
    try:
        world = int(value)
    except ValueError:
        world = 0
    if world < 1:
        raise UserError(f"WORLD_SIZE={value!r} is not a number of processes; unset it to train in one process, or "
                        f"start the run with torchrun, which sets it")
    return world
