"""The ``memory`` grid (issues 59 and 68): the memory horizon of every model, the copy task over a ladder of delays.

Every model runs in two columns, at nnRNN's parameter count at N = HIDDEN = 64 (the tuned column's size machinery)
and at N = 64 hidden units itself (``tuned-hidden``), stacked as deep as its paper stacks it (``paper_depth``: the
LRU and nnLRU 6 layers, minGRU 3, the others 1). Its options are tuned once (the scale's ``tune``: the same search
for every model, at the first rung T = TUNE_RUNG only, each trial as long as a rung's run and judged by the area
under its validation curve), and the pick holds at every delay and in both columns, which therefore differ in the
size alone.  Copy at T = 10, 25, 50, 100, 200, 400, 800 in turn.  A run stops once solved (``--stop-when-solved
0.1``: validation loss below a tenth of the memoryless baseline 10 log 8 / (T + 20) at two validations in a row,
every EVAL_EVERY updates) or at its budget of UPDATES updates of BATCH sequences, the same at every delay.  A label
climbs to the next delay in a column only while a majority of its 5 seeds (3) solved the last there
(:func:`climb`): the ladder is adaptive, so the grid is planned rung by rung from the results of the last,
deterministically (finished runs are read back, interrupted ones resume).

The families and their representatives: the plain RNN (ReLU, and ELU from a chain), the orthogonal and unitary
RNNs (RNN-orth, EURNN, expRNN), the nnRNN and its variants, the gated RNNs (the LSTM, also with the chrono
initialisation of Tallec & Ollivier 2018, which is the gated family's representative on long delays; GRU, nnGRU,
minGRU), the oscillators (coRNN; LEM, clipped at LEM_CLIP as its authors' code clips) and the linear recurrent
units (LRU, nnLRU).  The nnRNN's authors clip nothing on copy (their copytask.py; neither does expRNN's), so no
other label is clipped.

Why the first delay is T = 10 and the budget 3,000 updates (the issue: a representative of every family must leave
the plateau at the first delay).  In the first memory grid (T = 50 first, 2,000 updates) the searches of the RNN,
the chain RNN, the LSTM, minGRU, coRNN and LEM found no trial 10% below the baseline.  Pilots, 2026-12-02, one seed,
batch 16, each at its parameter-count size, the paper's or its authors' rates (``nnrnn train copy --T 10 --steps
3000 --stop-when-solved 0.1``): at T = 10 the RNN solved at update 1,200; the chrono LSTM (lr 1e-3) ended 14% below
the baseline, coRNN (its psMNIST settings) 20%, LEM (its adding settings, clipped at 1.1) 16%, minGRU 10% and the
GRU 5%; at T = 20 the chrono LSTM was 5% below, coRNN 10% and minGRU 3%.  So T = 10 is the delay at which every
family leaves the plateau within 3,000 updates at these rates (each search then looks for better ones); a label
whose seeds still do not is reported "not measurable at this budget".

Why N = 64: at N = 32 with the paper's rates no model solved T = 50 within 3,000 updates (expRNN reached 12% of the
baseline, nnRNN 29%, the LSTM stayed at it); at N = 64 nnRNN solved T = 50 at update 1,150 and expRNN (lr
2e-3) in 300 (2026-11-28, single runs, ``nnrnn train copy --hidden 64 --T 50 --batch-size 16 --stop-when-solved
0.1``).

Cost. ``--plan`` counts every rung of every label at its whole budget, a ceiling the ladder never reaches (21.4 h
of CPU time on the 2-core AMD EPYC Zen 5, 2026-12-02). The first grid (3 seeds, one column, 2,000 updates, T = 50
first; before the compiled cell loops) trained 114 runs in 66 core-minutes, 47 min of wall time on 2 cores. This
one has 5/3 the seeds, 150 distinct runs per rung against 51 (the labels at N = 64 in both columns share their
runs), 1.5× the budget for a run that does not solve, and two short rungs below T = 50; the gated and oscillator
cells' updates are 4–7× cheaper since the compiled loops. Estimated from this host's measured update times (the
timings cache ``--plan`` fills) with the first grid's horizons (a label solving its rungs in about 45% of the
budget up to the delay it reached, 15% below T = 50, and failing the next at 95%), the two columns 1.2 h and 1.7 h
and the searches 0.3 h of CPU (2026-12-02, the same host): about 1.6 h of wall time with ``--jobs 2`` on 2 cores,
more where a rung's last runs leave a core idle; the grid resumes exactly.

Its report's own sections: per column and model the longest copy delay that a majority of its seeds solved,
the updates and seconds solving it took, a figure of both against the delay (each label in its colour and line style
of :mod:`..judging.labels`), each trained model's linear memory capacity (:mod:`nnrnn.analysis.capacity`),
the pairs that test the paper's thesis by Fisher's exact test where the ladders part and by the log-rank test of the
updates to solve (unsolved seeds censored), and how every model was tuned and where its picks fell
(:mod:`..reporting.tuning`, :mod:`..reporting.picks`).

A rung's run is *solved* at the update of its second validation in a row whose loss is below :data:`SOLVED_SHARE` ×
copy's memoryless baseline 10 log 8 / (T + 20) (the rule of ``--stop-when-solved``, which stopped it there), read from
its records alone so that the compact data gives the same answer."""
from __future__ import annotations

