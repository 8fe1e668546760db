"""Atomic checkpoints: write a temporary file, fsync, rename.  A reader never sees a
half-written checkpoint, whenever the writer is killed."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import torch

from ..errors import UserError

FORMAT = "nnrnn-checkpoint"
# 2: T strictly lower triangular by default, t_decay as the release's weight decay, PTB embedding,
#    learning-rate schedule state; a version-1 checkpoint would load into a different model
VERSION = 2


def _umask() -> int:
    try:  # Linux says it without changing it: os.umask's set-and-restore would leave other threads a moment at 0
        with open("/proc/self/status") as status:
            return next(int(line.split()[1], 8) for line in status if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError):
        mask = os.umask(0o077)
        os.umask(mask)
        return mask


def atomic_write(path: Path, write, again: str = "continue with --resume") -> None:
    """Call ``write(file)`` on a temporary file beside ``path``, then rename it over ``path``.  The file gets the
    mode a plain ``open(path, "w")`` would give it (0666 less the umask), not mkstemp's private 0600.  A failure
    (a full disk) is a UserError ending with ``again``, how to go on once it is fixed."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise UserError(f"cannot write {path} ({error.strerror}); the previous {path.name}, if any, is unchanged; "
                        f"fix the folder, then {again}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(error, OSError):  # a full disk above all: the file it would have replaced stays whole
            raise UserError(f"cannot write {path} ({error.strerror}); the previous {path.name}, if any, is "
                            f"unchanged; free some space, then {again}") from None
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # make the rename itself durable
        finally:
            os.close(dir_fd)
    except OSError as error:  # the new file is in place, but the disk did not confirm it
        raise UserError(f"cannot write {path} ({error.strerror}); the disk did not confirm the new {path.name}; "
                        f"fix the disk, then {again}") from None


def replace_whole(path: Path, write) -> None:
    """``write(tmp)`` writes a file by name (a figure's ``savefig``) into a private folder beside ``path``, under
    ``path``'s own name; it is then renamed over ``path``: whole or not at all.  An OSError (a full disk) leaves
    the previous file and no stray temporary one."""
    path = Path(path)
    folder = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        write(folder / path.name)
        os.replace(folder / path.name, path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def save(path: Path, payload: dict) -> None:
    atomic_write(path, lambda f: torch.save({"format": FORMAT, "version": VERSION, **payload}, f))


def load(path: Path, map_location="cpu") -> dict:
    """Load a checkpoint written by :func:`save`; UserError if it is missing or not one."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"no checkpoint at {path}; train a model first with `nnrnn train`")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises many types for truncated or foreign files
        raise UserError(f"{path} is not a readable nnrnn checkpoint ({type(exc).__name__}); "
                        f"it is truncated or was not written by nnrnn (the run's other checkpoint, best.pt or "
                        f"last.pt, may still be readable; `nnrnn train ... --overwrite` starts the run "
                        f"again)") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise UserError(f"{path} is not an nnrnn checkpoint (it was saved by another program)")
    if payload.get("version") != VERSION:
        raise UserError(f"{path} has checkpoint version {payload.get('version')}, written by another nnrnn "
                        f"release; this one reads version {VERSION} only, so retrain the run (or use the nnrnn "
                        f"that wrote it)")
    return payload


def saved_step(path: Path) -> int | None:
    """The update a run's ``last.pt`` was saved at, read without loading its tensors (memory-mapped); None when
    there is none, or it cannot be read (what ``nnrnn runs`` shows of a run checkpointed before it logged)."""
    if not Path(path).is_file():
        return None
    try:
        step = torch.load(path, map_location="cpu", weights_only=True, mmap=True).get("step")
    except Exception:  # torch raises many types for truncated or foreign files; the listing shows the rest
        return None
    return step if isinstance(step, int) else None


def to_device(payload, device):
    """``payload`` (a loaded checkpoint, or part of one) with every tensor on ``device``, as :func:`load`'s
    ``map_location`` would have put it."""
    if isinstance(payload, torch.Tensor):
        return payload.to(device)
    if isinstance(payload, dict):
        return {key: to_device(value, device) for key, value in payload.items()}
    if isinstance(payload, (list, tuple)):
        return type(payload)(to_device(value, device) for value in payload)
    return payload
