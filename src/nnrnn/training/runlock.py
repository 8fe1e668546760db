"""One process at a time per run folder.

:func:`hold` makes the folder (with a plain sentence for each way that can fail),
then takes an exclusive ``flock`` on ``<folder>/.lock`` and writes its pid there.
A second process asking for the same folder gets a :class:`UserError` naming the
folder and the owner's pid.  The kernel releases the lock when its holder exits
in any way (a crash or SIGKILL included), so a lock left by a killed run is
never stale: the next run simply takes it.  Where ``fcntl`` does not exist
(Windows) folders are not locked.
"""
from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from ..errors import FolderInUse, UserError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None

LOCK_NAME = ".lock"
# what flock says on a filesystem that cannot lock (some FUSE and network filesystems, NFS without its lock
# service): not a folder in use, but one that no process could ever lock
UNLOCKABLE = {errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOLCK}


def make_folder(folder: Path, option: str = "--out") -> Path:
    """``folder`` created if missing; UserError if it is a file, is inside one, or cannot be written."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{option} {folder} is a file, not a folder; choose another {option}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except NotADirectoryError:
        parent = next((p for p in folder.parents if p.exists() and not p.is_dir()), folder.parent)
        raise UserError(f"{option} {folder} is inside {parent}, which is a file, not a folder; "
                        f"choose another {option}") from None
    except PermissionError:
        raise UserError(f"cannot create {folder} (permission denied); choose a writable {option}") from None
    except OSError as error:
        raise UserError(f"cannot create {folder} ({error.strerror}); choose another {option}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"cannot write to {folder} (permission denied); choose a writable {option}")
    return folder


@contextlib.contextmanager
def hold(folder: Path, option: str = "--out"):
    """Create ``folder`` if needed and hold its lock for the ``with`` block."""
    folder = make_folder(folder, option)
    if fcntl is None:
        yield folder
        return
    path = folder / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise UserError(f"cannot write the lock file {path} ({error.strerror}); choose a writable {option}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno in UNLOCKABLE:
                raise UserError(f"cannot lock {folder}: its filesystem does not support file locks (flock: "
                                f"{error.strerror}); choose an {option} on a filesystem that does (a local disk, or "
                                f"NFS with its lock service running)") from None
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise FolderInUse(f"{folder} is in use by another nnrnn process (pid {owner}); wait for it to finish, "
                            f"or choose another {option}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield folder
    finally:
        os.close(fd)  # closing releases the lock