import json

import torch

from ...analysis.capacity import memory_capacity
from ...tasks.copy import N_SYMBOLS, baseline_loss
from ...training.network import load_saved
from ...training.runfolder import WALL_SECONDS, best_checkpoint
from ..judging import significance
from ..reporting.tuning import tuning_section
from ..reporting.figures import line_style, save_whole
from ..planning.grid import Grid, PlannedRun, finished, metrics, search_name
from ..reporting.picks import picks_section
from ..reporting.signal import no_signal
from ..reporting.sections import Report, judged_again
from ..judging.statistics import Stat
from ..judging.labels import variant
from ..judging.words import column_words, name
from ...training.outcome import clearly_below
import dataclasses

from ...models import PAPER_MODELS
from ..planning.grid import COLUMNS, TUNE_SEED, TUNED, TUNED_HIDDEN
from ..planning.declaration import Scale, Search, Setting, Variant
from .beyond import DELAY
from .modern import CHAIN_ELU, CHAIN_LABEL

SOLVED_IN_A_ROW = 2  # the trainer's rule (nnrnn.training.train.SOLVED_IN_A_ROW), read back from the records
SOLVED_SHARE = 0.1  # solved: validation loss below this share of the baseline (twice in a row)
# {run folder: its memory capacity}, beside the report (one of its Report's files)
CAPACITY = "capacity.json"
CAPACITY_DELAYS, CAPACITY_STEPS, CAPACITY_BATCH = 64, 400, 32  # K, and the driving sequences' length and number
MARKERS = "osD^v"  # beside each label's colour and line style (judging.labels), so that near lines differ


def solved_by(seeds: int) -> int:
    """Of a label's ``seeds`` at a rung, how many must solve it for the label to climb on: a majority (2 of 3,
    3 of 5)."""
    return seeds // 2 + 1


def enough(result: dict) -> bool:
    """Whether a rung's result (:func:`rung_result`) was solved by a majority of its seeds (:func:`solved_by`)."""
    return result["solved"] >= solved_by(result["seeds"])


def copy_setting(T: int) -> str:
    """The name of the ladder's rung at delay ``T``."""
    return f"copy-{T}"


def solved_at(records: list[dict], options: dict) -> int | None:
    """The update at which a run with ``options`` (copy's ``T``, ``stop_when_solved`` F) was solved: its second
    validation in a row with a loss below F × the baseline 10 log 8 / (T + 20); None when none was."""
    threshold = options["stop_when_solved"] * baseline_loss(options["T"])
    row = 0
    for record in records:
        if record.get("split") != "valid":
            continue
        row = row + 1 if record["loss"] < threshold else 0
        if row >= SOLVED_IN_A_ROW:
            return record["step"]
    return None


def _wall(grid: Grid, run: PlannedRun) -> float | None:
    path = grid.run_folder(run) / WALL_SECONDS
    return float(path.read_text()) if path.is_file() else None


