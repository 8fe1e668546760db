"""The promises of a run folder, each tested over generated cases (issue 31): nothing a user has is
overwritten, no option is silently ignored, a resumed run takes its own options, and a run killed at any
moment of any phase resumes to exactly what an uninterrupted run gives.  References are written out here:
which option acts on which task, model and optimizer is the paper's and torch's, not read from nnrnn."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnrnn.training import checkpoint
from nnrnn import cli
from nnrnn.training.config import resolve_config
from nnrnn.errors import OptionError
from nnrnn.training.runlog import read_metrics
from nnrnn.training.train import train

REPO = Path(__file__).resolve().parents[1]
TINY = ["--hidden", "8", "--T", "3", "--batch-size", "2", "--no-progress"]

# Where each option acts: tasks (the paper's set-ups), models (what each model's equations contain),
# optimizers (torch's RMSprop has alpha, Adam has betas).
TASK_OPTIONS = {"T": {"copy", "adding"}, "bptt": {"ptb"}, "permute": {"psmnist"}, "shuffle": {"psmnist"},
                "data_dir": {"psmnist", "ptb"}, "eval_batch_size": {"psmnist", "ptb"}, "embedding": {"ptb"}}
NON_GATED = {"rnn", "rnn-orth", "eurnn", "exprnn", "nnrnn"}
MODEL_OPTIONS = {"capacity": {"eurnn"}, "triangular": {"nnrnn"}, "delta": {"nnrnn"}, "t_decay": {"nnrnn"},
                 "fixed_gamma": {"nnrnn"}, "t_init": {"nnrnn"}, "lr_orth": {"nnrnn", "exprnn"},
                 "rebase_every": {"nnrnn", "exprnn"}, "nonlinearity": NON_GATED, "input_init": NON_GATED,
                 "bias_init": NON_GATED, "init": {"rnn-orth", "exprnn", "nnrnn", "lstm"}}
OPTIMIZER_OPTIONS = {"alpha": {"rmsprop"}, "betas": {"adam"}}
# a value other than the default for each option, valid wherever the option acts
VALUES = {"T": 7, "bptt": 30, "permute": False, "shuffle": "fixed", "data_dir": "/somewhere", "eval_batch_size": 3,
          "embedding": 4, "capacity": 3, "triangular": "block", "delta": 0.1, "t_decay": 0.1, "fixed_gamma": 1.0,
          "t_init": "delay:0.5", "lr_orth": 0.5, "rebase_every": 5, "nonlinearity": "tanh", "input_init": "zeros",
          "bias_init": "uniform", "alpha": 0.5, "betas": [0.5, 0.5]}
INITS = {"rnn-orth": "cayley", "exprnn": "cayley", "nnrnn": "henaff", "lstm": "concat"}


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.md5(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"}


def run_cli(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    return code, capsys.readouterr().err


def one_line(code, err, *expected, exit_code=2):
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == exit_code and len(lines) == 1 and "Traceback" not in err, err
    for text in expected:
        assert text in lines[0], lines[0]


# --------------------------------------------------------------------------- no option silently ignored

def test_every_option_acts_where_it_is_given_or_is_refused_naming_it():
    """Every task × model × optimizer × option: an explicit non-default value is accepted exactly where the
    option acts, and otherwise refused with a sentence naming the option's flag."""
    cases = 0
    for task in ("copy", "adding", "psmnist", "ptb"):
        for model in ("rnn", "rnn-orth", "eurnn", "exprnn", "nnrnn", "lstm"):
            for optimizer in ("rmsprop", "adam"):
                for option, value in VALUES.items():
                    where = TASK_OPTIONS.get(option) or MODEL_OPTIONS.get(option) or OPTIMIZER_OPTIONS[option]
                    acts = (task if option in TASK_OPTIONS else model if option in MODEL_OPTIONS else optimizer) \
                        in where
                    options = {"task": task, "model": model, "optimizer": optimizer, option: value}
                    if option == "init":
                        options["init"] = INITS.get(model, "cayley")
                    if acts:
                        resolve_config(options)
                    else:
                        flag = {"T": "--T", "permute": "--no-permute"}.get(option, "--" + option.replace("_", "-"))
                        with pytest.raises(OptionError, match=f"^{flag} applies to"):
                            resolve_config(options)
                    cases += 1
    assert cases == 4 * 6 * 2 * len(VALUES)


