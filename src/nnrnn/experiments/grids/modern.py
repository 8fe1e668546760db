"""The ``modern`` grid (docs/modern/report.md): today's long-memory RNNs beside the nnRNN, every model at nnRNN's
parameter count and its paper's depth (the LRU and nnLRU 6 layers, minGRU 3), each with the same search on equal
terms (4 trials as long as the run, on seed TUNE_SEED: the model's published settings first where it has them,
Optuna's TPE sampler drawing at random up to its second), on
psMNIST (--preset long-memory) and PTB at cpu-long's T_PTB.  Copy at T = 1000 and adding at T = 2000, which the grid
of 2026-11-27 also ran (10 trials a fifth as long; its data records both) and none of whose models learned at this
scale, left it for the memory grid (grids/memory.py: copy over a ladder of delays).  CPU scale: psMNIST on 8,000
images for 5 epochs, PTB for 20, far shorter than their papers train; it took 3 h 20 min with --jobs 2 on the
2-core AMD EPYC Zen 4, searches included (docs/modern/notes.md).

Its report's own sections: today's long-memory RNNs
(coRNN, LEM, LRU, minGRU, the chain-initialised RNN) beside the nnRNN, the paper's models and the non-normal family,
each tuned alike, on the standard long-memory protocols and PTB: how every model was tuned and whether its search had
settled, each protocol's results, which model is clearly best there and where the nnRNN stands, the published figures
beside ours, and each model's update time against torch.nn.RNN and torch.nn.GRU at equal sizes.

Every comparison follows the one rule of :mod:`.statistics`. "Clearly best" is that rule applied to every pair: the
model with the best mean is clearly best when it is clearly better than every other model; otherwise the models not
clearly worse than it are the leading group, and no model is clearly best."""
from __future__ import annotations

import dataclasses
import json
import math
import platform
from pathlib import Path

import torch

from ...kernels.host import describe_cpu
from ...doctor.harness import alternate, medians
from ...doctor.timing import TimedUpdate, TorchBaseline
from ...models import MODELS, create, model_class
from ...models.published import Published
from ...tasks import task_class
from ..reporting.tuning import tuning_section
from ..reporting.collect import convergence, group, labels, results, scored, setting_task_of
from ..reporting.figures import line_style, reference, reference_line
from ..planning.grid import (SPEED, TUNED, Grid, GridFolder, PlannedRun, finished, metric, network_sizes, search_name,
                             sizes)
from ..judging import family
from ..judging.rules import judged_by, rule
from ..reporting.sections import (data_scope, judged_again, memoryless_baseline, rescored_intro, scope,
                                  scoring_at_start)
from ..judging.statistics import Stat, below_value, margin
from ..judging.comparisons import compare
from ..judging.labels import variant
from ..judging.words import name, title
from ...models import PAPER_MODELS
from ..planning.grid import TUNE_SEED
from ..planning.declaration import Scale, Search, Setting, Variant
from ..reporting.picks import picks_section
from ..reporting.sections import Report, settings_sections, settled_section
from .cpu_long import LONG_PSMNIST, LONG_PTB

# The published figures the report sets beside its own, per protocol in the order its table shows them first (each
# figure is its model class's PUBLISHED, nnrnn.models.published, or its variant's; a label with a figure that is not
# listed follows in plan order).  The protocols without one (copy at T = 1000 and adding at T = 2000 are plots in
# their papers) have none.
PUBLISHED_ORDER = {"psmnist": ("cornn", "lem", "exprnn"),
                   "ptb": ("nnrnn", "exprnn", "eurnn", "rnn-orth", "rnn", "lstm", "lem", "rnn chain")}
NO_PUBLISHED = {"copy": "copy at T = 1000 appears in expRNN's paper as a plot of the loss only, and in none of the "
                        "other models' papers",
                "adding": "adding at T = 2000 appears in coRNN's and LEM's papers as plots only (LEM's repository "
                          "logs a test MSE below 0.01 after about 1,900 updates of batch 50 at N = 128)"}