def rung_result(grid: Grid, runs: list[PlannedRun]) -> dict:
    """One label at one rung: its seeds, how many finished and solved, updates and seconds to solve (over the
    solving seeds), the budget."""
    done = [r for r in runs if finished(grid.run_folder(r))]
    records = [metrics(grid.run_folder(r)) for r in done]
    times = [solved_at(rs, r.options) for r, rs in zip(done, records)]
    solving = [(r, at) for r, at in zip(done, times) if at is not None]
    options = runs[0].options
    threshold = baseline_loss(options["T"])
    left = sum(any(clearly_below(m["loss"], threshold) for m in rs if m.get("split") == "valid")
               for rs in records)  # seeds that left the plateau
    return {"T": options["T"], "seeds": len(runs), "finished": len(done), "solved": len(solving), "times": times,
            "left": left,
            "updates": Stat.of([at for _, at in solving], resolution=options["eval_every"]),
            "seconds": Stat.of([_wall(grid, r) for r, _ in solving]),
            "budget": options["steps"], "batch": options["batch_size"]}


def columns(grid: Grid) -> list[str]:
    """The columns the grid's runs are in, in the order of :data:`~..planning.grid.COLUMNS`."""
    return [c for c in COLUMNS if any(r.column == c for r in grid.planned)]


def ladder(grid: Grid, column: str = TUNED) -> dict[str, list[dict]]:
    """{label: its rungs' results in the order it climbed them} (:func:`rung_result`) in one column, labels in plan
    order."""
    settings = grid.settings
    found = {}
    for label in dict.fromkeys(r.label for r in grid.planned if r.column == column):
        found[label] = [rung_result(grid, runs) for s in settings
                        if (runs := [r for r in grid.planned if (r.setting, r.column, r.label) == (s, column, label)])]
    return found


def longest(rungs: list[dict]) -> dict | None:
    """The result at the longest delay a majority of its seeds solved (:func:`enough`); None when none was."""
    return next((r for r in reversed(rungs) if enough(r)), None)


# --------------------------------------------------------------------------------------------- capacity

def capacity_inputs() -> torch.Tensor:
    """The driving inputs: i.i.d. symbols, uniform over copy's 8 data symbols, one-hot in its 10 input channels
    (the distribution of the symbols a copy sequence asks to remember), the same for every model."""
    symbols = torch.randint(0, N_SYMBOLS, (CAPACITY_STEPS, CAPACITY_BATCH), generator=torch.Generator().manual_seed(0))
    return torch.nn.functional.one_hot(symbols, N_SYMBOLS + 2).float()


def measure_capacity(grid: Grid, log=print) -> None:
    """``OUT/capacity.json``: every finished run's memory capacity (its best checkpoint's recurrent layer), measured
    once per run; runs added since (a resumed ladder) are measured and added."""
    path = grid.out / CAPACITY
    known = json.loads(path.read_text()) if path.is_file() else {}
    todo = [f for f in dict.fromkeys(grid.run_folder(r) for r in grid.planned)
            if f.name not in known and finished(f) and best_checkpoint(f).is_file()]
    if todo:
        log(f"measuring the linear memory capacity of {len(todo)} trained models")
    inputs = capacity_inputs()
    for folder in todo:
        layer = load_saved(folder).net.rnn
        known[folder.name] = memory_capacity(layer, inputs, CAPACITY_DELAYS).total
    path.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")


def capacity(grid: Grid, runs: list[PlannedRun]) -> Stat:
    """Mean ± s.e. over ``runs`` of their measured memory capacity (OUT/capacity.json)."""
    path = grid.out / CAPACITY
    known = json.loads(path.read_text()) if path.is_file() else {}
    return Stat.of([known.get(grid.run_folder(r).name) for r in runs])


# --------------------------------------------------------------------------------------------- the sections

