"""nnrnn.kernels.policy and nnrnn.kernels.tuning: one object per device and dtype makes every kernel decision, the
environment overrides it, the shape-dependent ones are timed where they run (here with a fake timer, so that
the answers are the test's), and the timings cache is used only for this CPU and torch, never a reason to fail."""
import dataclasses
import json
import os

import pytest
import torch

from nnrnn.kernels import extension, onednn
from nnrnn.kernels import policy as kernel_policy
from nnrnn.kernels import tuning as kernel_tuning
from nnrnn.kernels.candidates import Scanned
from nnrnn.kernels.operations import choose_loops, choose_scan, matmul
from nnrnn.kernels.settings import ATEN, COMPILED, ONEDNN, TORCH


def needs_onednn():
    if onednn.kernel() is None:
        pytest.skip("this torch build has no oneDNN linear kernel")


def needs_compiled_loops():
    if extension.recurrence_loops() is None:
        pytest.skip("no compiled recurrence loops here")


class FakeTimer:
    """kernel_tuning.timer that says each candidate took ``times[name]`` seconds (after running it, as the real
    one does), and counts the calls."""

    def __init__(self, times: dict[str, float]):
        self.times, self.calls = times, []

    def __call__(self, name, call):
        call()
        self.calls.append(name)
        return self.times[name]


@pytest.fixture
def fake_timer(monkeypatch, tuning):
    def plant(times):
        # a fake timer's rounds are steady, and the machine counts as quiet: what the suite's other worker does
        # is not a busy minute for these tests (test_a_busy_machine_decides_nothing_and_caches_nothing makes one)
        monkeypatch.setattr(kernel_tuning, "cpu_seconds", lambda: None)
        timer = FakeTimer(times)
        monkeypatch.setattr(kernel_tuning, "timer", timer)
        return timer
    return plant


def no_timing(name, call):
    pytest.fail(f"{name} was timed, where the decision had to come from elsewhere")


# ----------------------------------------------------------------------------- measured, not assumed


def test_a_planted_wrong_threshold_is_corrected_by_measuring(monkeypatch, fake_timer):
    """The thresholds say torch.mm (the CPU is made to report AVX2: 'oneDNN only with AVX-512'), the timer says
    oneDNN takes half the time: the measured policy sends V's products to oneDNN, forward and backward, and
    the same planted threshold decides alone with NNRNN_TUNE=0."""
    needs_onednn()
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    timer = fake_timer({TORCH: 2e-3, ONEDNN: 1e-3})
    a = torch.randn(512, 512, requires_grad=True)
    out = matmul(a, a)
    assert type(out.grad_fn).__name__ == "MatMulBackward"  # oneDNN's product
    # at least the fewest rounds: the warm-up is timed by the real clock, which a busy machine slows
    assert set(timer.calls) == {TORCH, ONEDNN} and len(timer.calls) >= 2 * kernel_tuning.FEWEST_ROUNDS
    rows = {row[0]: row for row in kernel_policy.policy().describe()}
    assert rows["products M512 K512 N512"][1] == ONEDNN and "thresholds: torch" in rows["products M512 K512 N512"][2]
    monkeypatch.setenv("NNRNN_TUNE", "0")
    kernel_policy.reset()
    assert type(matmul(a, a).grad_fn).__name__ == "MmBackward0"


def test_a_planted_wrong_loop_threshold_is_corrected_by_measuring(monkeypatch, fake_timer):
    """At the copy task's size the thresholds say the compiled loops; a timer that finds the aten loops faster
    makes the recurrence run those, and its result still matches the reference."""
    needs_compiled_loops()
    fake_timer({COMPILED: 3e-3, ONEDNN: 2e-3, ATEN: 1e-3})
    h = torch.zeros(220, 10, 128)
    assert choose_loops(h, "modrelu") == ATEN
    monkeypatch.setattr(kernel_tuning, "timer", no_timing)  # decided once per bucket and process
    assert choose_loops(torch.zeros(50, 11, 120), "modrelu") == ATEN  # the same bucket (8, 128)
    monkeypatch.setenv("NNRNN_TUNE", "0")
    kernel_policy.reset()
    assert choose_loops(h, "modrelu") == COMPILED


