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
* ``beyond``: the non-normal family (nnRNN, nnRNN started as a delay line, complex nnRNN, nnGRU) against
  GRU, LSTM and expRNN at nnRNN's parameter count, 3 seeds, at cpu-long's sizes and sequence lengths with
  shorter training (copy 2000 updates, psMNIST 5 epochs, PTB 30 epochs), in the paper's column and a tuned
  one (the same small Optuna search for every model); about an hour on 2 cores (docs/beyond/report.md).
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
from .errors import FolderInUse, Interrupted, OptionError, TrainingDiverged, UserError
from .models import MODELS, PAPER_MODELS, hidden_size_for, parameter_count
from .network import embedding_width
from .runlog import read_metrics
from .tasks import make_task, task_class
from .train import is_run_folder, train
from .verdicts import GAMMA_HELD, GAMMA_ONE

BOTH = ("hidden", "params")
NON_GATED = tuple(m for m in PAPER_MODELS if m != "lstm")
# Supplementary Table 7: nnRNN with every γ held at 1 or at 0.958 (no δ penalty then), at the reference size.
GAMMA_CLAMPED = {GAMMA_ONE: {"model": "nnrnn", "fixed_gamma": 1.0, "delta": 0.0},
                 GAMMA_HELD: {"model": "nnrnn", "fixed_gamma": 0.958, "delta": 0.0}}
# Why EURNN and RNN-orth miss copy with the paper's settings (docs/design.md, Baselines): EURNN with Jing et al.'s
# copy-task capacity of 4 rotation layers instead of N/2, and RNN-orth with its gradient norm clipped at 1.
COPY_CHECKS = {"eurnn, capacity 4": {"model": "eurnn", "capacity": 4},
               "rnn-orth, clipped at 1": {"model": "rnn-orth", "clip": 1.0}}