SPEED_ROUNDS = 5
STARTS = ("Every search starts from the protocol's preset (`long-memory`, which gives coRNN and LEM their code's "
          "values on adding and psMNIST; on PTB `paper-params` for the paper's models and, for the others, the "
          "task's training procedure in that preset: batch size, read-out initialisation, embedding, plateau "
          "schedule), searches over its options as above, and keeps the preset's other options (optimizer, "
          "read-out initialisation, clipping); the scale's sizes and lengths replace the preset's. Every model "
          "appears in the tuned column only.")


def tuned_section(grid: Grid) -> list[str]:
    """How every model was tuned (:func:`..reporting.tuning.tuning_section`), from the protocol's preset."""
    return tuning_section(grid, STARTS)


def measure_speed_once(grid: Grid, log=print) -> None:
    """The update times the report shows (:func:`measure_speed`), measured once per grid."""
    if not grid.speed.is_file():
        log("timing one update of every model against torch.nn.RNN and torch.nn.GRU (about a minute)")
        measure_speed(grid)


# --------------------------------------------------------------------------------------------- the searches

def read_trials(folder: GridFolder) -> dict:
    """{search folder: its trials in order} (``OUT/trials.json``, :func:`nnrnn.experiments.reproduce.tune`)."""
    path = folder.trials
    return json.loads(path.read_text()) if path.is_file() else {}


def best_so_far(trials: list[dict], lower: bool) -> list[float | None]:
    """After each trial, the best value of the finished trials so far (None before the first finished one); a
    pruned or failed trial has no value of its own and carries the best before it."""
    best, curve = None, []
    for trial in trials:
        value = trial["value"] if trial["state"] == "COMPLETE" else None
        if value is not None and math.isfinite(value) and (best is None or (value < best if lower else value > best)):
            best = value
        curve.append(best)
    return curve


def _lower(planned: list[PlannedRun], setting: str) -> bool:
    return task_class(setting_task_of(planned, setting)).lower_is_better()


def best_so_far_section(grid: Grid) -> list[str]:
    settings, figures = grid.settings, grid.figures
    trials = read_trials(grid)
    if not trials:
        return []
    scores = "; ".join(f"{title(grid.planned, setting)}: {metric(setting_task_of(grid.planned, setting))}, "
                       f"{'lower' if _lower(grid.planned, setting) else 'higher'} is better" for setting in settings)
    lines = ["### Did each search settle?", "",
             "Each search's best trial score after each trial (finished trials only: a pruned trial stopped "
             "early has no score of its own). A search whose best came at its last trial was still improving when "
             "its budget ran out: more trials might have found better options for that model. A trial's score "
             f"({scores}) is the one each search ranks its trials by: the mean of its validation curve over the run "
             "(the area under the curve per update), not its best point. The gray dotted line in each figure is the "
             "task's reference: the loss of remembering nothing (copy, adding), chance (psMNIST), the unigram model "
             "of the training text (PTB).", "",
             "| setting | model | trials finished / pruned / diverged | best at trial | best trial score |",
             "|---|---|---|---|---|"]
    shown = []
    for setting in settings:
        lower = _lower(grid.planned, setting)
        for label in grid.searched_labels(setting):
            found = trials.get(search_name(setting, label))
            if not found:
                continue
            ended = [t["stopped"] or t["state"] for t in found]  # a diverged trial is PRUNED in Optuna's states
            curve = best_so_far(found, lower)
            best = curve[-1]
            at = next((i + 1 for i, v in enumerate(curve) if v == best), None) if best is not None else None
            lines.append(f"| {title(grid.planned, setting)} | {name(label)} | {ended.count('COMPLETE')} / "
                         f"{ended.count('pruned')} / {ended.count('diverged')} | "
                         f"{at if at else 'none finished'} of {len(found)} | "
                         f"{'n/a' if best is None else f'{best:.4g}'} |")
        # the labels with runs, in the order (hence the colours) of the learning curves
        path = _best_so_far_figure(grid.planned, labels(grid.planned, setting), setting, trials,
                                   figures / f"tuning-{setting}.png")
        shown += [f"![{title(grid.planned, setting)}: best trial score so far, per search]"
                  f"({path.relative_to(grid.out)})",
                  ""] if path else []
    return lines + [""] + shown