def test_a_preset_sets_what_applies_without_refusal():
    """A preset covers several models: the values it holds are never refused for not applying."""
    for model in ("rnn", "rnn-orth", "eurnn", "exprnn", "nnrnn", "lstm"):
        for task in ("copy", "psmnist", "ptb"):
            resolve_config({"task": task, "model": model}, "paper")


# --------------------------------------------------------------------------- nothing overwritten

@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs") / "done"
    assert cli.main(["train", "copy", "--steps", "4", "--eval-every", "2", "--out", str(folder), *TINY]) == 0
    return folder


OTHER_FILES = [("config.json", "{}"), ("metrics.jsonl", "my notes\n"), ("curves.png", "mine"), ("notes.txt", "x"),
               ("checkpoints/best.pt", "mine"), ("tensorboard/events", "mine")]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.sampled_from(OTHER_FILES), min_size=1, max_size=3, unique=True),
       resume=st.booleans(), overwrite=st.booleans())
def test_a_folder_nnrnn_did_not_make_is_never_written(files, resume, overwrite, capsys, tmp_path_factory):
    folder = tmp_path_factory.mktemp("user") / "mine"
    for name, text in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    before = snapshot(folder)
    argv = ["train", "copy", "--steps", "2", "--out", folder, *TINY]
    argv += ["--resume"] if resume else ["--overwrite"] if overwrite else []
    code, err = run_cli(capsys, *argv)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert snapshot(folder) == before


def test_a_run_is_replaced_only_with_overwrite_and_its_user_files_stay(capsys, finished, tmp_path):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "notes.txt").write_text("mine")
    before = snapshot(run)
    one_line(*run_cli(capsys, "train", "copy", "--steps", "2", "--out", run, *TINY), "already holds a run",
             "--overwrite")
    assert snapshot(run) == before
    one_line(*run_cli(capsys, "train", "copy", "--out", run, "--resume", "--overwrite", *TINY),
             "--resume or --overwrite, not both")
    assert run_cli(capsys, "train", "copy", "--steps", "3", "--out", run, "--overwrite", *TINY)[0] == 0
    assert (run / "notes.txt").read_text() == "mine"
    assert checkpoint.load(run / "checkpoints" / "last.pt")["step"] == 3
    assert [r["step"] for r in read_metrics(run) if r["split"] == "test"] == [3]


def test_a_run_whose_checkpoints_were_deleted_keeps_its_metrics(capsys, finished, tmp_path):
    """The run's metrics and best checkpoint stay when its last.pt was deleted to save space."""
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "checkpoints" / "last.pt").unlink()
    before = snapshot(run)
    one_line(*run_cli(capsys, "train", "copy", "--steps", "2", "--out", run, *TINY), "already holds a run")
    assert snapshot(run) == before


# --------------------------------------------------------------------------- resume takes the run's own options

def test_resume_takes_the_runs_own_options_and_changes_only_what_may_change(capsys, tmp_path):
    run = tmp_path / "run"
    assert run_cli(capsys, "train", "copy", "--preset", "paper", "--steps", "2", "--eval-every", "1",
                   "--hidden", "8", "--T", "3", "--no-progress", "--out", run)[0] == 0
    saved = json.loads((run / "config.json").read_text())
    # the README's line: no preset, no sizes given again
    assert run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "3")[0] == 0
    config = json.loads((run / "config.json").read_text())
    assert config == {**saved, "steps": 3}
    assert run_cli(capsys, "train", "copy", "--out", run, "--resume", "--preset", "paper", "--epochs", "1")[0] != 0
    for argv, expected in ((["--lr", "0.5"], f"--lr was {saved['lr']} and is now 0.5"),
                           (["--hidden", "16"], "--hidden was 8 and is now 16"),
                           (["--preset", "paper-params"], "--preset was 'paper' and is now 'paper-params'"),
                           (["--model", "rnn"], "--model was 'nnrnn' and is now 'rnn'")):
        one_line(*run_cli(capsys, "train", "copy", "--out", run, "--resume", *argv), *expected)
    one_line(*run_cli(capsys, "train", "adding", "--out", run, "--resume"), "--task was 'copy' and is now 'adding'")


