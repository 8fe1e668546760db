"""nnrnn.experiments.planning's searches (sweep, searching, objective, storage, summary): Optuna searches whose
trials are ordinary run folders.

Tiny runs (copy task, hidden 8, T 5, a few dozen updates) keep the whole file
to well under a minute on two cores.
"""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from helpers import UNDRAWN, fake_ptb
from hypothesis import given, settings
from hypothesis import strategies as st

from nnrnn.errors import OptionError, TrainingDiverged, UserError
from nnrnn.experiments.planning.searching import (ADAM_LR_RANGE, ALPHAS, DELTAS, EQUAL, EQUAL_LR_RANGE, INITS,
                                                  LR_ORTH_RANGE, LR_ORTH_RATIO, LR_RANGE, OWN_OPTIONS, T_DECAYS,
                                                  curve_area, equal_space, held_to, inside, published, search_space,
                                                  tie_rates)
from nnrnn.experiments.planning.storage import default_storage, open_storage
from nnrnn.experiments.planning.summary import summary
from nnrnn.experiments.planning.sweep import run_sweep
from nnrnn import presets
from nnrnn.experiments import grids
from nnrnn.models import model_class
from nnrnn.training.config import resolve_config

REPO = Path(__file__).resolve().parents[2]
TINY = {"hidden": 8, "T": 5, "steps": 20, "eval_every": 5}
TINIER = {"hidden": 8, "T": 5, "steps": 10, "eval_every": 5}


pytestmark = pytest.mark.usefixtures("undrawn_figures")  # what is trained and written, not the drawing