def test_the_thresholds_choice_stays_unless_another_is_faster_by_the_margin(fake_timer, monkeypatch):
    needs_onednn()
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")  # thresholds: oneDNN at 512
    fake_timer({TORCH: 1e-3, ONEDNN: 1e-3 * (1 + kernel_tuning.MARGIN / 2)})  # torch faster, within the noise
    assert kernel_policy.policy().products(512, 512, 512)
    assert kernel_tuning.pick({"a": 1.0, "b": 1.2}, "b") == "a"
    assert kernel_tuning.pick({"a": 1.0, "b": 1.04}, "b") == "b"


def test_measuring_alternates_takes_medians_and_keeps_to_its_budget(monkeypatch):
    """Rounds alternate the order; at least MIN_ROUNDS, then stop once the budget is spent; the median counts
    (one slow outlier does not)."""
    now = [0.0]
    monkeypatch.setattr(kernel_tuning, "clock", lambda: now[0])
    order, durations = [], {"a": iter([1.0, 1.0, 9.0, 1.0] * 3), "b": iter([2.0] * 12)}

    def timer(name, call):
        order.append(name)
        seconds = next(durations[name])
        now[0] += seconds
        return seconds
    monkeypatch.setattr(kernel_tuning, "timer", timer)
    times = kernel_tuning.measure({"a": lambda: None, "b": lambda: None}, budget=5.0)
    assert order[:4] == ["a", "b", "b", "a"]
    assert len(order) == 2 * kernel_tuning.MIN_ROUNDS  # 3 rounds took 14 s > 5 s
    assert times.medians() == {"a": 1.0, "b": 2.0}


def test_measuring_leaves_the_global_random_state_alone(tuning):
    """A run that measures draws the same random numbers as one that found its choices cached (the check for
    oneDNN's kernel, made on first use, included)."""
    onednn.kernel.cache_clear()
    before = torch.get_rng_state()
    kernel_policy.policy().products(256, 256, 256)
    kernel_policy.policy().loops(4, 64, "relu")
    assert torch.equal(before, torch.get_rng_state())
    assert kernel_policy.policy().decisions  # something was measured


def test_a_measured_decision_at_the_copy_size_takes_well_under_a_second(tuning):
    import time
    needs_compiled_loops()
    start = time.perf_counter()
    kernel_policy.policy().loops(10, 128, "modrelu")
    assert time.perf_counter() - start < 2.0  # the budget is 0.25 s; the rest is a busy machine's margin


# ----------------------------------------------------------------------------- the cache


def test_a_second_process_reads_the_cache_and_times_nothing(fake_timer, monkeypatch, tuning):
    needs_onednn()
    fake_timer({TORCH: 1e-3, ONEDNN: 2e-3})
    assert not kernel_policy.policy().products(512, 512, 512)
    saved = json.loads(tuning.read_text())
    (key, entry), = saved["entries"].items()
    assert saved["format"] == "nnrnn-kernel-timings" and "products M512 K512 N512" in key
    assert torch.__version__ in key and kernel_tuning.cpu() in key and "cpu/float32" in key
    assert entry == {"choice": TORCH, "times_ms": {TORCH: 1.0, ONEDNN: 2.0}, "date": kernel_tuning.today().isoformat()}
    kernel_policy.reset()  # as a new process
    monkeypatch.setattr(kernel_tuning, "timer", no_timing)
    assert not kernel_policy.policy().products(512, 512, 512)
    assert "measured on this CPU before" in dict((r[0], r[2]) for r in kernel_policy.policy().describe())[
        "products M512 K512 N512"]


