"""nnrnn.training.resources: the device a run asks for, present here, and the memory it needs."""

import pytest
import torch

from nnrnn.errors import UserError
from nnrnn.training import resources


def test_device_names():
    assert resources.check_device("cpu") == torch.device("cpu")
    assert resources.check_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(UserError, match="nnrnn trains on cpu or cuda"):
        resources.check_device("meta")


def test_device_names_on_a_machine_with_two_cuda_devices(monkeypatch):
    """The CUDA rules, checked on a CPU-only machine by telling torch it has two devices."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resources.check_device("auto") == torch.device("cuda")
    assert resources.check_device("cuda") == torch.device("cuda")
    assert resources.check_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(UserError, match="this machine has 2 CUDA device"):
        resources.check_device("cuda:2")


def test_available_memory_reads_memavailable_in_kib(monkeypatch):
    import io
    meminfo = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:    2048 kB\n"
    monkeypatch.setattr(resources, "open", lambda *a, **k: io.StringIO(meminfo), raising=False)
    assert resources.available_memory() == 2048 * 1024

    def unreadable(*args, **kwargs):
        raise OSError("no /proc here")
    monkeypatch.setattr(resources, "open", unreadable, raising=False)
    assert resources.available_memory() is None
    resources.check_memory({"hidden": 10 ** 9})  # unknown memory: no refusal


def test_memory_check_is_four_float32_copies_of_three_n_squared_plus_four_n(monkeypatch):
    """The documented low estimate: parameter, gradient and two optimizer buffers of V (+ T, generator)."""
    n = 1000
    needed = 4 * 4 * (3 * n * n + 4 * n)
    monkeypatch.setattr(resources, "available_memory", lambda: needed)
    resources.check_memory({"hidden": n})  # exactly enough
    monkeypatch.setattr(resources, "available_memory", lambda: needed - 1)
    with pytest.raises(UserError, match="--hidden 1000 needs at least"):
        resources.check_memory({"hidden": n})


def test_the_memory_check_counts_every_layer_of_a_stack(monkeypatch):
    """--num-layers 100000 --hidden 8 passed a check that counted one layer, then grew past 19 GB."""
    n, layers = 8, 1000
    one = 4 * 4 * (3 * n * n + 4 * n)
    monkeypatch.setattr(resources, "available_memory", lambda: 10 * one)
    resources.check_memory({"hidden": n, "num_layers": 1})  # one layer fits
    with pytest.raises(UserError, match=f"{layers} layers of --hidden {n} needs at least .* lower --num-layers"):
        resources.check_memory({"hidden": n, "num_layers": layers})


def test_the_activations_of_every_layer_are_counted(monkeypatch):
    class Task:
        def batch_shapes(self):
            return (100, 10), (100, 10)
    n, layers = 8, 1000
    state = layers * (4 * 4 * (3 * n * n + 4 * n) + resources.LAYER_OBJECT_BYTES)
    monkeypatch.setattr(resources, "available_memory", lambda: state + 2 * 4 * n * 3 * 100 * 10 * 1)
    resources.check_memory({"hidden": n, "num_layers": layers})  # the state fits
    with pytest.raises(UserError, match=f"100 steps at {layers} layers of {n} hidden units .* --num-layers or"):
        resources.check_memory({"hidden": n, "num_layers": layers}, Task())