def protocol_section(grid: Grid) -> list[str]:
    """What was trained: copy at this scale and budget, the stop rule, the climb rule, the data."""
    sample = grid.planned[0].options if grid.planned else {}
    delays = sorted({r.options["T"] for r in grid.planned})
    seeds = len({r.seed for r in grid.planned})
    sizes = ("every model at nnRNN's parameter count" if columns(grid) == [TUNED] else
             " and, in a second column, ".join(_SIZES[c] for c in columns(grid)))
    return ["## The protocol", "",
            f"The copy task (memorise 10 symbols, recall them after a delay T) at T = "
            f"{', '.join(map(str, delays))}, at this grid's CPU scale: {sizes} "
            f"with N = {min((r.hidden for r in grid.planned if r.model == 'nnrnn'), default='?')} nnRNN units, "
            f"and a budget of {sample.get('steps', 0):,} updates of {sample.get('batch_size', 0)} sequences per delay "
            f"(the same at every delay; stated beside every row). The data is synthetic and unlimited: every "
            "update draws new sequences. A run stops once solved, its validation loss below "
            f"{SOLVED_SHARE:g} × the memoryless baseline 10 log 8 / (T + 20) at {SOLVED_IN_A_ROW} validations in a "
            f"row (every {sample.get('eval_every', 0)} updates), and a model climbs to the next delay only while at "
            f"least {solved_by(seeds)} of its {seeds} seeds solved the last. Each model's options were "
            "searched once, alike for every model, at one delay (the scale's `tune`), and held for the whole ladder"
            + (" and in both columns: the two columns differ in the size alone." if len(columns(grid)) > 1 else "."),
            ""]


_SIZES = {TUNED: "every model at nnRNN's parameter count", TUNED_HIDDEN: "every model at nnRNN's hidden units"}


UNMEASURABLE = "not measurable at this budget"  # a label that solved nothing and did not leave the plateau


def unmeasurable(grid: Grid, found: dict[str, list[dict]]) -> dict[str, str]:
    """{label: why} of the labels whose memory this budget cannot measure: those that solved no delay and either
    whose search found no signal or none of whose seeds left the plateau at the first delay (a loss at least
    :data:`~nnrnn.training.outcome.MARGIN` below the baseline at some validation)."""
    quiet = no_signal(grid)
    why = {}
    for label, rungs in found.items():
        if longest(rungs) is not None:
            continue
        if label in quiet:
            why[label] = "no search trial learned"
        elif rungs[0]["left"] == 0:
            why[label] = f"no seed left the plateau at T = {rungs[0]['T']}"
    return why


def _row(label: str, rungs: list[dict], cap: Stat, why: str | None = None) -> str:
    top = longest(rungs)
    last = rungs[-1]
    budget = f"{last['budget']:,} × {last['batch']}"
    if top is None:
        said = f"{UNMEASURABLE} ({why}; " if why else "none ("
        return f"| {name(label)} | {said}T = {rungs[0]['T']}: {rungs[0]['solved']} of {rungs[0]['seeds']}) | | | " \
               f"{budget} | {cap.show(2, 'not measured')} |"
    return (f"| {name(label)} | {top['T']} ({top['solved']} of {top['seeds']} seeds) | {top['updates'].show(0)} | "
            f"{top['seconds'].show(0)} | {budget} | {cap.show(2, 'not measured')} |")


def horizon_section(grid: Grid) -> list[str]:
    """Per model and column: the longest delay solved, updates and seconds to solve it, the budget, the memory
    capacity; with the ladder's comparisons and figure per column."""
    present = columns(grid)
    seeds = len({r.seed for r in grid.planned})
    lines = ["## The memory horizon", "",
             f"Per model, the longest delay T that at least {solved_by(seeds)} of its {seeds} seeds solved, the "
             "updates and seconds "
             "(wall time of the run, validations included; a run resumed after an interruption counts its last "
             "sitting only) solving it took (mean ± s.e. over the seeds that solved "
             "it), the budget per delay (updates × sequences), and the linear memory capacity (Jaeger 2001: "
             f"Σ_k R²_k of ridge read-outs of u_(t−k), k = 1..{CAPACITY_DELAYS}, from the trained recurrent layer "
             "driven by i.i.d. copy symbols; mean ± s.e. over the seeds of the model's last delay). The models "
             "were trained on copy and are driven here by a different input, an i.i.d. symbol at every step where "
             "copy gives 10 symbols and then blanks: the capacity measures a property of the trained recurrence, "
             "not the copy skill, and it is taken at a different delay per model (each model's last delay, the "
             "column T of its last rung below), so two models' capacities come from networks trained at different "
             "delays.", ""]
    for column in present:
        lines += _column_lines(grid, column, len(present) > 1)
    return lines


