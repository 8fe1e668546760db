"""The environment variables nnrnn reads, all read through this module (docs/training.md lists them).

| variable | default | effect |
|---|---|---|
| ``NNRNN_DEBUG`` | off | the command line re-raises the errors it would print as one line, with their traceback |
| ``NNRNN_TUNE`` | on | off: every kernel choice follows the fixed thresholds, nothing is timed (deterministic) |
| ``NNRNN_CPP`` | on | off: the fused recurrence and the GRUs, coRNN, LEM and the complex nnRNN run their Python \
loops (torch.nn.GRU's kernel for the GRUs), never the compiled C++ ones |
| ``NNRNN_ONEDNN`` | auto | on: oneDNN is preferred on any CPU, by the thresholds (not timed); off: never used; \
unset: timed where it is a candidate (the thresholds with NNRNN_TUNE=0: where the CPU has AVX-512) |
| ``NNRNN_LOOPS`` | auto | ``compiled``, ``onednn`` or ``aten``: the fused recurrence's loops, wherever they can run |
| ``NNRNN_EXPM_PLAN`` | auto | ``fixed`` or ``read``: the matrix exponential's plan on every device |
| ``NNRNN_GIVENS_CHUNKS`` | auto | K: EURNN composes V by K chunks on every device (1: the layers in order) |
| ``NNRNN_KEEP_FREED_MEMORY`` | on | off: the ``nnrnn`` command leaves glibc's malloc settings alone |
| ``NNRNN_EXTENSIONS_DIR`` | ``$XDG_CACHE_HOME/nnrnn`` | where the compiled loops are cached |
| ``NNRNN_DATA`` | | a folder searched first for data files |
| ``OMP_NUM_THREADS`` | the cores free | ``nnrnn train``'s threads without ``--threads`` (torch reads it too) |

A boolean is off for ``0``, ``false``, ``no`` and ``off`` (any case), on for any other non-empty value, and
takes its default when unset or empty.  The kernel settings are read once per process, when the kernel policy
is first asked (:mod:`nnrnn.kernels.policy`; ``kernel_policy.reset()`` reads them again).
"""
from __future__ import annotations

import os
from pathlib import Path

from .errors import OptionError

OFF = ("0", "false", "no", "off")


def flag(name: str, default: bool | None = False) -> bool | None:
    """The boolean environment variable ``name``: ``default`` when unset or empty, False for one of :data:`OFF`,
    else True."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    return value not in OFF


def choice(name: str, allowed: tuple[str, ...]) -> str | None:
    """The environment variable ``name``, one of ``allowed`` (any case), or None when unset or empty; a
    ValueError naming the variable and the values it takes otherwise (an OptionError: the command line prints
    it as one line)."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return None
    if value not in allowed:
        raise OptionError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def positive_integer(name: str) -> int | None:
    """The environment variable ``name`` as an integer ≥ 1, or None when unset or empty; a ValueError otherwise."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise OptionError(f"{name} must be a whole number of at least 1, not {value!r}")
    return int(value)


def folder(name: str) -> Path | None:
    """The environment variable ``name`` as a folder (``~`` expanded), or None when unset or empty."""
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser() if value else None


def cache_folder() -> Path:
    """The per-user cache folder: $XDG_CACHE_HOME/nnrnn, else ~/.cache/nnrnn."""
    return (folder("XDG_CACHE_HOME") or Path.home() / ".cache") / "nnrnn"


def extensions_dir() -> Path:
    """Where compiled loops are cached: $NNRNN_EXTENSIONS_DIR, else :func:`cache_folder`."""
    return folder("NNRNN_EXTENSIONS_DIR") or cache_folder()


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system has one, else every core."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def free_cores() -> tuple[int, str]:
    """The threads ``nnrnn train`` uses when ``--threads`` is not given, and why: ``OMP_NUM_THREADS`` when it is a
    positive integer, else the cores this process may run on (its CPU affinity) less those the load average says
    other processes keep busy, at least 1.  More threads than free cores makes every thread wait for the others
    at each parallel step: on 2 cores shared with other work, torch's GRU and LSTM ran 5-30 times slower with 2
    threads than with 1 (docs/training.md, "Threads")."""
    value = os.environ.get("OMP_NUM_THREADS", "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value), f"OMP_NUM_THREADS={value}"
    cores = usable_cores()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    free = max(1, min(cores, cores - round(load)))
    return free, f"{free} of {cores} cores free, load average {load:.1f}"