@pytest.mark.parametrize("other", ["host", "torch"])
def test_an_entry_from_another_host_or_torch_version_is_not_used(other, fake_timer, monkeypatch, tuning):
    needs_onednn()
    if other == "host":
        monkeypatch.setattr(kernel_tuning, "cpu", lambda: "Intel Xeon (GenuineIntel family 6 model 143), 2 cores")
    else:
        monkeypatch.setattr(torch, "__version__", "2.99.0+cpu")
    fake_timer({TORCH: 1e-3, ONEDNN: 2e-3})
    assert not kernel_policy.policy().products(512, 512, 512)  # measured there: torch
    monkeypatch.undo()
    kernel_policy.reset()
    monkeypatch.setenv("NNRNN_TUNE", "1")
    monkeypatch.setattr(kernel_tuning, "cache_path", lambda: tuning)
    timer = fake_timer({TORCH: 2e-3, ONEDNN: 1e-3})
    assert kernel_policy.policy().products(512, 512, 512)  # measured again here: oneDNN
    assert timer.calls
    assert len(json.loads(tuning.read_text())["entries"]) == 2  # both hosts' entries kept


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00", b"[1, 2]",
                                     b'{"format": "nnrnn-kernel-timings", "version": 1, "entries": {"k": 3}}'])
def test_a_corrupt_cache_is_ignored_and_replaced(content, fake_timer, tuning):
    needs_onednn()
    tuning.parent.mkdir(parents=True)
    tuning.write_bytes(content)
    timer = fake_timer({TORCH: 2e-3, ONEDNN: 1e-3})
    assert kernel_policy.policy().products(512, 512, 512)
    assert timer.calls
    assert len(json.loads(tuning.read_text())["entries"]) >= 1


def test_an_entry_that_does_not_fit_the_candidates_is_measured_again(fake_timer, tuning, monkeypatch):
    needs_onednn()
    fake_timer({TORCH: 2e-3, ONEDNN: 1e-3})
    kernel_policy.policy().products(512, 512, 512)
    saved = json.loads(tuning.read_text())
    for entry in saved["entries"].values():
        entry["choice"] = "a kernel this nnrnn does not have"
    tuning.write_text(json.dumps(saved))
    kernel_policy.reset()
    timer = fake_timer({TORCH: 2e-3, ONEDNN: 1e-3})
    assert kernel_policy.policy().products(512, 512, 512) and timer.calls


@pytest.mark.parametrize("how", ["read-only folder", "a file where the folder should be"])
def test_a_cache_that_cannot_be_written_is_no_reason_to_fail(how, fake_timer, monkeypatch, tuning, capsys):
    needs_onednn()
    if how == "read-only folder":
        tuning.parent.mkdir(parents=True)
        tuning.parent.chmod(0o555)
        if os.access(tuning.parent, os.W_OK):  # root writes anyway: then make the write fail as it would
            def refused(*args, **kwargs):
                raise PermissionError(13, "Permission denied")
            monkeypatch.setattr(kernel_tuning.tempfile, "mkstemp", refused)
    else:
        tuning.parent.parent.mkdir(parents=True)
        tuning.parent.write_text("")
    try:
        fake_timer({TORCH: 2e-3, ONEDNN: 1e-3})
        assert kernel_policy.policy().products(512, 512, 512)  # measured and used all the same
        assert kernel_tuning.write_error() and str(tuning.parent) in kernel_tuning.write_error()
        assert not tuning.is_file()
        monkeypatch.setattr(kernel_tuning, "timer", no_timing)
        assert kernel_policy.policy().products(512, 512, 512)  # remembered in the process
        from nnrnn.kernels import report as kernel_report
        assert "cannot be written" in "\n".join(kernel_report.lines())
    finally:
        if tuning.parent.is_dir():
            tuning.parent.chmod(0o755)


# ----------------------------------------------------------------------------- overrides, records, description


def test_the_environment_overrides_the_measured_policy(monkeypatch, tuning):
    needs_onednn()
    monkeypatch.setattr(kernel_tuning, "timer", no_timing)
    monkeypatch.setenv("NNRNN_ONEDNN", "0")
    kernel_policy.reset()
    assert not kernel_policy.policy().products(512, 512, 512)
    assert ONEDNN not in kernel_policy.policy().loop_candidates()
    monkeypatch.setenv("NNRNN_ONEDNN", "1")  # the thresholds as on an AVX-512 CPU, not timed
    kernel_policy.reset()
    assert kernel_policy.policy().products(512, 512, 512) and not kernel_policy.policy().products(128, 128, 128)
    monkeypatch.delenv("NNRNN_ONEDNN")
    monkeypatch.setenv("NNRNN_LOOPS", "aten")
    monkeypatch.setenv("NNRNN_EXPM_PLAN", "fixed")
    monkeypatch.setenv("NNRNN_GIVENS_CHUNKS", "3")
    kernel_policy.reset()
    policy = kernel_policy.policy()
    assert policy.loops(10, 128) == ATEN and policy.fixed_exponential_plan() and policy.givens_chunks(64) == 3
    assert policy.givens_chunks(2) == 2


