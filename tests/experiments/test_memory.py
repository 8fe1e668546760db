"""The memory grid and its report (nnrnn.experiments.grids.memory): the ladder climbs by
its rule, a second invocation trains nothing new, and the report is written again from its compact data alone."""
import dataclasses
import json
from pathlib import Path

import pytest

from nnrnn.experiments import grids, reproduce
from nnrnn.experiments.grids import memory
from nnrnn.experiments.grids import memory as memory_grid
from nnrnn.experiments.grids.memory import REPORT, solved_at
from nnrnn.experiments.judging import significance
from nnrnn.experiments.judging.statistics import Stat
from nnrnn.experiments.planning import grid
from nnrnn.experiments.planning.declaration import Scale, Search, Setting
from nnrnn.experiments.reporting.sections import generated
from nnrnn.models import model_class
from nnrnn.tasks.copy import baseline_loss
from nnrnn.training import evaluation, outcome
from tests.experiments import synthetic

pytestmark = pytest.mark.usefixtures("undrawn_figures")

OPTIONS = {"batch_size": 4, "steps": 6, "eval_every": 2, "log_every": 2, "stop_when_solved": 0.1}


def toy_scale(tune: bool = True) -> Scale:
    """Two rungs (T = 4, 8), two models, three seeds; searched (one trial each) at the first rung."""
    return Scale(name="memory-toy", seeds=(0, 1, 2), report=REPORT, climb=memory_grid.climb,
                 tune=Search(trials=1, share=0.5, startup=1, settings=("copy-4",)) if tune else None,
                 settings={f"copy-{T}": Setting(task="copy", hidden=8, columns=("tuned",), models=("rnn", "lstm"),
                                                options={"T": T, **OPTIONS}) for T in (4, 8)})


def losses(solving: int, T: int) -> list[dict]:
    """Validation records: two in a row below the threshold at updates 4 and 6 when ``solving``, else a single low
    one (update 4) between high ones, which is not solved."""
    low, high = 0.05 * baseline_loss(T), 0.5 * baseline_loss(T)
    values = [high, low, low] if solving else [high, low, high]
    return [{"step": 2 * (i + 1), "split": "valid", "loss": v} for i, v in enumerate(values)]


def test_a_model_climbs_while_at_least_two_of_its_three_seeds_solved_the_last_delay(tmp_path):
    scale = toy_scale(tune=False)
    planned = [synthetic.planned(setting=s, task="copy", label=label, model=label, seed=seed,
                                 options={**spec.options}, name=f"{s}-{label}-{seed}")
               for s, spec in scale.settings.items() for label in ("a", "b", "c") for seed in (0, 1, 2)]
    made = grid.Grid(tmp_path, "toy", scale, planned)
    solving = {"a": 3, "b": 2, "c": 1}  # seeds that solve, at every rung
    asked = []

    def execute(rung: grid.Grid) -> None:
        asked.append([(r.setting, r.label) for r in rung.planned])
        for r in rung.planned:
            folder = rung.run_folder(r)
            folder.mkdir(parents=True)
            (folder / "metrics.jsonl").write_text("".join(
                json.dumps(x) + "\n" for x in losses(r.seed < solving[r.label], r.options["T"])))
            outcome.write(folder, outcome.Outcome(outcome.LEARNED, "synthetic"))
    climbed = memory_grid.climb(made, execute)
    assert {label for _, label in asked[0]} == {"a", "b", "c"}
    assert {label for _, label in asked[1]} == {"a", "b"}  # c: one seed of three solved
    assert [(r.setting, r.label) for r in climbed.planned] == asked[0] + asked[1]
    assert solved_at(losses(1, 8), OPTIONS | {"T": 8}) == 6 and solved_at(losses(0, 8), OPTIONS | {"T": 8}) is None


