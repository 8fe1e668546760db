"""nnrnn.experiments.grids.modern: today's long-memory RNNs beside the nnRNN, tuned alike, judged by the one rule."""
import json
import math

import pytest
from conftest import HAS_PTB, SHARED
from scipy import stats

from nnrnn.experiments import grids, reproduce
from nnrnn.experiments.grids import modern, planned_grid
from nnrnn.experiments.grids import modern as modern_grid
from nnrnn.experiments.judging import statistics
from nnrnn.experiments.judging.statistics import Stat
from nnrnn.experiments.planning import grid
from nnrnn.experiments.planning.declaration import Scale, Search, Setting
from nnrnn.experiments.reporting import picks
from nnrnn.tasks import make_task
from nnrnn_cli import command as cli
from tests.experiments import synthetic

TINY = {"T": 6, "batch_size": 4, "steps": 4, "eval_every": 2, "log_every": 2}


pytestmark = pytest.mark.usefixtures("undrawn_figures")  # what is trained and written, not the drawing


@pytest.fixture
def modern_scale(monkeypatch):
    monkeypatch.setitem(grids.SCALES, "tiny-modern", Scale(
        name="tiny-modern", seeds=(0, 1), report=modern_grid.REPORT,
        tune=Search(trials=3, share=0.5, seed=100, startup=2),
        settings={
            "copy": Setting(task="copy", hidden=8, preset="long-memory", columns=(grid.TUNED,),
                            models=("nnrnn", "cornn", "lru"), variants=modern_grid.CHAIN_INIT, options=TINY),
            "adding": Setting(task="adding", hidden=8, preset="long-memory", columns=(grid.TUNED,),
                              models=("nnrnn", "mingru"), options=TINY)}))
    monkeypatch.setattr(modern, "SPEED_ROUNDS", 1)
    return "tiny-modern"


@pytest.mark.skipif(not HAS_PTB, reason="PTB's files are not in shared/data (planning PTB reads its vocabulary)")
def test_the_modern_scale_plans_every_model_tuned_on_the_protocols_at_nnrnns_parameter_count():
    runs = grid.plan(grids.SCALES["modern"], seeds=[0], searching=True, data_dir=SHARED)
    labels = {r.label for r in runs}
    assert labels == set(modern_grid.MODERN_MODELS) | {"rnn chain"}
    assert {r.setting for r in runs} == {"psmnist", "ptb"}  # copy and adding moved to the memory grid
    assert {r.column for r in runs} == {grid.TUNED}
    psmnist = {r.label: r for r in runs if r.setting == "psmnist"}
    assert {r.preset for r in psmnist.values()} == {"long-memory"}
    chain = psmnist["rnn chain"].options
    assert chain["init"] == "chain:1.02" and chain["nonlinearity"] == "elu"
    assert {r.budget for r in psmnist.values()} == {psmnist["nnrnn"].budget}  # one parameter budget per protocol
    searches = grid.searches(grids.SCALES["modern"], tasks=["psmnist"], data_dir=SHARED)
    assert {s["trials"] for s in searches.values()} == {4} and {s["startup"] for s in searches.values()} == {2}
    # every trial as long as the run it tunes: judged over the run's length, not its first fifth
    assert {s["options"]["epochs"] for s in searches.values()} == {psmnist["nnrnn"].options["epochs"]}
    assert {s["options"]["seed"] for s in searches.values()} == {grid.TUNE_SEED}
    assert grid.TUNE_SEED not in grids.SCALES["modern"].seeds


def test_best_so_far_counts_only_finished_trials():
    trials = [{"state": "PRUNED", "value": None}, {"state": "COMPLETE", "value": 0.5},
              {"state": "FAIL", "value": None}, {"state": "COMPLETE", "value": 0.7},
              {"state": "COMPLETE", "value": 0.2}]
    assert modern.best_so_far(trials, lower=True) == [None, 0.5, 0.5, 0.5, 0.2]
    assert modern.best_so_far(trials, lower=False) == [None, 0.5, 0.5, 0.7, 0.7]


