"""Where data sets are looked for.

Order: an explicit ``data_dir``; else ``$NNRNN_DATA/<name>``; else the per-user cache
``${XDG_CACHE_HOME:-~/.cache}/nnrnn/<name>`` (where ``nnrnn data fetch`` writes by default).
An explicit ``data_dir`` may be the data set's own folder or a folder holding it as
``<name>/`` (so both ``/data/mnist`` and ``/data`` work); when both hold the data set, which one is meant
cannot be told, and that is a UserError naming both.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from .. import environment
from ..errors import UserError


class DataNotFound(UserError):
    """A data set's files are not in the folder looked in (as opposed to being there but unreadable): what a
    caller with somewhere else to look reacts to (``nnrnn eval`` of a run whose data folder has moved)."""


def data_root() -> Path:
    """The folder that holds one sub-folder per data set: $NNRNN_DATA, else the user cache."""
    return environment.folder("NNRNN_DATA") or environment.cache_folder()


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
    holding = [folder for folder in candidates if folder.is_dir() and has_data(folder)]
    if len(holding) > 1 and not holding[0].samefile(holding[1]):
        raise UserError(f"both {holding[0]} and {holding[1]} hold {name} files, so which ones to read is ambiguous; "
                        f"pass --data-dir {holding[1]} (or NNRNN_DATA) to read that folder, or move the files out of "
                        f"{holding[0]}")
    return holding[0] if holding else candidates[0]
