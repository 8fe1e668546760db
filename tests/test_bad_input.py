"""A user's mistakes: each gives one plain line on stderr and exit code 2 (the command line), or a
ValueError/TypeError naming the argument (the library), or torch.nn.RNN's behaviour; none loses work."""
import json
import shutil
import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nnrnn
from nnrnn_cli import command as cli
from nnrnn.training import runlock
from nnrnn.parametrizations import orthogonal, schur

from conftest import SHARED  # noqa: E402
from helpers import TINY, one_line, run_cli, snapshot


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished copy run, for the cases that point at an existing run folder."""
    folder = tmp_path_factory.mktemp("runs") / "done"
    assert cli.main(["train", "copy", "--steps", "4", "--eval-every", "2", "--out", str(folder), *TINY]) == 0
    return folder


# --------------------------------------------------------------------------- options

BAD_OPTIONS = [
    (["train", "rwkv"], "unknown task 'rwkv'"),
    (["train", "copy", "--model", "rwkv"], "unknown model 'rwkv'"),
    (["train", "copy", "--model", "nnrnn-complex", "--nonlinearity", "tanh"],
     "nonlinearity must be one of modrelu, none for nnrnn-complex; got 'tanh'"),
    (["train", "copy", "--model", "nngru", "--preset", "paper"], "preset 'paper' has no settings for model 'nngru'"),
    (["train", "copy", "--model", "gru", "--schur-gates"], "schur_gates puts a GRU's reset and update gates"),
    (["train", "copy", "--hidden", "0"], "hidden must be a positive integer"),
    (["train", "copy", "--hidden", "-5"], "hidden must be a positive integer"),
    (["train", "copy", "--hidden", "1.5"], "invalid int value"),
    (["train", "copy", "--lr", "0"], "lr must be a positive finite number"),
    (["train", "copy", "--lr", "-1"], "lr must be a positive finite number"),
    (["train", "copy", "--lr", "nan"], "lr must be a positive finite number"),
    (["train", "copy", "--lr", "inf"], "lr must be a positive finite number"),
    (["train", "copy", "--lr", "fast"], "invalid float value"),
    (["train", "copy", "--lr-orth", "inf"], "lr_orth (--lr-orth) must be a positive finite number"),
    (["train", "copy", "--alpha", "1.0"], "alpha must be in [0, 1)"),
    (["train", "copy", "--alpha", "nan"], "alpha must be in [0, 1)"),
    (["train", "copy", "--delta", "-1"], "delta must be zero or a positive finite number"),
    (["train", "copy", "--delta", "inf"], "delta must be zero or a positive finite number"),
    (["train", "copy", "--model", "lstm", "--chrono-tmax", "50"], "give --init chrono with it"),
    (["train", "copy", "--state-noise", "-0.1"],
     "state_noise (--state-noise) must be zero or a positive finite number"),
    (["train", "copy", "--t-decay", "nan"], "t_decay (--t-decay) must be zero or a positive finite number"),
    (["train", "copy", "--clip", "-1"], "clip must be zero or a positive finite number"),
    (["train", "copy", "--clip", "inf"], "clip must be zero or a positive finite number"),
    (["train", "copy", "--optimizer", "adam", "--betas", "1.5", "0.9"], "betas must be two numbers in [0, 1)"),
    (["train", "copy", "--steps", "0"], "steps must be a positive integer"),
    (["train", "copy", "--epochs", "0"], "epochs must be a positive integer"),
    (["train", "copy", "--epochs", "3"], "epochs needs a task with a fixed training set"),
    (["train", "copy", "--steps", "5", "--epochs", "2"], "give --steps or --epochs, not both"),
    (["train", "copy", "--seed", "-3"], "seed must be a non-negative integer"),
    (["train", "copy", "--seed", str(2 ** 64)], "seed must be a non-negative integer"),
    (["train", "copy", "--batch-size", "0"], "batch_size (--batch-size) must be a positive integer"),
    (["train", "copy", "--T", "0"], "T must be a positive integer"),
    (["train", "copy", "--eval-batch-size", "0"], "eval_batch_size (--eval-batch-size) must be a positive integer"),
    (["train", "copy", "--log-every", "0"], "log_every (--log-every) must be a positive integer"),
    (["train", "copy", "--max-bad-steps", "0"], "max_bad_steps (--max-bad-steps) must be a positive integer"),
    (["train", "copy", "--threads", "0"], "threads must be a positive integer"),
    (["train", "copy", "--divergence-factor", "-1"],
     "divergence_factor (--divergence-factor) must be zero or a positive finite number"),
    (["train", "copy", "--divergence-factor", "nan"],
     "divergence_factor (--divergence-factor) must be zero or a positive finite number"),
    # no abbreviations, and a near miss named, pointing to the command's own help
    (["train", "copy", "--step", "5"], "train: unrecognized arguments: --step 5; did you mean --steps? (see nnrnn "
                                       "train --help)"),
    (["train", "copy", "--hiden", "64"], "did you mean --hidden? (see nnrnn train --help)"),
    (["trian", "copy"], "invalid choice: 'trian'; did you mean 'train'?"),
    (["theory", "tabel3"], "invalid choice: 'tabel3'; did you mean 'table3'? (choose from table3,"),
    (["runs", "runs", "--al"], "runs: unrecognized arguments: --al"),
    (["train", "copy", "--model", "eurnn", "--capacity", "0"], "capacity must be a positive integer"),
    (["train", "copy", "--model", "nnrnn", "--init", "xavier"], "init must be one of henaff, cayley, random"),
    (["train", "copy", "--model", "lstm", "--init", "cayley"],
     "init must be one of xavier, concat, chrono, chain:GAIN, fbchain:GAIN for lstm"),
    (["train", "copy", "--model", "rnn", "--init", "chain"],
     "init must be one of xavier, chain:GAIN, fbchain:GAIN for rnn"),
    (["train", "copy", "--model", "cornn", "--dt", "0"], "dt must be a positive finite number; got 0.0"),
    (["train", "copy", "--model", "cornn", "--gamma", "nan"], "gamma must be a positive finite number"),
    (["train", "copy", "--model", "lru", "--r-max", "1.5"], "r_max (--r-max) must be a number in [0, 1]; got 1.5"),
    (["train", "copy", "--model", "lru", "--r-min", "0.99", "--r-max", "0.5"], "r_min must be below r_max"),
    (["train", "copy", "--model", "lem", "--epsilon", "2"], "--epsilon applies to cornn, not to lem"),
    (["train", "copy", "--input-init", "orthogonal"], "input_init (--input-init) must be one of"),
    (["train", "copy", "--readout-init", "uniform:-1"], "readout_init (--readout-init) must be one of"),
    (["train", "copy", "--embedding", "-1"], "embedding must be a non-negative integer"),
    (["train", "copy", "--embedding", "16"], "--embedding applies to the ptb task, not to copy"),
    (["train", "copy", "--nonlinearity", "gelu"], "invalid choice"),
    (["train", "copy", "--triangular", "upper"], "invalid choice"),
    (["train", "copy", "--fixed-gamma", "-1"], "fixed_gamma must be None or a finite number >= 0"),
    (["train", "copy", "--fixed-gamma", "1", "--delta", "0.1"], "give delta 0"),
    (["train", "copy", "--model", "lstm", "--fixed-gamma", "1"], "--fixed-gamma applies to nnrnn, not to lstm"),
    (["train", "copy", "--t-init", "delay:-1"], "t_init must be 'zeros' or 'delay:ALPHA'"),
    (["train", "copy", "--t-init", "chain:1"], "t_init must be 'zeros' or 'delay:ALPHA'"),
    (["train", "copy", "--lr-schedule", "cosine"], "invalid choice"),
    (["train", "copy", "--shuffle", "sometimes"], "invalid choice"),
    (["train", "copy", "--device", "cuda"], "no CUDA device is available"),
    (["train", "copy", "--device", "cuda:7"], "CUDA"),
    (["train", "copy", "--device", "tpu"], "--device 'tpu' is not a device"),
    (["train", "copy", "--device", "mps"], "trains on cpu or cuda"),
    (["train", "copy", "--hidden", "100000000"], "needs at least"),
    (["train", "copy", "--preset", "fast"], "unknown preset 'fast'"),
    (["train", "ptb", "--preset", "paper", "--bptt", "200"], "has no settings for task 'ptb-200'"),
    (["train", "copy", "--frobnicate"], "unrecognized arguments"),
    (["train", "psmnist", "--data-dir", "/nonexistent/nnrnn"], "MNIST"),
    (["train", "ptb", "--data-dir", "/nonexistent/nnrnn"], "Penn Treebank characters not found"),
    (["eval", "/nonexistent/run"], "no run folder or checkpoint at /nonexistent/run"),
    (["eval", "/nonexistent/run", "--data-dir", "/nonexistent/data"],
     "no run folder or checkpoint at /nonexistent/run"),
    (["analyze", "/nonexistent/run"], "no run folder or checkpoint at /nonexistent/run"),
    (["presets", "fast"], "unknown preset 'fast'"),
    (["data", "fetch", "cifar"], "invalid choice"),
    (["data", "fetch", "mnist", "--timeout", "0"], "--timeout must be a positive number of seconds; got 0.0"),
    (["data", "fetch", "mnist", "--timeout", "-5"], "--timeout must be a positive number of seconds"),
    (["data", "fetch", "mnist", "--timeout", "nan"], "--timeout must be a positive number of seconds"),
    (["data", "fetch", "mnist", "--deadline", "0"], "--deadline must be a positive number of seconds"),
    (["data", "fetch", "mnist", "--deadline", "inf"], "--deadline must be a positive number of seconds"),
    (["data", "fetch", "mnist", "--deadline=--"], "invalid float value: '--'"),
    (["theory", "table3", "--n=--"], "invalid int value: '--'"),
    (["theory", "prop2", "--n=--"], "invalid int value: '--'"),
    (["sweep", "copy", "--trials", "0"], "trials must be a positive integer"),
    (["sweep", "ptb", "--trials", "1", "--data-dir", "/nonexistent/nnrnn"], "Penn Treebank characters not found"),
    (["reproduce", "--jobs", "0"], "jobs must be a positive integer"),
    (["reproduce", "--scale", "huge"], "invalid choice"),
    # resources of every layer of a stack (the check once counted one layer)
    (["train", "copy", "--model", "nnlru", "--num-layers", "100000", "--hidden", "200"],
     "100000 layers of --hidden 200 needs at least"),
    (["train", "copy", "--model", "lstm", "--num-layers", "5000", "--hidden", "1000"], "lower --num-layers"),
    # cluster addresses, refused where --cluster is parsed (Ray's own ValueError was a traceback, even with --plan)
    *[(["reproduce", "--scale", "smoke", "--cluster", address, *plan], "is not a cluster's address")
      for address in ("", "bogus host", "host:", "host:99999", " auto", "ray://") for plan in ([], ["--plan"])],
    # one CPU: cpu:1 is no device (it was read as the CPU)
    (["reproduce", "--scale", "smoke", "--devices", "cpu:1", "--plan"], "--devices cpu:1: there is one cpu device"),
    (["reproduce", "--scale", "smoke", "--devices", "cpu:3"], "there is one cpu device"),
]


@pytest.mark.parametrize("argv, expected", BAD_OPTIONS, ids=[" ".join(a) for a, _ in BAD_OPTIONS])
def test_bad_option_gives_one_line_and_exit_2_before_any_folder(argv, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(capsys, *argv, *(["--out", "run"] if argv[0] in ("train", "sweep") else []))
    one_line(code, err, expected)
    assert not (tmp_path / "run" / "config.json").exists(), "a rejected run must not create its folder"


# --------------------------------------------------------------------------- run folders

def test_out_is_a_file_or_inside_one(capsys, tmp_path):
    (tmp_path / "afile").write_text("mine")
    one_line(*run_cli(capsys, "train", "copy", "--out", tmp_path / "afile", *TINY), "is a file, not a folder")
    one_line(*run_cli(capsys, "train", "copy", "--out", tmp_path / "afile" / "x", *TINY),
                    "which is a file, not a folder")
    assert (tmp_path / "afile").read_text() == "mine"


def test_unwritable_out_and_checkpoints(capsys, tmp_path, monkeypatch, finished_run):
    # the sandbox may run as root, which ignores file modes: the refusal itself is what is simulated, as for
    # a folder with mode 555 (it exists and can be read and entered, but not written)
    real_access = os.access

    def access(path, mode):
        if ("locked" in str(path) or "checkpoints" in str(path)) and mode & os.W_OK:
            return False
        return real_access(path, mode)
    monkeypatch.setattr(os, "access", access)
    one_line(*run_cli(capsys, "train", "copy", "--out", tmp_path / "locked", *TINY), "permission denied")
    before = snapshot(finished_run)
    one_line(*run_cli(capsys, "train", "copy", "--out", finished_run, "--resume", "--steps", "6", *TINY),
                    "is not writable")
    assert snapshot(finished_run) == before


def test_a_second_writer_is_refused_while_the_first_holds_the_folder(capsys, tmp_path):
    with runlock.hold(tmp_path / "busy"):
        code, err = run_cli(capsys, "train", "copy", "--steps", "2", "--out", tmp_path / "busy", *TINY)
    one_line(code, err, "is in use by another nnrnn process", f"pid {os.getpid()}")
    assert not (tmp_path / "busy" / "config.json").exists()
    assert run_cli(capsys, "train", "copy", "--steps", "2", "--out", tmp_path / "busy", *TINY)[0] == 0  # released


@pytest.mark.subprocess
def test_a_killed_holders_lock_is_not_stale(tmp_path):
    """The holder is a fork of this process (a new process would spend seconds importing torch to take a lock): it
    takes the lock with runlock, says so on a pipe, and waits to be killed; it runs no torch op, so a fork is safe."""
    import os
    import signal
    import time
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the holder: never returns into pytest
        try:
            with runlock.hold(tmp_path / "run"):
                os.write(write, b"held")
                time.sleep(60)
        finally:
            os._exit(1)
    os.close(write)
    try:
        assert os.read(read, 4) == b"held"
        os.close(read)
        with pytest.raises(nnrnn.errors.UserError, match=f"pid {pid}"):
            with runlock.hold(tmp_path / "run"):
                pass
    finally:  # a failed check above leaves no forked copy of pytest behind
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    with runlock.hold(tmp_path / "run"):  # the kernel released the killed process's lock
        pass


def test_existing_runs_are_never_overwritten_or_misresumed(capsys, finished_run, tmp_path):
    before = snapshot(finished_run)
    one_line(*run_cli(capsys, "train", "copy", "--out", finished_run, *TINY), "already holds a run")
    one_line(*run_cli(capsys, "train", "copy", "--out", finished_run, "--resume", "--steps", "2", *TINY),
                    "already at update 4, past the 2 updates asked for")
    one_line(*run_cli(capsys, "train", "copy", "--out", finished_run, "--resume", "--lr", "0.5", *TINY),
                    "--lr was 0.0005 and is now 0.5")
    one_line(*run_cli(capsys, "train", "copy", "--out", tmp_path / "none", "--resume", *TINY),
                    "holds no nnrnn run")
    code = cli.main(["train", "copy", "--out", str(finished_run), "--resume", *TINY])
    out = capsys.readouterr().out
    assert code == 0 and "already finished its 4 updates; nothing to train" in out
    assert snapshot(finished_run) == before


def test_corrupt_files_are_named(capsys, finished_run, tmp_path):
    import shutil
    broken = tmp_path / "broken"
    shutil.copytree(finished_run, broken)
    (broken / "config.json").write_text('{"task": "copy", oops')  # the checkpoint holds the configuration:
    assert run_cli(capsys, "train", "copy", "--out", broken, "--resume", "--steps", "5", *TINY)[0] == 0  # resumed
    assert json.loads((broken / "config.json").read_text())["steps"] == 5  # and config.json written again
    (broken / "config.json").unlink()
    assert run_cli(capsys, "train", "copy", "--out", broken, "--resume", "--steps", "6", *TINY)[0] == 0
    shutil.rmtree(broken / "checkpoints")
    (broken / "config.json").write_text('{"task": "copy", oops')  # no checkpoint: config.json is all there is
    one_line(*run_cli(capsys, "train", "copy", "--out", broken, "--resume", *TINY),
                    f"{broken / 'config.json'} is not a valid config.json")
    shutil.copytree(finished_run, broken, dirs_exist_ok=True)
    (broken / "checkpoints" / "last.pt").write_bytes(b"not a checkpoint")
    one_line(*run_cli(capsys, "train", "copy", "--out", broken, "--resume", "--steps", "6", *TINY),
                    "last.pt is not a readable nnrnn checkpoint")
    (broken / "checkpoints" / "best.pt").write_bytes((finished_run / "checkpoints" / "best.pt").read_bytes()[:100])
    one_line(*run_cli(capsys, "eval", broken), "best.pt is not a readable nnrnn checkpoint",
             "may still be readable; `nnrnn train ... --overwrite` starts the run again")


# --------------------------------------------------------------------------- runs that go wrong

def test_every_update_non_finite_fails_the_run(capsys, tmp_path, monkeypatch):
    from nnrnn.tasks import copy as copy_task
    real = copy_task.make_batch

    def nan_batches(T, batch_size, gen):
        inputs, targets = real(T, batch_size, gen)
        return inputs * float("nan"), targets
    monkeypatch.setattr(copy_task.CopyTask, "make_batch", staticmethod(nan_batches))
    code, err = run_cli(capsys, "train", "copy", "--steps", "5", "--out", tmp_path / "r", *TINY)
    one_line(code, err, "training diverged: 5 of the 5 updates", "were skipped (all of them);", exit_code=3)
    assert (tmp_path / "r" / "metrics.jsonl").is_file()  # what was written stays


def test_more_skipped_updates_than_allowed_fails_the_run(capsys, tmp_path, monkeypatch):
    from nnrnn.tasks import copy as copy_task
    real = copy_task.make_batch

    def every_other_nan(T, batch_size, gen):
        inputs, targets = real(T, batch_size, gen)
        return (inputs * float("nan") if torch.rand((), generator=gen) < 0.7 else inputs), targets
    monkeypatch.setattr(copy_task.CopyTask, "make_batch", staticmethod(every_other_nan))
    code, err = run_cli(capsys, "train", "copy", "--steps", "20", "--max-bad-steps", "3", "--out", tmp_path / "r",
                        *TINY)
    one_line(code, err, "training diverged", exit_code=3)


def test_exploding_learning_rate_fails_the_run(capsys, tmp_path):
    code, err = run_cli(capsys, "train", "copy", "--lr", "1e6", "--steps", "30", "--max-bad-steps", "100",
                        "--out", tmp_path / "r", "--no-progress")
    one_line(code, err, "training diverged", exit_code=3)


# --------------------------------------------------------------------------- data

@pytest.mark.skipif(not (SHARED / "ptb" / "ptb.char.valid.txt").is_file(), reason="shared PTB files not found")
def test_ptb_characters_unseen_in_training_are_reported(capsys, tmp_path):
    valid = (SHARED / "ptb" / "ptb.char.valid.txt").read_text()
    (tmp_path / "ptb.char.valid.txt").write_text(valid)
    (tmp_path / "ptb.char.test.txt").write_text("a b é c\n中 _ a\n" + "a _ b c\n" * 20)
    code = cli.main(["train", "ptb", "--steps", "1", "--hidden", "8", "--batch-size", "64", "--eval-every", "1",
                     "--eval-batch-size", "2", "--no-progress", "--data-dir", str(tmp_path), "--out",
                     str(tmp_path / "r")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "read as the unknown symbol U+FFFD: 2 in the test text ('é', '中')" in out


# --------------------------------------------------------------------------- the library

API_CASES = [
    (lambda: nnrnn.create("rwkv", 3, 4), ValueError, "unknown model 'rwkv'"),
    (lambda: nnrnn.create("nnrnn", 3, 0), ValueError, "hidden_size must be a positive int"),
    (lambda: nnrnn.create("nnrnn", 3.0, 4), TypeError, "input_size must be a positive int"),
    (lambda: nnrnn.create("nnrnn", 3, 4, num_layers=0), ValueError, "num_layers must be a positive int"),
    (lambda: nnrnn.create("nnrnn", 3, 4, dropout=1.5), ValueError, "dropout must be a number in [0, 1]"),
    (lambda: nnrnn.create("nnrnn", 3, 4, dropout=True), ValueError, "dropout must be a number in [0, 1]"),
    (lambda: nnrnn.create("nnrnn", 3, 4, bidirectional="yes"), TypeError, "bidirectional must be True or False"),
    (lambda: nnrnn.create("rnn", 3, 4, bias=1), TypeError, "bias must be True or False"),
    (lambda: nnrnn.create("rnn", 3, 4, batch_first=None), TypeError, "batch_first must be True or False"),
    (lambda: nnrnn.create("rnn", 3, 4, bias_init="orthogonal"), ValueError, "bias_init must be one of"),
    (lambda: nnrnn.create("nnrnn", 3, 4, num_layers=2).cell(2), ValueError, "layer must be in [0, 2)"),
    (lambda: nnrnn.create("nnrnn", 3, 4).cell(0, 1), ValueError, "direction in [0, 1)"),
    (lambda: nnrnn.create("nnrnn", 3, 4, nonlinearity="gelu"), ValueError, "nonlinearity must be one of"),
    (lambda: nnrnn.create("nnrnn", 3, 4, triangular="upper"), ValueError, "triangular must be 'strict' or 'block'"),
    (lambda: nnrnn.create("nnrnn", 3, 4, input_init="orthogonal"), ValueError, "input_init must be one of"),
    (lambda: nnrnn.create("nnrnn", 3, 4, fixed_gamma=-1.0), ValueError, "fixed_gamma must be None or a finite number"),
    (lambda: nnrnn.create("nnrnn", 3, 4, t_init="delay:x"), ValueError, "t_init must be 'zeros' or 'delay:ALPHA'"),
    (lambda: nnrnn.create("lstm", 3, 4, init="chrono"), ValueError, "init='chrono' needs chrono_tmax"),
    (lambda: nnrnn.create("gru", 3, 4, init="chrono", chrono_tmax=1.5), ValueError, "chrono_tmax must be a finite"),
    (lambda: nnrnn.create("nnrnn", 3, 4, state_noise=-0.1), ValueError, "state_noise must be a non-negative"),
    (lambda: nnrnn.create("rnn", 3, 4, state_noise=float("nan")), ValueError, "state_noise must be a non-negative"),
    (lambda: nnrnn.create("rnn", 3, 4, state_noise="0.1"), TypeError, "state_noise must be a non-negative float"),
    (lambda: nnrnn.create("exprnn", 3, 4, init="glorot"), ValueError, "init must be one of"),
    (lambda: nnrnn.create("eurnn", 3, 4, capacity=0), ValueError, "capacity must be a positive int"),
    (lambda: nnrnn.create("nnrnn", 3, 4)(torch.randn(5, 2, 7)), ValueError,
     "input.size(-1) must be equal to input_size"),
    (lambda: nnrnn.create("nnrnn", 3, 4)(torch.randn(5)), ValueError, "input must be 2-d"),
    (lambda: nnrnn.create("nnrnn", 3, 4)(torch.ones(5, 2, 3, dtype=torch.long)), TypeError, "floating-point"),
    (lambda: nnrnn.create("nnrnn", 3, 4)(torch.randn(5, 2, 3, dtype=torch.float64)), TypeError,
     "input must have the model's dtype torch.float32"),
    (lambda: nnrnn.create("nnrnn", 3, 4)(torch.randn(5, 2, 3), torch.zeros(2, 2, 4)), ValueError,
     "hx must have shape (1, 2, 4)"),
    (lambda: nnrnn.create("nnrnn", 3, 4)(torch.randn(5, 2, 3), [0]), TypeError, "hx must be a torch.Tensor"),
    (lambda: nnrnn.create("lstm", 3, 4)(torch.randn(5, 2, 3), torch.zeros(1, 2, 4)), TypeError,
     "hx must be a tuple (h_0, c_0)"),
    (lambda: nnrnn.create("lstm", 3, 4)(torch.randn(5, 2, 3), (torch.zeros(1, 2, 4),) * 3), TypeError,
     "hx must be a tuple (h_0, c_0) of tensors"),
    (lambda: nnrnn.create("lstm", 3, 4)(torch.randn(5, 2, 3), (torch.zeros(1, 3, 4), torch.zeros(1, 2, 4))),
     ValueError, "h_0 must have shape (1, 2, 4)"),
    (lambda: nnrnn.create("lstm", 3, 4)(torch.randn(5, 2, 3), (torch.zeros(1, 2, 4), torch.zeros(1, 2, 5))),
     ValueError, "c_0 must have shape (1, 2, 4)"),
    (lambda: nnrnn.create("lstm", 0, 4), ValueError, "input_size must be a positive int"),
    (lambda: nnrnn.create("lstm", 3, 0), ValueError, "hidden_size must be a positive int"),
    (lambda: nnrnn.create("lstm", 3, 4, num_layers=0), ValueError, "num_layers must be a positive int"),
    (lambda: nnrnn.create("nnrnn", 3, 4).regularization(float("nan"), 0.0), ValueError, "delta must be"),
    (lambda: nnrnn.create("nnrnn", 3, 4).regularization(0.0, -1.0), ValueError, "t_decay must be"),
    (lambda: schur(nnrnn.create("nnrnn", 3, 4), "weight_hh_l0"), ValueError, "already has a SchurForm constraint"),
    (lambda: orthogonal(schur(torch.nn.RNN(3, 4), "weight_hh_l0"), "weight_hh_l0"), ValueError, "already has"),
    (lambda: schur(torch.nn.Linear(3, 4)), ValueError, "schur() needs a square 2-d weight"),
    (lambda: orthogonal(torch.nn.Linear(3, 4)), ValueError, "orthogonal() needs a square 2-d weight"),
    (lambda: nnrnn.param_groups(nnrnn.create("nnrnn", 3, 4), lr=float("inf"), lr_orth=1e-3), ValueError,
     "lr must be a positive"),
    (lambda: nnrnn.param_groups(nnrnn.create("nnrnn", 3, 4), lr=1e-3, lr_orth=0), ValueError,
     "lr_orth must be a positive"),
    (lambda: nnrnn.hidden_size_for("nnrnn", -5, 1, 1), ValueError, "n_params must be a positive int"),
    (lambda: nnrnn.create("nnrnn", 3, 4).recurrent_matrix(layer=3), ValueError, "layer must be in [0, 1)"),
    # devices: a ValueError naming the tensor and both devices (also a RuntimeError, as torch.nn.RNN raises)
    *[(lambda name=name: nnrnn.create(name, 3, 4)(torch.randn(5, 2, 3, device="meta")), ValueError,
       "input is on device meta but the model's parameters on cpu") for name in nnrnn.MODELS],
    *[(lambda name=name: nnrnn.create(name, 3, 4, device="meta")(torch.randn(5, 2, 3)), RuntimeError,
       "input is on device cpu but the model's parameters on meta") for name in ("nnrnn", "lstm")],
    (lambda: nnrnn.create("nnrnn", 3, 4)(torch.randn(5, 2, 3), torch.zeros(1, 2, 4, device="meta")), ValueError,
     "hx is on device meta but input on cpu"),
    (lambda: nnrnn.create("lstm", 3, 4)(torch.randn(5, 2, 3), (torch.zeros(1, 2, 4),
                                                               torch.zeros(1, 2, 4, device="meta"))),
     ValueError, "c_0 is on device meta but input on cpu"),
    # integer dtypes: a TypeError naming the tensor and saying floating point
    (lambda: nnrnn.create("rnn", 3, 4)(torch.ones(5, 2, 3, dtype=torch.int32)), TypeError,
     "input must be a floating-point tensor; got dtype torch.int32"),
    (lambda: nnrnn.create("nnrnn", 3, 4)(torch.randn(5, 2, 3), torch.zeros(1, 2, 4, dtype=torch.long)), TypeError,
     "hx must be a floating-point tensor (the model's dtype torch.float32); got dtype torch.int64"),
    (lambda: nnrnn.create("lstm", 3, 4)(torch.randn(5, 2, 3), (torch.zeros(1, 2, 4, dtype=torch.long),) * 2),
     TypeError, "h_0 must be a floating-point tensor (the model's dtype torch.float32); got dtype torch.int64"),
    # param_groups wants the module, not its parameters
    (lambda: nnrnn.param_groups(nnrnn.create("nnrnn", 3, 4).parameters(), lr=1e-3, lr_orth=1e-3), TypeError,
     "model must be the torch.nn.Module itself"),
    (lambda: nnrnn.param_groups(list(nnrnn.create("nnrnn", 3, 4).parameters()), 1e-3, 1e-3), TypeError,
     "got list: pass the module, not model.parameters()"),
    # the penalty's weights are floats: a tensor is refused, not read
    (lambda: nnrnn.create("nnrnn", 3, 4).regularization(torch.tensor(0.1), 0.0), TypeError,
     "delta must be a float, not a tensor; got tensor(0.1000): pass float(delta)"),
    (lambda: nnrnn.create("nnrnn", 3, 4).regularization(0.1, torch.tensor(1e-6)), TypeError,
     "t_decay must be a float, not a tensor"),
    (lambda: nnrnn.create("rnn", 3, 4).regularization(torch.tensor(0.1)), TypeError, "delta must be a float"),
    (lambda: nnrnn.create("lstm", 3, 4).regularization(0.0, "1e-6"), ValueError,
     "t_decay must be zero or a positive finite number; got '1e-6'"),
    # what torch.nn.RNN refuses, with torch's type (docs/layers.md; tests/models/test_dropin.py generates the rest)
    *[(lambda name=name: nnrnn.create(name, 3, 4)(torch.randn(0, 2, 3)), RuntimeError,
       "input must have at least one time step") for name in nnrnn.MODELS],
    *[(lambda name=name: nnrnn.create(name, 3, 4, dtype=torch.long), RuntimeError,
       "dtype must be a floating-point dtype such as torch.float32; got torch.int64") for name in nnrnn.MODELS],
    (lambda: nnrnn.create("nnrnn", 3, 4, dtype=torch.complex64), TypeError, "dtype must be a real floating-point"),
    (lambda: nnrnn.create("gru", 3, 4, bidirectional=1), TypeError, "bidirectional must be True or False; got 1"),
    (lambda: nnrnn.create("nnrnn", 3, 4, dropout=None), TypeError, "dropout must be a number in [0, 1]; got None"),
    (lambda: nnrnn.create("nnrnn", 3, 4)(torch.randn(5, 2, 3), torch.zeros(4)), RuntimeError,
     "hx must be 3-d for batched 3-d input"),
    (lambda: nnrnn.create("gru", 3, 4)(torch.randn(5, 2, 3), torch.zeros(1, 2, 4, dtype=torch.float64)),
     RuntimeError, "hx must have the model's dtype torch.float32; got torch.float64"),
    (lambda: setattr(nnrnn.create("nnrnn", 3, 4), "weight_hh_l0", torch.nn.Parameter(torch.eye(4))), ValueError,
     "a Schur-form weight cannot be assigned directly"),
]


@pytest.mark.parametrize("call, error, message", API_CASES, ids=[m for _, _, m in API_CASES])
def test_library_errors_name_the_argument(call, error, message):
    with pytest.raises(error) as raised:
        call()
    assert message in str(raised.value)


@pytest.mark.parametrize("name", list(nnrnn.MODELS))
def test_an_empty_batch_gives_empty_outputs_like_torch(name):
    model = nnrnn.create(name, 3, 4, num_layers=2)
    out, h = model(torch.randn(6, 0, 3))
    width = getattr(model, "output_size", 4)  # the complex nnRNN's [Re h, Im h] is 2N wide
    ref_out, ref_h = torch.nn.RNN(3, width, 2)(torch.randn(6, 0, 3))
    h = h[0] if isinstance(h, tuple) else h
    # the LRU's state is its own width, [Re s, Im s]
    assert out.shape == ref_out.shape and h.shape == (*ref_h.shape[:2], getattr(model, "state_width", width))


# --------------------------------------------------------------------------- random bad combinations

GOOD = {"--steps": ["2"], "--hidden": ["6", "8"], "--seed": ["0", "3"], "--lr": ["1e-3"], "--batch-size": ["2"],
        "--T": ["3"], "--model": ["nnrnn", "exprnn", "rnn", "lstm", "eurnn", "rnn-orth"]}
BAD = {"--steps": ["0", "-2", "x"], "--hidden": ["0", "-1", "2.5"], "--seed": ["-1", "1e3"],
       "--lr": ["0", "inf", "nan", "-3"], "--lr-orth": ["inf", "0"], "--alpha": ["1", "2", "nan"],
       "--delta": ["-1", "inf"], "--t-decay": ["nan"], "--state-noise": ["-0.5", "nan"],
       "--clip": ["-1", "inf"], "--batch-size": ["0"], "--T": ["0", "-4"], "--epochs": ["3"],
       "--device": ["cuda", "gpu", "cuda:9"], "--input-init": ["normal"], "--readout-bias-init": ["uniform:x"],
       "--init": ["orthogonal"], "--model": ["rwkv"], "--max-bad-steps": ["0"], "--log-every": ["-1"],
       "--embedding": ["3"], "--preset": ["nope"]}


@st.composite
def bad_command(draw):
    bad = draw(st.lists(st.sampled_from(sorted(BAD)), min_size=1, max_size=3, unique=True))
    good = draw(st.lists(st.sampled_from(sorted(set(GOOD) - set(bad))), max_size=4, unique=True))
    argv = ["train", "copy"]
    for flag in good:
        argv += [flag, draw(st.sampled_from(GOOD[flag]))]
    for flag in bad:
        argv += [flag, draw(st.sampled_from(BAD[flag]))]
    return argv, draw(st.booleans()), draw(st.booleans())


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=bad_command())
def test_random_bad_combinations_exit_2_and_touch_no_run(case, capsys, finished_run):
    argv, use_existing, resume = case
    before = snapshot(finished_run)
    if use_existing:
        argv += ["--out", str(finished_run)] + (["--resume"] if resume else [])
    else:
        argv += ["--out", str(finished_run.parent / "never")]
    code, err = run_cli(capsys, *argv, "--no-progress")
    one_line(code, err)
    assert snapshot(finished_run) == before
    assert not (finished_run.parent / "never" / "config.json").exists()


# --------------------------------------------------------------------------- analysis and theory outputs

THEORY_TOO_LARGE = [
    (["theory", "table3", "--n", "100000"], "needs about 1,192.1 GiB of memory, more than the theory commands' limit"),
    (["theory", "table3", "--n", "1"], "--n must be >= 2"),
    (["theory", "prop2", "--n", "5000", "--t-max", "1000"], "choose --n values <= 811"),
    (["theory", "prop2", "--n", "100"], "the entries of A^t could pass float64's range"),
    (["theory", "prop2", "--t-max", str(10 ** 13)], "--t-max must be at most 1e+12"),
    (["theory", "prop2", "--x", "nan"], "--x must be a non-zero finite number"),
    (["theory", "prop2", "--x", "0"], "--x must be a non-zero finite number"),
    (["theory", "prop2", "--n", "1"], "--n values must be >= 2"),
    (["theory", "figure1", "--n-init", str(10 ** 9)], "choose --n-init <= 990,536"),
    (["theory", "figure1", "--n-init", "1"], "--n-init must be >= 2"),
    (["theory", "figure1", "--seed", "-1"], "--seed must be >= 0"),
]


@pytest.mark.parametrize("argv, expected", THEORY_TOO_LARGE, ids=[" ".join(a) for a, _ in THEORY_TOO_LARGE])
def test_theory_sizes_are_refused_before_anything_is_allocated_or_written(argv, expected, capsys, tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    one_line(*run_cli(capsys, *argv), expected)
    assert list(tmp_path.iterdir()) == []  # not even the default figures/theory folder


@pytest.mark.parametrize("argv", [["theory", "figure1", "--n-init", "2"],
                                  ["theory", "prop2", "--n", "2", "--t-max", "10"]],
                         ids=["figure1", "prop2"])
def test_theory_never_replaces_a_file_it_did_not_write(argv, capsys, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("figure1b.png", "proposition2.png"):
        (mine / name).write_text("my own figure")
    before = snapshot(mine)
    one_line(*run_cli(capsys, *argv, "--out", mine), "already holds files nnrnn did not write",
                    "figure1b.png, proposition2.png")
    assert snapshot(mine) == before and not (mine / ".nnrnn-analysis").exists()
    (tmp_path / "afile").write_text("mine")
    one_line(*run_cli(capsys, *argv, "--out", tmp_path / "afile"), "is a file, not a folder")
    one_line(*run_cli(capsys, *argv, "--out", tmp_path / "afile" / "sub"), "which is a file, not a folder")
    assert (tmp_path / "afile").read_text() == "mine"


def test_analyze_never_replaces_a_file_it_did_not_write(capsys, tmp_path, finished_run):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "summary.json").write_text('{"my": "results"}')
    before, run_before = snapshot(mine), snapshot(finished_run)
    one_line(*run_cli(capsys, "analyze", finished_run, "--out", mine, "--no-gradients"),
                    f"--out {mine} already holds files nnrnn did not write (summary.json)")
    assert snapshot(mine) == before
    # the run folder itself is not an analysis folder
    one_line(*run_cli(capsys, "analyze", finished_run, "--out", finished_run, "--no-gradients"),
                    "already holds files nnrnn did not write")
    assert snapshot(finished_run) == run_before
    (tmp_path / "afile").write_text("mine")
    one_line(*run_cli(capsys, "analyze", finished_run, "--out", tmp_path / "afile"), "is a file, not a folder")
    one_line(*run_cli(capsys, "analyze", finished_run, "--out", tmp_path / "afile" / "x"),
                    "which is a file, not a folder")
    # its own folder (marked) it writes, and writes again
    for _ in range(2):
        assert cli.main(["analyze", str(finished_run), "--out", str(tmp_path / "ours"), "--no-gradients"]) == 0
    capsys.readouterr()
    assert (tmp_path / "ours" / ".nnrnn-analysis").is_file() and (tmp_path / "ours" / "summary.json").is_file()


def test_penalty_weights_take_any_real_number_but_a_tensor():
    import numpy as np
    model = nnrnn.create("nnrnn", 3, 4)
    reference = model.regularization(0.25, 1e-3)
    for delta, t_decay in ((np.float32(0.25), np.float64(1e-3)), (0.25, 1e-3), (1 / 4, np.float32(1e-3))):
        torch.testing.assert_close(model.regularization(delta, t_decay), reference)


# --------------------------------------------------------------------------- random bad download/analysis/theory values

def _number_text(value) -> str:
    return repr(value) if isinstance(value, float) else str(value)


NON_NUMBERS = st.sampled_from(["x", "", "1,5", "ten", "0x10", "1e", "--"])
BAD_SECONDS = st.one_of(st.floats(max_value=0, allow_nan=False).map(_number_text),
                        st.sampled_from(["nan", "inf", "-inf", "0", "-0", "0.0"]), NON_NUMBERS)


def _bad_ints(low: int, high: int | None = None):
    """Integers outside [low, high] (as text), or text that is no integer."""
    outside = [st.integers(max_value=low - 1).map(str)]
    if high is not None:
        outside.append(st.integers(min_value=high + 1, max_value=10 ** 30).map(str))
    return st.one_of(*outside, st.sampled_from(["1.5", "1e3", "nan"]), NON_NUMBERS)


@st.composite
def bad_edge_command(draw):
    """(argv, needs_run): a data/theory/analyze command with one bad value; analyze's --out is filled in later."""
    kind = draw(st.sampled_from(["fetch", "table3", "figure1", "prop2", "theory-out", "analyze-out"]))
    if kind == "fetch":
        option = draw(st.sampled_from(["--timeout", "--deadline"]))
        return ["data", "fetch", draw(st.sampled_from(["mnist", "ptb"])), "--dest", "DEST",
                "--mirror", "http://127.0.0.1:9/", f"{option}={draw(BAD_SECONDS)}"], None
    if kind == "table3":
        return ["theory", "table3", f"--n={draw(_bad_ints(2, 5792))}"], None
    if kind == "figure1":
        option, values = draw(st.sampled_from([("--n-init", _bad_ints(2, 990_536)), ("--seed", _bad_ints(0))]))
        return ["theory", "figure1", f"{option}={draw(values)}", "--out", "OUT"], None
    if kind == "prop2":
        option, values = draw(st.sampled_from([
            ("--t-max", _bad_ints(10, 10 ** 12)),
            ("--x", st.one_of(st.sampled_from(["0", "-0.0", "nan", "inf", "-inf"]), NON_NUMBERS)),
            ("--n", _bad_ints(2, 811))]))
        return ["theory", "prop2", f"{option}={draw(values)}", "--out", "OUT"], None
    if kind == "theory-out":
        return ["theory", draw(st.sampled_from(["figure1", "prop2"])), "--out", "WHERE", "--n-init=2"], "theory"
    return ["analyze", "RUN", "--out", "WHERE", "--no-gradients"], "analyze"