@pytest.mark.parametrize("name, value", [("NNRNN_LOOPS", "fast"), ("NNRNN_EXPM_PLAN", "auto"),
                                         ("NNRNN_GIVENS_CHUNKS", "0"), ("NNRNN_GIVENS_CHUNKS", "two")])
def test_a_bad_setting_is_a_value_error_naming_the_variable(name, value, monkeypatch, capsys):
    monkeypatch.setenv(name, value)
    kernel_policy.reset()
    with pytest.raises(ValueError, match=f"{name} must be"):
        kernel_policy.policy()
    from nnrnn_cli import command as cli
    kernel_policy.reset()
    assert cli.main(["kernels"]) == 2  # one line, no traceback
    assert capsys.readouterr().err.strip().splitlines() == [f"nnrnn: error: {name} must be " +
                                                            capsys_tail(name, value)]


def capsys_tail(name, value):
    expected = "a whole number of at least 1" if name == "NNRNN_GIVENS_CHUNKS" else "one of " + {
        "NNRNN_LOOPS": "compiled, onednn, aten", "NNRNN_EXPM_PLAN": "fixed, read"}[name]
    return f"{expected}, not {value!r}"


def test_devices_other_than_the_cpu_get_their_rules_untimed(monkeypatch, tuning):
    monkeypatch.setattr(kernel_tuning, "timer", no_timing)
    gpu = kernel_policy.policy("meta", torch.float32)  # stands for a GPU: any device but the CPU
    assert gpu.loops(128, 512) == ATEN and gpu.fixed_exponential_plan() and gpu.givens_chunks(64) == 8
    assert not gpu.capture()  # graphs need CUDA
    assert kernel_policy.policy("cuda", torch.float32).capture()
    cpu64 = kernel_policy.policy("cpu", torch.float64)
    assert cpu64.loops(128, 512) == ATEN and not cpu64.products(512, 512, 512)
    assert not cpu64.fixed_exponential_plan() and cpu64.givens_chunks(64) == 1


def test_a_record_pins_the_choices_of_a_run(fake_timer, monkeypatch):
    """What a run recorded is what a resumed run or an evaluation uses, whatever this process would measure."""
    needs_onednn()
    fake_timer({TORCH: 2e-3, ONEDNN: 1e-3})
    kernel_policy.policy().products(512, 512, 512)
    kernel_policy.policy().fixed_exponential_plan()
    record = kernel_policy.record()
    assert record == {"cpu/float32": {"products M512 K512 N512": ONEDNN, "exponential plan": "read"}}
    kernel_policy.reset()
    fake_timer({TORCH: 1e-3, ONEDNN: 2e-3})  # this process would now choose torch
    kernel_policy.pin(json.loads(json.dumps(record)))
    monkeypatch.setattr(kernel_tuning, "timer", no_timing)
    assert kernel_policy.policy().products(512, 512, 512)
    assert "recorded by the run" in dict((r[0], r[2]) for r in kernel_policy.policy().describe())[
        "products M512 K512 N512"]
    monkeypatch.setenv("NNRNN_EXPM_PLAN", "fixed")  # the environment beats a record
    monkeypatch.setenv("NNRNN_ONEDNN", "0")
    kernel_policy.reset()
    kernel_policy.pin(record)
    assert kernel_policy.policy().fixed_exponential_plan() and not kernel_policy.policy().products(512, 512, 512)
    kernel_policy.pin(None)  # a run saved before runs recorded: nothing pinned
    kernel_policy.pin({"tpu/float99": {"x": "y"}})  # a record from elsewhere: ignored


def test_describe_names_every_decision_with_a_reason():
    rows = kernel_policy.policy().describe()
    names = [row[0] for row in rows]
    assert names[:8] == ["recurrence loops", "N × N products", "input projections", "scan or loop over time",
                         "exponential plan", "Givens product", "CUDA-graph capture", "cell loops"]
    assert all(choice and reason for _, choice, reason in rows)
    assert "NNRNN_TUNE=0" in rows[1][2]  # how the suite runs


