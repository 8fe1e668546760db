"""The timing harness the doctor and benchmarks/ share."""
import torch

from nnrnn.doctor import harness


def test_a_call_is_timed_and_measured_between_cuda_synchronisations(monkeypatch):
    events = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: events.append("sync"))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 100)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: events.append("reset"))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 350)
    cuda = torch.device("cuda", 0)
    assert harness.timed(cuda, lambda: events.append("update")) >= 0
    assert events == ["sync", "update", "sync"]
    events.clear()
    assert harness.update_memory(cuda, lambda: events.append("update")) == 250
    assert events == ["sync", "reset", "update", "sync"]
    events.clear()
    assert harness.update_memory(torch.device("cpu"), lambda: events.append("update")) is None
    harness.timed(torch.device("cpu"), lambda: events.append("update"))
    assert events == ["update"]


def test_rounds_alternate_so_that_no_call_always_runs_first():
    order = []
    calls = {name: (lambda name=name: order.append(name)) for name in "abc"}
    seconds = harness.alternate(calls, 4, after_round=lambda: order.append("|"))
    assert "".join(order) == "abc|bca|cab|abc|"
    assert {name: len(times) for name, times in seconds.items()} == {"a": 4, "b": 4, "c": 4}
    assert all(t >= 0 for times in seconds.values() for t in times)


def test_medians_are_per_call():
    assert harness.medians({"a": [3.0, 1.0, 2.0], "b": [5.0]}) == {"a": 2.0, "b": 5.0}


def test_rounds_are_timed_by_the_clock_given():
    """--cpu-time's clock (benchmarks/training_update.py): every call's seconds are that clock's difference, here
    a clock that advances by the call's own amount only while it runs."""
    now = [0.0]
    calls = {"a": lambda: now.__setitem__(0, now[0] + 2.0), "b": lambda: now.__setitem__(0, now[0] + 5.0)}
    seconds = harness.alternate(calls, 3, after_round=lambda: now.__setitem__(0, now[0] + 100.0),
                                clock=lambda: now[0])
    assert seconds == {"a": [2.0, 2.0, 2.0], "b": [5.0, 5.0, 5.0]}
