"""Data parallelism under ``torchrun``: each process takes an equal slice of every batch,
DistributedDataParallel averages the gradients, and rank 0 alone writes files.

Started without torchrun (no WORLD_SIZE in the environment) everything here is a no-op.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist

from ..errors import UserError


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
    return dist.get_rank(), world


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