def _column_lines(grid: Grid, column: str, headed: bool) -> list[str]:
    """One column's horizon table, its table of every delay, its comparisons and figure."""
    found = ladder(grid, column)
    why = unmeasurable(grid, found)
    lines = [f"### {column_words(column).capitalize()}", ""] if headed else []
    lines += ["| model | longest delay solved | updates there | seconds there | budget per delay | memory capacity |",
              "|---|---|---|---|---|---|"]
    for label, rungs in found.items():
        last = rungs[-1]["T"]
        runs = [r for r in grid.planned if r.column == column and r.label == label and r.options["T"] == last]
        lines.append(_row(label, rungs, capacity(grid, runs), why.get(label)))
    firsts = _firsts(grid, column)
    lines += ["", "Each delay a model trained at (solved seeds of all; updates to solve, mean ± s.e.; — not reached):",
              "", "| model | " + " | ".join(f"T = {r.options['T']}" for r in firsts) + " |",
              "|---|" + "---|" * len(firsts)]
    for label, rungs in found.items():
        by_t = {r["T"]: r for r in rungs}
        cells = [_cell(by_t.get(r.options["T"])) for r in firsts]
        lines.append(f"| {name(label)} | " + " | ".join(cells) + " |")
    return lines + [""] + comparisons(found, why) + [""] + horizon_figure(grid, found, column)


def _firsts(grid: Grid, column: str = TUNED) -> list[PlannedRun]:
    """One planned run per rung of a column, in the ladder's order."""
    return [next(r for r in grid.planned if (r.setting, r.column) == (s, column)) for s in grid.settings
            if any((r.setting, r.column) == (s, column) for r in grid.planned)]


def _cell(result: dict | None) -> str:
    if result is None:
        return "—"
    solved = f"{result['solved']} of {result['seeds']}"
    return solved + (f": {result['updates'].show(0)}" if result["solved"] else "")


# every label has its own search, so a pair differs in its picks too: the sentence says T is not its only difference
PAIRS = (("nnrnn", "nnrnn normal", "the nnRNN with its non-normal part T against the nnRNN without it (each at its own "
          "search's pick, so not T alone)"),
         ("nnrnn delay", "nnrnn", "the nnRNN started as a delay line against the nnRNN started at T = 0"),
         ("nnlru", "lru", "the LRU with the nnRNN's non-normal part against the LRU"))


def comparisons(found: dict[str, list[dict]], quiet=frozenset()) -> list[str]:
    """The ladder in sentences: the models by the longest delay they solved (those that solved none and whose
    memory this budget cannot measure, ``quiet``: :func:`unmeasurable`, as not measurable at this budget), and the
    pairs that test the paper's thesis, each by the test that fits it (:mod:`..judging.significance`)."""
    by_delay: dict[int, list[str]] = {}
    for label, rungs in found.items():
        top = longest(rungs)
        by_delay.setdefault(top["T"] if top else -1 if label in quiet else 0, []).append(name(label))
    order = sorted(by_delay, reverse=True)
    lines = ["Longest delay solved: " + "; ".join(
        (f"T = {t}: " if t > 0 else "none: " if t == 0 else f"{UNMEASURABLE}: ") + ", ".join(by_delay[t])
        for t in order) + "."]
    for a, b, what in PAIRS:
        if a in found and b in found:
            lines.append(f"- {what}: {compare(a, b, found[a], found[b])}")
    return lines


def compare(a: str, b: str, rungs_a: list[dict], rungs_b: list[dict]) -> str:
    """One sentence: which of two models solved the longer delay, tested where their ladders part by Fisher's exact
    test on the seeds that solved there, and their updates to solve at the longest delay both solved
    (:func:`_shared_delay`); or, at the same delay, their updates to solve by the log-rank test, the unsolved seeds
    censored at the budget (:mod:`..judging.significance`)."""
    top_a, top_b = longest(rungs_a), longest(rungs_b)
    t_a, t_b = (top["T"] if top else 0 for top in (top_a, top_b))
    if t_a != t_b:
        longer, shorter = (a, b) if t_a > t_b else (b, a)
        rungs = {a: rungs_a, b: rungs_b}
        return (_parting(longer, shorter, rungs[longer], rungs[shorter], max(t_a, t_b), min(t_a, t_b))
                + _shared_delay(longer, shorter, rungs[longer], rungs[shorter]) + ".")
    if not t_a:
        return f"neither solved the first delay (T = {rungs_a[0]['T']})."
    test = _times_test(top_a, top_b).named(f"{name(a)} at T = {t_a}", f"{name(b)} at T = {t_b}")
    shown = f"{top_a['updates'].show(0)} against {top_b['updates'].show(0)} updates over the seeds that solved"
    if test.passes:
        faster, slower = (a, b) if test.effect < 0 else (b, a)
        return f"both solved T = {t_a}; {name(faster)} needed clearly fewer updates than {name(slower)} ({shown}; " \
               f"{test.words('.0f', ' updates')})."
    return f"both solved T = {t_a}, in updates not clearly different ({shown}; {test.words('.0f', ' updates')})."