def _best_so_far_figure(planned: list[PlannedRun], labels: list[str], setting: str, trials: dict,
                        path: Path) -> Path | None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    lower = _lower(planned, setting)
    fig, ax = plt.subplots(figsize=(8.5, 4.2), layout="constrained")
    drawn = False
    for label in labels:
        found = trials.get(search_name(setting, label))
        if not found:
            continue
        curve = best_so_far(found, lower)
        points = [(i + 1, v) for i, v in enumerate(curve) if v is not None]
        if not points:
            continue
        color, style = line_style(label, planned)
        # a dot at every trial: the last trial's score would otherwise show only as a jump at the right edge
        ax.step(*zip(*points), where="post", color=color, linestyle=style, marker="o", markersize=3, label=name(label))
        drawn = True
    if not drawn:
        plt.close(fig)
        return None
    task = setting_task_of(planned, setting)
    baseline = memoryless_baseline(planned, setting, "valid")  # the trials score on validation sequences
    reference_line(ax, task, baseline, None if baseline is not None else reference(planned, setting))
    if task_class(task).log_axis:
        ax.set_yscale("log")
    ax.set_xlabel("trial")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))  # trials are counted, not measured
    # a trial's score is its mean validation value over the run (the searches' curve area), not its best point
    ax.set_ylabel(f"best trial score so far\n(mean validation {metric(setting_task_of(planned, setting))} "
                  "over the run)")
    ax.set_title(f"{title(planned, setting)}: each model's search, best so far (finished trials)", fontsize=10)
    ax.grid(alpha=0.3)
    # beside the axes, covering no line; long handles show each line style whole
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), handlelength=4)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------------- the standings

def leaders(table: dict, lower: bool) -> tuple[str | None, list[str]]:
    """(the label with the best mean, the labels not clearly worse than it, itself first) by the rule; (None, [])
    when no label has a value."""
    valued = {label: s for label, s in table.items() if s is not None and not s.empty}
    if not valued:
        return None, []
    best = (min if lower else max)(valued, key=lambda label: valued[label].mean)
    group = [best] + [label for label in valued if label != best
                      and compare(label, valued[label], best, valued[best], 4, lower)[1] == 0]
    return best, group


def standing(table: dict, label: str, lower: bool) -> dict:
    """Where ``label`` stands: its rank by mean among the labels with a value, and the labels clearly better than
    it, not clearly different and clearly worse (a label whose every seed failed counts as worse)."""
    mine = table.get(label)
    valued = {m: s for m, s in table.items() if s is not None and not s.empty}
    order = sorted(valued, key=lambda m: valued[m].mean, reverse=not lower)
    found = {"rank": order.index(label) + 1 if label in order else None, "of": len(order),
             "better": [], "alike": [], "worse": []}
    if mine is None:
        return found
    for other, s in table.items():
        if other == label or s is None:
            continue
        sign = compare(label, mine, other, s, 4, lower)[1]
        found["worse" if sign == 1 else "better" if sign == -1 else "alike"].append(other)
    return found


def below_baseline(table: dict, baseline: float) -> list[str]:
    """The labels whose mean is clearly below ``baseline`` by the rule (a one-sample t test): the
    models that remembered something, on a task whose baseline is the loss of remembering nothing."""
    return [label for label, s in table.items() if s is not None and below_value(s, baseline)]


def _names(labels) -> str:
    return ", ".join(name(m) for m in labels) if labels else "none"


def _alike(labels, table: dict, against: str, digits: int) -> str:
    """The labels not clearly different from ``against``, each with the smallest difference the rule could have seen
    between the two with these seeds (:func:`.statistics.margin`), so that a wide error bar is not read as
    agreement."""
    if not labels:
        return "none"
    shown = []
    for label in labels:
        gap = margin(table[label], table[against]) if not (table[label].empty or table[against].empty) else math.nan
        shown.append(f"{name(label)} (" + ("not comparable" if math.isnan(gap) else f"needs > {gap:.{digits}f}") + ")")
    return ", ".join(shown)