def test_a_rung_with_an_unfinished_run_ends_the_climb_there(tmp_path):
    scale = toy_scale(tune=False)
    planned = [synthetic.planned(setting=s, task="copy", label="a", model="a", seed=seed, options=spec.options,
                                 name=f"{s}-{seed}") for s, spec in scale.settings.items() for seed in (0, 1, 2)]
    climbed = memory_grid.climb(grid.Grid(tmp_path, "toy", scale, planned), lambda rung: None)  # nothing trained
    assert {r.setting for r in climbed.planned} == {"copy-4"}


@pytest.mark.parametrize("unfinished", [(2,), (0,), (1, 2)])
def test_a_rung_with_some_runs_finished_and_some_not_ends_the_climb_there(unfinished, tmp_path):
    """Seeds that finished (and solved: enough to climb on) beside one still training (its records, no outcome): the
    ladder stops at that rung; it goes on only once every run of the rung has finished (the next invocation)."""
    scale = toy_scale(tune=False)
    planned = [synthetic.planned(setting=s, task="copy", label="a", model="a", seed=seed, options=spec.options,
                                 name=f"{s}-{seed}") for s, spec in scale.settings.items() for seed in (0, 1, 2)]
    made = grid.Grid(tmp_path, "toy", scale, planned)
    asked = []

    def execute(rung: grid.Grid, stopped=unfinished) -> None:
        asked.append(sorted({r.setting for r in rung.planned}))
        for r in rung.planned:
            folder = rung.run_folder(r)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in losses(1, r.options["T"])))
            if r.seed not in stopped:  # the others were stopped mid-run (another process trains them)
                outcome.write(folder, outcome.Outcome(outcome.LEARNED, "synthetic"))
    climbed = memory_grid.climb(made, execute)
    assert asked == [["copy-4"]] and {r.setting for r in climbed.planned} == {"copy-4"}
    assert sum(grid.finished(made.run_folder(r)) for r in climbed.planned) == 3 - len(unfinished)
    climbed = memory_grid.climb(made, lambda rung: execute(rung, stopped=()))  # the runs finish: it climbs on
    assert asked[1:] == [["copy-4"], ["copy-8"]] and {r.setting for r in climbed.planned} == {"copy-4", "copy-8"}


@pytest.fixture
def toy(monkeypatch):
    """The toy ladder as a scale; the LSTM's validations report a loss far below the threshold (it solves every
    delay), the RNN's are measured (it solves none at this size and budget)."""
    monkeypatch.setitem(grids.SCALES, "memory-toy", toy_scale())
    real = evaluation.evaluate

    def scripted(net, task, split, device):
        metrics = real(net, task, split, device)
        solving = split == "valid" and isinstance(net.rnn, model_class("lstm"))
        return {**metrics, "loss": 0.01 * task.baseline} if solving else metrics
    monkeypatch.setattr(evaluation, "evaluate", scripted)
    return "memory-toy"


def test_the_toy_ladder_runs_resumes_without_training_and_its_report_regenerates(tmp_path, toy):
    out = tmp_path / "grid"
    text = reproduce.reproduce(toy, out, log=[].append).read_text()
    names = sorted(p.name for p in (out / "runs").iterdir() if p.is_dir())
    assert sum(n.startswith("copy-lstm") for n in names) == 6  # both delays
    assert sum(n.startswith("copy-rnn") for n in names) == 3  # the first only: it solved nothing
    assert "| LSTM | 8 (3 of 3 seeds) | 4 ± 0 |" in text
    # its one search trial of 3 updates left no plateau: not a horizon of "none" but nothing measurable
    assert "| RNN | not measurable at this budget (no search trial learned; T = 4: 0 of 3) |" in text
    assert "| 6 × 4 |" in text
    # what a run saw: a budget per delay over the ladder, not one rung's
    assert ("| copy | at most 6 updates × 4 = 24 generated sequences per delay, T = 4 to 8, fewer where a run "
            "stopped solved |") in text
    # how every model was tuned, and where its picks fell in their ranges
    assert "## How every model was tuned" in text and "on copy at T = 4 (the ladder's first delay)" in text
    assert "## Where the picks fell" in text and "| copy-4 | LSTM | lr | 1e-05 to 0.03 (log) |" in text
    assert "Picks at an edge of their range: " in text
    # the capacity's lead says what it measures and where
    assert "a property of the trained recurrence, not the copy skill" in text and "each model's last delay" in text
    capacities = json.loads((out / "capacity.json").read_text())
    assert len(capacities) == 9 and all(0 <= c for c in capacities.values())
    before = {n: (out / "runs" / n / "metrics.jsonl").read_text() for n in names}
    logs = []
    assert reproduce.reproduce(toy, out, log=logs.append).read_text() == text  # nothing trained the second time
    # nothing but the cost printed before the start (a ceiling: the rungs the ladder did not reach count) and the
    # report's path
    assert [line for line in logs if "planned runs (" not in line and not line.startswith("report: ")] == [], logs
    assert {n: (out / "runs" / n / "metrics.jsonl").read_text() for n in names} == before
    again = reproduce.regenerate(out / "data.json", tmp_path / "elsewhere")
    assert again.read_text() == text


