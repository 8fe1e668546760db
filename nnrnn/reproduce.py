"""``nnrnn reproduce``: the paper's experiment grid at a chosen scale, and a report.

The grid is copy, psMNIST and PTB × the six models × several seeds, in up to
two columns as in the paper: a fixed number of hidden units, and a fixed
parameter count (each model's hidden size from :func:`nnrnn.hidden_size_for`
so that it matches nnRNN's count, counted with each model's own options:
embedding, biases, the LSTM's single bias).  Learning rates, initialisations,
schedules and the other settings come from the ``paper`` / ``paper-params``
presets, which train as the authors' released code does; a scale only changes
sizes, lengths and which columns run.  Each run is an ordinary run folder;
finished runs are skipped and interrupted ones resumed, so the command can be
repeated.  ``--jobs N`` trains N runs at once, each in its own process with
one thread (on 2 cores, small models train more per second that way than one
run on two threads).

Scales (data: the MNIST test set split 8000/1000/1000 and PTB trained on 90%
of its validation file when only ``shared/data`` is present):

* ``cpu``: short (docs/reproduction-cpu/report.md); a few epochs, so it measures early
  learning speed, not the converged models the paper's claims are about.
* ``cpu-long``: long runs at small sizes, 3 seeds: copy (4000 updates) and psMNIST
  (20 epochs) in the fixed-hidden-units column (the paper's main-text figures), PTB
  in both columns (its Table 1) for 150 epochs with the plateau schedule.  Hours on
  a CPU; ``--jobs`` runs several at once (docs/reproduction-cpu-long/report.md).
* ``smoke``: a few updates per run at 16 units, one seed; a check that the whole pipeline runs.
* ``paper``: the paper's sizes and the release's lengths (copy 1500 updates, psMNIST and PTB
  100 epochs); meant for GPUs.
"""
from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import os
import signal
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np

from . import presets, runlock
from .config import DEFAULTS, model_options, resolve_config
from .errors import Interrupted, OptionError, TrainingDiverged, UserError
from .models import PAPER_MODELS, hidden_size_for, parameter_count
from .network import best_checkpoint, embedding_width, load_model
from .runlog import read_metrics
from .tasks import make_task, task_class
from .tasks.copy import baseline_loss
from .train import is_run_folder, train

BOTH = ("hidden", "params")
NON_GATED = tuple(m for m in PAPER_MODELS if m != "lstm")
# Supplementary Table 7: nnRNN with every γ held at 1 or at 0.958 (no δ penalty then), at the reference size.
GAMMA_CLAMPED = {"nnrnn γ=1": {"model": "nnrnn", "fixed_gamma": 1.0, "delta": 0.0},
                 "nnrnn γ=0.958": {"model": "nnrnn", "fixed_gamma": 0.958, "delta": 0.0}}