def test_a_model_is_clearly_best_only_when_clearly_better_than_every_other(monkeypatch):
    synthetic.toy_labels(monkeypatch, "a", "b", "c")
    clear = {"a": Stat(1.0, 0.01, 3), "b": Stat(2.0, 0.01, 3), "nnrnn": Stat(3.0, 0.01, 3)}
    assert modern.leaders(clear, lower=True) == ("a", ["a"])
    close = {"a": Stat(1.0, 0.1, 3), "b": Stat(1.1, 0.1, 3), "nnrnn": Stat(3.0, 0.01, 3)}
    assert modern.leaders(close, lower=True) == ("a", ["a", "b"])
    assert modern.leaders(close, lower=False) == ("nnrnn", ["nnrnn"])  # higher is better: accuracy
    assert modern.leaders({"a": None}, lower=True) == (None, [])


def test_where_the_nnrnn_stands_counts_a_model_whose_every_seed_failed_as_worse(monkeypatch):
    synthetic.toy_labels(monkeypatch, "a", "b", "c")
    table = {"a": Stat(1.0, 0.01, 3), "b": Stat(2.05, 0.1, 3), "nnrnn": Stat(2.0, 0.01, 3),
             "c": Stat(float("nan"), float("nan"), 0, failed=3)}
    where = modern.standing(table, "nnrnn", lower=True)
    assert (where["rank"], where["of"]) == (2, 3)
    assert (where["better"], where["alike"], where["worse"]) == (["a"], ["b"], ["c"])


def test_every_not_clearly_different_gives_the_smallest_difference_the_rule_could_see(monkeypatch):
    synthetic.toy_labels(monkeypatch, "a", "b", "c", "one", "other")
    from nnrnn.experiments.judging.comparisons import compare
    table = {"b": Stat(2.05, 0.1, 3), "nnrnn": Stat(2.0, 0.03, 3), "one": Stat(2.1, float("nan"), 1),
             "other": Stat(2.2, float("nan"), 1)}
    se_a, se_b = 0.1, 0.03  # the Welch test's critical gap: t at the Welch–Satterthwaite df, times the combined s.e.
    df = (se_a ** 2 + se_b ** 2) ** 2 / (se_a ** 4 / 2 + se_b ** 4 / 2)
    gap = stats.t.ppf(0.975, df) * math.hypot(se_a, se_b)
    assert modern._alike(["b"], table, "nnrnn", 3) == f"b (needs > {gap:.3f})"
    assert modern._alike(["one"], table, "other", 3) == "one (not comparable)"  # two single seeds
    sentence, sign = compare("b", table["b"], "nnrnn", table["nnrnn"], 3)
    assert sign == 0 and sentence.endswith(f"(the rule needs a gap above {gap:.3f} with these seeds) (Welch p = "
                                           f"{statistics.p_value(table['b'], table['nnrnn']):.2g}; exploratory: 3 "
                                           "and 3 seeds)")
    clear, _ = compare("b", Stat(3.0, 0.01, 3), "nnrnn", table["nnrnn"], 3)
    assert "needs" not in clear  # a difference the rule sees needs no gap beside it


def test_still_moving_is_measured_over_the_last_fifth_of_the_updates_not_of_the_evaluations():
    from nnrnn.experiments.judging.statistics import last_fifth_share
    # a straight fall evaluated every 100 updates: the last fifth of its updates (800 to 1000) holds a fifth of its
    # change, where the last fifth of its 11 evaluations (the last 2, 900 to 1000) would hold a tenth
    straight = [(100 * i, 1.0 - i / 10) for i in range(11)]
    assert last_fifth_share(straight) == pytest.approx(0.2)
    flat_then_fall = [(100 * i, 1.0 if i < 9 else 0.0) for i in range(11)]  # all its change from 800 to 900
    assert last_fifth_share(flat_then_fall) == 1.0
    early = [(100 * i, 1.0 if i < 2 else 0.0) for i in range(11)]
    assert last_fifth_share(early) == 0.0
    assert math.isnan(last_fifth_share([(0, 1.0), (1, 0.5)]))  # too few points