def test_the_memory_grid_plans_every_model_at_nnrnns_count_and_its_hidden_units_and_tunes_at_the_first_delay():
    spec = grids.SCALES["memory"]
    searches = grid.searches(spec)
    labels = len(memory.MEMORY_MODELS) + len(memory.VARIANTS)
    assert len(searches) == labels == 18 and {s["setting"] for s in searches.values()} == {"copy-10"}
    assert {s["options"]["T"] for s in searches.values()} == {10}
    # a trial is as long as a rung's run, so that it is judged over the run's length
    assert {s["options"]["steps"] for s in searches.values()} == {spec.settings["copy-10"].options["steps"]}
    picks = {"copy": {s["label"]: {"lr": 1e-3} for s in searches.values()}}
    planned = grid.plan(spec, picks=picks)
    assert len(planned) == labels * 2 * len(memory.RUNGS) * 5 and len({r.budget for r in planned}) == 1
    assert {r.seed for r in planned} == set(range(5)) and len(spec.seeds) >= 5
    assert all(r.options["stop_when_solved"] == 0.1 and r.options["lr"] == 1e-3 for r in planned)
    # the second column: the same labels and picks, every model at nnRNN's hidden units
    at_hidden = [r for r in planned if r.column == "tuned-hidden"]
    assert {r.hidden for r in at_hidden} == {memory.HIDDEN}
    assert {r.label for r in at_hidden} == {r.label for r in planned if r.column == "tuned"}
    assert next(r for r in planned if (r.column, r.label) == ("tuned", "lstm")).hidden < memory.HIDDEN
    normal = next(r for r in planned if r.label == "nnrnn normal")
    assert dataclasses.asdict(normal)["extra"] == {"triangular": "none"}
    # the gated family's representative with the chrono biases up to the task's length; LEM clipped as its authors clip
    chrono = next(r for r in planned if r.label == "lstm chrono" and r.options["T"] == 100)
    from nnrnn.training.config import model_options
    assert model_options(chrono.config) == {**model_options(chrono.config), "init": "chrono", "chrono_tmax": 120.0}
    assert {r.config["clip"] for r in planned if r.model == "lem"} == {memory.LEM_CLIP}
    assert {r.config["clip"] for r in planned if r.model != "lem"} == {0.0}


def test_the_hidden_column_trains_with_the_tuned_columns_picks_so_it_needs_that_column():
    from nnrnn.experiments.planning.declaration import Setting
    with pytest.raises(ValueError, match="'tuned-hidden' column trains with the 'tuned' column's picks"):
        Setting(task="copy", hidden=8, options={}, columns=("tuned-hidden",)).check("grid x, setting y")


