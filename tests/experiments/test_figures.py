"""nnrnn.experiments.figures: what a reader compares across a report's figures."""
from nnrnn.experiments.figures import line_style


def test_a_model_keeps_its_colour_in_every_figure_and_no_two_models_look_alike():
    plan = {"copy": ("rnn-orth", "exprnn", "nnrnn", "gru", "cornn", "rnn chain"),
            "ptb": ("rnn", "rnn-orth", "exprnn", "nnrnn", "gru", "cornn", "rnn chain")}
    runs = [{"setting": setting, "label": label} for setting, labels in plan.items() for label in labels]
    styles = {label: line_style(label, runs) for label in plan["ptb"]}
    assert styles["rnn"] == ("C0", "-") and styles["exprnn"] == ("C2", "-")  # nnrnn's order, though copy lacks rnn
    assert styles["gru"] == ("C0", "--") and styles["rnn chain"] == ("C2", "--")  # not the paper's: dashed
    assert len(set(styles.values())) == len(styles)
    only_copy = [r for r in runs if r["setting"] == "copy"]
    assert line_style("exprnn", runs) == line_style("exprnn", runs[::-1])
    assert line_style("nnrnn", only_copy) == ("C2", "-")  # what a grid without rnn draws
