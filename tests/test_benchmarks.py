"""Every script in benchmarks/ runs, at a tiny size, so that none can rot unnoticed (speed_floor.py once failed
with a TypeError for weeks).  They run one after another in one other process (one thread, each as
``python benchmarks/X.py ARGS`` would run it: runpy with its own sys.argv), which saves seven starts of torch;
what each prints is checked only for the line that says it got to its table."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TINY = "5x2x8x1"
SMOKE = {  # script: (arguments at a tiny size, a line its output must hold)
    "training_update.py": (["--sizes", TINY, "--repeats", "1", "--budget", "0", "--no-memory", "--only", "nnrnn",
                            "--roofline-n", "64"], "nnrnn"),
    "speed_floor.py": (["--sizes", TINY, "--repeats", "1", "--roofline-n", "64"], "update / floor"),
    "recurrence_loops.py": (["--size", "5x2x8", "--repeats", "1", "--roofline-n", "64"], "chosen:"),
    "kernel_policy.py": (["--sizes", TINY, "--rounds", "1", "--repeats", "1"], "measured / thresholds"),
    "stepping.py": (["--hidden", "8", "--input", "2", "--steps", "20", "--rounds", "1"], "nnrnn"),
    "compile_speed.py": (["--size", "3x2x4x1", "--rounds", "1", "--only", "rnn", "--backend", "eager"],
                         "compiled / eager"),
    "compile_profile.py": (["--size", "3x2x4x1", "--updates", "1", "--rows", "3", "--backend", "eager"],
                           "compiled / eager self CPU time"),
    "copy_task.py": (["--steps", "2", "--T", "3", "--models", "rnn"], "x baseline"),
    "scan_speed.py": (["--steps", "5", "--batch", "2", "--hidden", "4", "--repeats", "1"], "loop/scan"),
    "nnlru_speed.py": (["--steps", "5", "--batch", "2", "--hidden", "4", "--repeats", "1"], "/ nnlru"),
    "defaults_learn.py": (["--tasks", "copy", "--small", "--steps", "2"], "best valid loss"),
    "threads.py": (["--rounds", "1"], "an update with 2 threads takes"),
    "import_time.py": (["--rounds", "1"], "nnrnn beyond torch"),
    "composition.py": (["--sizes", "8", "--norms", "1", "--repeats", "1"], "products, programs"),
    "state_noise.py": (["--steps", "5", "--batch", "2", "--hidden", "4", "--rounds", "2"], "noisy / quiet"),
}


def test_every_benchmark_has_a_smoke_run():
    assert sorted(SMOKE) == sorted(p.name for p in (REPO / "benchmarks").glob("*.py"))


DRIVER = """
import contextlib, io, json, runpy, sys, traceback
results = {}
for script, arguments in json.loads(sys.argv[1]).items():
    sys.argv = [script, *arguments]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(script, run_name="__main__")
        results[script] = {"ok": True, "out": out.getvalue()}
    except BaseException:
        results[script] = {"ok": False, "out": out.getvalue() + traceback.format_exc()}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("benchmarks")
    scripts = {str(REPO / "benchmarks" / name): arguments + (["--out", str(folder / "runs")]
                                                          if name in ("copy_task.py", "defaults_learn.py") else [])
               for name, (arguments, _) in SMOKE.items()}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "benchmarks")]),
           "OMP_NUM_THREADS": "1", "XDG_CACHE_HOME": str(folder / "cache"), "NNRNN_EXTENSIONS_DIR": _extensions_dir()}
    result = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(scripts)], capture_output=True, text=True,
                            env=env, cwd=folder, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return {Path(script).name: outcome for script, outcome in json.loads(result.stdout.splitlines()[-1]).items()}


@pytest.mark.subprocess
@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_benchmark_runs_at_a_tiny_size(script, smoke_runs):
    outcome = smoke_runs[script]
    assert outcome["ok"], outcome["out"][-3000:]
    assert SMOKE[script][1] in outcome["out"], outcome["out"][-3000:]


def _extensions_dir() -> str:
    """The compiled loops' cache this process uses, so that the scripts find them built (not the timings cache,
    which the runs keep in a folder of their own)."""
    from nnrnn import environment
    return str(environment.extensions_dir())


@pytest.mark.subprocess
@pytest.mark.parametrize("script", ["training_update.py", "stepping.py"])
def test_make_bench_names_the_host_and_the_instruction_set_beside_its_ratios(script, smoke_runs):
    import torch
    from nnrnn.kernels.host import describe_cpu
    host = f"host: {describe_cpu()}, {torch.backends.cpu.get_cpu_capability()}"
    assert host in smoke_runs[script]["out"], smoke_runs[script]["out"][-3000:]
