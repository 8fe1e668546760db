"""The thesis grid (nnrnn.experiments.grids.thesis): every arm differs from the nnRNN with T in its one declared
factor as the runs resolve it, and the report's pre-declared comparisons are tested, adjusted together and read
from the runs' records."""
import json
import math
import re

import pytest

from nnrnn.experiments.grids import SCALES, thesis
from nnrnn.experiments.planning import grid
from nnrnn.tasks.copy import baseline_loss
from nnrnn.training import outcome

pytestmark = pytest.mark.usefixtures("undrawn_figures")

# what each arm may differ in from the nnRNN with T, as its runs resolve it (expRNN has no Schur form, so the
# Schur form's options are at their defaults there)
FACTOR = {thesis.NORMAL: {"triangular"}, thesis.NORMAL_PARAMS: {"triangular", "hidden"}, thesis.DELAY: {"t_init"},
          "exprnn": {"model", "hidden", "triangular", "delta", "t_decay"}}


@pytest.fixture(scope="module")
def planned():
    return grid.plan(SCALES["thesis"], seeds=[0])


def _differences(a: dict, b: dict) -> set:
    return {k for k in set(a) | set(b) if a.get(k) != b.get(k)}


def test_each_arm_differs_from_the_nnrnn_with_t_in_its_one_factor(planned):
    for setting in thesis.SETTINGS:
        runs = {r.label: r.config for r in planned if r.setting == setting}
        assert set(runs) == {thesis.REFERENCE, *FACTOR}
        for label, factor in FACTOR.items():
            assert _differences(runs[thesis.REFERENCE], runs[label]) == factor, (setting, label)


def test_the_option_sets_differ_in_lr_orth_and_the_noise_levels_in_the_noise_alone(planned):
    by = {(r.setting, r.label): r.config for r in planned}
    for (setting, label), config in by.items():
        option_set, sigma, T = thesis.SETTINGS[setting]
        assert config["state_noise"] == sigma and config["T"] == T
        for other, (o, s, t) in thesis.SETTINGS.items():
            if t == T and s == sigma and o != option_set:
                assert _differences(config, by[other, label]) == {"lr_orth"}
            if t == T and o == option_set and s != sigma:
                assert _differences(config, by[other, label]) == {"state_noise"}


def test_the_arms_at_equal_parameters_hold_the_nnrnn_with_t_count(planned):
    runs = {r.label: r for r in planned if r.setting == next(iter(thesis.SETTINGS))}
    io = grid.sizes("copy")
    for label in (thesis.NORMAL_PARAMS, "exprnn"):
        run = runs[label]
        count = grid.network_parameters(run.config, run.hidden, io)
        assert abs(count - run.budget) / run.budget < 0.02, label
    assert runs[thesis.NORMAL].hidden == runs[thesis.REFERENCE].hidden == thesis.HIDDEN


def _write(folder, ratio: float, T: int, solved_at: int | None) -> None:
    """A finished run whose validations fall to ``ratio`` × copy's baseline at its last, below a tenth of it twice
    in a row from update ``solved_at`` on."""
    folder.mkdir(parents=True)
    records = []
    for step in range(50, 2001, 50):
        low = solved_at is not None and step >= solved_at
        value = (0.05 if low and step < 2000 else ratio if step == 2000 else 0.9) * baseline_loss(T)
        records.append({"step": step, "split": "valid", "loss": value})
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    outcome.write(folder, outcome.Outcome(outcome.LEARNED, "synthetic"))


def test_the_comparisons_are_tested_on_the_runs_and_adjusted_together(tmp_path):
    setting = next(iter(thesis.SETTINGS))
    planned = [r for r in grid.plan(SCALES["thesis"]) if r.setting == setting]
    made = grid.Grid(tmp_path, "thesis", SCALES["thesis"], planned)
    for run in planned:  # the nnRNN with T far below every other arm; the delay-started nnRNN alike to it
        good = run.label in (thesis.REFERENCE, thesis.DELAY)
        _write(made.run_folder(run), (0.01 if good else 0.5) * (1 + 0.1 * run.seed), run.options["T"],
               500 + 50 * run.seed if good else None)
    found = {c["hypothesis"]: c for c in thesis.comparisons(made)}
    assert set(found) == {"H1", "H2", "H3", "H4"}
    for h in ("H1", "H2", "H4"):  # log10 0.01 − log10 0.5 = −1.70 at every seed
        assert found[h]["primary"].effect == pytest.approx(math.log10(0.02))
        assert found[h]["q_primary"] < 0.001 and found[h]["q_secondary"] < 0.01
    assert found["H3"]["primary"].effect == pytest.approx(0) and found["H3"]["q_primary"] > 0.5
    lines = "\n".join(thesis.comparisons_section(made))
    assert lines.count("| supports |") == 3 and lines.count("| not clear |") == 1
    assert thesis.verdict(0.5, 0.001, 0.05) == "contradicts" and thesis.verdict(-0.5, 0.2, 0.05) == "not clear"