TUNED = "tuned"
# nnRNN with T starting as a delay line (the paper's §3); α = 0.02, the largest of 0.5, 0.2, 0.1, 0.05, 0.02
# that trains on psMNIST and PTB from its start (docs/design.md)
DELAY_INIT = {"nnrnn delay": {"model": "nnrnn", "t_init": "delay:0.02", "columns": ("params", TUNED)}}
BEYOND_MODELS = ("nnrnn", "exprnn", "lstm", "gru", "nngru", "nnrnn-complex")
# cpu-long's lengths: copy 4000 updates, psMNIST 20 epochs, PTB the release's 100 epochs with the plateau rule
# halving the rates as in the presets (no early stop: with patience 0 a few bad validations early in a run would
# end it; docs/training.md)
LONG_COPY = {"T": 200, "batch_size": 10, "steps": 4000, "eval_every": 100, "log_every": 50}
LONG_PSMNIST = {"batch_size": 64, "epochs": 20, "eval_every": 125, "log_every": 25, "eval_batch_size": 1000}
LONG_PTB = {"bptt": 150, "batch_size": 32, "epochs": 100, "eval_every": 74, "log_every": 10, "eval_batch_size": 50}
LONG_PTB_300 = {"bptt": 300, "batch_size": 32, "epochs": 100, "eval_every": 37, "log_every": 5,
                "eval_batch_size": 50}
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
            "copy": {"hidden": 128, "columns": BOTH, "variants": COPY_CHECKS, "options": LONG_COPY},
            "psmnist": {"hidden": 64, "columns": BOTH, "options": LONG_PSMNIST},
            "ptb": {"hidden": 128, "columns": BOTH, "variants": GAMMA_CLAMPED, "options": LONG_PTB},
            # supplementary Tables 1 and 7 at T_PTB = 300: the non-gated models only, as there
            "ptb-300": {"task": "ptb", "hidden": 128, "columns": BOTH, "variants": GAMMA_CLAMPED,
                        "models": NON_GATED, "options": LONG_PTB_300},
        },
    },
    # Beyond the paper (docs/beyond/report.md): the non-normal family at cpu-long's sizes and sequence lengths, at
    # nnRNN's parameter count, with the paper's hyperparameters where it gives them and with the same search for
    # every model (5 trials of runs a fifth as long, seed 0).  Shorter training than cpu-long's, so that the whole
    # grid, searches included, ends within one sitting: about an hour on 2 cores (docs/design.md).
    "beyond": {
        "seeds": [0, 1, 2],
        "tune": {"trials": 5, "share": 0.2},
        "tasks": {
            "copy": {"hidden": 128, "columns": ("params", TUNED), "models": BEYOND_MODELS, "variants": DELAY_INIT,
                     "options": {**LONG_COPY, "steps": 2000}},
            "psmnist": {"hidden": 64, "columns": ("params", TUNED), "models": BEYOND_MODELS,
                        "variants": DELAY_INIT, "options": {**LONG_PSMNIST, "epochs": 5}},
            "ptb": {"hidden": 128, "columns": ("params", TUNED), "models": BEYOND_MODELS, "variants": DELAY_INIT,
                    "options": {**LONG_PTB, "epochs": 30}},
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
COLUMNS = {"hidden": "paper", "params": "paper-params", TUNED: "paper-params"}  # each column's preset


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


def plan(scale: str, models=None, tasks=None, seeds=None, data_dir=None, picks: dict | None = None,
         searching: bool = False) -> list[dict]:
    """One entry per run: its setting, task, column, label, model, seed and resolved options.

    A setting runs its ``models`` (default: the paper's six) in each of its columns, and its ``variants``
    (a label → the model and the options that make it, e.g. nnRNN with γ held) in the setting's first column
    (or the columns the variant names).  A column holds the hidden units fixed (``hidden``) or the parameter
    count (``params``, ``tuned``: nnRNN's count at the reference size).  ``hidden`` and ``params`` take the
    paper's hyperparameters (presets ``paper``, ``paper-params``) and leave out models the paper gives none
    for; ``tuned`` takes each label's options from ``picks[setting][label]`` (the grid's own search,
    :func:`tune`) over ``paper-params`` where it covers the model, and leaves out labels without a pick
    (``searching``: plans them without one, the runs a search starts from).  ``models`` and ``tasks`` filter by
    model and task name (a variant goes with its model)."""
    spec = SCALES[scale]
    runs = []
    for setting_name, setting in spec["tasks"].items():
        task = setting.get("task", setting_name)
        if tasks and task not in tasks:
            continue
        cls = task_class(task)
        io = sizes(task, data_dir)
        columns = setting.get("columns", BOTH)
        entries = [(m, {"model": m}, columns) for m in setting.get("models", PAPER_MODELS)]
        entries += [(label, {k: v for k, v in variant.items() if k != "columns"}, variant.get("columns", columns[:1]))
                    for label, variant in setting.get("variants", {}).items()]
        bptt = setting["options"].get("bptt")
        for column in columns:
            preset = COLUMNS[column]
            reference = setting["hidden"] or presets.load("paper")[presets.table_key(task, bptt)]["nnrnn"]["hidden"]
            reference_config = resolve_config({"task": task, "model": "nnrnn", **setting["options"]}, preset)
            budget = network_parameters(reference_config, reference, io)
            for label, variant, label_columns in entries:
                model = variant["model"]
                if column not in label_columns or models and model not in models:
                    continue
                base = preset if presets.covers(preset, task, model, bptt) else None
                extra = {k: v for k, v in variant.items() if k != "model"}
                if column == TUNED:
                    pick = {} if searching else (picks or {}).get(presets.table_key(task, bptt), {}).get(label)
                    if pick is None:
                        continue
                    extra.update(pick)
                elif base is None:  # the paper gives no hyperparameters for this model
                    continue
                # a model the paper gives no hyperparameters for still trains by the task's procedure
                procedure = presets.procedure(preset, task, bptt) if base is None else {}
                if {"steps", "epochs"} & set(setting["options"]):  # the scale's length replaces the table's
                    procedure = {k: v for k, v in procedure.items() if k not in ("steps", "epochs")}
                model_config = resolve_config({"task": task, **procedure, **variant, **setting["options"]}, base)
                hidden = reference if column == "hidden" or model == "nnrnn" else \
                    budget_hidden(model, budget, model_config, io)
                for seed in seeds or spec["seeds"]:
                    options = {"task": task, "model": model, "seed": seed, "hidden": hidden, "progress": False,
                               **procedure, **setting["options"], **extra}
                    if data_dir and cls.has_data_files:
                        options["data_dir"] = data_dir
                    runs.append({"setting": setting_name, "task": task, "column": column, "label": label,
                                 "model": model, "seed": seed, "hidden": hidden, "preset": base,
                                 "options": options, "budget": budget, "name": run_name(options, base),
                                 "extra": {k: v for k, v in variant.items() if k != "model"}})
    return runs


def budget_hidden(model: str, budget: int, config: dict, io) -> int:
    """The hidden size at which ``config``'s network has about ``budget`` parameters."""
    input_size, output_size, vocab = network_sizes(config, io)
    return hidden_size_for(model, budget, input_size, output_size, vocab, **model_options(config))


def run_name(options: dict, preset: str | None) -> str:
    """TASK-MODEL-hN-sSEED-DIGEST, the digest of every option that differs from the defaults: runs with
    identical settings share a folder, in any grid, and adding an option keeps the names valid."""
    config = resolve_config(options, preset)
    for name in ("data_dir", "preset"):  # neither changes what is trained
        config.pop(name, None)
    config = {k: v for k, v in config.items() if k not in DEFAULTS or DEFAULTS[k] != v}
    digest = hashlib.md5(json.dumps(config, sort_keys=True).encode()).hexdigest()[:6]
    return f"{options['task']}-{options['model']}-h{options['hidden']}-s{options['seed']}-{digest}"


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
    except FolderInUse:  # grids sharing a runs folder (--runs): the other grid is training this run
        return f"{folder.name}: being trained by another process; run the command again later to include it"
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
    # longest first: with several jobs the grid then ends with short runs filling both processes
    todo = dict(sorted(todo.items(), key=lambda item: -expected_cost(item[1])))
    run_all(out, todo, _train_one, "runs to train", log, jobs)


def run_all(out: Path, todo: dict, work, what: str, log=print, jobs: int = 1) -> None:
    """``work(folder, item, threads)`` for every (folder, item) of ``todo``, ``jobs`` at a time in processes of
    one thread each; a signal to this process checkpoints the work under way and starts no more."""
    if not todo:
        return
    log(f"{len(todo)} {what}" + (f", {jobs} at a time" if jobs > 1 else ""))
    again = "run the same command again to continue (finished runs are kept, interrupted ones resume)"
    if jobs <= 1:
        for i, (folder, run) in enumerate(todo.items(), 1):
            try:
                log(f"[{i}/{len(todo)}] " + work(folder, run, None))
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
                    running[pool.submit(work, folder, run, 1)] = folder
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


def searches(scale: str, models=None, tasks=None, data_dir=None) -> dict:
    """{folder name: search} for every (setting, label) of a scale's ``tuned`` column: the run it tunes (seed
    0, at its size, over ``paper-params`` where that covers the model), each length cut to the scale's
    ``tune["share"]``, and ``tune["trials"]`` trials."""
    spec = SCALES[scale]
    found = {}
    for run in plan(scale, models, tasks, [0], data_dir, searching=True):
        if run["column"] != TUNED:
            continue
        options = {k: v for k, v in run["options"].items() if k not in ("task", "model", "progress", "seed")}
        for length in ("steps", "epochs"):
            if options.get(length):
                options[length] = max(1, round(options[length] * spec["tune"]["share"]))
        found[search_name(run["setting"], run["label"])] = {"setting": run["setting"], "label": run["label"], "task": run["task"],
                                             "model": run["model"], "preset": run["preset"], "options": options,
                                             "extra": sorted(run["extra"]),
                                             "trials": spec["tune"]["trials"]}
    return found


def search_name(setting: str, label: str) -> str:
    """The folder name of the search that tunes ``label`` on ``setting``."""
    return f"{setting}-{label}".replace(" ", "-").replace("γ", "gamma").replace(",", "")


def _search_one(folder: Path, search: dict, threads: int | None) -> str:
    """Run the trials one search still lacks.  A trial counts when it ended (finished, pruned or diverged); one
    interrupted by a signal does not, so a search stopped part-way goes on to its full budget.  The sampler's
    seed comes from the search's name: an uninterrupted search draws the same trials every time."""
    import zlib

    import optuna

    from .sweep import run_sweep
    if threads:
        import torch
        torch.set_num_threads(threads)
    start = time.time()
    lacking = search["trials"] - ended_trials(folder, search)
    sampler = optuna.samplers.TPESampler(seed=zlib.crc32(folder.name.encode()), constant_liar=True)
    study = run_sweep(search["task"], search["model"], lacking, out=str(folder), sampler=sampler,
                      train_options={**search["options"], "preset": search["preset"]})
    return f"{folder.name}: {time.time() - start:.0f} s, best {best_params(study)}"


def ended_trials(folder: Path, search: dict) -> int:
    """Trials of a search that finished, were pruned or diverged (not those a signal interrupted)."""
    import optuna
    if not (folder / "study.db").exists():
        return 0
    try:
        study = _study(folder, search)
    except KeyError:  # the storage exists, the study was never created in it
        return 0
    ended = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    return sum(t.state in ended for t in study.trials)


def best_params(study) -> dict | None:
    """The searched options of a study's best finished trial; None when none finished."""
    import optuna
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not done:
        return None
    return dict(study.best_trial.params)


def _study(folder: Path, search: dict):
    """The Optuna study of a search in ``folder`` (the default storage and name of ``nnrnn sweep``)."""
    import optuna

    from .sweep import default_storage
    return optuna.load_study(study_name=f"{search['task']}-{search['model']}", storage=default_storage(folder))


def tune(scale: str, out: Path, models=None, tasks=None, data_dir=None, log=print, jobs: int = 1) -> dict:
    """The ``tuned`` column's picks in a preset's layout, {table key: {label: options}} (a variant's entry also
    holds the options that make it): every label gets the same search (the scale's ``tune`` budget) in
    ``OUT/searches/SETTING-LABEL``; the picks are written to ``OUT/tuned.json``, and the tuned column as a whole
    preset (:func:`tuned_preset`) to ``OUT/preset.json``, which can be installed as ``nnrnn/presets/SCALE.json``."""
    todo = {out / "searches" / name: search for name, search in searches(scale, models, tasks, data_dir).items()}
    pending = {}
    for folder, search in todo.items():
        if ended_trials(folder, search) < search["trials"]:
            pending[folder] = search
    run_all(out, pending, _search_one, "hyperparameter searches to run", log, jobs)
    picks: dict = {}
    for folder, search in todo.items():
        best = best_params(_study(folder, search)) if (folder / "study.db").exists() else None
        if best is not None:  # in a preset's layout, with the options that make a variant
            key = presets.table_key(search["task"], search["options"].get("bptt"))
            variant = {k: v for k, v in search["options"].items() if k in search["extra"]}
            picks.setdefault(key, {})[search["label"]] = {**variant, **best}
    (out / "tuned.json").write_text(json.dumps(picks, indent=1, sort_keys=True) + "\n")
    (out / "preset.json").write_text(json.dumps(tuned_preset(scale, picks, data_dir), indent=1) + "\n")
    return picks


def tuned_preset(scale: str, picks: dict, data_dir=None) -> dict:
    """The ``tuned`` column as a preset: {table key: {model: the options its runs train with, but the seed}},
    each model's entry whole (its ``paper-params`` entry or the task's procedure, the scale's size and length, the
    pick), so that ``--preset NAME`` alone trains a tuned model as the grid did; a variant's entry (e.g. nnRNN
    started as a delay line) goes under ``_variants`` (table key → label → options), since a preset is keyed by
    model."""
    preset: dict = {"_description": f"The `{scale}` grid's tuned column (nnrnn reproduce --scale {scale}): each "
                                    "model at nnRNN's parameter count with the options its search picked.",
                    "_source": f"nnrnn reproduce --scale {scale}, OUT/tuned.json; docs/design.md says how it searched"}
    for run in plan(scale, picks=picks, seeds=[0], data_dir=data_dir):
        if run["column"] != TUNED:
            continue
        bptt = run["options"].get("bptt")
        base = presets.lookup(run["preset"], run["task"], run["model"], bptt) if run["preset"] else {}
        entry = {**base, **{k: v for k, v in run["options"].items()
                            if k not in ("task", "model", "seed", "progress", "data_dir")}}
        key = presets.table_key(run["task"], bptt)
        if run["label"] == run["model"]:
            preset.setdefault(key, {})[run["model"]] = entry
        else:
            preset.setdefault("_variants", {}).setdefault(key, {})[run["label"]] = {"model": run["model"], **entry}
    return preset


def share_runs(out: Path, runs_dir) -> None:
    """Make ``OUT/runs`` a link to ``runs_dir``, a folder of run folders that several grids share (a run is
    named by its settings, so a grid finds the finished runs of another grid it has in common)."""
    target = Path(runs_dir).resolve()
    link = out / "runs"
    if link.is_symlink() and link.resolve() == target:
        return
    if link.exists() or link.is_symlink():
        raise UserError(f"{link} already exists and is not a link to {target}; give --runs only with a new --out, "
                        f"or leave --runs out")
    target.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=True)


def reproduce(scale: str, out, models=None, tasks=None, seeds=None, data_dir=None, log=print, jobs: int = 1,
              runs_dir=None) -> Path:
    if scale not in SCALES:
        raise OptionError(f"scale must be one of {', '.join(SCALES)}; got {scale!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise OptionError(f"jobs must be a positive integer; got {jobs!r}")
    out = Path(out)
    runs = plan(scale, models, tasks, seeds, data_dir)  # every option checked before anything is written
    if runs_dir is not None:
        share_runs(out, runs_dir)
    with runlock.hold(out):  # one reproduce per folder; its runs lock their own folders as they train
        if "tune" in SCALES[scale]:
            runs = plan(scale, models, tasks, seeds, data_dir, tune(scale, out, models, tasks, data_dir, log, jobs))
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
    p.add_argument("--models", nargs="+", choices=list(MODELS))
    p.add_argument("--seeds", nargs="+", type=int)
    p.add_argument("--data-dir", dest="data_dir")
    p.add_argument("--jobs", type=int, default=1, help="runs trained at once, one thread each (default 1)")
    p.add_argument("--runs", dest="runs_dir", help="keep the run folders in this folder instead of OUT/runs, to "
                   "share finished runs between grids that have runs in common")
    p.set_defaults(func=run_reproduce)


def run_reproduce(args) -> int:
    reproduce(args.scale, args.out or f"runs/reproduce-{args.scale}", args.models, args.tasks, args.seeds,
              args.data_dir, jobs=args.jobs, runs_dir=args.runs_dir)
    return 0
