"""The command line: one-line errors with exit code 2, help, presets, train, eval and runs."""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import SHARED

from nnrnn.training import runfolder
from nnrnn.training.runlog import read_metrics

REPO = Path(__file__).resolve().parents[1]


def nnrnn(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("NNRNN_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "nnrnn_cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


@pytest.mark.parametrize("args, needle", [
    (["train", "mnist"], "psmnist"),
    (["train", "copy", "--model", "rwkv"], "nnrnn"),
    (["train", "copy", "--preset", "fast"], "paper-params"),
    (["train", "copy", "--hidden", "0"], "hidden"),
    (["train", "copy", "--lr", "-0.1"], "lr"),
    (["train", "copy", "--steps", "0"], "steps"),
    (["train", "copy", "--hidden", "ten"], "--hidden"),
    (["train", "psmnist", "--data-dir", "/nonexistent/mnist"], "nnrnn data fetch"),
    (["eval", "/nonexistent/run"], "no run folder or checkpoint"),
    (["frobnicate"], "invalid choice"),
    (["theory"], "{table3,figure1,prop1,prop2}"),  # the subcommands, not argparse's dest "theory_command"
])
def test_user_errors_are_one_line_exit_2(args, needle, tmp_path, monkeypatch, capsys):
    # in this process: nnrnn's own process adds nothing to these (the test below runs two in one of its own)
    from nnrnn_cli.command import main
    monkeypatch.delenv("NNRNN_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)  # a default --out (runs/TASK-MODEL) lands there, not in the checkout
    code, err = main(args), capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert needle in lines[0]


@pytest.mark.subprocess
@pytest.mark.parametrize("args, needle", [(["frobnicate"], "invalid choice"),  # argparse's, before torch
                                          (["train", "copy", "--hidden", "0"], "hidden")])  # nnrnn's, after
def test_user_errors_of_the_command_in_its_own_process_are_one_line_exit_2(args, needle, tmp_path):
    result = nnrnn(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert needle in lines[0]


def table_rows(output: str, header_start: str) -> list[dict]:
    """The rows of the aligned tables in ``output`` whose header starts with ``header_start``, as dicts."""
    rows, header = [], None
    for line in output.splitlines():
        cells = line.split()
        if cells[:1] == [header_start]:
            header = cells
        elif header and len(cells) == len(header):
            rows.append(dict(zip(header, cells)))
        else:
            header = None
    return rows


def test_presets_lists_every_preset_as_aligned_tables(capsys):
    from nnrnn import presets
    from nnrnn_cli.command import main
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert all(f"{name}: " in out for name in presets.preset_names()) and "ptb-300" in out
    assert "copy, every model: batch_size=10 T=200" in out
    rows = table_rows(out, "model")
    nnrnn_copy = next(r for r in rows if r["model"] == "nnrnn" and r["lr_orth"] == "1e-06")  # supplementary Table 4
    assert nnrnn_copy["delta"] == "0.0001" and nnrnn_copy["init"] == "henaff"
    # the beyond grid's delay-initialised nnRNN is a variant, not a model: the listing says how to train it
    assert "    nnrnn delay*  " in out
    assert "*: a variant, not a model: --model nnrnn with the options of its row" in out and "delay:0.02" in out
    numbers = [cell for line in out.splitlines() for cell in line.split() if cell[:1].isdigit()]
    assert numbers and all(len(cell.replace(".", "").replace("e-0", "").lstrip("0")) <= 5 for cell in numbers
                           if "=" not in cell), "floats to 4 significant digits"
    assert max(len(line) for line in out.splitlines()) <= 130


def test_presets_filtered_by_task_and_model(capsys):
    from nnrnn_cli.command import main
    assert main(["presets", "paper", "--task", "ptb", "--model", "lstm"]) == 0
    out = capsys.readouterr().out
    assert "ptb-150, every model" in out and "ptb-300, every model" in out and "copy" not in out
    assert {r["model"] for r in table_rows(out, "model")} == {"lstm"}
    assert main(["presets", "paper", "--task", "adding"]) == 2
    assert "no preset has settings for adding" in capsys.readouterr().err


@pytest.mark.subprocess
def test_kernels_says_which_loops_run_and_why_not(monkeypatch, capsys):
    """A fresh process says which loops run; with NNRNN_CPP=0 it says why not (this process, reading the
    environment again and loading no loops yet, answers as a fresh one would: a second start is most of its time)."""
    from nnrnn.kernels import extension
    from nnrnn.kernels import policy as kernel_policy
    from nnrnn_cli.command import main
    result = nnrnn("kernels")
    assert result.returncode == 0, result.stderr
    assert "compiled recurrence loops:" in result.stdout and "oneDNN products:" in result.stdout
    monkeypatch.setenv("NNRNN_CPP", "0")
    monkeypatch.setattr(extension, "_loops", {})  # the loops as a fresh process has them: not looked for yet
    kernel_policy.reset()
    assert main(["kernels"]) == 0
    assert "compiled recurrence loops: no, Python loops instead (NNRNN_CPP=0)" in capsys.readouterr().out


def _exec_done(pid: int) -> bool:
    """Whether process ``pid`` runs nnrnn's command yet (its /proc cmdline, where there is one)."""
    try:
        return b"nnrnn_cli" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no /proc (not Linux), or the process has gone
        return True


@pytest.mark.subprocess
@pytest.mark.parametrize("delay", [0.1, 0.3, 0.5])
def test_ctrl_c_during_start_up_is_one_line_and_exit_130(delay):
    """SIGINT while `nnrnn` is still starting (importing torch, building the parser): no traceback."""
    import signal
    import time
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("NNRNN_DEBUG", None)
    # started as from a terminal, SIGINT at its default: a process inherits an ignored SIGINT across exec (a
    # pytest-xdist worker may ignore it), and Python then leaves it ignored, so an early Ctrl-C was lost (exit 0)
    process = subprocess.Popen([sys.executable, "-m", "nnrnn_cli", "kernels"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # a signal that lands between the fork and the exec is taken by the forked copy of this process's handler and
    # lost with it (on a loaded machine 0.1 s may not reach the exec): count the delay from the exec on
    deadline = time.monotonic() + 30
    while not _exec_done(process.pid) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(delay)
    if process.poll() is not None:
        process.communicate()
        pytest.skip(f"nnrnn kernels finished within {delay} s, before the signal")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (process.returncode, err)
    assert err == "nnrnn: interrupted\n", err


@pytest.mark.parametrize("value, raises", [("0", False), ("false", False), ("off", False), ("no", False),
                                           ("", False), ("1", True), ("yes", True)])
def test_nnrnn_debug_0_reads_as_off(monkeypatch, capsys, value, raises):
    from nnrnn_cli import command as cli
    from nnrnn.errors import UserError
    monkeypatch.setenv("NNRNN_DEBUG", value)
    if raises:
        with pytest.raises(UserError, match="unknown preset 'fast'"):
            cli.main(["presets", "fast"])
    else:
        assert cli.main(["presets", "fast"]) == 2
        assert capsys.readouterr().err == ("nnrnn: error: unknown preset 'fast'; choose one of paper, paper-params, "
                                           "beyond, long-memory, long-memory-5000, long-memory-smnist\n")


@pytest.mark.subprocess
def test_import_nnrnn_imports_torch_and_offers_the_models():
    code = ("import sys, nnrnn; assert 'torch' in sys.modules; "
            "from nnrnn import create, MODELS; assert 'nnrnn' in MODELS and nnrnn.errors.UserError; "
            "assert 'parametrizations' in dir(nnrnn) and not hasattr(nnrnn, 'nonexistent'); print('ok')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert result.stdout.strip() == "ok", result.stderr


def subparsers(parser):
    """(command words, parser) of every command and subcommand below ``parser``, each parser's options added."""
    for action in parser.defined()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield [name], sub.defined()
                yield from (([name, *words], deeper) for words, deeper in subparsers(sub))


def test_every_option_of_every_command_has_help():
    from nnrnn_cli.command import make_parser
    commands = list(subparsers(make_parser()))
    assert {" ".join(words) for words, _ in commands} >= {"train", "eval", "runs", "presets", "reproduce", "doctor",
                                                          "data fetch", "sweep", "theory prop1", "analyze"}
    actions = [(words, action) for words, parser in commands for action in parser._actions]
    actions += [(words, choice) for words, action in actions if isinstance(action, argparse._SubParsersAction)
                for choice in action._choices_actions]  # each subcommand's line in its parent's help
    missing = [(" ".join(words), action.option_strings or action.dest) for words, action in actions
               if not action.help and not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))]
    assert missing == []


def test_help_shows_defaults_the_presets_and_what_a_plain_run_trains_with():
    from nnrnn import presets
    from nnrnn_cli.command import make_parser
    from nnrnn.training.config import DEFAULTS
    parsers = {" ".join(words): parser for words, parser in subparsers(make_parser())}
    train = parsers["train"].format_help()
    # the rate a plain run takes is the task's and model's (one rate for all made psMNIST diverge)
    assert "default: the task's and model's, the paper's rate (nnrnn: copy 0.0005, adding 0.0005, psmnist 0.0002, " \
        "ptb 0.0008;" in " ".join(train.split())
    for option in ("--hidden", "--seed", "--batch-size", "--max-bad-steps", "--steps", "--log-every"):
        assert option in train
    assert f"(default: {DEFAULTS['hidden']})" in train and f"(default: {DEFAULTS['max_bad_steps']})" in train
    assert all(name in " ".join(train.split()).replace("- ", "-") for name in presets.preset_names())
    assert "delta 0, t_decay 0 and an input bias" in " ".join(train.split())
    assert " ".join(train.split()).count("the task's and model's") == 3  # said once each: description, --lr, --lr-orth
    assert "(default: 100, as in the paper)" not in parsers["theory table3"].format_help()  # said once, not twice
    assert "the split to score (default: test)" in " ".join(parsers["eval"].format_help().split())
    scale = " ".join(parsers["reproduce"].format_help().split())
    assert "smoke:" in scale and "cpu-long:" in scale and "1 h 48 min" in scale and "(default: cpu)" in scale


def test_every_command_of_the_table_is_a_module_with_its_arguments_and_its_main_function():
    import importlib
    import importlib.metadata

    import nnrnn
    from nnrnn_cli import command as nnrnn_cli
    assert nnrnn_cli.version() == nnrnn.__version__ == importlib.metadata.version("nnrnn")  # pyproject.toml's
    listed = " ".join(nnrnn_cli.make_parser().format_help().split())
    for name, (module, text) in nnrnn_cli.COMMANDS.items():
        command = importlib.import_module(f"nnrnn.commands.{module}")
        assert callable(command.add_arguments) and callable(command.main), name
        assert f"{name} {text}" in listed, name  # the help line is the table's, said once


@pytest.mark.subprocess
def test_help_and_version_import_neither_torch_nor_numpy():
    code = ("import sys, nnrnn_cli.command\n"
            "parser = nnrnn_cli.command.make_parser(); parser.format_help()\n"
            "for words in (['--version'], ['--help']):\n"
            "    try:\n"
            "        parser.parse_args(words)\n"
            "    except SystemExit:\n"
            "        pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'numpy', 'scipy', 'matplotlib'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout + result.stderr


@pytest.mark.subprocess
def test_train_prints_a_line_per_validation_and_a_summary_then_eval_and_resume(tmp_path, monkeypatch, capsys):
    from nnrnn_cli.command import main

    def in_process(*args):  # the training's own process is the one that matters; eval and resume run here
        code = main([str(a) for a in args])
        return SimpleNamespace(returncode=code, **capsys.readouterr()._asdict())
    monkeypatch.delenv("NNRNN_DEBUG", raising=False)
    out = tmp_path / "run"
    result = nnrnn("train", "copy", "--hidden", "8", "--T", "5", "--steps", "4", "--eval-every", "2",
                   "--log-every", "1", "--no-progress", "--out", str(out))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "\r" not in result.stdout + result.stderr  # redirected: no progress bar's carriage returns
    validations = [line for line in lines if line.startswith("[nnrnn] update ")]
    assert [line.split()[2] for line in validations] == ["2/4", "4/4"]
    assert all(" | train loss " in line and " | valid loss " in line and " | best loss " in line and " | lr 0.0005"
               in line for line in validations)
    assert f"[nnrnn] run folder {out}:" in lines and any(line.strip().endswith("curves.png: training and "
                                                                              "validation curves") for line in lines)
    listed = {line.split()[1].rstrip(":/") for line in lines[lines.index(f"[nnrnn] run folder {out}:") + 1:]
              if line.startswith("[nnrnn]   ")}
    assert listed == {p.name for p in out.iterdir() if not p.name.startswith(".")}  # every file, once all written
    assert any(line.startswith("[nnrnn] test loss ") for line in lines)
    final = json.loads(lines[-1])  # the last line stays the result as JSON, for scripts
    evaluated = in_process("eval", out, "--json")
    assert evaluated.returncode == 0
    assert json.loads(evaluated.out) == final["test"]
    said = in_process("eval", out, "--split", "valid").out.splitlines()
    assert said[0].startswith(f"valid split, the best validation score's checkpoint {out / 'checkpoints' / 'best.pt'}")
    assert "(after update " in said[0] and said[1].startswith("loss ")
    import torch

    import nnrnn as library
    net = library.load_run(out)  # the run's network in Python: best.pt's weights, ready for inference
    best = torch.load(out / "checkpoints" / "best.pt", weights_only=True)["model"]
    assert isinstance(net.rnn, library.NonNormalRNN) and not net.training
    assert all(torch.equal(value, best[key]) for key, value in net.state_dict().items())
    more = in_process("train", "copy", "--out", out, "--resume", "--steps", "6", "--no-progress")
    assert more.returncode == 0, more.err
    assert f"[nnrnn] resuming {out} from update 4 of 6" in more.out
    again = in_process("train", "copy", "--hidden", "8", "--out", out)
    assert again.returncode == 2 and "--resume" in again.err
    changed = in_process("train", "copy", "--hidden", "16", "--out", out, "--resume")
    assert changed.returncode == 2 and "hidden" in changed.err


@pytest.mark.subprocess
def test_corrupt_checkpoint_is_one_line(tmp_path):
    bad = tmp_path / "x.pt"
    bad.write_bytes(b"\x00" * 100)
    result = nnrnn("eval", str(bad))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.subprocess
def test_analyze_a_run_folder(tmp_path, undrawn_figures):
    from nnrnn_cli.command import main
    # trained here, its curves not drawn (analyze reads the checkpoint and metrics); analyze (its figures' backend
    # chosen afresh, and drawn) in a process of its own
    out = tmp_path / "run"
    assert main(["train", "copy", "--hidden", "8", "--T", "5", "--steps", "4", "--log-every", "2",
                 "--no-progress", "--out", str(out)]) == 0
    result = nnrnn("analyze", str(out), "--no-gradients")
    assert result.returncode == 0, result.stderr
    for name in ("schur.png", "spectrum.png", "summary.json", "gradient_norm_training.png"):
        assert (out / "analysis" / name).is_file(), name


@pytest.mark.subprocess
def test_output_into_a_reader_that_stops_early_is_no_error():
    """`nnrnn presets | head -1`: the rest of the output has nowhere to go; that is no traceback."""
    command = f"{sys.executable} -m nnrnn presets | head -1"
    result = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120)
    assert result.stdout.startswith("paper") and result.stderr == "", result.stderr


NNRNN = Path(sys.executable).with_name("nnrnn")


@pytest.mark.subprocess
@pytest.mark.skipif(not NNRNN.is_file(), reason="the nnrnn command is not installed beside this Python")
@pytest.mark.skipif(not (SHARED / "ptb" / "ptb.char.valid.txt").is_file(), reason="shared data not found")
@pytest.mark.parametrize("task", ["copy", "psmnist", "ptb"])
def test_installed_command_trains_each_task_with_the_paper_preset(task, tmp_path, data_head):
    """`nnrnn train TASK --preset paper` at the paper's sizes (128, 512, 1024 units), two updates, on the head of
    the shared data (data_head: evaluating the whole files at 1024 units was most of this test's time)."""
    data = ["--data-dir", str(data_head)]  # --data-dir only where the task reads files: elsewhere it is refused
    extra = {"copy": [], "psmnist": ["--eval-batch-size", "1000", *data],
             "ptb": ["--eval-batch-size", "1000", *data]}[task]
    result = subprocess.run([str(NNRNN), "train", task, "--preset", "paper", "--steps", "2", "--no-progress",
                             "--out", str(tmp_path / "run"), *extra],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    config = runfolder.read_config(tmp_path / "run" / "config.json")
    assert config["preset"] == "paper" and config["hidden"] == {"copy": 128, "psmnist": 512, "ptb": 1024}[task]
    assert {r["split"] for r in read_metrics(tmp_path / "run")} >= {"train", "valid"}


@pytest.mark.subprocess
@pytest.mark.skipif(not NNRNN.is_file(), reason="the nnrnn command is not installed beside this Python")
def test_installed_command_runs_a_reproduction_and_writes_its_report(tmp_path):
    result = subprocess.run([str(NNRNN), "reproduce", "--scale", "smoke", "--tasks", "copy", "--models", "nnrnn",
                             "lstm", "--out", str(tmp_path / "repro")], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = (tmp_path / "repro" / "report.md").read_text()
    assert "| nnRNN |" in report and "| LSTM |" in report and "The paper's claims at this scale" in report


@pytest.mark.subprocess
@pytest.mark.skipif(not NNRNN.is_file(), reason="the nnrnn command is not installed beside this Python")
def test_installed_command_runs_the_readmes_torchrun_line(tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    result = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node=2", "-m", "nnrnn", "train", "copy",
                             "--batch-size", "8", "--hidden", "8", "--T", "5", "--steps", "4", "--no-progress",
                             "--out", str(tmp_path / "ddp")], capture_output=True, text=True, timeout=600,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert read_metrics(tmp_path / "ddp")[-1]["split"] == "test"


def write_run(folder: Path, config: dict, records: list[dict]) -> None:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_runs_lists_the_runs_of_several_folders_as_a_table(tmp_path, capsys):
    from nnrnn_cli.command import main
    write_run(tmp_path / "a" / "copy-nnrnn", {"task": "copy", "model": "nnrnn", "hidden": 128},
              [{"step": 250, "split": "valid", "loss": 0.02}, {"step": 500, "split": "valid", "loss": 0.001},
               {"step": 500, "split": "test", "loss": 0.0009, "accuracy": 0.99}])
    write_run(tmp_path / "b" / "grid" / "psmnist-lstm", {"task": "psmnist", "model": "lstm", "hidden": 64},
              [{"step": 125, "split": "valid", "loss": 1.1, "accuracy": 0.6},
               {"step": 250, "split": "valid", "loss": 0.9, "accuracy": 0.55}])
    assert main(["runs", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    starts = [match.start() for match in re.finditer(r"(?:^|(?<=  ))\S", header)]
    rows = [{header[a:b].strip(): line[a:b].strip() for a, b in zip(starts, [*starts[1:], None])} for line in lines]
    assert rows == [
        {"run": str(tmp_path / "a" / "copy-nnrnn"), "task": "copy", "model": "nnrnn", "hidden": "128",
         "updates": "500", "best validation": "loss 0.001", "test": "loss 0.0009", "status": "finished"},
        {"run": str(tmp_path / "b" / "grid" / "psmnist-lstm"), "task": "psmnist", "model": "lstm", "hidden": "64",
         "updates": "250", "best validation": "accuracy 0.6", "test": "-", "status": "stopped at 250"}]
    assert main(["runs", str(tmp_path / "empty-or-missing")]) == 2


@pytest.mark.subprocess
@pytest.mark.parametrize("how", ["symlink", "copy"])
def test_a_folder_named_nnrnn_holding_a_checkout_does_not_shadow_the_package(tmp_path, how):
    """The issue's case: a script run from the folder that holds a clone named nnrnn imported the clone's folder
    (a namespace package without the models) instead of the package. With the package under src/, the clone's
    top folder holds no module nnrnn can be mistaken for."""
    import shutil
    import tomllib
    repo = Path(__file__).resolve().parents[1]
    # what keeps it so: the package found under src/ (an install puts that folder on the path, not the checkout's
    # top, which holds no nnrnn/ to import; a flat layout's editable install needs an import hook instead, which
    # Python consults only after the path has offered the checkout's folder as a namespace package)
    assert tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["where"] \
        == ["src"]
    assert not (repo / "nnrnn").exists() and not (repo / "__init__.py").exists()
    parent = tmp_path / "parent"
    parent.mkdir()
    if how == "symlink":
        (parent / "nnrnn").symlink_to(repo, target_is_directory=True)
    else:  # a copy of the checkout's layout: its top-level files and src/
        shutil.copytree(repo / "src", parent / "nnrnn" / "src", ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("pyproject.toml", "README.md", "Makefile"):
            shutil.copy(repo / name, parent / "nnrnn" / name)
    (parent / "script.py").write_text("import nnrnn\nprint(nnrnn.__file__)\n"
                                      "print(type(nnrnn.NonNormalRNN(2, 4)).__name__)\n")
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}  # the package as an install puts it on the path
    result = subprocess.run([sys.executable, "script.py"], cwd=parent, env=env, capture_output=True, text=True,
                            timeout=120)  # the script's folder comes first on its path, as does python -c's
    assert result.returncode == 0, result.stderr
    found, made = result.stdout.split()
    assert Path(found).resolve() == (repo / "src" / "nnrnn" / "__init__.py").resolve()
    assert made.endswith("NonNormalRNN")


def test_a_run_uses_the_cores_free_or_omp_num_threads_or_threads_and_says_so(capsys, tmp_path, monkeypatch,
                                                                            undrawn_figures):
    import torch

    from nnrnn import environment
    from nnrnn_cli.command import main
    seen = []
    real = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: seen.append(n) or real(n))
    before = torch.get_num_threads()
    common = ["train", "copy", "--hidden", "4", "--T", "3", "--batch-size", "2", "--steps", "1", "--no-progress"]
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(environment.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(environment.os, "getloadavg", lambda: (2.6, 1.0, 1.0))
    try:
        assert main([*common, "--out", str(tmp_path / "free")]) == 0
        first = capsys.readouterr().out.splitlines()
        assert first[0].startswith("[nnrnn] 1 thread: 1 of 4 cores free, load average 2.6 (--threads N sets them")
        assert first[2].endswith(", 1 thread") and seen[-1] == 1  # the run's line says what it used
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        assert main([*common, "--out", str(tmp_path / "omp")]) == 0
        assert capsys.readouterr().out.startswith("[nnrnn] 3 threads: OMP_NUM_THREADS=3") and seen[-1] == 3
        assert main([*common, "--out", str(tmp_path / "given"), "--threads", "2"]) == 0
        assert "2 threads" in capsys.readouterr().out and seen[-1] == 2
        assert json.loads((tmp_path / "given" / "config.json").read_text())["threads"] == 2
        seen.clear()  # a resumed run keeps its own number
        assert main(["train", "copy", "--out", str(tmp_path / "given"), "--resume", "--steps", "2"]) == 0
        assert seen == [2] and "thread:" not in capsys.readouterr().out.split("\n")[0]
    finally:
        real(before)


def test_resume_refuses_a_config_json_with_an_unknown_option(tmp_path, monkeypatch, capsys):
    # a run that died before its first checkpoint resumes from config.json; a key mistyped there ("hiden") was
    # ignored and the run restarted at the default 128 units
    from nnrnn_cli.command import main
    monkeypatch.delenv("NNRNN_DEBUG", raising=False)
    out = tmp_path / "run"
    assert main(["train", "copy", "--hidden", "8", "--T", "5", "--steps", "1", "--no-progress", "--out", str(out)]) == 0
    (out / "checkpoints" / "last.pt").unlink()
    config = out / "config.json"
    config.write_text(config.read_text().replace('"hidden"', '"hiden"'))
    capsys.readouterr()
    code, err = main(["train", "copy", "--out", str(out), "--resume"]), capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "'hiden'" in lines[0] and "'hidden'" in lines[0], err
    assert '"hiden"' in config.read_text()  # refused before anything was written


@pytest.mark.parametrize("text, needle", [("", "not a grid's compact data"), ("[1]", "lacks scale"),
                                          ('{"a": 1}', "lacks scale, date"),
                                          ('{"scale": "huge", "date": "", "runs": [], "analysis": [], '
                                           '"structure": {}, "folders": {}}', "unknown scale 'huge'")])
def test_reproduce_from_data_that_is_no_grids_data_is_one_line(text, needle, tmp_path, monkeypatch, capsys):
    from nnrnn_cli.command import main
    monkeypatch.delenv("NNRNN_DEBUG", raising=False)
    data = tmp_path / "data.json"
    data.write_text(text)
    code, err = main(["reproduce", "--from-data", str(data), "--out", str(tmp_path / "out")]), capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert not (tmp_path / "out").exists()


def test_more_threads_than_cores_is_one_line(tmp_path, monkeypatch, capsys):
    # --threads 100000 crashed the OpenMP runtime (a segfault, no message) after writing config.json
    from nnrnn import environment
    from nnrnn_cli.command import main
    monkeypatch.delenv("NNRNN_DEBUG", raising=False)
    monkeypatch.setattr(environment.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    out = tmp_path / "run"
    code = main(["train", "copy", "--hidden", "4", "--T", "3", "--steps", "1", "--threads", "3", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--threads 3" in err and "2 cores" in err, err
    assert not out.exists()


def test_runs_lists_a_damaged_run_as_unreadable_beside_the_others(tmp_path, capsys):
    # one run's damaged metrics.jsonl ended the whole listing (exit 2, no table)
    from nnrnn_cli.command import main
    write_run(tmp_path / "good", {"task": "copy", "model": "nnrnn", "hidden": 8},
              [{"step": 5, "split": "valid", "loss": 0.5}])
    write_run(tmp_path / "damaged", {"task": "copy", "model": "nnrnn", "hidden": 8},
              [{"step": 5, "split": "valid", "loss": 0.5}])
    with open(tmp_path / "damaged" / "metrics.jsonl", "a") as f:
        f.write("garbage{\n")
    assert main(["runs", str(tmp_path)]) == 0
    damaged, good = capsys.readouterr().out.splitlines()[1:]
    assert damaged.startswith(str(tmp_path / "damaged")) and "unreadable: " in damaged and "line 2" in damaged
    assert good.startswith(str(tmp_path / "good")) and "loss 0.5" in good


@pytest.mark.parametrize("damage", ["config is a list", "outcome is a list", "outcome of another structure",
                                    "test score is text"])
def test_runs_lists_a_run_of_foreign_structure_as_one_row_beside_the_others(damage, tmp_path, capsys):
    # one run folder whose config.json is a list ended the whole listing with an AttributeError
    from nnrnn_cli.command import main
    write_run(tmp_path / "good", {"task": "copy", "model": "nnrnn", "hidden": 8},
              [{"step": 5, "split": "valid", "loss": 0.5}])
    odd = tmp_path / "odd"
    write_run(odd, {"task": "copy", "model": "nnrnn", "hidden": 8},
              [{"step": 5, "split": "valid", "loss": 0.5}, {"step": 5, "split": "test", "loss": "low"}])
    if damage == "config is a list":
        (odd / "config.json").write_text('["copy", "nnrnn"]')
    elif damage == "outcome is a list":
        (odd / "outcome.json").write_text("[1, 2]")
    elif damage == "outcome of another structure":
        (odd / "outcome.json").write_text('{"name": 5}')
    assert main(["runs", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()[1:]
    good, = [line for line in out if line.startswith(str(tmp_path / "good"))]
    odd_row, = [line for line in out if line.startswith(str(odd))]
    assert "loss 0.5" in good
    if damage == "config is a list":
        assert "unreadable: " in odd_row and "holds a list, not an object" in odd_row
    else:
        assert "loss 0.5" in odd_row and "unreadable" not in odd_row


def test_runs_lists_the_runs_a_grid_shares_through_a_link(tmp_path, capsys):
    # reproduce --runs makes OUT/runs a link to the shared folder; nnrnn runs OUT listed none of its runs
    from nnrnn_cli.command import main
    shared = tmp_path / "shared"
    write_run(shared / "copy-nnrnn-s0", {"task": "copy", "model": "nnrnn", "hidden": 8},
              [{"step": 5, "split": "valid", "loss": 0.5}])
    grid = tmp_path / "grid"
    grid.mkdir()
    (grid / "runs").symlink_to(shared, target_is_directory=True)
    (shared / "loop").symlink_to(tmp_path, target_is_directory=True)  # a link above itself: no endless walk
    assert main(["runs", str(grid)]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert len(rows) == 1 and rows[0].startswith(str(grid / "runs" / "copy-nnrnn-s0")), rows


def _memory_data(**changes) -> str:
    data = json.loads((Path(__file__).parents[1] / "docs" / "memory" / "data.json").read_text())
    return json.dumps({**data, **changes})


@pytest.mark.parametrize("changes, needle", [
    ({"scale": ["memory"]}, "unknown scale ['memory']"),
    ({"scale": "cpu"}, "its runs are of copy-100, copy-200"),  # another grid's data under this grid's name
    ({"runs": {"a": 1}}, "its runs are not a list of planned runs"),
    ({"runs": [1, 2]}, "its runs are not a list of planned runs"),
    ({"runs": []}, "it holds no runs"),
    ({"runs": [], "folders": {}}, "it holds no runs"),
    ({"folders": []}, "its structure and folders are not tables"),
    ({"structure": "none"}, "its structure and folders are not tables"),
    ({"date": 20261202}, "its date is not text"),
    ({"analysis": "lines"}, "its analysis is not a list of lines"),
    ({"folders": {}}, "it holds no folder of the run"),
])
def test_reproduce_from_data_of_wrong_types_or_another_grid_is_one_line(changes, needle, tmp_path, monkeypatch,
                                                                         capsys):
    """Wrong types and another grid's data were tracebacks; no runs wrote a report "all 0 distinct runs finished"."""
    from nnrnn_cli.command import main
    monkeypatch.delenv("NNRNN_DEBUG", raising=False)
    data = tmp_path / "data.json"
    data.write_text(_memory_data(**changes))
    code, err = main(["reproduce", "--from-data", str(data), "--out", str(tmp_path / "out")]), capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert not (tmp_path / "out").exists()


def test_runs_lists_a_run_checkpointed_before_it_logged_as_stopped_at_its_checkpoint(tmp_path, capsys):
    """A run checkpointed at update 15 with nothing logged yet (--log-every larger) was listed as "not started";
    it resumes from update 15."""
    from nnrnn_cli.command import main
    from nnrnn.training import checkpoint
    write_run(tmp_path / "early", {"task": "copy", "model": "nnrnn", "hidden": 8}, [])
    checkpoint.save(runfolder.last_checkpoint(tmp_path / "early"), {"step": 15, "model": {}})
    write_run(tmp_path / "fresh", {"task": "copy", "model": "nnrnn", "hidden": 8}, [])
    assert main(["runs", str(tmp_path)]) == 0
    early, fresh = capsys.readouterr().out.splitlines()[1:]
    assert re.search(r"\b15\b.*stopped at 15$", early), early
    assert fresh.endswith("not started"), fresh