def states(study) -> list[str]:
    return [t.state.name for t in study.get_trials(deepcopy=False)]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A 3-trial nnRNN sweep on the copy task in the default SQLite storage."""
    out = tmp_path_factory.mktemp("sweep") / "copy-nnrnn"
    study = run_sweep("copy", "nnrnn", 3, out=str(out), train_options=TINY)
    return out, study


# --------------------------------------------------------------------------- search space

def test_search_space_follows_the_paper_per_model():
    space = search_space("nnrnn")
    assert list(space) == ["lr", "lr_orth", "alpha", "delta", "t_decay", "init"]
    assert (space["lr"].low, space["lr"].high, space["lr"].log) == (1e-5, 5e-3, True) == (*LR_RANGE, True)
    assert (space["lr_orth"].low, space["lr_orth"].high) == LR_ORTH_RANGE == (1e-5, 1e-4)
    assert tuple(space["alpha"].choices) == ALPHAS == (0.5, 0.9, 0.99)
    assert tuple(space["delta"].choices) == DELTAS == (0, 1e-4, 1e-3, 1e-2, 0.1, 0.15, 1, 10)
    assert tuple(space["t_decay"].choices) == T_DECAYS == (0, 1e-6, 1e-5, 1e-4)
    assert tuple(space["init"].choices) == INITS
    assert list(search_space("exprnn")) == ["lr", "lr_orth", "alpha", "init"]
    assert list(search_space("rnn-orth")) == ["lr", "alpha", "init"]
    for model in ("rnn", "eurnn", "lstm"):
        assert list(search_space(model)) == ["lr", "alpha"]
    assert list(search_space("nnrnn", fixed=["lr", "init"], optimizer="adam")) == ["lr_orth", "delta", "t_decay"]
    assert list(search_space("gru")) == ["lr", "alpha"]
    assert list(search_space("nngru")) == ["lr", "lr_orth", "alpha", "delta", "t_decay", "init"]
    assert list(search_space("nnrnn-complex")) == ["lr", "lr_orth", "alpha", "delta", "t_decay"]


def test_search_space_adds_each_models_own_options_and_adams_wider_rates():
    cornn = search_space("cornn", optimizer="adam")
    assert list(cornn) == ["lr", "dt", "gamma", "epsilon"]
    # the rates coRNN's and LEM's code train psMNIST with (0.0054, 0.0073) lie inside Adam's range
    assert (cornn["lr"].low, cornn["lr"].high) == ADAM_LR_RANGE and cornn["lr"].high > 0.0073
    assert cornn["dt"].log and cornn["dt"].low <= 0.042 and cornn["dt"].high >= 0.076
    assert cornn["gamma"].low <= 0.4 and cornn["gamma"].high >= 66
    assert list(search_space("lem", optimizer="adam")) == ["lr", "dt"]
    lru = search_space("lru")
    assert list(lru) == ["lr", "alpha", "r_min", "r_max"]
    assert all(low < high for low in lru["r_min"].choices for high in lru["r_max"].choices)
    assert list(search_space("mingru")) == ["lr", "alpha"]
    # an option the user gives is held, not searched
    assert list(search_space("cornn", fixed=["dt", "gamma"], optimizer="adam")) == ["lr", "epsilon"]
    with pytest.raises(ValueError, match="choose one of"):
        search_space("rwkv")


# --------------------------------------------------------------------------- one process

def test_sweep_makes_run_folders_and_a_sqlite_study(sweep):
    out, study = sweep
    assert (out / "study.db").is_file()
    loaded = optuna.load_study(study_name="copy-nnrnn", storage=f"sqlite:///{out / 'study.db'}")
    trials = loaded.get_trials()[:3]  # a later test adds trials to this study
    assert [t.number for t in trials] == [0, 1, 2]
    assert loaded.direction == optuna.study.StudyDirection.MINIMIZE  # copy monitors the validation loss
    assert sorted(p.name for p in out.glob("trial-*"))[:3] == ["trial-0000", "trial-0001", "trial-0002"]
    for t in trials:
        run = out / f"trial-{t.number:04d}"
        assert Path(t.user_attrs["run"]) == run.resolve()
        config = json.loads((run / "config.json").read_text())
        assert (config["task"], config["model"], config["hidden"], config["progress"]) == ("copy", "nnrnn", 8, False)
        for name, value in t.params.items():
            assert config[name] == value
        assert (run / "checkpoints" / "last.pt").is_file()
        valid = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        valid = [r for r in valid if r["split"] == "valid"]
        assert [r["step"] for r in valid] == [5, 10, 15, 20]
        if t.state.name == "COMPLETE":  # the value is the best validation loss of the run
            assert t.value == pytest.approx(min(r["loss"] for r in valid))
            assert t.intermediate_values == {r["step"]: pytest.approx(r["loss"]) for r in valid}
    assert set(states(loaded)) <= {"COMPLETE", "PRUNED"}


def test_summary_lists_the_best_first(sweep):
    out, study = sweep
    text = io.StringIO()
    shown = summary(out=str(out), top=2, file=text)
    complete = sorted((t for t in study.get_trials() if t.state.name == "COMPLETE"), key=lambda t: t.value)
    assert len(shown) == 2 and shown[0].number == complete[0].number
    lines = text.getvalue().splitlines()
    assert "copy-nnrnn" in lines[0] and "minimize valid loss" in lines[0]
    assert lines[1].split()[:4] == ["rank", "trial", "state", "valid"]
    best = lines[2].split()
    assert best[:3] == ["1", str(complete[0].number), "COMPLETE"]
    assert float(best[3]) == pytest.approx(complete[0].value, rel=1e-5)
    assert best[-1].endswith(f"trial-{complete[0].number:04d}")
    assert len(lines) == 4  # header, column names, top 2


def test_a_second_run_joins_the_same_study(sweep, tmp_path):
    out, _ = sweep
    storage = f"sqlite:///{out / 'study.db'}"
    study = run_sweep("copy", "nnrnn", 1, storage=storage, study="copy-nnrnn", out=str(out),
                      train_options=TINY)
    assert [t.number for t in study.get_trials()] == [0, 1, 2, 3]
    assert sorted(p.name for p in out.glob("trial-*"))[-1] == "trial-0003"
    # a study is tied to its task and model
    with pytest.raises(UserError, match="searches copy/nnrnn"):
        run_sweep("copy", "rnn", 1, storage=storage, study="copy-nnrnn", out=str(tmp_path), train_options=TINIER)
    # and to its budget: trials of another length were ranked together with the first ones, no warning
    with pytest.raises(UserError, match=f"holds trials of {TINY['steps']} updates each, not {TINIER['steps']}"):
        run_sweep("copy", "nnrnn", 1, storage=storage, study="copy-nnrnn", out=str(out), train_options=TINIER)
    assert len(study.get_trials()) == 4  # no trial added


# --------------------------------------------------------------------------- several processes

# its trials' curves are not drawn (helpers.UNDRAWN): what is checked is the shared study and its run folders;
# and, as conftest does for the tests' process, what its imports made is frozen out of optuna's collection after
# each trial (gc.freeze)
WORKER = UNDRAWN + """
import gc
import sys
from nnrnn.experiments.planning.sweep import run_sweep
gc.freeze()
for storage, out in zip(sys.argv[1::2], sys.argv[2::2]):
    run_sweep("copy", "rnn", 2, storage=storage, study="shared", out=out,
              train_options=dict(hidden=8, T=5, steps=5, eval_every=5))