def untuned(grid: Grid, setting: str) -> list[str]:
    """The labels a setting searched for whose search finished no trial (every one diverged or was stopped), so that
    they have no tuned runs."""
    trials, ran = read_trials(grid), {r.label for r in grid.planned if r.setting == setting}
    return [label for label in grid.searched_labels(setting) if label not in ran
            and search_name(setting, label) in trials
            and not any(t["state"] == "COMPLETE" for t in trials[search_name(setting, label)])]


def protocol_scope(grid: Grid, setting: str) -> str:
    """What limits a protocol's standings, in words: the sizes and training length here, the seeds, PTB's data, and
    the models whose validation curves were still moving at the end (the rule STILL_MOVING)."""
    members = [r for r in grid.planned if r.setting == setting and r.column == TUNED]
    options = members[0].options
    length = (f"{options['steps']} updates" if options.get("steps") else f"{options['epochs']} epochs") + \
        f" of batch {options['batch_size']}"
    seeds = len({r.seed for r in members})
    moving = []
    for label in labels(grid.planned, setting):
        done = [r for r in group(grid.planned, setting, TUNED, label) if finished(grid.run_folder(r))]
        share = convergence(grid, done, members[0].task)["last_fifth_share"] if done else math.nan
        if share > rule("STILL_MOVING"):
            moving.append(f"{name(label)} ({share:.0%} of its validation change in its last fifth of updates)")
    text = f"{scope(grid.planned, setting, TUNED)}, {length}, {seeds} seeds"
    text += data_scope(members[0].task, options)
    return text + ("; still moving at the end: " + ", ".join(moving) if moving else "")


def standings_section(grid: Grid) -> list[str]:
    settings = grid.settings
    lines = ["## Which model is clearly best, and where the nnRNN stands", "",
             "On each protocol, by the rule: the model with the best mean is clearly best only when it is clearly "
             "better than every other model; otherwise the leading group is every model not clearly worse than it. "
             "Every model at nnRNN's parameter count with its own tuned options.", ""]
    for setting in settings:
        table = results(grid, setting).get(TUNED, {})
        lower = _lower(grid.planned, setting)
        digits = task_class(setting_task_of(grid.planned, setting)).reported.digits
        best, group = leaders(table, lower)
        if best is None:
            lines.append(f"- **{title(grid.planned, setting)}**: no finished runs yet.")
            continue
        if len(group) == 1:
            head = f"**{name(best)}** ({table[best].show(digits)}) is clearly best"
        else:
            head = (f"no model is clearly best; the best mean is {name(best)}'s ({table[best].show(digits)}), and "
                    f"not clearly apart from it (each with the smallest difference the rule detects between the "
                    f"two with these seeds, the Welch test's critical gap): {_alike(group[1:], table, best, digits)}")
        where = standing(table, "nnrnn", lower)
        if where["rank"] is None:
            nn = "the nnRNN has no finished runs"
        else:
            nn = (f"the nnRNN ({table['nnrnn'].show(digits)}) is {where['rank']} of {where['of']} by mean; clearly "
                  f"better than it: {_names(where['better'])}; not clearly different (the same, smallest detectable "
                  f"difference beside each): {_alike(where['alike'], table, 'nnrnn', digits)}; "
                  f"clearly worse: {_names(where['worse'])}")
        unfinished = [label for label, s in table.items() if s is None]
        if unfinished:
            head = f"(so far: not finished {_names(unfinished)}) " + head
        failed = untuned(grid, setting)
        seed = grid.tune.seed
        none = (f" No result for {_names(failed)}: every trial of its search diverged (or was stopped), and with "
                f"no pick it has no tuned runs. Every trial trains seed {seed}, so they share one initial recurrent "
                "matrix: this says that the model diverges from that start at every learning rate tried, not from "
                "every start." if failed else "")
        split = scored(setting_task_of(grid.planned, setting)).split
        memoryless = memoryless_baseline(grid.planned, setting, split)
        if memoryless is not None:
            learned = below_baseline(table, memoryless)
            none += (f" Clearly below the baseline {memoryless:.4f} (the loss of a model that remembers nothing): "
                     f"{_names(learned)}" + ("; the others are not." if learned else "."))
        lines.append(f"- **{title(grid.planned, setting)}**: {head}. {nn[0].upper() + nn[1:]}.{none} This scale: "
                     f"{protocol_scope(grid, setting)}.")
    return lines + [""] + rescored_section(grid)