def test_a_steps_run_resumes_with_epochs_and_back(capsys, tmp_path):
    from conftest import HAS_MNIST, SHARED
    if not HAS_MNIST:
        pytest.skip("shared MNIST not found")
    run = tmp_path / "run"
    common = ["--hidden", "4", "--batch-size", "500", "--eval-batch-size", "1000", "--no-progress"]
    assert run_cli(capsys, "train", "psmnist", "--model", "rnn", "--steps", "2", "--data-dir", SHARED,
                   "--out", run, *common)[0] == 0
    assert run_cli(capsys, "train", "psmnist", "--out", run, "--resume", "--epochs", "1")[0] == 0
    assert json.loads((run / "config.json").read_text())["steps"] is None
    assert checkpoint.load(run / "checkpoints" / "last.pt")["step"] == 16  # 8,000 images / 500


def test_resume_without_config_json_uses_the_checkpoints_configuration(capsys, finished, tmp_path):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "config.json").unlink()
    assert run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "5")[0] == 0
    assert checkpoint.load(run / "checkpoints" / "last.pt")["step"] == 5


def test_a_best_checkpoint_in_place_of_the_last_is_named(capsys, finished, tmp_path):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    shutil.copy(run / "checkpoints" / "best.pt", run / "checkpoints" / "last.pt")
    before = snapshot(run)
    one_line(*run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "6"),
             "is not a run's last checkpoint")
    assert snapshot(run) == before


@pytest.mark.parametrize("corrupt, expected", [("truncated", None), ("middle", "line 2 is not a JSON record"),
                                               ("not a record", "line 1 is not a metrics record")])
def test_a_damaged_metrics_file(corrupt, expected, capsys, finished, tmp_path):
    """A last line cut short (a kill or a full disk during its write) is dropped on resume; another damaged line
    is named with the file and its number."""
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    lines = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    text = {"truncated": "".join(lines) + lines[1][:20], "middle": lines[0] + lines[1][:20] + "\n" + "".join(lines[2:]),
            "not a record": "[1, 2]\n" + "".join(lines[1:])}[corrupt]
    (run / "metrics.jsonl").write_text(text)
    code, err = run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "6")
    if expected is None:
        assert code == 0, err
        assert [r["step"] for r in read_metrics(run) if r["split"] == "test"][-1] == 6
    else:
        one_line(code, err, str(run / "metrics.jsonl"), expected)


def test_options_that_can_only_fail_later_are_checked_before_the_folder(capsys, tmp_path):
    from conftest import HAS_PTB, SHARED
    one_line(*run_cli(capsys, "train", "copy", "--T", "100000", "--batch-size", "100000", "--hidden", "4096",
                      "--out", tmp_path / "big"), "needs at least", "GiB of memory")
    assert not (tmp_path / "big").exists()
    one_line(*run_cli(capsys, "train", "copy", "--out", "", *TINY), "--out must name a folder")
    one_line(*run_cli(capsys, "train", "copy", "--device", "cpu:1", "--out", tmp_path / "d", *TINY),
             "there is one cpu device")
    for flag in ("--storage", "--study", "--out"):
        one_line(*run_cli(capsys, "sweep", "copy", "--trials", "1", flag, ""), f"{flag} must not be empty")
    if HAS_PTB:
        one_line(*run_cli(capsys, "train", "ptb", "--eval-batch-size", "100000", "--data-dir", SHARED,
                          "--out", tmp_path / "ptb", *TINY[:2]), "eval_batch_size 100000 is too large")
        assert not (tmp_path / "ptb").exists()


def test_a_full_disk_is_one_line_and_the_previous_checkpoint_stays(capsys, finished, tmp_path, monkeypatch):
    import errno
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    before = (run / "checkpoints" / "last.pt").read_bytes()
    real = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    one_line(*run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "8", "--checkpoint-every", "2"),
             "No space left on device", "continue with --resume")
    monkeypatch.setattr(os, "fsync", real)
    assert (run / "checkpoints" / "last.pt").read_bytes() == before
    assert not list((run / "checkpoints").glob(".*.tmp"))
    assert run_cli(capsys, "train", "copy", "--out", run, "--resume", "--steps", "8")[0] == 0


# --------------------------------------------------------------------------- results are part of the run