def test_each_column_climbs_on_its_own(tmp_path):
    """A label that solved a rung in one column climbs there only: the columns are two ladders."""
    scale = toy_scale(tune=False)
    planned = [synthetic.planned(setting=s, task="copy", label="a", model="a", seed=seed, column=column,
                                 options={**spec.options}, name=f"{s}-{column}-{seed}")
               for s, spec in scale.settings.items() for column in ("tuned", "tuned-hidden") for seed in (0, 1, 2)]
    made = grid.Grid(tmp_path, "toy", scale, planned)
    asked = []

    def execute(rung: grid.Grid) -> None:
        asked.append(sorted({(r.setting, r.column) for r in rung.planned}))
        for r in rung.planned:
            folder = rung.run_folder(r)
            folder.mkdir(parents=True)
            (folder / "metrics.jsonl").write_text("".join(
                json.dumps(x) + "\n" for x in losses(r.column == "tuned", r.options["T"])))
            outcome.write(folder, outcome.Outcome(outcome.LEARNED, "synthetic"))
    memory_grid.climb(made, execute)
    assert asked == [[("copy-4", "tuned"), ("copy-4", "tuned-hidden")], [("copy-8", "tuned")]]
    assert [memory.longest(r)["T"] if memory.longest(r) else None
            for r in (memory.ladder(made, "tuned")["a"], memory.ladder(made, "tuned-hidden")["a"])] == [8, None]


def test_a_majority_of_the_seeds_climbs():
    assert [memory.solved_by(n) for n in (1, 3, 4, 5, 10)] == [1, 2, 3, 3, 6]


def test_a_label_none_of_whose_seeds_left_the_plateau_is_not_measurable(tmp_path):
    """Its search found a signal, but at the first delay every seed stayed within 10% of the baseline: the budget
    cannot measure its memory, and the table says so rather than a horizon of "none"."""
    planned = [synthetic.planned(setting="copy-4", task="copy", label="rnn", model="rnn", seed=seed, column="tuned",
                                 options={"task": "copy", "model": "rnn", "seed": seed, "hidden": 8, "T": 4,
                                          **OPTIONS}, name=f"rnn-{seed}") for seed in (0, 1, 2)]
    made = grid.Grid(tmp_path, "toy", toy_scale(tune=False), planned)
    for r in planned:
        folder = made.run_folder(r)
        folder.mkdir(parents=True)
        flat = [{"step": 2 * (i + 1), "split": "valid", "loss": 0.95 * baseline_loss(4)} for i in range(3)]
        (folder / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in flat))
        outcome.write(folder, outcome.Outcome(outcome.NOT_LEARNED, "synthetic"))
    horizon = "\n".join(memory.horizon_section(made))
    assert "| RNN | not measurable at this budget (no seed left the plateau at T = 4; T = 4: 0 of 3) |" in horizon


def rung(T: int, updates: list, seeds: int = 3) -> dict:
    """One label's result at one rung (:func:`nnrnn.experiments.grids.memory.rung_result`'s shape); None: not solved."""
    solving = [u for u in updates if u is not None]
    return {"T": T, "seeds": seeds, "finished": seeds, "solved": len(solving), "times": list(updates), "left": seeds,
            "updates": Stat.of(solving, resolution=50), "seconds": Stat.of([1.0] * len(solving)),
            "budget": 2000, "batch": 16}


