"""SIGINT and SIGTERM during training: a flag the loop checks, so that it checkpoints before it exits."""
from __future__ import annotations

import signal


class StopRequested:
    """Turns SIGINT/SIGTERM into a flag the loop checks, so it can checkpoint before exiting."""

    def __init__(self):
        self.signal = None
        self.previous = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self.previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread: leave signals alone
                pass
        return self

    def _handle(self, signum, frame):
        self.signal = signum

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