def verdicts(grid: Grid, setting: str) -> dict:
    """{what: verdict in words} of a protocol's standings under the scoring in force: the model clearly best (or the
    leading group), the nnRNN's rank and the models clearly better, alike and clearly worse than it, and the models
    clearly below the loss of remembering nothing."""
    table = results(grid, setting).get(TUNED, {})
    lower = _lower(grid.planned, setting)
    best, group = leaders(table, lower)
    found = {"clearly best": "none" if best is None else name(best) if len(group) == 1 else
             f"none; leading group: {_names(group)}"}
    where = standing(table, "nnrnn", lower)
    if where["rank"] is not None:
        found |= {"the nnRNN's rank by mean": f"{where['rank']} of {where['of']}",
                  "clearly better than the nnRNN": _names(where["better"]),
                  "not clearly different from the nnRNN": _names(where["alike"]),
                  "clearly worse than the nnRNN": _names(where["worse"])}
    memoryless = memoryless_baseline(grid.planned, setting, scored(setting_task_of(grid.planned, setting)).split)
    if memoryless is not None:
        found["clearly below the baseline"] = _names(below_baseline(table, memoryless))
    return found


def rescored_section(grid: Grid) -> list[str]:
    """The standings judged again under the scoring the grid started with (the rule SCORED_BY), where it differs
    from the scoring now: for each protocol it scores differently, every verdict that moved, then beside now."""
    then = scoring_at_start(grid)
    moved_settings = [s for s in grid.settings if _scored_differently(grid, s, then)] if then else []
    if not moved_settings:
        return []
    lines = ["### The standings under the scoring at the start", "", *rescored_intro(then),
             "| protocol | verdict | under the scoring at the start | now |", "|---|---|---|---|"]
    for setting in moved_settings:
        now = verdicts(grid, setting)
        with judged_by({"SCORED_BY": then}), family.unrecorded():  # judged again: no new members of its family
            before = verdicts(grid, setting)
            table = results(grid, setting).get(TUNED, {})
        moved = [key for key in dict.fromkeys([*before, *now]) if before.get(key) != now.get(key)]
        nn, heading, task = table.get("nnrnn"), title(grid.planned, setting), setting_task_of(grid.planned, setting)
        lines += [f"| {heading} | {key} | {before.get(key, 'n/a')} | **{now.get(key, 'n/a')}** |"
                  for key in moved] or [f"| {heading} | every verdict | the same | the same |"]
        if nn is not None:
            lines.append(f"| {heading} | the nnRNN's score | {nn.show(4)} ({scored_words(task, then)}) | "
                         f"{results(grid, setting).get(TUNED, {})['nnrnn'].show(4)} ({scored(task).label}) |")
    return lines + [""]


def _scored_differently(grid: Grid, setting: str, then: str) -> bool:
    task = setting_task_of(grid.planned, setting)
    with judged_by({"SCORED_BY": then}):
        before = scored(task)
    return before != scored(task)


def scored_words(task: str, scoring: str) -> str:
    with judged_by({"SCORED_BY": scoring}):
        return scored(task).label


def published(grid: Grid, label: str) -> tuple[Published, ...]:
    """The published figures of ``label``: its model class's, or those its grid declares with its variant."""
    if label in MODELS:
        return model_class(label).PUBLISHED
    variant = next((s.variants[label] for s in grid.spec.settings.values() if label in s.variants), None)
    return variant.published if variant is not None else ()


