"""A run's duration said where no progress bar shows: an estimate from its first updates, then a line at a fixed
interval of wall time with the update, the loss and the time left."""
import pytest

from nnrnn.training import pace
from nnrnn.training.pace import Countdown, Pace, duration


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_estimate_comes_from_the_first_updates_and_the_lines_at_a_fixed_interval():
    clock, lines = Clock(), []
    run = Pace(0, 1000, True, log=lines.append, clock=clock)
    for step in range(1, 200):
        clock.now += 5.0 if step == 1 else 2.0  # the first update pays for warm-up: not timed
        run.update(step, 0.5)
    estimate, *progress = lines
    assert estimate.startswith(f"[nnrnn] 1000 updates: about {duration(2000)} at 2 s each, "
                               f"{duration(2 * (1000 - 1 - pace.ESTIMATE_AFTER))} left (timed on updates 2-11")
    assert len(progress) == (199 - 11) * 2 // pace.EVERY_S  # one per interval after the estimate
    assert progress[0] == f"[nnrnn] update {11 + int(pace.EVERY_S) // 2}/1000 | loss 0.5 | about " \
                          f"{duration(2 * (1000 - 11 - int(pace.EVERY_S) // 2))} left"


def test_a_slow_update_is_estimated_within_the_stated_seconds_and_a_resumed_run_from_where_it_resumed():
    clock, lines = Clock(), []
    run = Pace(500, 1000, True, log=lines.append, clock=clock)
    for step in (501, 502, 503):
        clock.now += pace.ESTIMATE_WITHIN_S / 2
        run.update(step, None)
    assert len(lines) == 1 and lines[0].startswith("[nnrnn] 500 updates: about ") and "updates 502-503" in lines[0]


def test_a_run_that_ends_before_it_is_timed_says_nothing_of_a_time_left():
    clock, lines = Clock(), []
    run = Pace(0, 5, True, log=lines.append, clock=clock)
    for step in range(1, 6):
        clock.now += 1.0
        run.update(step, 1.0)
    assert lines == []


def test_nothing_is_said_where_the_bar_shows():
    lines = []
    run = Pace(0, 100, False, log=lines.append)
    for step in range(1, 101):
        run.update(step, 1.0)
    assert lines == []


@pytest.mark.parametrize("seconds, words", [(30, "30 s"), (600, "10 min"), (6 * 3600, "6.0 h"),
                                            (72 * 3600, "3.0 days")])
def test_durations_in_words(seconds, words):
    assert duration(seconds) == words


def test_a_countdown_says_runs_done_against_planned_and_the_time_left_at_the_pace_so_far():
    clock = Clock()
    countdown = Countdown(4, clock=clock)
    said = []
    for seconds in (120, 60, 60, 60):
        clock.now += seconds
        said.append(countdown.done() + countdown.left())
    assert said == ["[1/4] | about 6 min left", "[2/4] | about 3 min left", "[3/4] | about 80 s left", "[4/4]"]