def test_slow_candidates_get_the_fewest_rounds(monkeypatch):
    """A warm-up that says five rounds would take more than twice the budget: three rounds, then stop."""
    now = [0.0]
    monkeypatch.setattr(kernel_tuning, "clock", lambda: now[0])

    def slow():
        now[0] += 1.0

    def timer(name, call):
        call()
        return 1.0
    monkeypatch.setattr(kernel_tuning, "timer", timer)
    calls = []
    kernel_tuning.measure({"a": lambda: calls.append("a") or slow(), "b": lambda: calls.append("b") or slow()},
                          budget=1.0)
    assert len(calls) == 2 + 2 * kernel_tuning.FEWEST_ROUNDS  # the warm-up, then 3 rounds


# ----------------------------------------------------------------------------- a busy minute decides nothing


def busy_processes(count: int) -> list:
    """``count`` processes that keep a core each busy until killed."""
    import subprocess
    import sys
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


@pytest.mark.subprocess
def test_a_busy_machine_decides_nothing_and_caches_nothing(tuning):
    """Other processes take the cores while a decision is timed (real timer, real /proc/stat): the thresholds'
    choice stands for this process and nothing is written, so no worse choice is kept and a later, quiet process
    times again."""
    needs_compiled_loops()
    import time
    if kernel_tuning.cpu_seconds() is None:
        pytest.skip("no /proc/stat: the machine's load cannot be read here")
    threshold = kernel_policy.KernelPolicy("cpu", torch.float32, dataclasses.replace(
        kernel_policy.kernel_settings.current(), tune=False)).loops(10, 128, "modrelu")
    competitors = busy_processes(os.cpu_count() or 1)
    try:
        time.sleep(0.2)  # the competitors are running
        choice = kernel_policy.policy().loops(10, 128, "modrelu")
    finally:
        for process in competitors:
            process.kill()
            process.wait()
    made = kernel_policy.policy().decisions["loops modrelu B8 N128"]
    assert choice == threshold and "not trusted: the machine was busy" in made.reason, made.reason
    assert not tuning.exists() or json.loads(tuning.read_text())["entries"] == {}


def test_rounds_that_spread_decide_nothing(monkeypatch, tuning):
    """A quiet machine whose comparison still flips between rounds (a frequency change, an interrupt storm): the
    same; a slowdown common to a whole round is not a spread (test_a_round_that_slows_alike_is_no_spread)."""
    needs_onednn()
    monkeypatch.setattr(kernel_tuning, "cpu_seconds", lambda: None)
    # which is faster flips from round to round (a common slowdown of a whole round would cancel: not this)
    rounds = {TORCH: iter([1e-3, 3e-3] * 10), ONEDNN: iter([2e-3, 0.5e-3] * 10)}
    monkeypatch.setattr(kernel_tuning, "timer", lambda name, call: next(rounds[name]))
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")  # the thresholds say torch
    assert not kernel_policy.policy().products(512, 512, 512)  # the medians say oneDNN, the spread says wait
    made = kernel_policy.policy().decisions["products M512 K512 N512"]
    assert "not trusted: the rounds spread" in made.reason and not tuning.exists()


def test_the_load_reading_counts_only_the_other_processes(monkeypatch):
    """Cores used by others = (the machine's busy CPU seconds − this process's) / wall seconds."""
    readings = iter([(100.0, 10.0), (101.5, 10.5)])  # the machine: 1.5 s busy, of which this process 0.5 s
    monkeypatch.setattr(kernel_tuning, "cpu_seconds", lambda: next(readings))
    timing = kernel_tuning.measure({"a": lambda: None}, budget=0.0)
    assert timing.others is not None
    busy = kernel_tuning.Timing({"a": [1.0] * 5}, others=(os.cpu_count() or 1) - 0.5)
    quiet = kernel_tuning.Timing({"a": [1.0] * 5}, others=0.0)
    assert kernel_tuning.trusted(busy, threads=1).startswith("the machine was busy")
    assert kernel_tuning.trusted(quiet, threads=1) == ""


