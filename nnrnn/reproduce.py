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
import multiprocessing
import os
import signal
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path


from . import presets, runlock
from .config import DEFAULTS, model_options, resolve_config
from .errors import Interrupted, OptionError, TrainingDiverged, UserError
from .models import PAPER_MODELS, hidden_size_for, parameter_count
from .network import embedding_width
from .runlog import read_metrics
from .tasks import make_task, task_class
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


def reproduce(scale: str, out, models=None, tasks=None, seeds=None, data_dir=None, log=print, jobs: int = 1) -> Path:
    if scale not in SCALES:
        raise OptionError(f"scale must be one of {', '.join(SCALES)}; got {scale!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise OptionError(f"jobs must be a positive integer; got {jobs!r}")
    out = Path(out)
    runs = plan(scale, models, tasks, seeds, data_dir)
    with runlock.hold(out):  # one reproduce per folder; its runs lock their own folders as they train
        execute(out, runs, log, jobs)
        from .report import write_report  # the report reads this module's plan and run folders
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
