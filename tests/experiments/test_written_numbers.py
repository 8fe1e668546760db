"""The numbers written by hand in the notes, the README and docs/design.md that restate a committed report's are
checked against that report, so that a sentence cannot drift from the numbers (issue 49, item 9): when a grid's
report is written again, a sentence whose numbers it no longer gives fails here until it is written again too."""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CPU_LONG = REPO / "docs" / "reproduction-cpu-long"
BEYOND = REPO / "docs" / "beyond"
MODERN = REPO / "docs" / "modern"


def generated(folder: Path) -> str:
    """A committed report without the notes it embeds (those are the hand-written text under test)."""
    return (folder / "report.md").read_text().split("## Notes on this grid")[0]


def per_run(report: str) -> dict:
    """{(T_PTB, label): [(test bpc, first validation, best validation, largest gradient norm over its median)]} from
    the γ table's run lines."""
    runs = {}
    for bptt, label, cells in re.findall(r"^- T_PTB = (\d+), ([^:]+): (.*)$", report, re.M):
        runs[int(bptt), label] = [tuple(float(x) for x in m) for m in re.findall(
            r"seed \d+: ([\d.]+) \(validation ([\d.]+) first, ([\d.]+) best; largest gradient norm ([\d.e+]+)×", cells)]
    return runs


def ratio_range(values) -> str:
    shown = [f"{v:.3g}" for v in sorted(values)]
    return f"{shown[0]}–{shown[-1]}×"


@pytest.fixture(scope="module")
def report():
    return generated(CPU_LONG)


def given(written: str, reports: str) -> bool:
    """``written`` ("1.56 ± 0.03") is a mean ± s.e. of the reports, as given or rounded to its decimals."""
    if written in reports:
        return True
    mean, se = written.split(" ± ")
    places = len(mean.split(".")[1]), len(se.split(".")[1])
    return any(f"{float(a):.{places[0]}f} ± {float(b):.{places[1]}f}" == written
               for a, b in re.findall(r"(\d+\.\d+) ± (\d+\.\d+)", reports))


def test_every_mean_and_standard_error_written_by_hand_is_one_a_report_gives(report):
    reports = report + generated(BEYOND) + generated(MODERN)
    for path in (CPU_LONG / "notes.md", BEYOND / "notes.md", MODERN / "notes.md", REPO / "README.md"):
        written = re.findall(r"\d+\.\d+ ± \d+\.\d+", path.read_text())
        assert [x for x in written if not given(x, reports)] == [], path
    assert not given("4.29 ± 0.01", reports)


def test_the_gradient_norm_ratios_written_by_hand_are_the_reports(report):
    runs = per_run(report)
    nnrnn = {bptt: [r[3] for r in runs[bptt, "nnRNN"]] for bptt in (150, 300)}
    gamma_one = [r[3] for bptt in (150, 300) for r in runs[bptt, "nnRNN, γ = 1"]]
    notes = " ".join((CPU_LONG / "notes.md").read_text().split())
    assert f"{ratio_range(nnrnn[150])[:-1]}× for nnRNN at T_PTB = 150 and {ratio_range(nnrnn[300])} at T_PTB = 300" \
        in notes
    assert f"({min(gamma_one):.3g}× to {max(gamma_one):.2g}× over the whole run)" in notes
    design = " ".join((REPO / "docs" / "design.md").read_text().split())
    everything = nnrnn[150] + nnrnn[300]
    assert f"({min(everything):.3g}–{max(everything):.3g}× the median for nnRNN, up to {max(gamma_one):.2g}×" in design


def test_the_run_that_did_not_converge_is_described_by_the_reports_numbers(report):
    line = re.search(r"^- T_PTB = 300, nnRNN, γ = 1: (.*)$", report, re.M).group(1)
    diverged = re.findall(r"seed \d+: diverged \(validation ([\d.]+) first", line)
    assert len(diverged) == 1
    converged = [float(x) for x in re.findall(r"seed \d+: ([\d.]+) \(validation", line)]
    notes = " ".join((CPU_LONG / "notes.md").read_text().split())
    assert f"{converged[0]:.3f} and {converged[1]:.3f} at T_PTB = 300, where the third diverged (validation " \
           f"{float(diverged[0]):.2f} first" in notes
    design = " ".join((REPO / "docs" / "design.md").read_text().split())
    assert f"a validation bpc of {float(diverged[0]):.2f} first" in design


def test_the_readmes_learned_structure_is_the_reports(report):
    row = re.search(r"^\| ptb \| (.*) \|$", report, re.M).group(1).split(" | ")
    to_link = float(row[-1].split(" ± ")[0])  # T inside the 2×2 blocks over a link entry
    readme = " ".join((REPO / "README.md").read_text().split())
    assert f"their mean |T| is {to_link:.1f}× a link's" in readme
    assert "mostly inside" not in readme  # 64 in-block entries of 8128 carry a small share of ‖T‖²


def update_time_ranges(report: str) -> dict:
    """{model: ((lowest, highest) × torch.nn.RNN, (lowest, highest) × torch.nn.GRU)} over a modern report's
    protocols, from its update-time table."""
    table = report.split("## Update time against torch.nn.RNN and torch.nn.GRU")[1].split("\n### ")[0]
    ranges = {}
    for model, cells in re.findall(r"^\| ([^|]+) \| (.*) \|$", table, re.M):
        pairs = [tuple(float(x) for x in m) for m in re.findall(r"([\d.]+)× / ([\d.]+)×", cells)]
        if pairs:
            rnn, gru = zip(*pairs)
            ranges[model] = ((min(rnn), max(rnn)), (min(gru), max(gru)))
    return ranges


def test_the_modern_notes_update_times_are_the_reports():
    ranges = update_time_ranges(generated(MODERN))
    notes = " ".join((MODERN / "notes.md").read_text().split())

    def span(pair):
        return f"{pair[0]:.2f}–{pair[1]:.2f}×"
    assert f"nnRNN's update took {span(ranges['nnRNN'][0])} torch.nn.RNN's time and {span(ranges['nnRNN'][1])} " \
           "torch.nn.GRU's" in notes
    assert f"minGRU {span(ranges['minGRU'][0])} the RNN ({span(ranges['minGRU'][1])} the GRU)" in notes
    assert f"the LRU {span(ranges['LRU'][0])} ({span(ranges['LRU'][1])} the GRU)" in notes
    assert f"coRNN {span(ranges['coRNN'][0])}; LEM {span(ranges['LEM'][0])}" in notes