def _times_test(here: dict, there: dict):
    """The log-rank test of two rungs' times to solve, each unsolved seed censored at its rung's budget; its effect
    the difference of the Kaplan–Meier medians."""
    return significance.log_rank(here["times"], here["budget"], there["times"], there["budget"])


def _parting(longer: str, shorter: str, rungs_l: list[dict], rungs_s: list[dict], t_l: int, t_s: int) -> str:
    """"a reached a longer delay than b (T = 200 against 100); where the ladders part, at T = 200, a solved 2 of 3
    seeds and b 0 of 3 (Fisher's exact p = 0.4 …)": the claim of a longer delay tested by Fisher's exact test at the
    first delay the shorter ladder did not solve, where both trained there; a delay the shorter did not train at
    is said so, untested."""
    reached = f"(T = {t_l} against {t_s or 'none'})"
    failed = next((r for r in rungs_s if r["T"] > t_s), None) if t_s else rungs_s[0]
    there = next((r for r in rungs_l if failed and r["T"] == failed["T"]), None)
    if failed is None or there is None:
        return (f"{name(longer)} solved a longer delay than {name(shorter)} {reached}, untested (no delay both "
                "trained at where one solved and the other did not)")
    test = significance.fisher(there["solved"], there["seeds"], failed["solved"], failed["seeds"]).named(
        f"{name(longer)} at T = {failed['T']}: {there['solved']} of {there['seeds']} solved",
        f"{name(shorter)}: {failed['solved']} of {failed['seeds']}")
    verdict = (f"{name(longer)} clearly solved a longer delay than {name(shorter)} {reached}:" if test.passes else
               f"{name(longer)} reached a longer delay than {name(shorter)} {reached}, but not clearly:")
    return (f"{verdict} where the ladders part, at T = {failed['T']}, "
            f"{name(longer)} solved {there['solved']} of {there['seeds']} seeds and {name(shorter)} "
            f"{failed['solved']} of {failed['seeds']} ({test.words('.2f')})")


def _shared_delay(a: str, b: str, rungs_a: list[dict], rungs_b: list[dict]) -> str:
    """"; at T = t a solved in … updates (k of n seeds), clearly fewer than b's … (k of n)" at the longest delay t
    both solved (a majority of seeds each, :func:`enough`), by the log-rank test with the unsolved seeds censored at the
    budget (the means shown are over the solving seeds only); "" when no delay was solved by both."""
    solved_b = {r["T"]: r for r in rungs_b if enough(r)}
    shared = [(r, solved_b[r["T"]]) for r in rungs_a if enough(r) and r["T"] in solved_b]
    if not shared:
        return ""
    here, there = shared[-1]
    test = _times_test(here, there).named(f"{name(a)} at T = {here['T']}", f"{name(b)} at T = {there['T']}")
    words = ("clearly fewer than" if test.effect < 0 else "clearly more than") if test.passes else \
        "not clearly different from"
    return (f"; at T = {here['T']} {name(a)} solved in {here['updates'].show(0)} updates ({here['solved']} of "
            f"{here['seeds']} seeds), {words} {name(b)}'s {there['updates'].show(0)} ({there['solved']} of "
            f"{there['seeds']}; {test.words('.0f', ' updates')})")


def figure_name(column: str) -> str:
    """The horizon figure's file of one column (the tuned column's the name the first grid gave it)."""
    return "memory_horizon.png" if column == TUNED else f"memory_horizon_{column}.png"


