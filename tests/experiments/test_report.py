"""nnrnn.experiments.reporting.report: the grid's report from its run folders (settings, variants, speed, γ table,
data sizes)."""
import json
import math
from pathlib import Path

import pytest

from nnrnn.experiments import grids, reproduce
from nnrnn.experiments.grids import paper as paper_grid
from nnrnn.experiments.grids.beyond import goal_section
from nnrnn.experiments.grids.paper import _per_run
from nnrnn.experiments.planning import grid
from nnrnn.experiments.planning.declaration import Scale, Search, Setting, Variant
from nnrnn.experiments.reporting import figures, report
from nnrnn.experiments.reporting.collect import converged, spike, updates_to_solve
from nnrnn.training import runfolder
from tests.conftest import SHARED, needs_ptb
from tests.experiments.synthetic import planned

COPY = {"T": 5, "batch_size": 4, "steps": 6, "eval_every": 2, "log_every": 2}
HELD = {"nnrnn γ=1": Variant(model="nnrnn", options={"fixed_gamma": 1.0, "delta": 0.0})}


pytestmark = pytest.mark.usefixtures("undrawn_figures")  # what is trained and written, not the drawing


@pytest.fixture
def scale(monkeypatch):
    spec = Scale(name="two-settings", seeds=(0, 1), report=paper_grid.REPORT, settings={
        "copy": Setting(task="copy", hidden=8, columns=("hidden",), models=("nnrnn",), variants=HELD, options=COPY),
        "copy-9": Setting(task="copy", hidden=8, columns=("hidden",), models=("nnrnn",), options={**COPY, "T": 9})})
    monkeypatch.setitem(grids.SCALES, "two-settings", spec)
    return "two-settings"


def test_settings_and_variants_are_planned_and_reported(tmp_path, scale):
    runs = grid.plan(grids.SCALES[scale])
    assert {(r.setting, r.label) for r in runs} == {("copy", "nnrnn"), ("copy", "nnrnn γ=1"),
                                                          ("copy-9", "nnrnn")}
    held = next(r for r in runs if r.label == "nnrnn γ=1")
    assert held.options["fixed_gamma"] == 1.0 and held.column == "hidden"
    assert len({r.name for r in runs}) == 6  # the variant and T = 9 are runs of their own
    text = reproduce.reproduce(scale, tmp_path, log=lambda m: None).read_text()
    assert "## copy, T = 5" in text and "## copy, T = 9" in text
    assert "| nnRNN, γ = 1 |" in text  # the variant's own row
    assert "validated every 2 updates" in text
    assert (tmp_path / "figures" / "curves-copy-9.png").is_file()
    assert (tmp_path / "figures" / "gradients-copy-9.png").is_file()  # the supplement's gradient norms
    grid.GridFolder(tmp_path).notes.write_text("EURNN's capacity explains it.\n")
    made = grids.planned_grid(tmp_path, scale, runs)
    text = report.write_report(made).read_text()  # written again: the hand-written notes stay
    assert text.endswith("## Notes on this grid (written by hand, from notes.md)\n\nEURNN's capacity explains it.\n")
    # the learned structure is measured on every seed, once
    cache = json.loads((tmp_path / "analysis" / "structure.json").read_text())
    assert len(cache) == 2 and all(0 <= e["values"]["triangular_fraction"] < 1 for e in cache.values())
    # the real nnRNN's trained γ and block angles, not its complex sibling's path
    from nnrnn.analysis.trained import schur_view
    from nnrnn.training.network import load_model
    name, entry = next(iter(cache.items()))
    view = schur_view(load_model(tmp_path / "runs" / name)[0].rnn)
    assert entry["values"]["mean_gamma"] == pytest.approx(float(view.gamma_parameters.mean()))
    assert entry["values"]["angle_concentration"] == pytest.approx(
        1 - float(view.angles.std()) / (math.pi / math.sqrt(12)))