def test_a_pair_that_solved_different_delays_is_tested_where_the_ladders_part_and_in_censored_updates(monkeypatch):
    """A longer delay is a claim about seeds that solved, tested by Fisher's exact test where the ladders part; the
    updates at the longest delay both solved by the log-rank test, the unsolved seed censored at the budget."""
    synthetic.toy_labels(monkeypatch, "a", "b")
    a = [rung(50, [500, 600, 700]), rung(100, [1000, 1200, 800]), rung(200, [1500, 1700, None])]
    fewer = [rung(50, [900, 1000, None]), rung(100, [1800, 1750, None]), rung(200, [None] * 3)]
    said = memory.compare("a", "b", a, fewer)
    fisher = significance.fisher(2, 3, 0, 3)
    assert said.startswith("a reached a longer delay than b (T = 200 against 100), but not clearly: where the "
                           "ladders part, at T = 200, a solved 2 of 3 seeds and b 0 of 3 (Fisher's exact p = 0.4")
    assert not fisher.passes and "no outcome of these seeds could pass" in said
    ranked = significance.log_rank([1000, 1200, 800], 2000, [1800, 1750, None], 2000)
    assert ranked.passes and "clearly fewer than b's 1775 ± 25 (2 of 3; log-rank p = " in said
    five = [rung(50, [500] * 5, 5), rung(100, [900] * 5, 5)]
    none = [rung(50, [600] * 5, 5), rung(100, [None] * 5, 5)]
    assert memory.compare("a", "b", five, none).startswith(
        "a clearly solved a longer delay than b (T = 100 against 50): where the ladders part, at T = 100, a solved "
        "5 of 5 seeds and b 0 of 5 (Fisher's exact p = 0.0079")
    alike = [rung(50, [900, 1000, None]), rung(100, [1100, 1300, None]), rung(200, [1900, None, None])]
    assert "not clearly different from b's 1200 ± 100 (2 of 3; log-rank p = 0.11" in memory.compare("b", "a", alike, a)
    # nothing both solved: the delays alone, with the test where they part
    assert memory.compare("a", "b", a, [rung(50, [None, None, 900])]).startswith(
        "a reached a longer delay than b (T = 200 against none), but not clearly: where the ladders part, at T = 50, "
        "a solved 3 of 3 seeds and b 1 of 3")


def test_the_data_row_of_a_single_delay_is_its_run_and_of_a_ladder_its_budget_per_delay():
    single = [synthetic.planned(setting="copy", task="copy", label="rnn", options={"T": 20, **OPTIONS})]
    assert generated(single, "copy") == "24 generated sequences (T = 20)"
    ladder = [synthetic.planned(setting=f"copy-{T}", task="copy", label="rnn", options={"T": T, **OPTIONS},
                                name=f"copy-{T}") for T in (4, 8, 16)]
    assert generated(ladder, "copy") == ("at most 6 updates × 4 = 24 generated sequences per delay, T = 4 to 16, "
                                         "fewer where a run stopped solved")


def test_the_horizon_figure_takes_every_labels_colour_and_line_style_from_the_one_table(tmp_path, monkeypatch):
    import matplotlib.figure
    from matplotlib.colors import to_hex
    from matplotlib.lines import Line2D

    from nnrnn.experiments.judging import labels as label_table
    kept = []
    # kept, and a placeholder where it would be drawn (the figure is saved whole: written, then renamed)
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, path, *a, **k: (kept.append(fig), Path(path).write_bytes(b"")))
    labels = ("nnrnn", "nnrnn normal", "exprnn")
    planned = [synthetic.planned(setting="copy-50", task="copy", label=label, model="nnrnn", options={"T": 50},
                                 name=label) for label in labels]
    made = grid.Grid(tmp_path, "toy", toy_scale(tune=False), planned)
    found = {"nnrnn": [rung(50, [500, 600, None]), rung(100, [None] * 3)],
             "nnrnn normal": [rung(50, [None] * 3)], "exprnn": [rung(50, [300, 400, 350])]}
    memory.horizon_figure(made, found)
    assert "nnrnn normal" in label_table.VARIANTS
    ax = kept[0].axes[0]
    lines, legend = ax.get_lines(), dict(zip(*reversed(ax.get_legend_handles_labels())))
    for label in labels:
        colour, style = label_table.line_style(label)
        dashes = Line2D([], [], linestyle=style)._unscaled_dash_pattern
        drawn = legend[memory.name(label)].lines[0]  # the errorbar's line through the solved delays
        assert to_hex(drawn.get_color()) == colour and drawn._unscaled_dash_pattern == dashes
        # an unsolved delay: an open marker of the label's colour at the budget
        unsolved = [x for x in lines if x.get_markerfacecolor() == "none" and len(x.get_xdata())
                    and to_hex(x.get_markeredgecolor()) == colour]
        assert bool(unsolved) == any(not memory.enough(r) for r in found[label])
        assert all(list(x.get_ydata()) == [2000] for x in unsolved)