def horizon_figure(grid: Grid, found: dict[str, list[dict]], column: str = TUNED) -> list[str]:
    """Updates to solve against the delay (log2), one line per model; a delay reached but not solved is an open
    marker at the budget.  Returns the report's lines for it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if not found:
        return []
    fig, ax = plt.subplots(figsize=(8.5, 5.0))
    for i, (label, rungs) in enumerate(found.items()):
        colour, line = line_style(label, grid.planned)
        marker = MARKERS[i % len(MARKERS)]
        solved = [r for r in rungs if enough(r)]
        ax.errorbar([r["T"] for r in solved], [r["updates"].mean for r in solved],
                    yerr=[r["updates"].err() for r in solved], color=colour, linestyle=line, marker=marker,
                    label=name(label), capsize=2)
        failed = [r for r in rungs if not enough(r)]
        shift = 2 ** (0.015 * (i - len(found) / 2))  # models failing at one delay side by side, not on one point
        ax.plot([r["T"] * shift for r in failed], [r["budget"] for r in failed], linestyle="none", marker=marker,
                markerfacecolor="none", markeredgecolor=colour, markersize=9)
    budget = max(r["budget"] for rungs in found.values() for r in rungs)
    ax.axhline(budget, color="gray", linestyle=":", lw=0.8, label="budget (open marker: not solved)")
    ax.set_xscale("log", base=2)
    delays = sorted({r["T"] for rungs in found.values() for r in rungs})
    ax.set_xticks(delays, [str(t) for t in delays])
    ax.minorticks_off()
    ax.set_xlabel("delay T (copy)")
    ax.set_ylabel("updates to solve (mean ± s.e. over solving seeds)")
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(column_words(column), fontsize=9)
    fig.tight_layout()
    grid.figures.mkdir(parents=True, exist_ok=True)
    save_whole(fig, grid.figures / figure_name(column))  # whole or not at all, as every report's figure
    return [f"![updates to solve against the delay, one line per model ({column_words(column)})]"
            f"(figures/{figure_name(column)})", ""]


def tuned_section(grid: Grid) -> list[str]:
    """How every model was tuned (:func:`..reporting.tuning.tuning_section`): once, at one delay, its pick held up
    the ladder."""
    if not grid.tune:
        return []
    # the delays searched, read from the searches that ran (the data's), not from the declaration now
    searched = {p.name for p in grid.searches.iterdir()} if grid.searches.is_dir() else set()
    delays = sorted({r.options["T"] for r in grid.planned if search_name(r.setting, r.label) in searched})
    at = f"T = {', '.join(map(str, delays))}" if delays else "one delay"
    return tuning_section(grid, (
        f"Every search ran once, on copy at {at} (the ladder's first delay), and its pick was held at every delay "
        "of the ladder. The options a search does not search are taken from `paper-params` where the paper gives "
        "the model hyperparameters (the nnRNN's variants and the chain-initialised RNN from their model's); the "
        "others are trained by the task's procedure in the paper's presets (batch size, read-out initialisation). "
        "This grid's size, delays, batch and budget replace the presets'. " + (
            "Every model appears in the tuned column only." if columns(grid) == [TUNED] else
            "Every search ran in the column at nnRNN's parameter count; the column at nnRNN's hidden units trains "
            "each label with the same pick, so that the two columns differ in the size alone.")))


REPORT = Report("The memory horizon: the longest copy delay each model solves",
                (protocol_section, tuned_section, picks_section, horizon_section, judged_again(horizon_section)),
                files=(CAPACITY,),
                prepare=measure_capacity)


RUNGS = (10, 25, 50, 100, 200, 400, 800)  # the delays T, in the order a model climbs them

UPDATES, BATCH, EVAL_EVERY = 3000, 16, 50  # the budget per delay (docstring), validated every 50
HIDDEN = 64  # nnRNN's units, every other model at its parameter count (docstring: why not 32)
TUNE_RUNG = 10  # the first delay, where a representative of every family leaves the plateau (docstring)
SEEDS = (0, 1, 2, 3, 4)
LEM_CLIP = 1.1  # LEM's authors clip the gradient's norm at 1.1 (tk-rusch/LEM, psMNIST; presets long-memory)
# LEM trains only as its authors clip it (the variant below), so the model itself is not among the labels
MEMORY_MODELS = PAPER_MODELS + ("gru", "nngru", "nnrnn-complex", "cornn", "lru", "mingru", "nnlru")
NORMAL = variant("nnrnn normal", "nnRNN without T (normal)", ("#56b4e9", (0, (6, 1, 2, 1))))
CHRONO_LSTM = variant("lstm chrono", "LSTM (chrono init)", ("#5b2a86", (0, (10, 1, 1, 1))))
CLIPPED_LEM = variant("lem clipped", f"LEM (clipped at {LEM_CLIP:g})", ("#d2691e", (0, (3, 1, 3, 3))))
VARIANTS = {
    **CHAIN_ELU,
    # the gated family's representative on long delays: the forget gate's biases log U(1, T_max − 1) with T_max the
    # task's whole length (Tallec & Ollivier 2018), as every --init chrono run without --chrono-tmax
    CHRONO_LSTM: Variant(model="lstm", options={"init": "chrono"}, columns=(TUNED, TUNED_HIDDEN)),
    CLIPPED_LEM: Variant(model="lem", options={"clip": LEM_CLIP}, columns=(TUNED, TUNED_HIDDEN)),
    # the paper's thesis isolated: the nnRNN without its non-normal part (T ≡ 0, V = PΛPᵀ normal)
    NORMAL: Variant(model="nnrnn", options={"triangular": "none"}, columns=(TUNED, TUNED_HIDDEN)),
    # T started as the delay line of the paper's §3, at the α the beyond grid uses (docs/design.md)
    DELAY: Variant(model="nnrnn", options={"t_init": "delay:0.02"}, columns=(TUNED, TUNED_HIDDEN)),
}
VARIANTS[CHAIN_LABEL] = dataclasses.replace(VARIANTS[CHAIN_LABEL], columns=(TUNED, TUNED_HIDDEN))


def rung(T: int) -> Setting:
    """One rung of the ladder: copy at delay ``T`` with the grid's budget, every model at nnRNN's count."""
    return Setting(task="copy", hidden=HIDDEN, paper_depth=True, paper_optimizer=True, columns=(TUNED, TUNED_HIDDEN),
                   models=MEMORY_MODELS, variants=VARIANTS,
                   options={"T": T, "batch_size": BATCH, "steps": UPDATES, "eval_every": EVAL_EVERY,
                            "log_every": EVAL_EVERY, "stop_when_solved": SOLVED_SHARE})


def solved(grid: Grid, planned) -> bool:
    """Whether a finished run solved its rung (:func:`nnrnn.experiments.grids.memory.solved_at`, from its records)."""
    return solved_at(metrics(grid.run_folder(planned)), planned.options) is not None


def climb(grid: Grid, execute) -> Grid:
    """Train the ladder rung by rung (the grid's settings in order) with ``execute(grid)``, which trains the runs of
    a grid not finished and resumes interrupted ones: rung k's runs are those of the (column, label) pairs a
    majority of whose seeds solved rung k − 1 (:func:`solved_by`; every pair at the first).
    Returns ``grid`` with the runs planned so far, which the report reads; it stops at a rung some of whose runs did
    not finish (another process trains them: the next invocation goes on from there)."""
    climbing = list(dict.fromkeys((r.column, r.label) for r in grid.planned))
    planned = []
    for setting in grid.settings:
        runs = [r for r in grid.planned if r.setting == setting and (r.column, r.label) in climbing]
        if not runs:
            break
        planned += runs
        execute(dataclasses.replace(grid, planned=runs))
        if not all(finished(grid.run_folder(r)) for r in runs):
            break
        climbing = [pair for pair in climbing if sum(solved(grid, r) for r in runs if (r.column, r.label) == pair)
                    >= solved_by(sum((r.column, r.label) == pair for r in runs))]
    return dataclasses.replace(grid, planned=planned)


NAME = "memory"
SCALE = Scale(
    name=NAME,
    about="memory: the longest copy delay (T = 10 to 800) each model solves within a fixed budget, every model at "
          "nnRNN's parameter count and at its hidden units, tuned alike, 5 seeds, with its linear memory capacity "
          "(about 1.6 h with --jobs 2 on 2 cores, estimated: a model stops climbing at its first unsolved "
          "delay, so --plan's count of every delay is a ceiling; it resumes across sittings)",
    seeds=SEEDS,
    report=REPORT,
    climb=climb,
    tune=Search(trials=5, share=1.0, seed=TUNE_SEED, startup=3, settings=(copy_setting(TUNE_RUNG),)),
    settings={copy_setting(T): rung(T) for T in RUNGS},
)