def test_a_non_finite_test_score_fails_the_run_and_eval(capsys, tmp_path, monkeypatch):
    from nnrnn.training import train as trainer
    real = trainer.evaluate

    def nan_test(net, task, split, device):
        metrics = real(net, task, split, device)
        return {**metrics, "loss": float("nan")} if split == "test" else metrics
    monkeypatch.setattr(trainer, "evaluate", nan_test)
    one_line(*run_cli(capsys, "train", "copy", "--steps", "2", "--out", tmp_path / "r", *TINY),
             "the test loss of", "is nan", exit_code=1)
    one_line(*run_cli(capsys, "eval", tmp_path / "r"), "the test loss", "is nan", exit_code=1)


# --------------------------------------------------------------------------- a kill at any moment resumes exactly

KILL = r"""
import json, os, sys
import torch
from nnrnn.training import checkpoint, network, runlog, train as trainer
config, phase, at = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
calls = {"n": 0}

def dies(real, when=lambda *a, **k: True):
    def wrapped(*args, **kwargs):
        if when(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == at:
                if phase == "checkpoint":  # killed half way through writing: a partial temporary file stays
                    args[0].parent.mkdir(parents=True, exist_ok=True)
                    (args[0].parent / f".{args[0].name}.killed.tmp").write_bytes(b"PK" + bytes(200))
                os._exit(137)
        return real(*args, **kwargs)
    return wrapped

if phase == "start-up":
    network.build_network = dies(network.build_network)
elif phase == "training":
    trainer.update = dies(trainer.update)
elif phase == "checkpoint":
    checkpoint.atomic_write = dies(checkpoint.atomic_write, lambda path, write: path.name == "last.pt")
elif phase in ("validation", "test"):
    trainer.evaluate = dies(trainer.evaluate,
                            lambda net, task, split, device: split == phase.replace("validation", "valid"))
elif phase == "plotting":
    trainer.plot_curves = dies(trainer.plot_curves)
trainer.train(config)
print("finished without a kill")
"""

PHASES = {"start-up": 1, "training": 9, "checkpoint": 3, "validation": 3, "test": 1, "plotting": 1}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whole") / "run"
    config = resolve_config({"task": "copy", "model": "nnrnn", "hidden": 8, "T": 3, "batch_size": 2, "steps": 12,
                             "eval_every": 4, "log_every": 2, "checkpoint_every": 2, "progress": False, "seed": 5,
                             "out": str(folder)})
    train(config)
    return config


@pytest.mark.subprocess
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(phase=st.sampled_from(sorted(PHASES)), data=st.data())
def test_a_kill_at_any_moment_of_any_phase_then_resume_is_an_uninterrupted_run(phase, data, uninterrupted,
                                                                               tmp_path_factory):
    at = data.draw(st.integers(1, PHASES[phase]), label="the kill at this call of the phase")
    folder = tmp_path_factory.mktemp("killed") / "run"
    config = {**uninterrupted, "out": str(folder)}
    killed = subprocess.run([sys.executable, "-c", KILL, json.dumps(config), phase, str(at)], capture_output=True,
                            text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert killed.returncode == 137, killed.stdout + killed.stderr
    assert cli.main(["train", "copy", "--out", str(folder), "--resume"]) == 0  # the README's line
    whole = Path(uninterrupted["out"])
    assert read_metrics(folder) == read_metrics(whole)
    for name in ("last.pt", "best.pt"):
        a = checkpoint.load(whole / "checkpoints" / name)["model"]
        b = checkpoint.load(folder / "checkpoints" / name)["model"]
        assert all(torch.equal(a[k], b[k]) for k in a), name
    assert (folder / "curves.png").is_file()


def test_a_refused_run_leaves_a_folder_of_the_users_exactly_as_it_was(capsys, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "data.csv").write_text("mine")
    one_line(*run_cli(capsys, "train", "copy", "--steps", "2", "--out", folder, *TINY),
             "holds files nnrnn did not write")
    assert sorted(p.name for p in folder.iterdir()) == ["data.csv"]  # not even a lock file


def test_an_option_that_does_not_act_is_refused_at_its_default_value_too(capsys, tmp_path):
    for argv, expected in ((["--bptt", "150"], "--bptt applies to the ptb task"),
                           (["--betas", "0.9", "0.999"], "--betas applies to --optimizer adam"),
                           (["--model", "rnn", "--lr-orth", "1e-4"], "--lr-orth applies to")):
        one_line(*run_cli(capsys, "train", "copy", *argv, "--out", tmp_path / "r", *TINY), expected)
    assert not (tmp_path / "r").exists()
