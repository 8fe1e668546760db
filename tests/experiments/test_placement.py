"""Device placement of a grid's runs (the device list injected: no GPU needed): each run on a device of its own,
several on one device only when asked, and the device recorded in the run's config.json."""
import json
import time

import pytest

from nnrnn.errors import OptionError
from nnrnn.experiments import reproduce
from nnrnn.experiments.planning.placement import Slots, check_devices, slot_devices


def test_slots_spread_runs_over_devices_and_never_share_one_unless_asked():
    slots = Slots(slot_devices(["cuda:0", "cuda:1"], None, 1))
    assert [slots.take(), slots.take()] == ["cuda:0", "cuda:1"]
    with pytest.raises(IndexError):
        slots.take()
    slots.give("cuda:1")
    assert slots.take() == "cuda:1"
    two = Slots(slot_devices(["cuda:0", "cuda:1"], 2, 1))
    assert sorted(two.take() for _ in range(4)) == ["cuda:0", "cuda:0", "cuda:1", "cuda:1"]


def test_the_cpu_keeps_its_one_thread_processes():
    assert slot_devices(["cpu"], None, 3) == ["cpu"] * 3
    assert check_devices(["cuda:1", "cuda"]) == ["cuda:1", "cuda:0"]
    for bad in (["cuda:0", "cuda:0"], ["cpu", "cuda:0"], ["tpu"], []):
        with pytest.raises(OptionError):
            check_devices(bad)
    with pytest.raises(OptionError):
        slot_devices(["cuda:0"], 0, 1)


def _record(folder, item, threads, device):
    """A stand-in run: records its device and when it ran."""
    start = time.time()
    time.sleep(0.3)
    (folder.parent / f"{folder.name}.json").write_text(json.dumps([device, threads, start, time.time()]))
    return f"{folder.name}: on {device}"


@pytest.mark.subprocess
@pytest.mark.parametrize("per_device", [1, 2])
def test_each_run_goes_to_a_free_device(tmp_path, per_device):
    devices = ["cuda:0", "cuda:1"]
    todo = {tmp_path / f"run{i}": i for i in range(6)}
    logs = []
    where = reproduce.Where(tuple(slot_devices(devices, per_device, 1)))
    reproduce.run_all(tmp_path, todo, _record, "runs to train", logs.append, where)
    spans = [json.loads((tmp_path / f"run{i}.json").read_text()) for i in range(6)]
    assert {s[0] for s in spans} == set(devices) and all(s[1] == 1 for s in spans)
    for device in devices:  # at no moment more than per_device runs on one device
        on = [s for s in spans if s[0] == device]
        most = max(sum(o[2] <= s[2] < o[3] for o in on) for s in on)
        assert most <= per_device
    assert logs[0] == f"6 runs to train, {2 * per_device} at a time on cuda:0, cuda:1"