def published_section(grid: Grid) -> list[str]:
    settings = grid.settings
    lines = ["## Published figures beside these", "",
             "Each published figure with the scale it was measured at, beside this grid's result for the same model "
             "(tuned, at nnRNN's parameter count, on the data and lengths above). The scales differ by far more "
             "than the models do: these rows say how far this CPU scale is from the published one, not which model "
             "is better.", "",
             "| protocol | model | published | their scale | source | here |", "|---|---|---|---|---|---|"]
    for setting in settings:
        task = setting_task_of(grid.planned, setting)
        table = results(grid, setting).get(TUNED, {})
        rows = [(label, p) for label in dict.fromkeys([*PUBLISHED_ORDER.get(task, ()), *table]) if label in table
                for p in published(grid, label) if p.task == task]
        for label, figure in rows:
            value, scale_words, source = figure.value, figure.scale, figure.source
            here = table.get(label)
            percent = task_class(task).percent
            if here is not None and percent:  # in percent, as the papers print it
                here = Stat(here.mean * 100, here.se * 100, here.n, here.failed)
            shown = "not finished" if here is None else here.show(1 if percent else 3)
            lines.append(f"| {title(grid.planned, setting)} | {name(label)} | {value:g} | {scale_words} | {source} | "
                         f"{shown} |")
        if task in NO_PUBLISHED:
            lines.append(f"| {title(grid.planned, setting)} | every model | none | | {NO_PUBLISHED[task]} | |")
    return lines + ["", "psMNIST accuracies are in percent here; LRU's and minGRU's papers report none of these "
                        "protocols (LRU: the Long Range Arena; minGRU: selective copying, reinforcement learning and "
                        "Shakespeare).", ""]


# --------------------------------------------------------------------------------------------- update time

def setting_sizes(planned: list[PlannedRun]) -> dict:
    """{setting: (T, B, N, I)}: each protocol's sequence length, batch, nnRNN's hidden size and the recurrent
    layer's input width."""
    found = {}
    for r in planned:
        if r.setting in found or r.model != "nnrnn":
            continue
        cls = task_class(r.task)
        io = sizes(r.task, r.options.get("data_dir"))
        width = network_sizes({**r.options, "model": "nnrnn"}, io)[0] if cls.token_inputs else cls.input_size
        found[r.setting] = (cls.sequence_length(r.options), r.options["batch_size"], r.hidden, width)
    return found


def measure_speed(grid: Grid, rounds: int | None = None) -> Path:
    """``OUT/speed.json``: one training update of every model of the grid at each protocol's size, all at nnRNN's
    hidden size, against torch.nn.RNN(relu) and torch.nn.GRU, alternating in this process on one thread (the
    grid's runs trained on one thread each); medians of ``rounds`` rounds (default :data:`SPEED_ROUNDS`;
    :mod:`nnrnn.doctor.harness`)."""
    rounds = rounds or SPEED_ROUNDS
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        models = list(dict.fromkeys(r.model for r in grid.planned))
        measured = {}
        for setting, size in setting_sizes(grid.planned).items():
            calls = {"torch.nn.RNN": TimedUpdate(lambda i, n: TorchBaseline("rnn", i, n), size, torch.device("cpu")),
                     "torch.nn.GRU": TimedUpdate(lambda i, n: TorchBaseline("gru", i, n), size, torch.device("cpu"))}
            for model in models:
                calls[model] = TimedUpdate((lambda m: lambda i, n: create(m, i, n))(model), size, torch.device("cpu"))
            for call in calls.values():
                call()  # warm-up: the optimizer's state, first-call allocations
            measured[setting] = {"size": list(size), "seconds": medians(alternate(calls, rounds))}
    finally:
        torch.set_num_threads(threads)
    path = grid.speed
    path.write_text(json.dumps({"host": describe_cpu(), "torch": torch.__version__, "python": platform.python_version(),
                                "threads": 1, "rounds": rounds, "settings": measured}, indent=1, sort_keys=True) + "\n")
    return path