SCALES = {
    "cpu": {
        "seeds": [0, 1],
        "tasks": {
            "copy": {"hidden": 128, "columns": BOTH,
                     "options": {"T": 200, "batch_size": 10, "steps": 1000, "eval_every": 250, "log_every": 25}},
            "psmnist": {"hidden": 64, "columns": BOTH,
                        "options": {"batch_size": 64, "epochs": 3, "eval_every": 125, "log_every": 25,
                                    "eval_batch_size": 1000}},
            "ptb": {"hidden": 256, "columns": BOTH,
                    "options": {"bptt": 150, "batch_size": 32, "epochs": 4, "eval_every": 74, "log_every": 10,
                                "eval_batch_size": 50}},
        },
    },
    "cpu-long": {
        "seeds": [0, 1, 2],
        "tasks": {
            "copy": {"hidden": 128, "columns": BOTH,
                     "options": {"T": 200, "batch_size": 10, "steps": 4000, "eval_every": 100, "log_every": 50}},
            "psmnist": {"hidden": 64, "columns": BOTH,
                        "options": {"batch_size": 64, "epochs": 20, "eval_every": 125, "log_every": 25,
                                    "eval_batch_size": 1000}},
            # the release's 100 epochs, the plateau rule halving the rates as in the presets (no early stop:
            # with patience 0 a few bad validations early in a run would end it; docs/training.md)
            "ptb": {"hidden": 128, "columns": BOTH, "variants": GAMMA_CLAMPED,
                    "options": {"bptt": 150, "batch_size": 32, "epochs": 100,
                                "eval_every": 74, "log_every": 10, "eval_batch_size": 50}},
            # supplementary Tables 1 and 7 at T_PTB = 300: the non-gated models only, as there
            "ptb-300": {"task": "ptb", "hidden": 128, "columns": BOTH, "variants": GAMMA_CLAMPED,
                        "models": NON_GATED,
                        "options": {"bptt": 300, "batch_size": 32, "epochs": 100,
                                    "eval_every": 37, "log_every": 5, "eval_batch_size": 50}},
        },
    },
    "smoke": {  # a few updates per run: checks that an installation runs the whole pipeline
        "seeds": [0],
        "tasks": {
            "copy": {"hidden": 16, "columns": ("hidden",),
                     "options": {"T": 20, "batch_size": 4, "steps": 6, "eval_every": 3, "log_every": 3}},
            "psmnist": {"hidden": 16, "columns": ("hidden",),
                        "options": {"batch_size": 8, "steps": 3, "eval_every": 3, "log_every": 3,
                                    "eval_batch_size": 1000}},
            "ptb": {"hidden": 16, "columns": ("hidden",),
                    "options": {"bptt": 150, "batch_size": 16, "steps": 3, "eval_every": 3, "log_every": 3,
                                "eval_batch_size": 500}},
        },
    },
    "paper": {
        "seeds": [0, 1, 2],
        "tasks": {
            # the release's lengths: copytask.py's 1500 updates, sMNIST.py's and language_task.py's 100 epochs
            "copy": {"hidden": None, "columns": BOTH, "options": {"T": 200, "batch_size": 10, "steps": 1500}},
            "psmnist": {"hidden": None, "columns": BOTH, "options": {"batch_size": 128, "epochs": 100}},
            "ptb": {"hidden": None, "columns": BOTH, "options": {"bptt": 150, "batch_size": 128, "epochs": 100}},
        },
    },
}
COLUMNS = {"hidden": "paper", "params": "paper-params"}
REPORTED = {"copy": "valid loss (baseline {baseline:.3f})", "psmnist": "test accuracy",
            "ptb": "test bits per character"}  # what the report calls each task's monitored metric


def metric(task: str) -> str:
    """The metric a task is judged by: its validation monitor (copy: loss, psMNIST: accuracy, PTB: bpc)."""
    return task_class(task).monitor[0]


def sizes(task: str, data_dir=None) -> tuple[int, int, int | None]:
    """(input size, output size, vocabulary size or None) of a task's network inputs and outputs."""
    if task == "ptb":  # the vocabulary comes from the data files
        vocab = make_task("ptb", data_dir=data_dir, batch_size=1).vocab_size
        return vocab, vocab, vocab
    return {"copy": (10, 9, None), "psmnist": (1, 10, None)}[task]


def network_sizes(config: dict, io: tuple[int, int, int | None]) -> tuple[int, int, int | None]:
    """(recurrent input size, output size, embedded vocabulary or None) of ``config``'s network."""
    input_size, output_size, vocab = io
    if not vocab:
        return input_size, output_size, None
    embedding = embedding_width(config)
    return (embedding, output_size, vocab) if embedding else (vocab, output_size, None)


def network_parameters(config: dict, hidden: int, io: tuple[int, int, int | None]) -> int:
    """Free parameters of ``config``'s network at ``hidden`` units: embedding, recurrent layer, read-out."""
    input_size, output_size, vocab = network_sizes(config, io)
    return parameter_count(config["model"], input_size, hidden, output_size, vocab, **model_options(config))


def setting_task(scale: str, setting: str) -> str:
    """The task a scale's setting trains (settings such as ``ptb-300`` name a task and its options)."""
    return SCALES[scale]["tasks"][setting].get("task", setting)