def test_updates_to_solve_is_the_step_after_which_the_loss_stays_below(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    losses = [0.5, 0.05, 0.2, 0.04, 0.03]
    (folder / "metrics.jsonl").write_text("".join(
        json.dumps({"step": 100 * (i + 1), "split": "valid", "loss": v}) + "\n" for i, v in enumerate(losses))
        + json.dumps({"step": 500, "split": "test", "loss": 0.03}) + "\n")
    assert updates_to_solve(folder, 0.1) == 400.0
    assert updates_to_solve(folder, 0.01) is None  # never below


def test_a_run_did_not_converge_when_it_stopped_learning_at_its_start(tmp_path):
    def run(valid, name, norms=(1.0, 2.0, 400.0)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "metrics.jsonl").write_text("".join(
            json.dumps({"step": 10 * (i + 1), "split": "train", "grad_norm": g}) + "\n" for i, g in enumerate(norms))
            + "".join(json.dumps({"step": 100 * (i + 1), "split": "valid", "bpc": v}) + "\n"
                      for i, v in enumerate(valid))
            + json.dumps({"step": 1000, "split": "test", "bpc": min(valid)}) + "\n")
        return folder
    learned = run([4.5, 3.0, 2.3], "learned")  # a gradient spike at its start does not matter
    assert converged(learned, "bpc") and spike(learned) == pytest.approx(200)
    stuck = run([4.5, 4.29, 4.31], "stuck")  # 5% below its first validation, then flat
    assert not converged(stuck, "bpc")
    assert _per_run(stuck, "bpc", "test") == ("4.290 (validation 4.50 first, 4.29 best; largest gradient norm "
                                                     "200× its median), did not converge")
    (learned / runfolder.DIVERGED_MARKER).write_text("")
    assert spike(learned) is None and not converged(learned, "bpc")


@needs_ptb
def test_ptb_report_gives_accuracy_the_gamma_table_and_the_data_sizes(tmp_path, monkeypatch):
    ptb = {"bptt": 150, "batch_size": 16, "steps": 2, "eval_every": 2, "log_every": 2, "eval_batch_size": 500}
    spec = Scale(name="ptb-tiny", seeds=(0,), report=paper_grid.REPORT, settings={
        "ptb": Setting(task="ptb", hidden=8, columns=("hidden",), models=("nnrnn",), variants=HELD, options=ptb)})
    monkeypatch.setitem(grids.SCALES, "ptb-tiny", spec)
    text = reproduce.reproduce("ptb-tiny", tmp_path, data_dir=str(SHARED), log=lambda m: None).read_text()
    assert "test bpc | test accuracy | N" in text
    assert "## nnRNN with γ held (supplementary Table 7)" in text and "| nnRNN, γ = 1 |" in text
    assert "| PTB | 353,947 characters | 39,095 characters | 442,423 characters |" in text
    assert "none of the official training file" in text and "90% of the official validation file" in text
    assert "as many characters as 7% of the training file" in text
    assert "| PTB, T_PTB = 150 | N = 8 | not run | 1024 (" in text  # this scale's size beside the paper's
    # and each PTB claim row says what its data limits
    rows = [line for line in text.split("## The paper's claims at this scale")[1].splitlines()
            if line.startswith("| PTB (T_PTB = 150")]
    assert rows and all("trained on 353,947 characters, as many as 7% of the official training file, on which the "
                        "paper's N = 1024 over-fits" in row for row in rows)


def test_the_goal_is_reached_only_with_every_task_run_and_not_with_a_missing_one():
    from nnrnn.experiments.judging.statistics import Stat
    tables = {"ptb-150": {"tuned": {"nnrnn": Stat.of([1.40, 1.41, 1.40]), "lstm": Stat.of([1.60, 1.61, 1.60])}},
              "copy": {"tuned": {"nnrnn": Stat.of([0.0, 0.0, 0.0]), "exprnn": Stat.of([0.0, 0.0, 0.0])}},
              "psmnist": {"tuned": {"nnrnn": Stat.of([0.95, 0.95, 0.96]), "exprnn": Stat.of([0.95, 0.96, 0.95])}}}
    task_of = {"ptb-150": "ptb", "copy": "copy", "psmnist": "psmnist"}

    def reached(tables):
        row = next(line for line in goal_section(tables, task_of, {}).splitlines() if "nnRNN" in line)
        return row.rstrip(" |").rsplit("| ", 1)[1]

    assert reached(tables) == "yes"
    without_psmnist = {**tables, "psmnist": {"tuned": {"exprnn": tables["psmnist"]["tuned"]["exprnn"]}}}
    assert reached(without_psmnist) == "no"
    diverged = {**tables, "copy": {"tuned": {"nnrnn": Stat.of([None, None, None]),
                                             "exprnn": tables["copy"]["tuned"]["exprnn"]}}}
    assert reached(diverged) == "no"


def test_every_label_has_its_own_colour_and_line_style_the_same_in_every_grid():
    from nnrnn.experiments.judging import labels
    from nnrnn.models import MODELS
    # every model from its class, and every variant the grids name (declared when the grids are imported)
    known = [*MODELS, *{label for scale in grids.SCALES.values() for spec in scale.settings.values()
                        for label in spec.variants}]
    table = {label: labels.line_style(label) for label in known}
    assert set(labels.VARIANTS) <= set(table)
    assert len({c for c, _ in table.values()}) == len(table) and len({str(s) for _, s in table.values()}) == len(table)
    assert all(c.lower() not in ("gray", "grey", "#7f7f7f", "#808080") for c, _ in table.values())  # the references'
    assert len({labels.display_name(label) for label in known}) == len(known)
    plan = {"copy": ("rnn-orth", "exprnn", "nnrnn", "gru", "cornn", "rnn chain"),
            "ptb": ("rnn", "rnn-orth", "exprnn", "nnrnn", "gru", "cornn", "rnn chain")}
    runs = [planned(setting=setting, label=label) for setting, labels_ in plan.items() for label in labels_]
    only_copy = [r for r in runs if r.setting == "copy"]
    assert figures.line_style("exprnn", runs) == figures.line_style("exprnn", only_copy) == MODELS["exprnn"].LINE_STYLE


def test_a_label_stated_nowhere_is_an_error_not_a_default():
    from nnrnn.experiments.judging import labels, words
    with pytest.raises(LookupError, match="'new a'.*variant"):
        figures.line_style("new a", [])
    with pytest.raises(LookupError, match="'new a'"):
        words.name("new a")
    with pytest.raises(ValueError, match="model's label"):
        labels.variant("nnrnn", "another nnRNN", ("#123456", "-"))
    with pytest.raises(ValueError, match="declared twice"):
        labels.variant("nnrnn delay", "another name", ("#123456", "-"))


@pytest.fixture
def drawn(monkeypatch):
    """The figures saved, kept (not drawn) for a test to read their lines."""
    import matplotlib.figure
    kept = {}

    def save(fig, fname, *args, **kwargs):
        kept[Path(fname).name] = fig
        Path(fname).write_bytes(b"\x89PNG not drawn")
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", save)
    monkeypatch.setattr("matplotlib.pyplot.close", lambda fig=None: None)
    return kept


def test_a_figure_labels_its_baseline_and_a_seeds_spike_moves_no_gradient_line(tmp_path, monkeypatch, drawn):
    from tests.experiments import synthetic
    monkeypatch.setitem(grids.SCALES, "copy-three", Scale(name="copy-three", seeds=(0, 1, 2), report=paper_grid.REPORT,
                                                          settings={"copy": Setting(
        task="copy", hidden=8, columns=("hidden",), models=("nnrnn", "exprnn"), options=COPY)}))
    made = synthetic.build(tmp_path, "copy-three")  # seed 1 of every run: its gradient norm ×300 at update 155
    figures.learning_curves(made, "copy", tmp_path / "curves-copy.png", 0.0945)
    labels = drawn["curves-copy.png"].axes[0].get_legend_handles_labels()[1]
    assert "baseline 0.0945 (always the blank)" in labels
    figures.learning_curves(made, "copy", tmp_path / "gradients-copy.png", 0.0945, gradients=True)
    fig = drawn["gradients-copy.png"]
    ax = fig.axes[0]
    assert "median over seeds" in fig._suptitle.get_text() and "10× the highest median" in fig._suptitle.get_text()
    nnrnn = next(line for line in ax.get_lines() if line.get_label().startswith("nnRNN"))
    steps, shown = nnrnn.get_data()
    members = [r for r in made.planned if r.label == "nnrnn"]
    norms = [[r["grad_norm"] for r in grid.metrics(made.run_folder(m)) if r["split"] == "train"] for m in members]
    at = list(steps).index(155)
    spike = max(n[at] for n in norms)
    assert shown[at] == sorted(n[at] for n in norms)[1] < spike / 10  # the median: the spike moves it not
    highest = max(max(line.get_ydata()) for line in ax.get_lines())
    assert ax.get_ylim()[1] == pytest.approx(10 * highest)


def test_adding_draws_its_realised_baseline_with_its_value_and_psmnist_and_ptb_their_references(monkeypatch):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    figures.baseline_axis(ax, "adding", 0.1633, 0.17)
    assert ax.get_legend_handles_labels()[1] == ["baseline 0.1633 (always answering 1, on these validation "
                                                 "sequences)"]
    assert ax.get_lines()[0].get_ydata()[0] == 0.1633
    plt.close(fig)

    class Task:  # what build_task gives: each metric's references, from the data the runs saw
        def references(self):
            return {"accuracy": {"chance": 0.1, "baseline": 0.11}, "bpc": {"chance": 5.6, "baseline": 4.335}}
    monkeypatch.setattr(figures, "build_task", lambda options: Task())
    runs = [planned(setting="psmnist", task="psmnist"), planned(setting="ptb", task="ptb")]
    assert figures.reference(runs, "psmnist") == (0.1, "chance 10% (a uniform guess)")
    assert figures.reference(runs, "ptb") == (4.335, "unigram 4.335 bpc (the training text's character "
                                                     "frequencies)")
    assert figures.reference([planned(setting="copy", task="copy")], "copy") is None


@needs_ptb
def test_ptbs_unigram_line_is_the_entropy_of_the_training_texts_characters():
    from collections import Counter

    from nnrnn.data.ptb import load_ptb
    runs = [planned(setting="ptb", task="ptb", options={"task": "ptb", "data_dir": str(SHARED)})]
    value, _ = figures.reference(runs, "ptb")
    counts = Counter(load_ptb(SHARED).train.tolist())
    total = sum(counts.values())
    assert value == pytest.approx(-sum(c / total * math.log2(c / total) for c in counts.values()), rel=1e-9)


@pytest.mark.parametrize("seconds, said", [(60.0, "trained for 1 minute in all"), (30.0, "trained for 0 minutes"),
                                           (150.0, "trained for 2 minutes")])
def test_the_introduction_says_the_training_time_in_words_of_the_right_number(tmp_path, scale, seconds, said):
    from nnrnn.experiments.reporting.sections import introduction
    from tests.experiments.synthetic import build
    made = build(tmp_path, scale)
    folders = {made.run_folder(r) for r in made.planned}
    for folder in folders:  # the whole grid's wall time: ``seconds``
        (folder / runfolder.WALL_SECONDS).write_text(f"{seconds / len(folders)}\n")
    assert said in " ".join(introduction(made, "Smoke"))


def test_curves_above_the_cut_axis_and_a_single_point_still_show(tmp_path, monkeypatch, drawn):
    """The smoke grid's copy figure: every curve above 3× the baseline, where the axis was cut, so none showed; and a
    setting validated once (its PTB figure) drew each curve as a one-point line without a marker."""
    import json

    from tests.experiments import synthetic
    monkeypatch.setitem(grids.SCALES, "copy-short", Scale(name="copy-short", seeds=(0, 1), report=paper_grid.REPORT,
                                                          settings={"copy": Setting(
        task="copy", hidden=8, columns=("hidden",), models=("nnrnn", "lstm"), options=COPY)}))
    made = synthetic.build(tmp_path, "copy-short")
    for planned_run in made.planned:  # untrained: validated once, far above the baseline
        (made.run_folder(planned_run) / "metrics.jsonl").write_text(
            json.dumps({"step": 3, "split": "valid", "loss": 2.4 + 0.1 * planned_run.seed}) + "\n")
    figures.learning_curves(made, "copy", tmp_path / "curves-copy.png", 0.0945)
    ax = drawn["curves-copy.png"].axes[0]
    curves = [line for line in ax.get_lines() if "N=" in line.get_label()]
    assert len(curves) == 2
    bottom, top = ax.get_ylim()
    assert all(bottom < min(line.get_ydata()) < top for line in curves)
    assert all(line.get_marker() not in (None, "None", "") for line in curves)
    assert "axis cut" not in drawn["curves-copy.png"]._suptitle.get_text()  # it is not, here


@pytest.fixture
def fixed_over_derived(monkeypatch):
    """The smallest tuned grid where a fixed option overrides a derived one: one seed, one search trial of two
    updates, coRNN with its paper's Adam asked for (``paper_optimizer``) and RMSprop given by the grid."""
    from nnrnn.experiments.reporting.picks import picks_section
    from nnrnn.experiments.reporting.sections import Report
    from nnrnn.experiments.reporting.tuning import tuning_section
    tiny = Report("Fixed over derived", (lambda g: tuning_section(g, "Its published settings first."), picks_section))
    monkeypatch.setitem(grids.SCALES, "fixed-over-derived", Scale(
        name="fixed-over-derived", seeds=(0,), report=tiny, tune=Search(trials=1, share=1.0, seed=100, startup=1),
        settings={"copy": Setting(task="copy", hidden=8, columns=(grid.TUNED,), paper_optimizer=True,
                                  models=("cornn",), options={**COPY, "steps": 2, "optimizer": "rmsprop"})}))
    return "fixed-over-derived"


def test_a_reports_settings_tables_show_the_options_that_ran_not_the_picks(tmp_path, fixed_over_derived):
    """Issue 67: the tuned options were printed from the picks, which leave out an option the grid fixed over the
    one derived for it (the committed memory grid's coRNN row said nothing of the RMSprop it trained with)."""
    out = tmp_path / "grid"
    text = reproduce.reproduce(fixed_over_derived, out).read_text()
    assert "optimizer" not in json.loads((out / "tuned.json").read_text())["copy"]["cornn"]  # the pick says none
    (run,) = (f for f in grid.GridFolder(out).runs.iterdir() if runfolder.config_file(f).is_file())
    assert json.loads(runfolder.config_file(run).read_text())["optimizer"] == "rmsprop"  # what it trained with
    tuned = next(line for line in text.splitlines() if line.startswith("| copy | coRNN | "))
    assert "optimizer=rmsprop" in tuned
    assert "| coRNN | rmsprop (its paper's is adam; the option the grid fixed won) |" in text
    first = next(line for line in text.splitlines() if line.startswith("| copy | coRNN | published"))
    assert "dt=0.076, epsilon=8, lr=0.0054" in first  # the first trial's values, a point of the searched space
    # the compact data carries what ran, and the report written from it alone reads the same
    (folder,) = json.loads((out / "data.json").read_text())["folders"].values()
    assert folder["config"]["optimizer"] == "rmsprop" and str(tmp_path) not in json.dumps(folder["config"])
    assert reproduce.regenerate(out / "data.json", tmp_path / "elsewhere").read_text() == text


def test_a_runs_resolved_configuration_is_its_saved_one_and_else_its_options_over_its_preset(tmp_path):
    """What the settings tables read (issue 67): the configuration the run folder saved, less the machine's
    folders; compact data written before it carried configurations falls back on the options as planned."""
    from nnrnn.experiments.reporting.collect import ran_config
    from nnrnn.training.config import resolve_config
    run = planned(task="copy", model="cornn", options={"task": "copy", "model": "cornn", "hidden": 8,
                                                      "optimizer": "rmsprop"}, name="copy-cornn")
    made = grid.GridFolder(tmp_path)
    assert ran_config(made, run) == resolve_config(run.options, run.preset)  # no folder: as the trainer resolves
    folder = made.run_folder(run)
    folder.mkdir(parents=True)
    saved = {**resolve_config(run.options, run.preset), "optimizer": "adam", "out": str(folder), "data_dir": "/x"}
    runfolder.config_file(folder).write_text(json.dumps(saved))
    ran = ran_config(made, run)
    assert ran["optimizer"] == "adam" and "out" not in ran and "data_dir" not in ran