FOREIGN = st.lists(st.sampled_from(["summary.json", "figure1b.png", "figure1c.png", "proposition2.png",
                                    "spectrum.png", "notes.txt", ".hidden"]), min_size=1, max_size=3, unique=True)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=bad_edge_command(), where=st.sampled_from(["foreign", "file", "inside-file"]), foreign=FOREIGN)
def test_random_bad_edge_values_exit_2_and_write_nothing(case, where, foreign, capsys, finished_run, tmp_path,
                                                        monkeypatch):
    """data fetch, theory and analyze: a bad value or an --out nnrnn may not write exits 2 with one line on
    stderr and no traceback, and writes, creates or replaces nothing (not even the default figures/theory)."""
    argv, out_kind = case
    work = tmp_path / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    monkeypatch.chdir(work)
    mine = work / "mine"
    mine.mkdir()
    for name in foreign:
        (mine / name).write_text(f"my own {name}")
    (work / "afile").write_text("mine")
    target = {"foreign": mine, "file": work / "afile", "inside-file": work / "afile" / "sub"}[where]
    if out_kind == "theory" and argv[1] == "prop2":
        argv = argv[:-1] + ["--n=2", "--t-max=10"]
    replace = {"DEST": str(work / "dest"), "OUT": str(work / "out"), "WHERE": str(target), "RUN": str(finished_run)}
    argv = [replace.get(a, a) for a in argv]
    before, run_before = snapshot(work), snapshot(finished_run)
    one_line(*run_cli(capsys, *argv))
    assert snapshot(work) == before and snapshot(finished_run) == run_before
    assert sorted(p.name for p in work.iterdir()) == ["afile", "mine"]  # no dest, out or figures/theory folder
    assert not (mine / ".nnrnn-analysis").exists()


