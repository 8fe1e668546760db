"""The exceptions nnrnn's code reacts to, by type (never by message).

* :class:`NnrnnError`: a condition the command line reports as one line on stderr, exiting with the
  exception's ``exit_code``; everything else is an internal bug and keeps its traceback.
* :class:`UserError` (exit 2): something the user can fix (an option, a file, a folder); :class:`RunNotFound`,
  a missing run, is also a ``FileNotFoundError``.
* :class:`UnsupportedTorch` (exit 2): the installed torch is older than nnrnn supports; also an ``ImportError``.
* :class:`OptionError` (exit 2): an option's value that nnrnn cannot use.  It is also a ``ValueError``,
  so library callers that catch ``ValueError`` keep working.
* :class:`TrainingDiverged` (exit 3): training produced non-finite losses, gradients or scores, a loss far
  above the task's baseline and chance (nnrnn.training.outcome), or a checkpoint scores a non-finite result;
  the reproduction grid and sweeps record it as a result.
* :class:`Interrupted`: SIGINT/SIGTERM ended training after a checkpoint.
"""
from __future__ import annotations

import errno
import signal
from pathlib import Path


class NnrnnError(Exception):
    """An error the command line prints as one line and exits with ``exit_code``."""

    exit_code = 1


class UserError(NnrnnError):
    """Something the user can fix: a bad option, a missing or corrupt file.  The message
    is one plain sentence saying what is wrong and how to fix it."""

    exit_code = 2


class UnsupportedTorch(UserError, ImportError):
    """The installed torch is older than nnrnn supports (:mod:`nnrnn.dependencies`); raised by ``import
    nnrnn``, so it is also an ImportError."""


class OptionError(UserError, ValueError):
    """An option (a configuration key, a command-line flag or a library argument) has a value nnrnn
    cannot use; the message names the option and the values it takes."""


class DataError(UserError, ValueError):
    """A data file is there but is not what it should be (a corrupt gzip, a wrong IDX magic number, a size its header
    does not call for, images and labels of different counts, text that is not UTF-8 or not in the ptb.char
    format): a ``ValueError``, as numpy's and Python's parsers raise, carrying the house type so that the command
    line prints it as one line.  The message names the file and what to do."""


class RunNotFound(UserError, FileNotFoundError):
    """No run folder or checkpoint at the path given (``nnrnn.load_run``, ``nnrnn analyze``): a
    ``FileNotFoundError``, as ``torch.load`` raises, carrying the house type so that the command line prints it as
    one line; ``filename`` is the path."""

    def __init__(self, message: str, path):
        super().__init__(errno.ENOENT, message, str(path))  # errno, strerror and filename as torch.load's

    def __str__(self):  # the sentence alone, which names the path (OSError's form adds "[Errno 2]" and the path)
        return self.strerror

    def __reduce__(self):
        return RunNotFound, (self.strerror, self.filename)


class FolderInUse(UserError):
    """Another nnrnn process holds the folder's lock (a run training, a grid writing its report)."""


class TrainingDiverged(NnrnnError):
    """Training produced non-finite losses, gradients or scores (validation or test), or a loss far above the
    task's baseline and chance; the message says which, where the last good checkpoint is and what to try.  Its
    exit code, 3, tells a script a diverged run from a mistake in the command (2) and a crash (1)."""

    exit_code = 3


class Interrupted(NnrnnError):
    """SIGINT/SIGTERM ended training after a checkpoint; ``advice`` says how to continue."""

    def __init__(self, signum: int, path: Path, advice: str = "continue with --resume"):
        super().__init__(f"stopped by signal {signal.Signals(signum).name}; checkpoint saved to {path}")
        self.signum, self.path, self.advice = signum, path, advice
        self.exit_code = 128 + signum

    def __reduce__(self):  # crosses process boundaries (reproduce --jobs, sweeps)
        return Interrupted, (self.signum, self.path, self.advice)


def one_line(exc: NnrnnError) -> str:
    """The line the command line prints on stderr for ``exc`` (its first line; an interrupt with its advice): one
    function, so that every process of a multi-process run prints the same line for one error
    (:mod:`nnrnn.training.distributed`)."""
    if isinstance(exc, Interrupted):
        return f"nnrnn: {exc}; {exc.advice}"
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"nnrnn: error: {message}"


class ClusterLost(NnrnnError):
    """The Ray cluster a grid ran on failed mid-grid (its head or its connection lost): a fault, not a mistake in
    the command.  Finished runs are kept and interrupted ones resume, so the same command continues once the
    cluster is back.  Exit code 75 (EX_TEMPFAIL: a temporary failure, try again) tells it from a mistake (2), a
    crash (1) and a diverged run (3)."""

    exit_code = 75