@pytest.mark.parametrize("date", [None, "2001-01-01", "not a date"])
def test_an_entry_without_a_date_or_too_old_is_timed_again(date, fake_timer, monkeypatch, tuning):
    """Entries of the first format (no date) and entries older than MAX_AGE_DAYS heal themselves: timed again
    and written back with today's date; a fresh one is used as it is."""
    needs_onednn()
    fake_timer({TORCH: 2e-3, ONEDNN: 1e-3})
    kernel_policy.policy().products(512, 512, 512)
    saved = json.loads(tuning.read_text())
    (key, entry), = saved["entries"].items()
    entry.pop("date")
    if date is not None:
        entry["date"] = date
    entry["choice"], entry["times_ms"] = TORCH, {TORCH: 1.0, ONEDNN: 2.0}  # what the old entry said
    tuning.write_text(json.dumps(saved))
    kernel_policy.reset()
    timer = fake_timer({TORCH: 2e-3, ONEDNN: 1e-3})
    assert kernel_policy.policy().products(512, 512, 512) and timer.calls  # timed again: oneDNN
    assert json.loads(tuning.read_text())["entries"][key]["date"] == kernel_tuning.today().isoformat()
    kernel_policy.reset()
    monkeypatch.setattr(kernel_tuning, "timer", no_timing)
    assert kernel_policy.policy().products(512, 512, 512)  # today's entry is used


def test_retune_times_every_cached_decision_again_and_says_what_changed(fake_timer, monkeypatch, tuning, capsys):
    """``nnrnn kernels --retune``: each entry of this host timed again; one whose answer moved says so and is
    rewritten, one that did not says "same"; entries of other hosts are left alone."""
    needs_onednn()
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")  # the thresholds say torch
    fake_timer({TORCH: 1e-3, ONEDNN: 2e-3})
    kernel_policy.policy().products(512, 512, 512)
    kernel_policy.policy().projections(4096, 1, 128, True)
    saved = json.loads(tuning.read_text())
    saved["entries"]["another host | products M8 K8 N8"] = {"choice": TORCH, "times_ms": {TORCH: 1.0}}
    tuning.write_text(json.dumps(saved))
    kernel_policy.reset()
    fake_timer({TORCH: 3e-3, ONEDNN: 1e-3})  # oneDNN is now clearly faster at both
    from nnrnn.kernels import report as kernel_report
    rows = {line.split(" | ")[0].strip("| "): line for line in kernel_report.retune()[2:]}
    assert set(rows) == {"products M512 K512 N512", "projections R4096 K1 M128"}
    assert all("| torch (" in line and "| onednn |" in line and "changed" in line for line in rows.values())
    entries = json.loads(tuning.read_text())["entries"]
    assert sum(e["choice"] == ONEDNN for e in entries.values()) == 2 and len(entries) == 3
    from nnrnn_cli import command as cli
    assert cli.main(["kernels", "--retune"]) == 0
    assert "cached decisions, timed again" in capsys.readouterr().out


def test_a_round_that_slows_alike_is_no_spread():
    """Rounds slowed alike (a neighbour's burst) leave the comparison steady: trusted; the same times with the
    comparison flipping are not."""
    steady = kernel_tuning.Timing({"a": [1.0, 3.0, 1.0, 3.0, 1.0], "b": [2.0, 6.0, 2.0, 6.0, 2.0]}, others=0.0)
    flipping = kernel_tuning.Timing({"a": [1.0, 3.0, 1.0, 3.0, 1.0], "b": [2.0, 1.5, 2.0, 1.5, 2.0]}, others=0.0)
    assert steady.spread() == 0.0 and kernel_tuning.trusted(steady, threads=1) == ""
    assert kernel_tuning.trusted(flipping, threads=1).startswith("the rounds spread")


# ----------------------------------------------------------------------------- a model's scan or its loop


def toy_scanned(ran: list) -> Scanned:
    """A recurrence described as a model describes its own (the kernels import no model): x_t = 0.5 x_{t−1} + b_t,
    its two runs counting their calls; the fixed rule: the scan at and below batch × width = 64."""
    def loop(b):
        ran.append("loop")
        return torch.stack(list(torch.cumsum(b, 0)))

    def scan(b):
        ran.append("scan")
        return torch.cumsum(b, 0)
    return Scanned("toy", 64, {"scan": scan, "loop": loop},
                   lambda g, steps, batch, width: (torch.randn(steps, batch, width, generator=g),))