def test_the_pair_without_t_does_not_claim_to_isolate_t_when_each_model_has_its_own_pick():
    """Each label of the memory grid is searched on its own, so the nnRNN and the nnRNN without T train at different
    options: the sentence says so, and does not call the pair the paper's thesis isolated."""
    rungs = [rung(50, [500, 600, 700])]
    said = "\n".join(memory.comparisons({"nnrnn": rungs, "nnrnn normal": rungs}))
    assert "isolated" not in said
    assert "each at its own search's pick, so not T alone" in said


def test_a_search_whose_best_trial_did_not_leave_the_baseline_names_no_pick_and_no_horizon(tmp_path):
    """Issue 67: where no trial of a search left the memoryless plateau, its pick ranked how fast a trial fell to the
    plateau, and the table read "none" as if a horizon had been measured."""
    from nnrnn.experiments.reporting import picks, signal, tuning
    baseline = baseline_loss(50)
    planned = [synthetic.planned(setting="copy-50", task="copy", label=label, model=label, seed=seed, column="tuned",
                                 options={"task": "copy", "model": label, "seed": seed, "hidden": 8, "T": 50,
                                          "lr": {"rnn": 1e-3, "lstm": 0.029}[label], **OPTIONS},
                                 name=f"{label}-{seed}")
               for label in ("rnn", "lstm") for seed in (0, 1, 2)]
    made = grid.Grid(tmp_path, "toy", toy_scale(tune=False), planned)
    for r in planned:
        folder = made.run_folder(r)
        folder.mkdir(parents=True)
        (folder / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in losses(0, 50)))
        outcome.write(folder, outcome.Outcome(outcome.NOT_LEARNED, "synthetic"))
    ranges = {"lr": {"log": [1e-5, 3e-2]}}
    made.trials.write_text(json.dumps({
        "copy-50-rnn": [{"number": 0, "state": "COMPLETE", "value": 0.5 * baseline, "params": {"lr": 1e-3},
                         "ranges": ranges}],
        "copy-50-lstm": [{"number": 0, "state": "COMPLETE", "value": 0.95 * baseline, "params": {"lr": 0.029},
                          "ranges": ranges},
                         {"number": 1, "state": "COMPLETE", "value": 1.2 * baseline, "params": {"lr": 1e-4},
                          "ranges": ranges}]}))
    made.tuned.write_text(json.dumps({"copy": {"rnn": {"lr": 1e-3}, "lstm": {"lr": 0.029}}}))
    assert signal.no_signal(made) == {"lstm"}
    assert signal.signals(made)[("copy-50", "lstm")].share == pytest.approx(0.95)
    # the trainer's margin for learning, and no other: 10% below the baseline
    assert signal.Signal(0.89 * baseline, baseline).learned and not signal.Signal(0.9 * baseline, baseline).learned
    horizon = "\n".join(memory.horizon_section(made))
    assert "| LSTM | not measurable at this budget (no search trial learned; T = 50: 0 of 3) |" in horizon
    assert "| RNN | none (T = 50: 0 of 3) |" in horizon  # its search learned: its runs did not, a measured none
    assert "none: RNN; not measurable at this budget: LSTM." in horizon
    section = "\n".join(picks.picks_section(made))
    assert "1 of 2 searches found a signal." in section and "| copy-50 | LSTM | 0.950 | no trial learned |" in section
    assert "| copy-50 | LSTM | lr | 1e-05 to 0.03 (log) | none (no trial learned; its best trial had 0.029) | |" in \
        section and "LSTM's lr" not in section.split("Picks at an edge")[1]  # its place at the ceiling is not named
    tuned = "\n".join(tuning.tuning_section(dataclasses.replace(made, spec=dataclasses.replace(
        made.spec, tune=Search(trials=2, share=1.0, seed=100, settings=("copy-4",)))), ""))
    assert "| copy | LSTM | none: no trial learned (its runs trained with the best trial's lr=0.029" in tuned
    assert "| copy | RNN | lr=0.001" in tuned