def update_time_section(grid: Grid) -> list[str]:
    path = grid.speed
    if not path.is_file():
        return []
    speed = json.loads(path.read_text())
    settings = speed["settings"]
    lines = ["## Update time against torch.nn.RNN and torch.nn.GRU", "",
             f"One training update (forward over the whole sequence, a read-out at every step, backward, an RMSprop "
             f"step) of each model at each protocol's length and batch, every model at nnRNN's hidden size N (the "
             f"complex nnRNN: N complex units), against torch.nn.RNN(relu) and torch.nn.GRU of the same N, all in "
             f"one process, alternating, median of {speed['rounds']} rounds, {speed['threads']} thread; measured "
             f"after the grid had trained, on {speed['host']}, torch {speed['torch']}. Each cell: × RNN / × GRU.",
             "", "| model | " + " | ".join(f"{s} (T, B, N, I = {', '.join(map(str, v['size']))})"
                                           for s, v in settings.items()) + " |",
             "|---" * (1 + len(settings)) + "|"]
    models = [m for m in next(iter(settings.values()))["seconds"] if not m.startswith("torch.")]
    for model in ["torch.nn.RNN", "torch.nn.GRU"] + models:
        cells = []
        for v in settings.values():
            s = v["seconds"]
            cells.append(f"{s[model] / s['torch.nn.RNN']:.2f}× / {s[model] / s['torch.nn.GRU']:.2f}× "
                         f"({s[model] * 1e3:.0f} ms)")
        shown = model if model.startswith("torch.") else name(model)  # torch's references are not labels
        lines.append(f"| {shown} | " + " | ".join(cells) + " |")
    return lines + [""]


# the paper's models, the non-normal family and today's long-memory RNNs, each tuned alike (issue 50)
MODERN_MODELS = PAPER_MODELS + ("gru", "nngru", "nnrnn-complex", "cornn", "lem", "lru", "nnlru", "mingru")
# Orhan & Pitkow's chain, at the gain their released code's example trains copy with (eminorhan/nonnormal-init),
# with their RNN's nonlinearity for the task: ELU on copy and psMNIST (ReLU on adding); on PTB, where they trained
# only LSTMs, it keeps the non-gated models' modReLU
CHAIN = Variant(model="rnn", options={"init": "chain:1.02"}, published=(
    Published("ptb", "test bpc", 1.308, "a 3-layer model in the awd-lstm-lm setup, the full training file (size and "
              "T_PTB not stated)", "Orhan & Pitkow 2020, Table 1 (test loss at the end of training)"),))
CHAIN_LABEL = variant("rnn chain", "RNN (chain init)", ("#ff00ff", (0, (7, 1, 1, 1, 1, 1, 1, 1))))
CHAIN_INIT = {CHAIN_LABEL: CHAIN}
CHAIN_ELU = {CHAIN_LABEL: dataclasses.replace(CHAIN, options={**CHAIN.options, "nonlinearity": "elu"})}
REPORT = Report("Today's long-memory RNNs beside the nnRNN", (
    tuned_section, picks_section, best_so_far_section, settings_sections, standings_section,
    judged_again(standings_section), published_section,
    update_time_section, settled_section), files=(SPEED,), prepare=measure_speed_once)
NAME = "modern"
SCALE = Scale(
    name=NAME,
    about="modern: today's long-memory RNNs (coRNN, LEM, LRU, minGRU, a chain-initialised RNN) beside nnRNN and "
          "the paper's models, tuned alike, on psMNIST and PTB (3.3 h with --jobs 2 on 2 cores; "
          "docs/modern/report.md; it resumes across sittings)",
    seeds=(0, 1, 2),
    report=REPORT,
    tune=Search(trials=4, share=1.0, seed=TUNE_SEED, startup=2),
    settings={
        "psmnist": Setting(task="psmnist", hidden=64, preset="long-memory", paper_depth=True, paper_optimizer=True,
                           columns=(TUNED,), models=MODERN_MODELS, variants=CHAIN_ELU,
                           options={**LONG_PSMNIST, "epochs": 5, "eval_every": 50}),
        "ptb": Setting(task="ptb", hidden=128, paper_depth=True, paper_optimizer=True, columns=(TUNED,),
                       models=MODERN_MODELS,
                       variants=CHAIN_INIT, options={**LONG_PTB, "epochs": 20}),
    },
)
