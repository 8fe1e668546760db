"""Where a grid's runs train on one machine: each run on a device of its own, several on one device only when
asked.

A *slot* is a place for one run at a time: each device of the list ``per_device`` times.  :class:`Slots` hands out
the device with the fewest runs now (the first listed on a tie) and takes it back when the run ends, so that with
one run per device no two runs ever share a device, and with K per device at most K do.  On a machine without
CUDA the device is the CPU and the slots are the grid's ``--jobs`` processes of one thread each, as before."""
from __future__ import annotations

import torch

from ...errors import OptionError

CPU = "cpu"


def visible_devices() -> list[str]:
    """Every CUDA device this process sees (``cuda:0``, ``cuda:1``, ...); ``["cpu"]`` on a machine without CUDA."""
    if not torch.cuda.is_available():
        return [CPU]
    return [f"cuda:{i}" for i in range(torch.cuda.device_count())]


def check_devices(devices: list[str]) -> list[str]:
    """``devices`` as torch names them (``cuda:N`` or ``cpu``), each once; OptionError for anything else, a
    repeated device, or ``cpu`` beside GPUs (a grid trains on GPUs or on the CPU's processes, not both)."""
    named = []
    for given in devices:
        try:
            device = torch.device(given)
        except (RuntimeError, ValueError):
            raise OptionError(f"--devices {given!r} is not a device; use cpu or cuda:N (e.g. cuda:0 cuda:1)") from None
        if device.type not in ("cpu", "cuda"):
            raise OptionError(f"--devices {given}: nnrnn trains on cpu or cuda:N")
        if device.type == "cpu" and device.index not in (None, 0):  # as --device: there is one CPU
            raise OptionError(f"--devices {given}: there is one cpu device; use --devices cpu (with --jobs or "
                              f"--runs-per-device for several runs on it)")
        named.append(CPU if device.type == "cpu" else f"cuda:{device.index or 0}")
    if len(set(named)) != len(named):
        raise OptionError(f"--devices names a device twice ({' '.join(devices)}); give --runs-per-device for "
                          f"several runs on one device")
    if CPU in named and len(named) > 1:
        raise OptionError("--devices: give GPUs (cuda:N ...) or cpu, not both")
    if not named:
        raise OptionError("--devices needs at least one device")
    return named


def check_present(devices: list[str]) -> list[str]:
    """``devices`` (as :func:`check_devices` names them); OptionError for a GPU this machine does not have, before
    anything measures or trains on it (torch would fail there with an AssertionError or a CUDA error)."""
    count = torch.cuda.device_count()  # 0 without CUDA
    missing = [d for d in devices if d != CPU and torch.device(d).index >= count]
    if missing:
        has = f"has {', '.join(f'cuda:{i}' for i in range(count))}" if count else "has no CUDA GPU"
        raise OptionError(f"--devices {' '.join(missing)}: this machine {has}")
    return devices


def slot_devices(devices: list[str], per_device: int | None, jobs: int) -> list[str]:
    """The device of every slot: on the CPU, ``jobs`` slots (``per_device``, if given, replaces it); on GPUs, each
    device ``per_device`` times (default once)."""
    for value, name in ((per_device, "runs per device"), (jobs, "jobs")):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise OptionError(f"{name} must be a positive integer; got {value!r}")
    if devices == [CPU]:
        return [CPU] * (per_device or jobs)
    return [d for d in devices for _ in range(per_device or 1)]


class Slots:
    """The slots of a grid's devices, and which are taken."""

    def __init__(self, devices: list[str]):
        self.order = list(dict.fromkeys(devices))
        self.capacity = {d: devices.count(d) for d in self.order}
        self.taken = dict.fromkeys(self.order, 0)

    def __len__(self) -> int:
        return sum(self.capacity.values())

    def free(self) -> int:
        return len(self) - sum(self.taken.values())

    def take(self) -> str:
        """The device with the fewest runs now, first listed on a tie; IndexError when every slot is taken."""
        open_ = [d for d in self.order if self.taken[d] < self.capacity[d]]
        if not open_:
            raise IndexError("every slot is taken")
        device = min(open_, key=lambda d: self.taken[d])
        self.taken[device] += 1
        return device

    def give(self, device: str) -> None:
        """A run on ``device`` has ended."""
        if self.taken.get(device, 0) < 1:
            raise ValueError(f"no run holds a slot on {device}")
        self.taken[device] -= 1
