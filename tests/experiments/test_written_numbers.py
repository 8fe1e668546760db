"""The numbers written by hand in the notes, the README, docs/results.md and docs/design.md that restate a committed
report's are checked against that report, so that a sentence cannot drift from the numbers (issue 49, item 9): when a
grid's report is written again, a sentence whose numbers it no longer gives fails here until it is written again too.
The speed tables of the README and docs/results.md are checked the same way against docs/performance.md, where each
measurement is recorded with its run."""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CPU_LONG = REPO / "docs" / "reproduction-cpu-long"
BEYOND = REPO / "docs" / "beyond"
MODERN = REPO / "docs" / "modern"
THESIS = REPO / "docs" / "thesis"
THESIS_JOINT = REPO / "docs" / "thesis-joint"
RESULTS = REPO / "docs" / "results.md"
PERFORMANCE = REPO / "docs" / "performance.md"


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
    reports = report + generated(BEYOND) + generated(MODERN) + generated(THESIS) + generated(THESIS_JOINT)
    for path in (CPU_LONG / "notes.md", BEYOND / "notes.md", MODERN / "notes.md", THESIS / "notes.md",
                 THESIS_JOINT / "notes.md", REPO / "README.md", RESULTS):
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


def test_the_results_learned_structure_is_the_reports(report):
    row = re.search(r"^\| ptb \| (.*) \|$", report, re.M).group(1).split(" | ")
    to_link = float(row[-1].split(" ± ")[0])  # T inside the 2×2 blocks over a link entry
    results = " ".join(RESULTS.read_text().split())
    assert f"their mean |T| is {to_link:.1f}× a link's" in results
    assert "mostly inside" not in results  # 64 in-block entries of 8128 carry a small share of ‖T‖²


def table_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """(the header's cells, each row's cells) of the first Markdown table in ``text``, bold marks dropped."""
    lines = text[text.index("\n|") + 1:].split("\n\n")[0].splitlines()
    cells = [[cell.strip().replace("**", "") for cell in line.strip().strip("|").split("|")] for line in lines]
    return cells[0], cells[2:]


def table(text: str) -> tuple[list[str], dict]:
    """(the header's cells after the first, {first cell: the other cells}) of the first Markdown table in ``text``;
    a first cell met again (the modern rows after cpu-long's) keeps its first row."""
    header, rows = table_rows(text)
    keyed = {}
    for row in rows:
        keyed.setdefault(row[0], row[1:])
    return header[1:], keyed


def fixed_hidden_units(report: str, section: str) -> dict:
    """{model: its fixed-hidden-units cell} of the table under a cpu-long report's ``## section``."""
    return {model: cells[0] for model, cells in table(report.split(f"\n## {section}\n")[1])[1].items()}


@pytest.mark.parametrize("path", [REPO / "README.md", RESULTS], ids=lambda path: path.name)
def test_the_cpu_long_results_table_is_the_reports(report, path):
    """Every cell of the cpu-long rows, the seeds that diverged and the runs not made included."""
    sections = {"copy, test loss (baseline 0.0945)": "copy, T = 200", "psMNIST, test accuracy": "psMNIST",
                "PTB T_PTB = 150, test bpc": "PTB, T_PTB = 150", "PTB T_PTB = 300, test bpc": "PTB, T_PTB = 300"}
    text = path.read_text()
    models, rows = table(text[text.index("## Results") if path.name == "README.md" else 0:])
    paper = models[:6]  # the paper's six models; the modern columns have no cpu-long run
    assert paper == ["nnRNN", "expRNN", "EURNN", "RNN-orth", "RNN", "LSTM"], path
    for label, section in sections.items():
        given = fixed_hidden_units(report, section)
        assert rows[label][:6] == [given.get(model, "not run") for model in paper], (path.name, label)


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


def performance_section(heading: str) -> str:
    return PERFORMANCE.read_text().split(f"\n### {heading}\n")[1].split("\n### ")[0]


# the speed table's columns against performance.md's names for them
UPDATE_COLUMNS = {"torch.nn.LSTM": "torch.nn.LSTM", "nnRNN": "nnrnn", "expRNN": "exprnn", "EURNN": "eurnn",
                  "nnRNN, plain autograd loop": "nnrnn, autograd loop", "RNN (same loops)": "rnn"}


@pytest.mark.parametrize("path", [REPO / "README.md", RESULTS], ids=lambda path: path.name)
def test_the_update_time_ratios_are_those_performance_md_records_for_hosts_a_and_b(path):
    text = path.read_text()
    columns, rows = table(text[text.index("\n| (T, B, N, I), host") - 1:])
    hosts = [table(performance_section("One training update")),  # host A, its first table
             table(performance_section("The same update on two other hosts"))]  # host B
    assert len(rows) == 4 and set(columns) == set(UPDATE_COLUMNS), path
    for size, cells in rows.items():
        for column, cell in zip(columns, cells):
            measured = [recorded[size.removesuffix(", A / B")][names.index(UPDATE_COLUMNS[column])]
                        for names, recorded in hosts]
            assert cell == " / ".join(measured), (path.name, size, column)


def test_the_update_against_the_floor_is_what_performance_md_records():
    """docs/results.md's one-thread floor table (2026-11-27) against performance.md's rows of that run."""
    run = performance_section("How fast an update could be here").split("The same script on 2026-11-27")[1]
    header, rows = table_rows(run)
    recorded, size = {}, None
    for row in rows:  # a size is written once, above its second model's row
        size = row[0] or size
        recorded[size, row[1]] = dict(zip(header[2:], row[2:]))
    text = RESULTS.read_text()
    _, written = table(text[text.index("\n| (T, B, N, I) | nnRNN update") - 1:])
    assert len(written) == 4
    for label, cells in written.items():
        size = label[:label.index(")") + 1]
        want = [recorded[size, model][column] for model in ("nnrnn", "rnn")
                for column in ("update × torch.nn.RNN", "update / floor")]
        assert cells == want, label


def test_the_gpu_update_times_are_what_performance_md_records():
    section = performance_section("Today's long-memory models on an H100")
    cells = {model: (eager, replayed) for model, eager, replayed in re.findall(  # psMNIST's size: × RNN, replayed
        r"^ *\| ([^|]+?) \| ([\d.]+) \| [\d.]+ \| ([\d.]*) \|", section, re.M)}
    (mingru, _), (lru, _), (nnrnn, replayed) = cells["mingru (scan)"], cells["lru (scan)"], cells["nnrnn"]
    results = " ".join(RESULTS.read_text().split())
    assert (f"{mingru}× cuDNN's torch.nn.RNN for minGRU, {lru}× for the LRU and {nnrnn}× for nnRNN, whose update the "
            f"trainer replays from CUDA graphs in {replayed}× its eager time") in results