def test_the_report_is_written_from_the_runs_with_every_section(tmp_path):
    from nnrnn.experiments.reporting import report
    setting = next(iter(thesis.SETTINGS))
    planned = [r for r in grid.plan(SCALES["thesis"]) if r.setting == setting]
    made = grid.Grid(tmp_path, "thesis", SCALES["thesis"], planned)
    for run in planned:
        _write(made.run_folder(run), 0.05 * (1 + 0.1 * run.seed), run.options["T"], 1000)
    text = report.write_report(made).read_text()
    for heading in ("## What this grid tests, declared before it ran", "## What ran", "## Outcome",
                    "## The pre-declared comparisons", "## Mechanism beside outcome"):
        assert heading in text
    assert "| published | nnRNN | rmsprop | 0.0005 | 0.99 | 1e-06 | 0.0001 | 1e-06 | henaff |" in text  # what ran
    assert "| published | expRNN | rmsprop | 0.0005 | 0.99 | 1e-06 | — | — | henaff |" in text


def test_a_hypothesis_over_the_delays_reads_from_its_verdicts_alone():
    assert thesis.summary(["supports"] * 3) == "holds"
    assert thesis.summary(["supports", "not clear", "not clear"]) == "holds at some delays"
    assert thesis.summary(["not clear"] * 3) == "not shown"
    assert thesis.summary(["contradicts", "not clear"]) == "is contradicted"
    assert thesis.summary(["supports", "contradicts"]) == "mixed"


def test_the_claim_is_answered_per_option_set_and_noise_in_the_papers_words(tmp_path):
    # the nnRNN with T lower than every other arm at the two shortest delays of one option set and noise level,
    # alike to every arm at the longest
    chosen = {s for s, (o, sigma, T) in thesis.SETTINGS.items() if o == "published" and sigma == 0.03}
    planned = [r for r in grid.plan(SCALES["thesis"]) if r.setting in chosen]
    made = grid.Grid(tmp_path, "thesis", SCALES["thesis"], planned)
    longest = max(thesis.DELAYS)
    for run in planned:
        good = run.label in (thesis.REFERENCE, thesis.DELAY) and run.options["T"] != longest
        _write(made.run_folder(run), (0.01 if good else 0.5) * (1 + 0.1 * run.seed), run.options["T"], None)
    text = "\n".join(thesis.claim_section(made))
    assert thesis.CLAIM in text and thesis.COPY_FINDING in text
    row = next(line for line in text.splitlines() if line.startswith("| published | 0.03 |"))
    h1, h2, h3, h4 = row.split(" | ")[2:6]
    assert h1.startswith("holds at some delays (T = 50: supports, T = 100: supports, T = 200: not clear)")
    assert h2.startswith("holds at some delays") and h4.startswith("holds at some delays")
    assert h3.startswith("not shown")
    assert "cannot show" in text


def test_the_gpu_scale_is_the_same_grid_at_its_sizes_and_delays(planned):
    """thesis-gpu (issue 68, item 5): every run is the thesis grid's at the same option set, noise level and arm,
    differing in the size, the delay, the budget and the validation interval alone."""
    from nnrnn.experiments.grids import thesis_gpu
    big = grid.plan(SCALES["thesis-gpu"], seeds=[0])
    assert len(big) == len(planned) and len(SCALES["thesis-gpu"].seeds) == len(SCALES["thesis"].seeds) == 10
    small = {(*thesis.SETTINGS[r.setting][:2], r.label): r.config for r in planned}
    sized = {"hidden", "T", "steps", "batch_size", "eval_every", "log_every"}
    for r in big:
        option_set, sigma, T = thesis_gpu.SETTINGS[r.setting]
        assert (r.config["T"], r.config["steps"], r.config["batch_size"]) == (T, 10_000, 128)
        assert _differences(small[option_set, sigma, r.label], r.config) <= sized, r.label
    assert {r.hidden for r in big if r.label in (thesis.REFERENCE, thesis.NORMAL, thesis.DELAY)} == {128}


def test_the_outcome_gives_the_tested_measure_as_a_geometric_mean_with_its_interval(tmp_path):
    """The comparisons test the mean of log10 ratio: the outcome table shows it back as a ratio, inside its
    interval, beside the arithmetic mean."""
    setting = next(iter(thesis.SETTINGS))
    planned = [r for r in grid.plan(SCALES["thesis"]) if r.setting == setting and r.label == thesis.REFERENCE]
    made = grid.Grid(tmp_path, "thesis", SCALES["thesis"], planned)
    ratios = [0.01 * 2 ** (run.seed % 3) for run in planned]  # 0.01, 0.02, 0.04, ...
    for run, r in zip(planned, ratios):
        _write(made.run_folder(run), r, run.options["T"], None)
    row = next(line for line in thesis.outcome_section(made) if line.startswith(f"| {setting} | nnRNN |"))
    geometric = 10 ** (sum(math.log10(r) for r in ratios) / len(ratios))
    shown, low, high = (float(x) for x in re.search(r"\| ([\d.]+) \(([\d.]+) to ([\d.]+)\) \|", row).groups())
    assert shown == pytest.approx(geometric, abs=5e-4) and low < shown < high
    assert f"{sum(ratios) / len(ratios):.3f} ± " in row