def test_only_a_model_clearly_below_the_baseline_remembered_something():
    table = {"a": Stat(0.010, 0.001, 3), "b": Stat(0.019, 0.001, 3), "nnrnn": Stat(8.28, 8.26, 3),
             "c": Stat(float("nan"), float("nan"), 0, failed=3), "d": None}
    assert modern.below_baseline(table, 0.0204) == ["a"]  # b is 1.4 standard errors below it: not clearly


def test_a_modern_grid_tunes_alike_times_every_model_and_its_report_is_written_again_from_data(tmp_path,
                                                                                               modern_scale):
    out = tmp_path / "grid"
    text = reproduce.reproduce(modern_scale, out).read_text()
    files = grid.GridFolder(out)
    trials = json.loads(files.trials.read_text())
    assert set(trials) == {"copy-nnrnn", "copy-cornn", "copy-lru", "copy-rnn-chain", "adding-nnrnn",
                           "adding-mingru"}
    assert all(len(found) == 3 for found in trials.values())  # the same budget for every model
    cornn = {t["number"]: t["params"] for t in trials["copy-cornn"]}
    assert all(set(p) == {"lr", "dt", "epsilon"} for p in cornn.values())  # lr and its own two options
    # its published settings were its search's first trial: its paper's psMNIST, since its adding entry (the task
    # nearest copy) has ε = 15, outside the searched range
    assert cornn[0] == {"lr": 0.0054, "dt": 0.076, "epsilon": 8.0}
    assert trials["copy-cornn"][0]["published"] == "long-memory: psmnist"
    assert "published" not in trials["copy-lru"][0]  # no preset holds the LRU's: drawn
    assert trials["copy-nnrnn"][0]["ranges"]["lr"] == {"log": [1e-5, 3e-2]}
    assert set(trials["copy-nnrnn"][0]["ranges"]) == {"lr", "delta", "t_decay"}
    speed = json.loads(files.speed.read_text())
    assert set(speed["settings"]) == {"copy", "adding"} and speed["threads"] == 1
    seconds = speed["settings"]["copy"]["seconds"]
    assert {"torch.nn.RNN", "torch.nn.GRU", "nnrnn", "cornn", "lru", "rnn"} <= set(seconds)
    for heading in ("## How every model was tuned", "## Where the picks fell", "### Did each search settle?",
                    "## copy, T = 6", "## adding, T = 6", "## Which model is clearly best, and where the nnRNN stands",
                    "## Published figures beside these", "## Update time against torch.nn.RNN and torch.nn.GRU"):
        assert heading in text
    assert "(figures/tuning-copy.png)" in text and (out / "figures" / "tuning-copy.png").is_file()
    # the paragraph says how these searches searched (equal terms), not how the committed grids' did
    assert "over the same dimensions for every model" in text and "coRNN: dt, epsilon" in text
    assert "coRNN: dt, gamma, epsilon" not in text and "draws its first 2 trials at random" in text
    # every protocol's standing says what limits it
    assert text.count("This scale: ") == 2 and "4 updates of batch 4, 2 seeds" in text
    # copy and adding say which models remembered anything, against the loss of remembering nothing on the very
    # sequences they were scored on (adding's few test sequences move it far from 1/6)
    adding = sum(make_task("adding", seed=seed, T=6, batch_size=4).realised_baseline("test") for seed in (0, 1)) / 2
    assert abs(adding - 1 / 6) > 1e-3
    assert text.count("Clearly below the baseline ") == 2 and f"Clearly below the baseline {adding:.4f} (" in text
    assert "test loss (baseline 0.7998)" in text and f"test loss (baseline {adding:.4f})" in text
    # the task's options, not one model's picks
    assert "Task options: T=6, batch_size=4, steps=4, eval_every=2, log_every=2\n" in text
    elsewhere = tmp_path / "elsewhere"
    assert cli.main(["reproduce", "--scale", modern_scale, "--from-data", str(files.data),
                     "--out", str(elsewhere)]) == 0
    assert (elsewhere / "report.md").read_text() == text