def plan(scale: str, models=None, tasks=None, seeds=None, data_dir=None) -> list[dict]:
    """One entry per run: its setting, task, column, label, model, seed and resolved options.

    A setting runs its ``models`` (default: the paper's six) in each of its columns, and its ``variants``
    (a label → the model and the options that make it, e.g. nnRNN with γ held) at the reference size.
    ``models`` and ``tasks`` filter by model and task name (a variant goes with its model)."""
    spec = SCALES[scale]
    runs = []
    for setting_name, setting in spec["tasks"].items():
        task = setting.get("task", setting_name)
        if tasks and task not in tasks:
            continue
        cls = task_class(task)
        io = sizes(task, data_dir)
        entries = [(m, {"model": m}, setting.get("columns", BOTH)) for m in setting.get("models", PAPER_MODELS)]
        entries += [(label, variant, ("hidden",)) for label, variant in setting.get("variants", {}).items()]
        for column in setting.get("columns", BOTH):
            preset = COLUMNS[column]
            key = presets.table_key(task, setting["options"].get("bptt"))
            reference = setting["hidden"] or presets.load("paper")[key]["nnrnn"]["hidden"]
            reference_config = resolve_config({"task": task, "model": "nnrnn", **setting["options"]}, preset)
            budget = network_parameters(reference_config, reference, io)
            for label, variant, columns in entries:
                model = variant["model"]
                if column not in columns or models and model not in models:
                    continue
                extra = {k: v for k, v in variant.items() if k != "model"}
                model_config = resolve_config({"task": task, **variant, **setting["options"]}, preset)
                if column == "hidden" or model == "nnrnn":
                    hidden = reference
                else:
                    input_size, output_size, vocab = network_sizes(model_config, io)
                    hidden = hidden_size_for(model, budget, input_size, output_size, vocab,
                                             **model_options(model_config))
                for seed in seeds or spec["seeds"]:
                    options = {"task": task, "model": model, "seed": seed, "hidden": hidden, "progress": False,
                               **setting["options"], **extra}
                    if data_dir and cls.has_data_files:
                        options["data_dir"] = data_dir
                    config = resolve_config(options, preset)
                    for name in ("data_dir", "preset"):  # neither changes what is trained
                        config.pop(name, None)
                    # named by the options that differ from the defaults: adding an option keeps names valid
                    config = {k: v for k, v in config.items() if k not in DEFAULTS or DEFAULTS[k] != v}
                    digest = hashlib.md5(json.dumps(config, sort_keys=True).encode()).hexdigest()[:6]
                    runs.append({"setting": setting_name, "task": task, "column": column, "label": label,
                                 "model": model, "seed": seed, "hidden": hidden, "preset": preset,
                                 "options": options, "budget": budget,
                                 "name": f"{task}-{model}-h{hidden}-s{seed}-{digest}"})
    return runs


def run_folder(out: Path, run: dict) -> Path:
    """Runs with identical settings (e.g. nnRNN in both columns) share one folder."""
    return out / "runs" / run["name"]


def finished(folder: Path) -> bool:
    """Diverged, or trained to its end: a test score logged after the last training point."""
    records = read_metrics(folder)
    return diverged(folder) or bool(records) and records[-1].get("split") == "test"


def diverged(folder: Path) -> bool:
    return (folder / "DIVERGED").is_file()


def _train_one(folder: Path, run: dict, threads: int | None) -> str:
    """Train one planned run into ``folder`` (resuming it if interrupted); returns a line for the log."""
    if threads:
        import torch
        torch.set_num_threads(threads)
    config = resolve_config({**run["options"], "out": str(folder)}, run["preset"])
    resume = is_run_folder(folder)  # interrupted, at any moment: it continues from its last checkpoint, if any
    start = time.time()
    try:
        train(config, resume=resume)
    except TrainingDiverged as exc:
        # a result in its own right (the paper reports failed runs too): record it, go on
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "DIVERGED").write_text(str(exc) + "\n")
        return f"{folder.name}: diverged: {exc}"
    seconds = time.time() - start
    (folder / "wall_seconds").write_text(f"{seconds:.1f}\n")
    return f"{folder.name}: {seconds:.0f} s" + (" (resumed)" if resume else "")


def expected_cost(run: dict) -> float:
    """A rough relative cost of a run (recurrent steps × units², gated models × their gate count), to order the
    queue; not a prediction of time."""
    options = run["options"]
    length = {"copy": options.get("T", 0) + 20, "psmnist": 784, "ptb": options.get("bptt", 150)}.get(run["task"], 1)
    updates = options.get("steps") or (options.get("epochs") or 1) * {"psmnist": 125, "ptb": 11000 / length}.get(
        run["task"], 1)
    gates = {"lstm": 4, "gru": 3, "nngru": 3}.get(run["model"], 1)
    return updates * length * options.get("batch_size", 1) * (gates * run["hidden"] ** 2 + 64 ** 2)