# --------------------------------------------------------------------------- faults: a full disk

def _disk_full_after(monkeypatch, module, name, calls: int):
    """``module.name`` raises ENOSPC, as a full disk does, from its ``calls``-th call on."""
    import errno
    real, seen = getattr(module, name), []

    def full(*args, **kwargs):
        seen.append(1)
        if len(seen) >= calls:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, full)


def test_a_full_disk_while_training_is_one_line_the_first_failure_and_resumable(capsys, tmp_path, monkeypatch):
    """The checkpoint's clear line used to be masked by the curves' plot in the loop's cleanup (three chained
    tracebacks, exit 1); the run continues with --resume once there is space."""
    import errno
    import matplotlib.figure
    run = tmp_path / "r"
    with monkeypatch.context() as m:
        real_fsync = os.fsync

        def full_for_checkpoints(fd):  # a checkpoint's temporary file (.last.pt.XXXX.tmp) cannot be written
            if ".pt." in os.readlink(f"/proc/self/fd/{fd}"):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_fsync(fd)
        m.setattr(os, "fsync", full_for_checkpoints)
        _disk_full_after(m, matplotlib.figure.Figure, "savefig", 1)  # and the curves
        code, err = run_cli(capsys, "train", "copy", "--steps", "4", "--eval-every", "2", "--out", run, *TINY)
    one_line(code, err, "cannot write", ".pt (No space left on device)", "--resume")
    assert not list(run.rglob("*.tmp*"))  # no temporary file left behind
    assert cli.main(["train", "copy", "--steps", "4", "--eval-every", "2", "--out", str(run), "--resume", *TINY]) == 0
    assert (run / "checkpoints" / "last.pt").is_file() and (run / "curves.png").is_file()