def test_the_modern_grid_runs_every_model_and_the_non_normal_lru():
    assert "nnlru" in modern_grid.MODERN_MODELS and picks.picks_section in modern_grid.REPORT.sections


def test_the_picks_section_names_every_pick_within_five_percent_of_an_edge(tmp_path, modern_scale):
    ranges = {"lr": {"log": [1e-5, 3e-2]}, "delta": {"choices": [0.0, 0.1, 1.0]}}
    low, mid = 1e-5 * (3e-2 / 1e-5) ** 0.04, 1e-5 * (3e-2 / 1e-5) ** 0.5
    found = {"copy-nnrnn": [{"number": 0, "state": "COMPLETE", "value": 0.02, "params": {"lr": mid, "delta": 1.0},
                             "ranges": ranges, "published": "paper-params: copy"},
                            {"number": 1, "state": "COMPLETE", "value": 0.01, "params": {"lr": low, "delta": 0.0},
                             "ranges": ranges}],
             "copy-cornn": [{"number": 0, "state": "COMPLETE", "value": 0.03, "params": {"lr": mid, "delta": 0.1},
                             "ranges": ranges}]}
    made = planned_grid(tmp_path, modern_scale, [
        synthetic.planned(setting="copy", task="copy", label=label, model=label,
                          options={"optimizer": "adam"} if label == "cornn" else {})  # the pick a tuned run carries
        for label in ("nnrnn", "cornn")])
    made.trials.write_text(json.dumps(found))
    rows = {(r["label"], r["option"]): r for r in picks.pick_rows(made)}
    assert rows["nnrnn", "lr"]["position"] == pytest.approx(0.04)  # the best trial's pick (loss: lower)
    assert rows["nnrnn", "delta"]["position"] == "1 of 3" and rows["cornn", "lr"]["position"] == pytest.approx(0.5)
    text = "\n".join(picks.picks_section(made))
    assert f"nnRNN's lr on copy ({low:.3g}, at 0.04)" in text and "coRNN's lr on copy" not in text
    assert "| copy | nnRNN | published settings (paper-params: copy): delta=1, lr=" in text
    assert "| coRNN | adam (its paper's) |" in text and "| nnRNN | rmsprop (its paper's) |" in text


def test_a_model_whose_every_search_trial_diverged_is_named_not_dropped(tmp_path, modern_scale):
    diverged = [{"number": i, "state": "PRUNED", "stopped": "diverged", "value": None, "params": {}} for i in range(3)]
    finished = [{"number": 0, "state": "COMPLETE", "stopped": None, "value": 0.1, "params": {}}]
    made = planned_grid(tmp_path, modern_scale, [synthetic.planned(setting="copy", label="nnrnn")])
    made.trials.write_text(json.dumps({"copy-cornn": diverged, "copy-nnrnn": finished}))
    assert modern.untuned(made, "copy") == ["cornn"]


def test_the_optimizer_table_states_the_optimizer_each_label_ran_with_not_its_papers(tmp_path):
    """coRNN's paper trains with Adam; a grid that fixes ``optimizer=rmsprop`` trains it with RMSprop, and the
    report says RMSprop, naming the paper's beside it (issue 67)."""
    runs = [synthetic.planned(setting="copy", task="copy", label="cornn", model="cornn",
                              options={"optimizer": "rmsprop"}),
            synthetic.planned(task="copy", label="cornn adam", model="cornn", options={"optimizer": "adam"}),
            synthetic.planned(task="copy", label="gru", model="gru", options={"optimizer": "rmsprop"})]
    runs.append(synthetic.planned(setting="ptb", task="ptb", label="cornn", model="cornn",
                                  options={"optimizer": "adam"}))
    rows = dict(picks.optimizer_rows(grid.Grid(tmp_path, planned=runs)))
    assert rows["cornn"] == "rmsprop on copy, adam on ptb (its paper's is adam; the option the grid fixed won)"
    assert rows["cornn adam"] == "adam (its paper's)"
    assert rows["gru"] == "rmsprop (its paper names none we follow)"
