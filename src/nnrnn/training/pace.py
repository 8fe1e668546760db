"""A run's duration said where no progress bar shows (a batch job's log, ``nohup``, a pipe): an estimate once its
first updates are timed, then a line at a fixed interval of wall time with the update, the loss and the time left.

On a terminal tqdm's bar says all of this (:func:`nnrnn.training.train.loop`); redirected, the bar is off (its
carriage returns would pile up into one line), and the first line used to come with the first validation, which
psMNIST's paper run on one CPU thread reaches after about 40 minutes, with no word of its 6 hours."""
from __future__ import annotations

import time

ESTIMATE_AFTER = 10  # updates timed (after the first, which pays for warm-up) before the estimate is printed...
ESTIMATE_WITHIN_S = 30.0  # ...or fewer, once this many seconds have passed (a slow update)
EVERY_S = 60.0  # the interval between two progress lines


def duration(seconds: float) -> str:
    """A duration for a person: seconds, minutes, hours or days."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


class Pace:
    """Times a run's updates from ``start`` (0, or the update it resumed from) to ``total``, and prints (``log``) its
    estimate and its progress lines; ``enabled`` False prints nothing (a terminal, another rank, --no-progress)."""

    def __init__(self, start: int, total: int, enabled: bool, log=print, clock=time.monotonic):
        self.start, self.total, self.enabled, self.log, self.clock = start, total, enabled, log, clock
        self.first = None  # (update, time) at the end of the first update timed here
        self.estimated = False
        self.next_line = None

    def update(self, step: int, loss: float | None) -> None:
        """After update ``step``, whose training loss (or the latest one logged) is ``loss``."""
        if not self.enabled:
            return
        now = self.clock()
        if self.first is None:
            self.first = (step, now)
            return
        timed, elapsed = step - self.first[0], now - self.first[1]
        if not self.estimated and step < self.total and (timed >= ESTIMATE_AFTER or elapsed >= ESTIMATE_WITHIN_S):
            self.estimated, self.next_line = True, now + EVERY_S
            each = elapsed / timed
            self.log(f"[nnrnn] {self.total - self.start} updates: about {duration(each * (self.total - self.start))} "
                     f"at {each:.3g} s each, {duration(each * (self.total - step))} left (timed on updates "
                     f"{self.first[0] + 1}-{step}; validations add to it); a line every {duration(EVERY_S)} says "
                     f"where the run is")
        elif self.estimated and now >= self.next_line and step < self.total:
            self.next_line = now + EVERY_S
            shown = f" | loss {loss:.4g}" if loss is not None else ""
            left = elapsed / timed * (self.total - step)  # validations so far included
            self.log(f"[nnrnn] update {step}/{self.total}{shown} | about {duration(left)} left")


class Countdown:
    """Runs (or trials) done against planned, and the time left at the pace so far: what a grid or a search says
    after each one ends (``[3/12] ... | about 20 min left``), on a terminal and off it alike.  Each run prints its own
    lines (and its bar) on the same output, so this is a line per run, not a bar of its own."""

    def __init__(self, total: int, clock=time.monotonic):
        self.total, self.count, self.clock, self.started = total, 0, clock, clock()

    def done(self) -> str:
        """One more ended: its ``[count/total]`` prefix."""
        self.count += 1
        return f"[{self.count}/{self.total}]"

    def left(self) -> str:
        """`` | about X left`` after the latest :meth:`done` (nothing after the last one)."""
        if self.count >= self.total or not self.count:
            return ""
        return f" | about {duration((self.clock() - self.started) / self.count * (self.total - self.count))} left"