"""


@pytest.mark.subprocess
def test_concurrent_processes_share_one_study(tmp_path):
    """Two processes, started together, each run 2 trials on a shared journal file, then on a
    shared SQLite file: each study ends with 4 distinct trials and 4 run folders."""
    storages = {"journal": f"journal:{tmp_path / 'study.log'}", "sqlite": f"sqlite:///{tmp_path / 'study.db'}"}
    argv = [a for kind, url in storages.items() for a in (url, str(tmp_path / kind))]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO / "src")}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, *argv], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    logs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), logs
    for kind, storage in storages.items():
        study = optuna.load_study(study_name="shared", storage=open_storage(storage))
        numbers = [t.number for t in study.get_trials()]
        assert sorted(numbers) == [0, 1, 2, 3], kind  # 2 + 2 trials, none lost, none repeated
        assert set(states(study)) <= {"COMPLETE", "PRUNED"}
        assert sorted(p.name for p in (tmp_path / kind).glob("trial-*")) == [f"trial-{i:04d}" for i in range(4)]
        assert len({t.user_attrs["run"] for t in study.get_trials()}) == 4
        text = io.StringIO()
        assert len(summary(storage=storage, study="shared", file=text)) == 4
        assert "4 trials" in text.getvalue()


# --------------------------------------------------------------------------- pruning and failures

class AlwaysPrune(optuna.pruners.BasePruner):
    def prune(self, study, trial) -> bool:
        return True


def test_pruned_trials_stop_at_the_first_validation(tmp_path):
    study = run_sweep("copy", "rnn", 2, out=str(tmp_path), train_options=TINY, pruner=AlwaysPrune())
    assert states(study) == ["PRUNED", "PRUNED"]
    for t in study.get_trials():
        assert t.user_attrs["stopped"] == "pruned"
        assert list(t.intermediate_values) == [5]
        run = Path(t.user_attrs["run"])
        steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
        assert max(steps) == 5  # training ended at the pruning point ...
        assert (run / "checkpoints" / "last.pt").is_file()  # ... after writing its checkpoint
    text = io.StringIO()
    assert len(summary(out=str(tmp_path), file=text)) == 2
    assert "PRUNED" in text.getvalue()


def test_divergence_prunes_the_trial_and_the_sweep_goes_on(tmp_path, monkeypatch):
    import nnrnn.experiments.planning.objective
    calls = []

    def diverging_train(config, resume=False, on_eval=None):
        calls.append(config["out"])
        if len(calls) == 1:
            raise TrainingDiverged("training diverged: 20 non-finite losses or gradients in a row at update 7; "
                                   "lower --lr")
        on_eval(5, {"step": 5, "split": "valid", "loss": 0.5, "accuracy": 0.1})
        return {"valid": {"loss": 0.5}}

    monkeypatch.setattr(nnrnn.experiments.planning.objective, "train", diverging_train)
    study = run_sweep("copy", "rnn", 2, out=str(tmp_path), train_options=TINY)
    first, second = study.get_trials()
    assert first.state.name == "PRUNED" and first.user_attrs["stopped"] == "diverged"
    assert first.user_attrs["reason"].startswith("training diverged")
    assert second.state.name == "COMPLETE" and second.value == 0.5
    text = io.StringIO()
    summary(out=str(tmp_path), file=text)
    assert "PRUNED (diverged)" in text.getvalue()

    # any other user error stops the sweep: it would recur in every trial
    monkeypatch.setattr(nnrnn.experiments.planning.objective, "train",
                        lambda *a, **k: (_ for _ in ()).throw(UserError("no data files")))
    with pytest.raises(UserError, match="no data files"):
        run_sweep("copy", "rnn", 2, out=str(tmp_path), train_options=TINY)
    assert states(optuna.load_study(study_name="copy-rnn", storage=f"sqlite:///{tmp_path / 'study.db'}")) == \
        ["PRUNED", "COMPLETE", "FAIL"]


def test_an_interrupted_trial_fails_and_ends_the_sweep(tmp_path, monkeypatch):
    import signal

    import nnrnn.experiments.planning.objective

    def interrupted(config, resume=False, on_eval=None):
        raise nnrnn.errors.Interrupted(signal.SIGTERM, Path(config["out"]) / "checkpoints" / "last.pt")

    monkeypatch.setattr(nnrnn.experiments.planning.objective, "train", interrupted)
    import logging
    warned = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warned.append(record.getMessage())
    logging.getLogger("optuna").addHandler(handler)
    verbosity = optuna.logging.get_verbosity()
    try:
        with pytest.raises(nnrnn.errors.Interrupted):
            run_sweep("copy", "rnn", 3, out=str(tmp_path), train_options=TINY)
    finally:
        logging.getLogger("optuna").removeHandler(handler)
    (trial,) = optuna.load_study(study_name="copy-rnn", storage=f"sqlite:///{tmp_path / 'study.db'}").get_trials()
    assert trial.state.name == "FAIL" and trial.user_attrs["stopped"] == "interrupted"
    assert warned == []  # no "the value nan is not acceptable", which would read as a diverged run
    assert optuna.logging.get_verbosity() == verbosity  # put back for what runs next


# --------------------------------------------------------------------------- bad inputs and the CLI

@pytest.mark.parametrize("trials", [0, -3, True, 2.5])
def test_trials_must_be_positive(tmp_path, trials):
    with pytest.raises(ValueError, match="trials must be a positive integer"):
        run_sweep("copy", "nnrnn", trials, out=str(tmp_path / "s"))
    assert not (tmp_path / "s").exists()


def test_bad_names_and_storages_fail_in_one_sentence(tmp_path):
    with pytest.raises(ValueError, match="unknown model 'rwkv'; choose one of"):
        run_sweep("copy", "rwkv", 1, out=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="unknown task 'cifar'; choose one of"):
        run_sweep("cifar", "nnrnn", 1, out=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="unknown option"):
        run_sweep("copy", "nnrnn", 1, out=str(tmp_path / "a"), train_options={"hiden": 8})
    assert not (tmp_path / "a").exists()
    for url in ("postgresql://nobody:secret@127.0.0.1:1/none", "nosuchdb://x/y"):
        with pytest.raises(UserError, match="cannot open the storage") as info:
            run_sweep("copy", "nnrnn", 1, storage=url, out=str(tmp_path / "b"), train_options=TINY)
        assert "secret" not in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(UserError, match="no study database"):
        summary(out=str(tmp_path / "nothing"))
    with pytest.raises(UserError, match="no study journal"):
        summary(storage=f"journal:{tmp_path / 'none.log'}")


# characters a URL, a glob, a format string or a shell gives a meaning to
LITERAL = st.lists(st.sampled_from([*"ab?#%&=;:'\" *[]{}$~@!+,", "%41", "%3F", "%%", "{0}", "%s"]), min_size=1,
                  max_size=6).map("".join).filter(lambda name: name.strip(" ") == name)


@settings(max_examples=100, deadline=None)
@given(folder=LITERAL)
def test_the_default_storage_names_the_sweeps_folder_literally(folder):
    """SQLAlchemy, which opens the storage, reads back OUT/study.db itself from the default URL, whatever URL,
    glob or format characters OUT holds."""
    from sqlalchemy.engine import make_url
    out = Path("/tmp") / folder / "sweep"
    assert make_url(default_storage(out)).database == str(out / "study.db")


def test_a_study_in_a_folder_of_url_characters_is_created_there_under_its_name(tmp_path):
    name = "a?b#c%41 d&e=%%{0}"
    out = tmp_path / name / "sweep"
    optuna.create_study(study_name=name, storage=open_storage(default_storage(out)))
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()] == [Path(name) / "sweep" / "study.db"]
    assert [s.study_name for s in optuna.get_all_study_summaries(open_storage(default_storage(out), must_exist=True))] \
        == [name]


def parser():
    from nnrnn_cli.command import make_parser
    return make_parser()


def test_cli(sweep, capsys, tmp_path):
    out, _ = sweep
    args = parser().parse_args(["sweep", "copy", "--model", "nnrnn", "--out", str(out), "--summary", "--top", "1"])
    assert args.handler(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].split()[0] == "1"
    args = parser().parse_args(["sweep", "copy", "--model", "lstm", "--out", str(out), "--summary", "--study",
                                "copy-nnrnn"])  # the study of another model: not shown as if it were this one's
    with pytest.raises(UserError, match="searches copy/nnrnn, not copy/lstm; choose another --study"):
        args.handler(args)
    for argv, message in ((["--trials", "0"], "--trials must be a positive integer"),
                          ([], "give --trials N")):
        args = parser().parse_args(["sweep", "copy", "--out", str(tmp_path / "x")] + argv)
        with pytest.raises(UserError, match=message):
            args.handler(args)
    from nnrnn_cli.command import UsageError
    with pytest.raises(UsageError, match="invalid int value"):
        parser().parse_args(["sweep", "copy", "--trials", "many"])
    args = parser().parse_args("sweep copy --model rnn --trials 1 --no-prune --hidden 8 --T 5 --steps 5 "
                               f"--eval-every 5 --seed 3 --out {tmp_path / 'cli'}".split())
    assert args.handler(args) == 0
    config = json.loads((tmp_path / "cli" / "trial-0000" / "config.json").read_text())
    assert (config["model"], config["hidden"], config["T"], config["steps"], config["seed"]) == ("rnn", 8, 5, 5, 3)
    out = capsys.readouterr().out
    assert "rank" in out
    # a line or two per trial: the run's own lines (its folder listing above all) go to the trial's log
    assert "[nnrnn]" not in out and "logs/trial-0000.log" in out
    assert "[nnrnn] run folder" in (tmp_path / "cli" / "logs" / "trial-0000.log").read_text()


def test_a_sweep_takes_threads_and_the_free_cores_rule_as_nnrnn_train_applies_it(tmp_path, monkeypatch, capsys):
    """`nnrnn sweep` had no --threads and ran its trials on every core of a busy host (37.9 s a trial on 2 threads
    of a busy 2-core host, 11.3 s on one)."""
    from nnrnn import environment
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(environment.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(environment.os, "getloadavg", lambda: (2.6, 1.0, 1.0))
    common = "sweep copy --model rnn --trials 1 --no-prune --hidden 4 --T 3 --steps 2 --eval-every 2".split()
    args = parser().parse_args([*common, "--out", str(tmp_path / "free")])
    assert args.handler(args) == 0
    assert capsys.readouterr().out.startswith("[sweep] 1 thread: 1 of 4 cores free, load average 2.6 (--threads N")
    assert json.loads((tmp_path / "free" / "trial-0000" / "config.json").read_text())["threads"] == 1
    args = parser().parse_args([*common, "--out", str(tmp_path / "given"), "--threads", "2"])
    assert args.handler(args) == 0
    assert "thread:" not in capsys.readouterr().out
    assert json.loads((tmp_path / "given" / "trial-0000" / "config.json").read_text())["threads"] == 2
    args = parser().parse_args([*common, "--out", str(tmp_path / "many"), "--threads", "5"])
    with pytest.raises(OptionError, match="--threads 5 is more than the 4 cores"):
        args.handler(args)


def test_a_sweep_says_trials_done_against_planned_and_the_time_left(tmp_path, capsys):
    run_sweep("copy", "rnn", 3, out=str(tmp_path / "s"), train_options=TINIER)
    ended = [line for line in capsys.readouterr().out.splitlines() if " done here" in line]
    assert [line.split(" | ")[1] for line in ended] == ["1/3 done here", "2/3 done here", "3/3 done here"]
    assert all(re.search(r" \| about \d+ (s|min) left$", line) for line in ended[:2]) and "left" not in ended[2]


def test_the_options_a_sweep_holds_fixed_are_spelled_and_read_as_nnrnn_train_reads_them():
    """Each training option `nnrnn sweep` passes to its trials takes the value `nnrnn train` would read from
    the same words (flag, type, constant), so a command line moves from one command to the other unchanged."""
    from nnrnn.commands.sweep import HELD_FIXED
    words = ["--steps", "30", "--epochs", "2", "--hidden", "16", "--batch-size", "4", "--T", "7", "--bptt", "20",
             "--no-permute", "--nonlinearity", "tanh", "--clip", "0.5", "--seed", "3", "--eval-every", "5",
             "--log-every", "2", "--max-bad-steps", "4", "--data-dir", "/data", "--device", "cpu", "--threads", "1"]
    swept = vars(parser().parse_args(["sweep", "copy", *words]))
    trained = vars(parser().parse_args(["train", "copy", *words]))
    assert {name: swept[name] for name in HELD_FIXED} == {name: trained[name] for name in HELD_FIXED}
    assert set(HELD_FIXED) == {w.removeprefix("--").replace("-", "_").replace("no_", "") for w in words
                               if w.startswith("--")}
    assert swept["permute"] is False and swept["T"] == 7 and swept["clip"] == 0.5


# --------------------------------------------------------------------------- a grid's searches: equal terms

def test_every_model_searches_one_learning_rate_range_and_at_most_the_same_number_of_its_own_options():
    from nnrnn.models import MODELS
    for model in MODELS:
        space = equal_space(model)
        assert list(space)[0] == "lr" and (space["lr"].low, space["lr"].high, space["lr"].log) == \
            (*EQUAL_LR_RANGE, True)
        assert 1 <= len(space) <= 1 + OWN_OPTIONS and "lr_orth" not in space and "alpha" not in space
        assert list(space)[1:] == list(model_class(model).TUNED_OPTIONS)
    assert EQUAL_LR_RANGE[1] >= 0.02  # coRNN's published adding rate lies inside, not at an edge
    assert list(equal_space("nnrnn", fixed=["lr"])) == ["delta", "t_decay"]


def test_an_equal_search_ties_lr_orth_to_lr_and_leaves_the_optimizer_to_the_plan():
    assert tie_rates("nnrnn", {"lr": 2e-3}) == {"lr_orth": pytest.approx(2e-3 * LR_ORTH_RATIO)}
    # the optimizer is the grid's plan's (grid.paper_optimizer), not derived where a fixed option would win over it
    assert tie_rates("cornn", {"lr": 1e-3}) == {} == tie_rates("gru", {"lr": 1e-3})
    assert tie_rates("nnrnn", {"lr": 2e-3}, fixed=["lr_orth"]) == {}  # what the user gives holds


def test_cornns_searched_box_keeps_its_explicit_step_stable():
    dt, epsilon = model_class("cornn").SEARCHED["dt"], model_class("cornn").SEARCHED["epsilon"]
    assert dt[2] * epsilon[2] < 1  # Δt ε < 1 at the box's far corner


def test_a_trial_is_judged_by_the_area_under_its_validation_curve():
    assert curve_area([(10, 1.0), (20, 0.0), (30, 0.0)], True) == pytest.approx(0.25)
    assert curve_area([(10, 0.4)], True) == 0.4
    # a fast start that stalls scores worse than a steady descent to the same end
    assert curve_area([(0, 0.5), (10, 0.5), (20, 0.1)], True) > curve_area([(0, 0.9), (10, 0.2), (20, 0.1)], True)


def test_a_trial_that_stopped_early_by_its_own_rule_is_judged_over_its_planned_length():
    solved_early = held_to([(10, 0.9), (20, 0.01)], 100)  # solved at update 20 of 100: it holds 0.01 after
    assert solved_early == [(10, 0.9), (20, 0.01), (100, 0.01)]
    assert curve_area(solved_early, True) < curve_area([(10, 0.9), (50, 0.3), (100, 0.01)], True)
    assert held_to([(10, 0.9), (100, 0.5)], 100) == [(10, 0.9), (100, 0.5)]  # ran its length: unchanged


def test_published_settings_come_from_the_task_or_the_nearest_its_papers_report():
    # only the searched values: coRNN's γ, which it does not search, stays the search's in every trial
    assert published("psmnist", "cornn", preset="long-memory") == (
        {"lr": 0.0054, "dt": 0.076, "epsilon": 8.0}, "long-memory: psmnist")
    assert published("psmnist", "lem", preset="long-memory")[0] == {"lr": 0.0073, "dt": 0.31}  # no clip of its own
    assert published("copy", "lem", preset="long-memory")[1] == "long-memory: adding"
    assert published("adding", "nnrnn", preset="long-memory")[1] == "paper-params: copy"
    assert published("copy", "gru") is None


def test_a_published_entry_with_a_value_outside_its_range_gives_way_to_the_next_nearest():
    """coRNN's adding entry has ε = 15, outside the searched [0.5, 9.9]: the first trial of its copy search was a
    point of no space its other trials were drawn from (issue 67)."""
    adding = presets.lookup("long-memory", "adding", "cornn")
    assert not inside(adding["epsilon"], equal_space("cornn")["epsilon"])
    assert published("copy", "cornn", preset="long-memory") == (
        {"lr": 0.0054, "dt": 0.076, "epsilon": 8.0}, "long-memory: psmnist")


@pytest.mark.parametrize("scale", [s for s, spec in grids.SCALES.items() if spec.tune is not None])
def test_the_first_trial_of_every_grids_search_is_a_point_of_the_space_its_other_trials_are_drawn_from(scale,
                                                                                                      tmp_path):
    """Issue 67: the nnRNN family's published trial trained lr_orth 1e-6 where every drawn one had 0.1 × lr, and
    coRNN's had ε = 15 outside its range and γ = 66 where the others had 0.4."""
    from nnrnn.experiments.planning import grid
    from nnrnn.experiments.planning.objective import _Objective
    from nnrnn.experiments.planning.sweep import queue_published
    data = fake_ptb(tmp_path / "ptb")
    queued = 0
    for name, search in grid.searches(grids.SCALES[scale], data_dir=data).items():
        fixed = {k: v for k, v in search["options"].items() if k != "data_dir"}
        space = EQUAL.space(search["model"], fixed=list(fixed))
        study = optuna.create_study()
        if queue_published(study, search["task"], search["model"], fixed, search["preset"], space) is None:
            continue
        queued += 1
        objective = _Objective(search["task"], search["model"], tmp_path, fixed, search["preset"], space, "loss",
                               "min", EQUAL)
        trial = study.ask()
        params, options = objective._options(trial)
        assert set(params) == set(space), name
        assert all(inside(v, space[k]) for k, v in params.items()), (name, params)
        # beyond the drawn values, only what every trial derives from them: no option of the first trial alone
        assert options == {**EQUAL.derive(search["model"], params, list(fixed)), **params}, name
    assert queued


def test_the_first_trial_of_an_equal_search_is_the_models_published_settings(tmp_path):
    out = tmp_path / "copy-lem"
    study = run_sweep("copy", "lem", 1, out=str(out), train_options={**TINIER, "preset": "long-memory"},
                      searching=EQUAL)
    first = study.trials[0]
    assert first.params == {"lr": 0.0026, "dt": 0.0242}  # LEM's adding settings, the task nearest copy
    config = json.loads((out / "trial-0000" / "config.json").read_text())
    assert (config["lr"], config["dt"]) == (0.0026, 0.0242)
    assert config["clip"] == resolve_config({"task": "copy", "model": "lem"}, "long-memory")["clip"]  # the search's
    assert config["hidden"] == TINIER["hidden"]  # at the search's size, not the paper's
    curve = [(r["step"], r["loss"]) for r in map(json.loads, (out / "trial-0000" / "metrics.jsonl").open())
             if r["split"] == "valid"]
    assert first.value == pytest.approx(curve_area(curve, True))
    assert first.user_attrs["options"] == {"lr": 0.0026, "dt": 0.0242}