def test_a_full_disk_at_the_curves_plot_is_one_line(capsys, tmp_path, monkeypatch):
    import matplotlib.figure
    _disk_full_after(monkeypatch, matplotlib.figure.Figure, "savefig", 1)
    code, err = run_cli(capsys, "train", "copy", "--steps", "2", "--out", tmp_path / "r", *TINY)
    one_line(code, err, "cannot write", "curves.png", "No space left on device")
    assert not (tmp_path / "r" / "curves.png").exists()  # no half-written figure



@pytest.mark.parametrize("value", ["abc", "", "0", "-2", "1.5"])
def test_a_world_size_that_is_no_number_of_processes_is_one_line(value, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", value)
    one_line(*run_cli(capsys, "train", "copy", "--steps", "1", "--out", tmp_path / "r", *TINY),
             f"WORLD_SIZE={value!r} is not a number of processes")
    assert not (tmp_path / "r").exists()


def test_cpu_0_is_the_cpu(capsys, tmp_path):
    """--device cpu:0 passed the option check, then every checkpoint read failed (torch.load's map_location
    knows the CPU only as "cpu"), so the run ended saying its best.pt was unreadable."""
    assert cli.main(["train", "copy", "--steps", "2", "--device", "cpu:0", "--out", str(tmp_path / "r"), *TINY]) == 0
    assert cli.main(["train", "copy", "--steps", "3", "--device", "cpu:0", "--out", str(tmp_path / "r"), "--resume",
                     *TINY]) == 0
    assert cli.main(["eval", str(tmp_path / "r")]) == 0


@pytest.mark.parametrize("model", ["lru", "mingru", "cornn", "lem"])
def test_analyze_of_a_model_without_a_recurrent_matrix_is_refused_in_one_line(model, capsys, tmp_path):
    """It printed "analysed", then TypeError: no recurrent layer found."""
    run = tmp_path / model
    assert cli.main(["train", "copy", "--model", model, "--steps", "2", "--out", str(run), *TINY]) == 0
    capsys.readouterr()
    code = cli.main(["analyze", str(run), "--no-gradients"])
    out, err = capsys.readouterr()
    one_line(code, err, f"holds a {model} network, which has none", "analyze a run of", "nnlru")
    assert "analysed" not in out and not (run / "analysis").exists() and not (tmp_path / "analysis").exists()


def test_eval_and_analyze_refuse_another_runs_checkpoint_as_resume_does(capsys, tmp_path, finished_run):
    """An lstm's best.pt placed in an nnrnn run's folder was scored, exit 0, where --resume refuses the swap."""
    other = tmp_path / "other"
    assert cli.main(["train", "copy", "--model", "lstm", "--steps", "2", "--out", str(other), *TINY]) == 0
    swapped = tmp_path / "swapped"
    shutil.copytree(finished_run, swapped)
    for name in ("best.pt", "last.pt"):
        shutil.copy(other / "checkpoints" / name, swapped / "checkpoints" / name)
    capsys.readouterr()
    before = snapshot(swapped)
    for argv in (["eval", swapped], ["eval", swapped / "checkpoints" / "last.pt"],
                 ["analyze", swapped, "--no-gradients", "--out", tmp_path / "analysis"]):
        one_line(*run_cli(capsys, *argv), "is another run's checkpoint, not this run's",
                 "--model 'lstm' there, 'nnrnn' in config.json")
    one_line(*run_cli(capsys, "train", "copy", "--out", swapped, "--resume", "--steps", "6", *TINY),
             "is another run's checkpoint")
    assert snapshot(swapped) == before and not (tmp_path / "analysis").exists()
    assert cli.main(["eval", str(other)]) == 0  # in its own folder it is scored


def test_a_full_disk_during_analyze_is_one_line_and_the_run_is_unchanged(capsys, tmp_path, monkeypatch,
                                                                          finished_run):
    import matplotlib.figure
    _disk_full_after(monkeypatch, matplotlib.figure.Figure, "savefig", 2)  # the first figure written, not the next
    before = snapshot(finished_run)
    one_line(*run_cli(capsys, "analyze", finished_run, "--out", tmp_path / "analysis", "--no-gradients"),
             f"cannot write the analysis into {tmp_path / 'analysis'} (No space left on device)")
    assert snapshot(finished_run) == before


def test_a_full_disk_during_a_sweep_is_one_line(capsys, tmp_path, monkeypatch):
    """A trial's run that cannot write its checkpoint ended the sweep with Optuna's logged traceback."""
    import errno
    real_fsync = os.fsync

    def full_for_checkpoints(fd):
        if ".pt." in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)
    monkeypatch.setattr(os, "fsync", full_for_checkpoints)
    code, err = run_cli(capsys, "sweep", "copy", "--model", "rnn", "--trials", "2", "--steps", "4", "--eval-every",
                        "2", "--hidden", "8", "--T", "3", "--batch-size", "2", "--out", tmp_path / "sweep")
    one_line(code, err, "cannot write", ".pt (No space left on device)")


def test_a_sweep_storage_that_cannot_be_written_is_one_line(capsys, tmp_path, monkeypatch):
    import optuna
    from nnrnn.experiments.planning import sweep

    def full(*args, **kwargs):
        raise optuna.exceptions.StorageInternalError("(sqlite3.OperationalError) database or disk is full")
    real = sweep._create_study

    def study_that_cannot_store(*args, **kwargs):
        made = real(*args, **kwargs)
        monkeypatch.setattr(made._storage, "create_new_trial", full)
        return made
    monkeypatch.setattr(sweep, "_create_study", study_that_cannot_store)
    code, err = run_cli(capsys, "sweep", "copy", "--model", "rnn", "--trials", "1", "--steps", "2", "--hidden", "8",
                        "--T", "3", "--batch-size", "2", "--out", tmp_path / "sweep")
    one_line(code, err, "cannot write the study's storage", "database or disk is full", "run the same sweep again")