def execute(out: Path, runs: list[dict], log=print, jobs: int = 1) -> None:
    """Train every planned run that has not finished (resuming interrupted ones); runs that share a folder
    (identical settings) train once.  ``jobs`` > 1 trains that many at once, each in its own process with
    one thread."""
    todo = {}
    for run in runs:
        folder = run_folder(out, run)
        if not finished(folder) and folder not in todo:
            todo[folder] = run
    if not todo:
        return
    # longest first: with several jobs the grid then ends with short runs filling both processes
    todo = dict(sorted(todo.items(), key=lambda item: -expected_cost(item[1])))
    log(f"{len(todo)} runs to train" + (f", {jobs} at a time" if jobs > 1 else ""))
    again = "run the same command again to continue (finished runs are kept, interrupted ones resume)"
    if jobs <= 1:
        for i, (folder, run) in enumerate(todo.items(), 1):
            try:
                log(f"[{i}/{len(todo)}] " + _train_one(folder, run, None))
            except Interrupted as exc:
                raise Interrupted(exc.signum, exc.path, again) from None
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    waiting, running, count, stopped = list(todo.items()), {}, 0, []

    def forward(signum, frame):  # a signal to this process alone (kill PID) reaches the runs too
        stopped.append(signum)
        for child in multiprocessing.active_children():
            try:
                os.kill(child.pid, signum)
            except ProcessLookupError:
                pass

    # Only `jobs` runs are handed to the pool at a time, so that after a signal none starts.
    with ProcessPoolExecutor(max_workers=jobs, initializer=_ignore_signals) as pool:
        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            while waiting or running:
                while waiting and len(running) < jobs and not stopped:
                    folder, run = waiting.pop(0)
                    running[pool.submit(_train_one, folder, run, 1)] = folder
                if not running:
                    break
                for future in wait(running, return_when=FIRST_COMPLETED)[0]:
                    folder = running.pop(future)
                    count += 1
                    try:
                        line = future.result()
                    except Interrupted:
                        line = f"{folder.name}: interrupted, checkpoint saved"
                    except BrokenProcessPool:
                        raise UserError(f"a training process died while training {folder.name} (killed, or out "
                                        f"of memory); {again}") from None
                    log(f"[{count}/{len(todo)}] {line}")
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if stopped:
        raise Interrupted(stopped[0], out, again)


def _ignore_signals() -> None:
    """In a pool worker: the parent forwards SIGINT/SIGTERM, and train() catches them while it trains; an idle
    worker must not die of one (that would break the pool)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def final_value(folder: Path, task: str) -> float | None:
    """The reported metric of a finished run; None for a run that diverged."""
    if diverged(folder):
        return None
    name = metric(task)
    records = read_metrics(folder)
    split = "valid" if task == "copy" else "test"
    values = [r[name] for r in records if r.get("split") == split and name in r]
    return values[-1] if values else None


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error of the runs that produced a value."""
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return math.nan, math.nan
    se = float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan
    return float(np.mean(values)), se


def collect(out: Path, runs: list[dict]) -> dict:
    """{task: {column: {model: (mean, se, n, hidden, n_diverged)}}}"""
    table: dict = {}
    for run in runs:
        entry = table.setdefault(run["task"], {}).setdefault(run["column"], {}).setdefault(
            run["model"], {"values": [], "hidden": run["hidden"]})
        entry["values"].append(final_value(run_folder(out, run), run["task"]))
    for task in table.values():
        for column in task.values():
            for model, entry in column.items():
                failed = sum(v is None for v in entry["values"])
                column[model] = (*mean_se(entry["values"]), len(entry["values"]), entry["hidden"], failed)
    return table