def test_a_scan_or_its_loop_is_timed_cached_and_ruled_as_the_other_decisions(fake_timer, monkeypatch, tuning):
    """The fixed rule says the scan at batch 2 × width 8; a timer that finds the loop faster makes the policy say
    the loop, for the bucket (T, B, width, kind), cached for the next process; NNRNN_TUNE=0 keeps the fixed rule,
    and off the CPU the scan is taken untimed."""
    ran = []
    toy = toy_scanned(ran)
    timer = fake_timer({"scan": 2e-3, "loop": 1e-3})
    x = torch.zeros(30, 2, 1)
    assert not choose_scan(x, 8, toy)
    assert set(timer.calls) == {"scan", "loop"} and {"scan", "loop"} <= set(ran)
    made = kernel_policy.policy().decisions["scan toy T32 B2 W8"]
    assert made.choice == "loop" and "thresholds: scan" in made.reason
    assert kernel_policy.record() == {"cpu/float32": {"scan toy T32 B2 W8": "loop"}}  # a run records it
    (key, entry), = json.loads(tuning.read_text())["entries"].items()
    assert key.endswith("cpu/float32 | scan toy T32 B2 W8") and entry["times_ms"] == {"scan": 2.0, "loop": 1.0}
    kernel_policy.reset()  # as a new process: the cache answers
    monkeypatch.setattr(kernel_tuning, "timer", no_timing)
    assert not choose_scan(torch.zeros(33, 2, 1), 8, toy)
    assert not choose_scan(torch.zeros(33, 2, 1), 8, Scanned("toy", 64))  # the cached choice, whatever describes it
    assert choose_scan(torch.zeros(33, 2, 1), 8, Scanned("other", 64))  # another kind: its own fixed rule, untimed
    assert not choose_scan(torch.zeros(33, 9, 1), 8, Scanned("other", 64))  # 72 > 64
    assert choose_scan(torch.zeros(33, 64, 1, device="meta"), 8, toy)  # off the CPU: the scan
    assert choose_scan(torch.zeros(33, 2, 1, dtype=torch.float64), 8, toy)  # only float32 is timed
    monkeypatch.setenv("NNRNN_TUNE", "0")
    kernel_policy.reset()
    assert choose_scan(x, 8, toy) and not choose_scan(torch.zeros(30, 9, 1), 8, toy)
    assert kernel_policy.record() == {}  # the fixed rule, exact for each shape: nothing for a run to pin


def test_a_busy_timing_of_a_scan_decides_nothing_and_retune_times_it_again(fake_timer, monkeypatch, tuning):
    """The busy-machine guard holds for scans (the fixed rule stands, nothing is cached); ``--retune`` times a cached
    scan decision again by the description the caller passes, and leaves it out without one."""
    toy = toy_scanned([])
    fake_timer({"scan": 2e-3, "loop": 1e-3})
    monkeypatch.setattr(kernel_tuning, "cpu_seconds", iter([(0.0, 0.0), (1e6, 0.0)]).__next__)  # others: all cores
    assert choose_scan(torch.zeros(16, 2, 1), 8, toy)  # the fixed rule's scan
    assert kernel_policy.policy().decisions["scan toy T16 B2 W8"].untrusted and not tuning.exists()
    kernel_policy.reset()
    fake_timer({"scan": 2e-3, "loop": 1e-3})
    assert not choose_scan(torch.zeros(16, 2, 1), 8, toy)
    kernel_policy.reset()
    fake_timer({"scan": 1e-3, "loop": 3e-3})  # now the scan is clearly faster
    from nnrnn.kernels import report as kernel_report
    assert kernel_report.retune()[0].startswith("the timings cache holds no decision")  # no description: skipped
    rows = kernel_report.retune((toy,))[2:]
    assert len(rows) == 1 and rows[0].startswith("| scan toy T16 B2 W8 | loop (") and "| scan |" in rows[0]
    assert "changed" in rows[0]
    assert next(iter(json.loads(tuning.read_text())["entries"].values()))["choice"] == "scan"
