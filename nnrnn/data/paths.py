"""Where data sets are looked for.

Order: an explicit ``data_dir``; else ``$NNRNN_DATA/<name>``; else the per-user cache
``${XDG_CACHE_HOME:-~/.cache}/nnrnn/<name>`` (where ``nnrnn data fetch`` writes by default).
An explicit ``data_dir`` may be the data set's own folder or a folder holding it as
``<name>/`` (so both ``/data/mnist`` and ``/data`` work).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable


def data_root() -> Path:
    """The folder that holds one sub-folder per data set: $NNRNN_DATA, else the user cache."""
    env = os.environ.get("NNRNN_DATA")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "nnrnn"


def default_dir(name: str) -> Path:
    """Where data set ``name`` is looked for (and fetched to) when no folder is given."""
    return data_root() / name


def resolve_dir(name: str, data_dir: str | os.PathLike | None, has_data: Callable[[Path], bool]) -> Path:
    """The folder to read ``name`` from.  Returns the first candidate for which ``has_data``
    holds, else the primary candidate (the caller then reports what is missing there)."""
    if data_dir is not None:
        base = Path(data_dir).expanduser()
        candidates = [base, base / name]
    else:
        candidates = [default_dir(name)]
    for folder in candidates:
        if folder.is_dir() and has_data(folder):
            return folder
    return candidates[0]
