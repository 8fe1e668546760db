"""SIGINT and SIGTERM during training: a flag the loop checks, so that it checkpoints before it exits; and, where
waiting for that would take more than seconds, the stop at once."""
from __future__ import annotations

import signal
import time
from pathlib import Path

from ..errors import Interrupted

GRACE_S = 5.0  # a signal waits for the update running at most this long; past it, the run stops at once


class StopRequested:
    """Turns SIGINT/SIGTERM into a flag the loop checks, so it can checkpoint before exiting.  A job that cannot
    honour it within seconds stops at once, on the last checkpoint (``last``, whole: every save is a rename): a
    signal that comes while an update has run more than :data:`GRACE_S` (a stack of 100,000 layers took over
    50 s), and a second signal, always.  The loop says when an update starts (:meth:`updating`)."""

    def __init__(self, last: Path | None = None):
        self.signal = None
        self.previous = {}
        self.last = last
        self.started = None  # when the update running now started (time.monotonic()), None between updates

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self.previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread: leave signals alone
                pass
        return self

    def updating(self, running: bool) -> None:
        self.started = time.monotonic() if running else None

    def _handle(self, signum, frame):
        again = self.signal is not None
        self.signal = signum
        long = self.started is not None and time.monotonic() - self.started > GRACE_S
        if self.last is not None and (again or long):
            raise Interrupted(signum, self.last)

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