def learning_curves(out: Path, runs: list[dict], task: str, path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    name = metric(task)
    split = "train" if task == "copy" else "valid"
    columns = [c for c in COLUMNS if any(r["task"] == task and r["column"] == c for r in runs)]
    fig, axes = plt.subplots(1, len(columns), figsize=(5 * len(columns), 3.8), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, column in zip(axes, columns):
        for index, model in enumerate(PAPER_MODELS):
            curves = []
            for run in runs:
                if (run["task"], run["column"], run["model"]) != (task, column, model):
                    continue
                points = [(r["step"], r[name]) for r in read_metrics(run_folder(out, run))
                          if r.get("split") == split and name in r]
                if points:
                    curves.append(points)
            if not curves:
                continue
            n = min(len(c) for c in curves)
            steps = np.array([p[0] for p in curves[0][:n]])
            values = np.array([[p[1] for p in c[:n]] for c in curves])
            mean = values.mean(0)
            se = values.std(0, ddof=1) / math.sqrt(len(values)) if len(values) > 1 else np.zeros_like(mean)
            hidden = next(r["hidden"] for r in runs if (r["task"], r["column"], r["model"]) == (task, column, model))
            color = f"C{index}"  # one colour per model in every panel
            ax.plot(steps, mean, color=color, label=f"{model} (N={hidden})")
            ax.fill_between(steps, mean - se, mean + se, color=color, alpha=0.2)
        if task == "copy":
            T = next(r["options"]["T"] for r in runs if r["task"] == task)
            ax.axhline(baseline_loss(T), color="gray", linestyle="--", label="baseline")
            ax.set_yscale("log")  # from the baseline down to ~1e-4, and the vanilla RNN's spikes
        ax.set_title("fixed hidden units" if column == "hidden" else "fixed parameter count", fontsize=10)
        ax.set_xlabel("update")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7.5, loc="best")
    axes[0].set_ylabel(f"{split} {name}")
    fig.suptitle(f"{task}: {split} {name}, mean ± s.e. over seeds", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def fmt(entry, digits: int) -> str:
    mean, se, n, _, failed = entry
    if failed == n:
        return "diverged" if n == 1 else f"diverged ({n} of {n} seeds)"
    text = f"{mean:.{digits}f} ± {se:.{digits}f}" if not math.isnan(se) else f"{mean:.{digits}f}"
    return text + (f" ({failed} of {n} seeds diverged)" if failed else "")


def training_minutes(out: Path, runs: list[dict]) -> float:
    """Sum of the wall times of the distinct runs (each recorded when it finished)."""
    folders = {run_folder(out, r) for r in runs}
    return sum(float((f / "wall_seconds").read_text()) for f in folders if (f / "wall_seconds").is_file()) / 60


ORTHOGONAL = ("exprnn", "eurnn", "rnn-orth")
# The paper's numbers behind each claim (main text and supplementary Table 1; psMNIST and copy are figures).
PAPER = {
    "copy": "nnRNN and the orthogonal RNNs solve it (loss near 0); LSTM stays near the baseline 0.095; RNN fails",
    "psmnist": "nnRNN matches the orthogonal RNNs; RNN and LSTM do worse (Fig. 2, N = 512)",
    "ptb-hidden": "nnRNN 1.47 ± 0.003 < expRNN 1.51 ± 0.005 < EURNN 1.69, RNN-orth 1.62, RNN 2.89 (N = 1024)",
    "ptb-params": "nnRNN 1.47 ± 0.003 < expRNN 1.49 ± 0.008 < EURNN 1.61, RNN-orth 1.62, RNN 2.89 (1.32M)",
}


def _entry(table: dict, task: str, model: str, column: str = "hidden"):
    """(mean, standard error) of one model, (nan, nan) when every seed diverged, None when it has no
    finished run (a grid still training, or a model left out)."""
    entry = table.get(task, {}).get(column, {}).get(model)
    return (entry[0], entry[1]) if entry else None


def _show(entry, digits: int) -> str:
    if entry is None:
        return "not run yet"
    mean, se = entry
    if math.isnan(mean):
        return "diverged"
    return f"{mean:.{digits}f} ± {se:.{digits}f}" if not math.isnan(se) else f"{mean:.{digits}f}"


def _untested(*entries) -> bool:
    return any(e is None for e in entries)


UNTESTED = "not tested yet (runs missing)"


def _below(a, b) -> bool:
    """a's mean below b's by more than two combined standard errors."""
    (ma, sa), (mb, sb) = a, b
    if math.isnan(ma):
        return False
    if math.isnan(mb):
        return True
    return ma + 2 * math.hypot(0 if math.isnan(sa) else sa, 0 if math.isnan(sb) else sb) < mb


def claims_table(table: dict, baseline: float | None) -> list[tuple[str, str, str, str]]:
    """(claim, the paper's numbers, this scale's, "holds" / "does not hold" / "partly") per claim that this
    scale's tasks and columns can test; statistics over seeds (mean ± s.e.; a difference counts when the
    means differ by more than two combined standard errors)."""
    rows = []
    if "copy" in table and baseline:
        nn, exp, rnn, lstm = (_entry(table, "copy", m) for m in ("nnrnn", "exprnn", "rnn", "lstm"))
        solved = lambda e: not math.isnan(e[0]) and e[0] + 2 * (0 if math.isnan(e[1]) else e[1]) < 0.1 * baseline
        if _untested(nn, exp, rnn, lstm):
            verdict = UNTESTED
        else:
            holds = solved(nn) and solved(exp) and not solved(rnn) and not solved(lstm)
            verdict = "holds" if holds else "does not hold"
        rows.append(("copy (T = 200): nnRNN solves it like the orthogonal RNNs; LSTM and RNN do not", PAPER["copy"],
                     f"nnRNN {_show(nn, 4)}, expRNN {_show(exp, 4)}, LSTM {_show(lstm, 4)}, RNN {_show(rnn, 4)} "
                     f"(baseline {baseline:.4f}; solved = below 10% of it)", verdict))
    if "psmnist" in table:
        nn = _entry(table, "psmnist", "nnrnn")
        orth = {m: _entry(table, "psmnist", m) for m in ORTHOGONAL}
        rnn, lstm = _entry(table, "psmnist", "rnn"), _entry(table, "psmnist", "lstm")
        best = max(orth, key=lambda m: -math.inf if orth[m] is None or math.isnan(orth[m][0]) else orth[m][0])
        if _untested(nn, rnn, lstm, *orth.values()):
            verdict = UNTESTED
        else:
            matches = not _below(nn, orth[best]) and not _below(orth[best], nn)  # accuracy: neither clearly higher
            beats_rnn_lstm = _below(rnn, nn) and _below(lstm, nn)
            verdict = "holds" if matches and beats_rnn_lstm else "partly" if matches or beats_rnn_lstm else "does not hold"
        rows.append(("psMNIST: nnRNN matches the orthogonal RNNs; RNN and LSTM do worse", PAPER["psmnist"],
                     f"nnRNN {_show(nn, 3)}, best orthogonal ({best}) {_show(orth[best], 3)}, "
                     f"RNN {_show(rnn, 3)}, LSTM {_show(lstm, 3)} (test accuracy)", verdict))
    for column in ("hidden", "params"):
        if column not in table.get("ptb", {}):
            continue
        nongated = {m: _entry(table, "ptb", m, column) for m in PAPER_MODELS if m != "lstm"}
        others = [m for m in nongated if m != "nnrnn"]
        if _untested(*nongated.values()):
            beaten, verdict = [], UNTESTED
        else:
            beaten = [m for m in others if _below(nongated["nnrnn"], nongated[m])]
            verdict = "holds" if len(beaten) == len(others) else "partly" if beaten else "does not hold"
        label = "fixed hidden units" if column == "hidden" else "fixed parameter count"
        rows.append((f"PTB ({label}): nnRNN has the lowest test bpc of the non-gated models",
                     PAPER[f"ptb-{column}"],
                     ", ".join(f"{m} {_show(nongated[m], 3)}" for m in ("nnrnn", "exprnn", "eurnn", "rnn-orth", "rnn"))
                     + f"; LSTM {_show(_entry(table, 'ptb', 'lstm', column), 3)}"
                     + (f"; nnRNN clearly below {', '.join(beaten)}" if beaten else ""), verdict))
    return rows


def learned_structure_claim(learned: dict) -> str | None:
    if not {"copy", "ptb"} <= set(learned):
        return None
    copy_dep = learned["copy"]["departure_from_normality_normalized"]
    ptb_dep = learned["ptb"]["departure_from_normality_normalized"]
    return (f"- Learned structure: the normalised departure from normality of nnRNN's V is {copy_dep:.3f} after copy "
            f"and {ptb_dep:.3f} after PTB; the paper's finding that copy leaves V normal (T ≈ 0) while PTB grows "
            f"structure in T {'holds in direction' if ptb_dep > copy_dep else 'does not hold'} here. Mean γ on PTB "
            f"is {learned['ptb']['mean_gamma']:.3f} (paper: about 0.958).")


def convergence(out: Path, runs: list[dict], task: str, column: str, model: str) -> dict:
    """How settled a group of runs is: the validation metric's mean change over the last 20% of training,
    relative to its whole change (0: flat), and for PTB how many times the learning rate was halved."""
    name = metric(task)
    shares, halvings = [], []
    for run in runs:
        if (run["task"], run["column"], run["model"]) != (task, column, model):
            continue
        records = read_metrics(run_folder(out, run))
        curve = [r[name] for r in records if r.get("split") == "valid" and name in r and math.isfinite(r[name])]
        if len(curve) >= 5:
            tail = curve[-max(2, len(curve) // 5):]
            total = abs(curve[-1] - curve[0])
            shares.append(abs(tail[-1] - tail[0]) / total if total else 0.0)
        lrs = [r["lr"] for r in records if r.get("split") == "train" and "lr" in r]
        if lrs:
            halvings.append(round(math.log2(lrs[0] / lrs[-1])) if lrs[-1] > 0 else 0)
    return {"last_fifth_share": float(np.mean(shares)) if shares else math.nan,
            "halvings": (min(halvings), max(halvings)) if halvings else None}


def analyse_nnrnn(out: Path, runs: list[dict]) -> dict:
    """Θ plots and summaries of the seed-0 nnRNN of each task."""
    from .analysis import analyze_model
    summaries = {}
    for run in runs:
        if run["model"] != "nnrnn" or run["seed"] != min(r["seed"] for r in runs) or run["column"] != "hidden":
            continue
        folder = run_folder(out, run)
        best = best_checkpoint(folder)
        if not best.exists():
            continue
        summary = out / "analysis" / run["task"] / "summary.json"
        if summary.is_file() and summary.stat().st_mtime >= best.stat().st_mtime:  # analysed already
            summaries[run["task"]] = json.loads(summary.read_text())
            continue
        net, _ = load_model(folder)
        summaries[run["task"]] = analyze_model(net.rnn, out / "analysis" / run["task"],
                                               title=f"nnRNN trained on {run['task']}")
    return summaries


def write_report(out: Path, scale: str, runs: list[dict]) -> Path:
    """``out/report.md`` (and its figures): the results per task, the paper's claims judged, how settled the
    runs are, what nnRNN learned, and the theory."""
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    table = collect(out, runs)
    copy_T = next((r["options"]["T"] for r in runs if r["task"] == "copy"), None)
    baseline = baseline_loss(copy_T) if copy_T else None
    summaries = analyse_nnrnn(out, runs)
    lines = (_introduction(out, scale, runs) + _results(out, runs, table, baseline, figures)
             + _claims(table, baseline, summaries) + _settled(out, runs) + _learned(out, summaries)
             + _theory(figures))
    report = out / "report.md"
    report.write_text("\n".join(lines))
    return report


def _introduction(out: Path, scale: str, runs: list[dict]) -> list[str]:
    seeds = sorted({r["seed"] for r in runs})
    data_dir = next((r["options"]["data_dir"] for r in runs if "data_dir" in r["options"]), None)
    command = f"nnrnn reproduce --scale {scale} --out {out}" + (f" --data-dir {data_dir}" if data_dir else "")
    return [f"# Reproduction report ({scale} scale)", "",
            f"Generated by `{command}`; its "
            f"{len({run_folder(out, r) for r in runs})} distinct runs trained for "
            f"{training_minutes(out, runs):.0f} minutes in all on this machine. "
            f"Seeds: {', '.join(map(str, seeds))}; entries are mean ± standard error over seeds. "
            "Optimiser settings are the paper's (presets `paper` and `paper-params`); sizes and lengths are "
            "this scale's (see `nnrnn/reproduce.py`, `SCALES`). Where only part of the official data is present "
            "(as in `shared/data`: the MNIST test set, the PTB validation and test files), psMNIST trains on 8,000 "
            "images of the MNIST test set and PTB on 90% of `ptb.char.valid.txt` (docs/data.md), so the numbers "
            "are not comparable with the paper's; the comparison between models is the point.", ""]


def _results(out: Path, runs: list[dict], table: dict, baseline, figures: Path) -> list[str]:
    lines = []
    for task, label in REPORTED.items():
        if task not in table:
            continue
        sample = next(r for r in runs if r["task"] == task)
        digits = 4 if task == "copy" else 3
        label = label.format(baseline=baseline or 0)
        lines += [f"## {task}", "", "Task options: " + ", ".join(f"{k}={v}" for k, v in sample["options"].items()
                                                                  if k not in ("task", "model", "seed", "hidden",
                                                                               "progress", "data_dir")), "",
                  f"| model | fixed hidden units: {label} | N | fixed parameter count: {label} | N |",
                  "|---|---|---|---|---|"]
        for model in PAPER_MODELS:
            h = table[task].get("hidden", {}).get(model)
            p = table[task].get("params", {}).get(model)
            if h is None and p is None:
                continue
            cells = [fmt(h, digits) if h else "", str(h[3]) if h else "",
                     fmt(p, digits) if p else "", str(p[3]) if p else ""]
            lines.append(f"| {model} | " + " | ".join(cells) + " |")
        curve = learning_curves(out, runs, task, figures / f"curves-{task}.png")
        lines += ["", f"![{task} learning curves]({curve.relative_to(out)})", ""]
    return lines


def _claims(table: dict, baseline, summaries: dict) -> list[str]:
    lines = ["## The paper's claims at this scale", "",
             "Each claim as the paper states it, its numbers there, this scale's numbers (mean ± standard error "
             "over seeds; a difference counts when two means differ by more than two combined standard errors), "
             "and whether the claim holds here.", "",
             "| claim | the paper | this scale | verdict |", "|---|---|---|---|"]
    lines += [f"| {c} | {p} | {r} | **{v}** |" for c, p, r, v in claims_table(table, baseline)]
    structure = learned_structure_claim(summaries)
    return lines + [""] + ([structure, ""] if structure else [])


def _settled(out: Path, runs: list[dict]) -> list[str]:
    lines = ["### How settled the runs are", "",
             "The share of each validation curve's total change that happened in its last fifth (0: flat; the "
             "mean over seeds), and for PTB how many times the plateau schedule halved the learning rates.", "",
             "| task | column | model | change in the last fifth | learning-rate halvings |", "|---|---|---|---|---|"]
    for task in REPORTED:
        for column in COLUMNS:
            for model in PAPER_MODELS:
                if not any((r["task"], r["column"], r["model"]) == (task, column, model) for r in runs):
                    continue
                c = convergence(out, runs, task, column, model)
                share = "n/a" if math.isnan(c["last_fifth_share"]) else f"{c['last_fifth_share']:.0%}"
                low, high = c["halvings"] or (None, None)
                halvings = "" if low is None or task != "ptb" else f"{low}" if low == high else f"{low}–{high}"
                lines.append(f"| {task} | {column} | {model} | {share} | {halvings} |")
    return lines + [""]


def _learned(out: Path, summaries: dict) -> list[str]:
    if not summaries:
        return []
    lines = ["## What nnRNN learned", "",
             "| task | mean γ | Henrici departure (normalised) | spectral radius | largest singular value |",
             "|---|---|---|---|---|"]
    for task, s in summaries.items():
        lines.append(f"| {task} | {s.get('mean_gamma', float('nan')):.3f} | "
                     f"{s.get('departure_from_normality_normalized', float('nan')):.3f} | "
                     f"{s.get('spectral_radius', float('nan')):.3f} | {s.get('max_singular_value', float('nan')):.3f} |")
    lines.append("")
    for task in summaries:
        for png in sorted((out / "analysis" / task).glob("*.png")):
            lines.append(f"![{task} {png.stem}]({png.relative_to(out)})")
    return lines + [""]


def _theory(figures: Path) -> list[str]:
    from .analysis import plots, table3
    lines = ["## Theory: supplementary Table 3 (J_tot)", "", "| α | β | d | nnrnn | paper |", "|---|---|---|---|---|"]
    for row in table3():
        lines.append(f"| {row['alpha']} | {row['beta']} | {row['d']} | {row['j_tot']:.3g} | {row['paper']} |")
    plots.figure1b(figures / "figure1b.png")
    plots.figure1c(figures / "figure1c.png")
    plots.figure_proposition2(figures / "proposition2.png")
    return lines + ["", "![Figure 1b](figures/figure1b.png)", "", "![Figure 1c](figures/figure1c.png)", "",
                    "![Proposition 2](figures/proposition2.png)", ""]


def reproduce(scale: str, out, models=None, tasks=None, seeds=None, data_dir=None, log=print, jobs: int = 1) -> Path:
    if scale not in SCALES:
        raise OptionError(f"scale must be one of {', '.join(SCALES)}; got {scale!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise OptionError(f"jobs must be a positive integer; got {jobs!r}")
    out = Path(out)
    runs = plan(scale, models, tasks, seeds, data_dir)
    with runlock.hold(out):  # one reproduce per folder; its runs lock their own folders as they train
        execute(out, runs, log, jobs)
        report = write_report(out, scale, runs)
    log(f"report: {report}")
    return report


def add_reproduce_parser(subparsers) -> None:
    p = subparsers.add_parser("reproduce", help="run the paper's grid at a scale and write report.md")
    p.add_argument("--scale", default="cpu", choices=list(SCALES))
    p.add_argument("--out", default=None, help="folder (default runs/reproduce-SCALE)")
    p.add_argument("--tasks", nargs="+", choices=list(SCALES["cpu"]["tasks"]))
    p.add_argument("--models", nargs="+", choices=list(PAPER_MODELS))
    p.add_argument("--seeds", nargs="+", type=int)
    p.add_argument("--data-dir", dest="data_dir")
    p.add_argument("--jobs", type=int, default=1, help="runs trained at once, one thread each (default 1)")
    p.set_defaults(func=run_reproduce)


def run_reproduce(args) -> int:
    reproduce(args.scale, args.out or f"runs/reproduce-{args.scale}", args.models, args.tasks, args.seeds,
              args.data_dir, jobs=args.jobs)
    return 0
