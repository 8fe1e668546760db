"""Every figure nnrnn makes (run curves, analysis, theory, the grid report's curves) shows all of its text: no
title, label or tick label lies outside the figure, at small and larger sizes."""
import json
from pathlib import Path

import matplotlib
import matplotlib.figure
import numpy as np
import pytest
import torch
from matplotlib.text import Text

import nnrnn
from nnrnn.analysis import analyze_model, plots
from nnrnn.experiments.grids import paper as paper_grid
from nnrnn.experiments.planning import grid
from nnrnn.experiments.planning.declaration import Scale, Setting
from nnrnn.experiments.reporting import figures
from nnrnn.training.runlog import curves_figure


def text_outside(fig) -> list[str]:
    """The texts of ``fig`` whose drawn extent passes an edge of the figure (one pixel of slack): titles, labels,
    legends, and each axis's tick labels as drawn (ticks outside the view are not drawn, so not counted)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    inside = fig.bbox.padded(1)
    axes = [axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)]
    tick_labels = {id(label) for axis in axes for tick in axis.get_major_ticks() + axis.get_minor_ticks()
                   for label in (tick.label1, tick.label2)}
    outside = []
    for text in fig.findobj(Text):
        if id(text) in tick_labels or not (text.get_visible() and text.get_text().strip()):
            continue
        box = text.get_window_extent(renderer)
        if not (inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1):
            outside.append(f"{text.get_text()!r} at x {box.x0:.0f}..{box.x1:.0f} of {fig.bbox.width:.0f}, "
                           f"y {box.y0:.0f}..{box.y1:.0f} of {fig.bbox.height:.0f}")
    for axis in axes:
        box = axis.get_tightbbox(renderer)
        if box is not None and not (inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0
                                    and box.y1 <= inside.y1):
            outside.append(f"the tick labels of {axis.axes.get_title()!r}'s {axis.axis_name} axis")
    return outside


@pytest.fixture
def saved(monkeypatch):
    """Each figure the code saves while the test runs, checked instead of written (drawing it at the figure's dpi
    lays it out as saving at any other dpi does): {file name: texts outside}."""
    found = {}

    def savefig(fig, path, *args, **kwargs):
        found[str(path).rsplit("/", 1)[-1]] = text_outside(fig)
        Path(path).write_bytes(b"")  # a file where the figure would be, as a figure saved whole and renamed needs

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    return found


def test_the_run_curves_show_all_their_text():
    records = [{"step": 50 * i, "split": "train", "loss": 0.5 / i, "accuracy": 0.1 * i} for i in range(1, 9)]
    records += [{"step": 400, "split": "valid", "loss": 0.001, "accuracy": 0.9}]
    fig = curves_figure(records, {"loss": {"baseline": 0.0945, "chance": 2.197}},
                        title="copy, nnrnn with 128 units: demo-copy-20261126-031500")
    assert text_outside(fig) == []
    loss = fig.axes[0]
    assert loss.get_yscale() == "log"  # 0.5 down to 0.001: three decades
    assert [line.get_marker() for line in loss.lines[:2]] == ["o", "o"]  # a series of one point shows
    assert curves_figure([{"step": 1, "split": "valid", "loss": 0.5}, {"step": 2, "split": "valid", "loss": 0.4}]
                         ).axes[0].get_yscale() == "linear"


@pytest.mark.parametrize("hidden", [16, 128])
def test_the_analysis_figures_show_all_their_text(hidden, saved, tmp_path):
    torch.manual_seed(0)
    analyze_model(nnrnn.NonNormalRNN(3, hidden), tmp_path / "nnrnn", batch=False)  # Λ's trained γ_i
    if hidden == 16:
        analyze_model(torch.nn.RNN(3, hidden), tmp_path / "rnn", batch=False)  # a computed Schur form, |λ_i|
    plots.plot_training_gradients([10, 20, 30], [1.0, 0.1, 0.01], tmp_path / "grad.png",
                                  title="gradient norm during training (copy-nnrnn-20261126-031500)")
    plots.plot_gradients(np.geomspace(2e6, 2e3, 100), tmp_path / "gradients.png",
                         title="copy-nnrnn-20261126-031500 (NonNormalRNN): gradient propagation",
                         subtitle="probe loss L = ½ mean_b ‖h_T‖², Gaussian N(0, 1) inputs, T = 100, B = 8",
                         reference=np.full(100, 13.0), reference_label="untrained (the run's initial network)")
    assert {"schur.png", "spectrum.png", "grad.png", "gradients.png"} <= set(saved)
    assert {name: texts for name, texts in saved.items() if texts} == {}


def test_the_theory_figures_show_all_their_text(saved, tmp_path):
    plots.figure1b(tmp_path / "figure1b.png", n=10, n_init=4)
    plots.figure1c(tmp_path / "figure1c.png", n=10)
    plots.figure_proposition1(tmp_path / "proposition1.png", n=6)
    plots.figure_proposition2(tmp_path / "proposition2.png", ns=(2, 3), t_max=100)
    assert len(saved) == 4
    assert {name: texts for name, texts in saved.items() if texts} == {}


def test_the_report_curves_show_all_their_text(saved, tmp_path):
    options = {"T": 5, "batch_size": 4, "steps": 6, "eval_every": 2, "log_every": 2}
    spec = Scale(name="figure", seeds=(0, 1), report=paper_grid.REPORT, settings={
        "copy": Setting(task="copy", hidden=8, columns=("hidden",), models=("nnrnn", "lstm"), options=options)})
    made = grid.Grid(tmp_path, scale="figure", spec=spec, planned=grid.plan(spec))
    for planned in made.planned:
        folder = made.run_folder(planned)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "metrics.jsonl").write_text("".join(
            json.dumps({"step": step, "split": split, "loss": 0.09 / step, "grad_norm": 1.0 / step}) + "\n"
            for step in (2, 4, 6) for split in ("train", "valid")))
    figures.learning_curves(made, "copy", tmp_path / "curves-copy.png", 0.0945)
    figures.learning_curves(made, "copy", tmp_path / "gradients-copy.png", 0.0945, gradients=True)
    assert {name: texts for name, texts in saved.items() if texts} == {}


@pytest.fixture
def drawn(monkeypatch):
    """Each figure the code saves while the test runs, kept instead of written: {file name: figure}."""
    found = {}
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, path, *args, **kwargs: found.__setitem__(str(path).rsplit("/", 1)[-1], fig))
    return found


def _not_finite_marks(ax) -> list[float]:
    """The x of the × markers an axis draws for NaN or inf values."""
    return [float(x) for line in ax.lines if line.get_marker() == "x" for x in line.get_xdata()]


def test_nan_gradient_norms_are_marked_and_said_never_called_zero(drawn, tmp_path):
    norms = np.geomspace(1e-3, 1.0, 50)
    norms[10:20] = np.nan
    plots.plot_gradients(norms, tmp_path / "gradients.png", reference=np.full(50, np.inf))
    ax = drawn["gradients.png"].axes[0]
    assert ax.get_yscale() == "log"
    assert sorted(_not_finite_marks(ax)) == sorted(list(range(11, 21)) + list(range(1, 51)))
    trained = ax.lines[0].get_ydata()
    assert np.isnan(trained[10:20]).all()  # the line breaks at the NaN steps instead of joining across them
    labels = [t.get_text() for t in drawn["gradients.png"].legends[0].get_texts()]
    assert labels[0].endswith("shrinks 1,000×; NaN or inf at 10 of 50 steps")
    assert "untrained: the gradient is NaN or inf at 50 of 50 steps" in labels
    assert not any("zero" in label for label in labels)


def test_nan_training_gradient_norms_are_marked_and_the_rest_keeps_its_log_axis(drawn, tmp_path):
    steps = np.arange(1, 51) * 10
    norms = np.geomspace(1.0, 1e4, 50)
    norms[25], norms[30:] = np.inf, np.nan  # a diverging run
    plots.plot_training_gradients(steps, norms, tmp_path / "grad.png")
    fig = drawn["grad.png"]
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"  # the finite windows span two decades
    assert _not_finite_marks(ax) == [float(s) for s in [260] + list(range(310, 510, 10))]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["× near the top: NaN or inf at 21 of 50 logged windows"]
    plots.plot_training_gradients(steps, np.ones(50), tmp_path / "flat.png")
    assert drawn["flat.png"].legends == [] and drawn["flat.png"].axes[0].get_yscale() == "linear"


def _labelled_ticks(ax) -> list[str]:
    """The y tick labels ``ax`` draws inside its view."""
    ax.figure.canvas.draw()
    low, high = ax.get_ylim()
    return [t.get_text() for t, v in zip(ax.get_yticklabels(), ax.get_yticks()) if low <= v <= high]


def test_a_log_axis_over_less_than_two_decades_labels_1_2_5_in_plain_digits(drawn, tmp_path):
    plots.plot_gradients(np.linspace(15.0, 55.0, 100), tmp_path / "gradients.png")  # 15 to 55: no power of ten
    assert _labelled_ticks(drawn["gradients.png"].axes[0]) == ["20", "50"]
    plots.figure_proposition1(tmp_path / "proposition1.png", n=20)  # right panel: J and bound, 0.015 to 1
    assert _labelled_ticks(drawn["proposition1.png"].axes[1]) == ["0.02", "0.05", "0.1", "0.2", "0.5", "1"]
    plots.plot_gradients(np.geomspace(1e-6, 1.0, 100), tmp_path / "wide.png")  # six decades: powers of ten
    assert all(label.startswith("$\\mathdefault{10^{") for label in _labelled_ticks(drawn["wide.png"].axes[0]))
