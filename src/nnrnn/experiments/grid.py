"""The experiment grids as data, and their planning: the scales, each setting's models, columns and variants,
one entry per run with its resolved options, and where each run's folder is.  The lowest layer of
:mod:`nnrnn.experiments`: execution (:mod:`.reproduce`) and the reports (:mod:`.report`) read it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .. import presets
from ..models import PAPER_MODELS, hidden_size_for, parameter_count
from ..tasks import make_task, task_class
from ..training.config import DEFAULTS, model_options, resolve_config
from ..training.network import embedding_width
from ..training import outcome
from ..training.runlog import read_metrics
from . import rules
from .paper import GAMMA_HELD, GAMMA_ONE, NON_GATED

BOTH = ("hidden", "params")
# Supplementary Table 7: nnRNN with every γ held at 1 or at 0.958 (no δ penalty then), at the reference size.
GAMMA_CLAMPED = {GAMMA_ONE: {"model": "nnrnn", "fixed_gamma": 1.0, "delta": 0.0},
                 GAMMA_HELD: {"model": "nnrnn", "fixed_gamma": 0.958, "delta": 0.0}}
# Why EURNN and RNN-orth miss copy with the paper's settings (docs/design.md, Baselines): EURNN with Jing et al.'s
# copy-task capacity of 4 rotation layers instead of N/2, and RNN-orth with its gradient norm clipped at 1.
COPY_CHECKS = {"eurnn, capacity 4": {"model": "eurnn", "capacity": 4},
               "rnn-orth, clipped at 1": {"model": "rnn-orth", "clip": 1.0}}
TUNED = "tuned"
TPE_STARTUP = 10  # Optuna's TPE draws this many trials at random before it models the results (its default)
TUNE_SEED = 100  # the seed a scale's searches train on: none of the seeds its tables report, so no pick is chosen
#                 on a run its row then averages in
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
# The modern grid (issue 50): the paper's models, the non-normal family and today's long-memory RNNs, each tuned alike
MODERN_MODELS = PAPER_MODELS + ("gru", "nngru", "nnrnn-complex", "cornn", "lem", "lru", "mingru")
# Orhan & Pitkow's chain, at the gain their released code's example trains copy with (eminorhan/nonnormal-init)
CHAIN_INIT = {"rnn chain": {"model": "rnn", "init": "chain:1.02"}}
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
    # every model (5 trials of runs a fifth as long, on seed TUNE_SEED, which no table reports).  Shorter training
    # than cpu-long's, so that the whole grid, searches included, ends within one sitting: about an hour on 2 cores
    # (docs/design.md).
    "beyond": {
        "seeds": [0, 1, 2],
        "report": "beyond",
        "tune": {"trials": 5, "share": 0.2, "seed": TUNE_SEED},
        "tasks": {
            "copy": {"hidden": 128, "columns": ("params", TUNED), "models": BEYOND_MODELS, "variants": DELAY_INIT,
                     "options": {**LONG_COPY, "steps": 2000}},
            "psmnist": {"hidden": 64, "columns": ("params", TUNED), "models": BEYOND_MODELS,
                        "variants": DELAY_INIT, "options": {**LONG_PSMNIST, "epochs": 5}},
            "ptb": {"hidden": 128, "columns": ("params", TUNED), "models": BEYOND_MODELS, "variants": DELAY_INIT,
                    "options": {**LONG_PTB, "epochs": 30}},
        },
    },
    # Today's long-memory RNNs beside the nnRNN (docs/modern/report.md): every model at nnRNN's parameter count, each
    # with the same search (10 trials of runs a fifth as long, on seed TUNE_SEED; Optuna's TPE sampler draws its
    # first 5 at random), on the standard long-memory protocols (--preset long-memory: copy at T = 1000, adding at
    # T = 2000, psMNIST) and PTB at cpu-long's T_PTB. CPU scale: copy in batches of 32 rather than the protocol's
    # 128, adding at nnRNN's N = 32 (minGRU's equal parameter count is then 169 units, at 64 it would be 631), and
    # every task far shorter than its papers train; 2 h 34 min on 2 cores, over sittings (docs/design.md).
    "modern": {
        "seeds": [0, 1, 2],
        "report": "modern",
        "tune": {"trials": 10, "share": 0.2, "seed": TUNE_SEED, "startup": 5},
        "tasks": {
            "copy": {"hidden": 64, "preset": "long-memory", "columns": (TUNED,), "models": MODERN_MODELS,
                     "variants": CHAIN_INIT,
                     "options": {"T": 1000, "batch_size": 32, "steps": 1000, "eval_every": 50, "log_every": 25}},
            "adding": {"hidden": 32, "preset": "long-memory", "columns": (TUNED,), "models": MODERN_MODELS,
                       "variants": CHAIN_INIT,
                       "options": {"T": 2000, "batch_size": 50, "steps": 400, "eval_every": 25, "log_every": 25}},
            "psmnist": {"hidden": 64, "preset": "long-memory", "columns": (TUNED,), "models": MODERN_MODELS,
                        "variants": CHAIN_INIT, "options": {**LONG_PSMNIST, "epochs": 5, "eval_every": 50}},
            "ptb": {"hidden": 128, "columns": (TUNED,), "models": MODERN_MODELS, "variants": CHAIN_INIT,
                    "options": {**LONG_PTB, "epochs": 20}},
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
COLUMN_PRESETS = {"hidden": "paper", "params": "paper-params", TUNED: "paper-params"}  # each column's preset
COLUMNS = tuple(COLUMN_PRESETS)
REPORTS = ("paper", "beyond", "modern")  # what a scale's report judges: the paper's claims, or a comparison


def report_kind(scale: str) -> str:
    """Which report a scale writes (its ``report``; the paper's claims by default)."""
    return SCALES[scale].get("report", "paper")


def column_preset(setting: dict, column: str) -> str:
    """The preset a setting's column starts from: the setting's own (a protocol's, e.g. ``long-memory``) or the
    column's."""
    return setting.get("preset") or COLUMN_PRESETS[column]


def metric(task: str) -> str:
    """The metric a task is judged by: its validation monitor (copy: loss, psMNIST: accuracy, PTB: bpc)."""
    return task_class(task).monitor[0]


def sizes(task: str, data_dir=None) -> tuple[int, int, int | None]:
    """(input size, output size, vocabulary size or None) of a task's network inputs and outputs."""
    cls = task_class(task)
    if cls.token_inputs:  # the vocabulary comes from the data files
        made = make_task(task, data_dir=data_dir, batch_size=1)
        return made.input_size, made.output_size, made.vocab_size
    return cls.input_size, cls.output_size, None


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


def _label_options(column: str, preset: str, task: str, bptt, variant: dict, setting_options: dict, pick):
    """(the preset, the options beyond the model, the training procedure) of one label in one column, or None
    when the column leaves the label out: ``tuned`` without a ``pick``, the paper's columns for a model the
    paper gives no hyperparameters for."""
    model = variant["model"]
    base = preset if presets.covers(preset, task, model, bptt) else None
    extra = {k: v for k, v in variant.items() if k != "model"}
    if column == TUNED:
        if pick is None:
            return None
        extra.update(pick)
    elif base is None:
        return None
    # a model the paper gives no hyperparameters for still trains by the task's procedure
    procedure = presets.procedure(preset, task, bptt) if base is None else {}
    if {"steps", "epochs"} & set(setting_options):  # the scale's length replaces the table's
        procedure = {k: v for k, v in procedure.items() if k not in ("steps", "epochs")}
    return base, extra, procedure


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
    (``searching``: plans them without one, the runs a search starts from).  A setting may name its own
    ``preset`` (a protocol's), which then replaces the column's.  ``models`` and ``tasks`` filter by model and task
    name (a variant goes with its model)."""
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
            preset = column_preset(setting, column)
            reference = setting["hidden"] or presets.load("paper")[presets.table_key(task, bptt)]["nnrnn"]["hidden"]
            reference_config = resolve_config({"task": task, "model": "nnrnn", **setting["options"]}, preset)
            budget = network_parameters(reference_config, reference, io)
            for label, variant, label_columns in entries:
                model = variant["model"]
                if column not in label_columns or models and model not in models:
                    continue
                pick = None if column != TUNED else {} if searching else \
                    (picks or {}).get(presets.table_key(task, bptt), {}).get(label)
                planned = _label_options(column, preset, task, bptt, variant, setting["options"], pick)
                if planned is None:
                    continue
                base, extra, procedure = planned
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


def run_folder(out: Path, planned: dict) -> Path:
    """Runs with identical settings (e.g. nnRNN in both columns) share one folder."""
    return out / "runs" / planned["name"]


def finished(folder: Path) -> bool:
    """The run folder's run has finished (:func:`nnrnn.training.outcome.finished`, the definition ``nnrnn runs``
    uses too)."""
    return outcome.finished(outcome.read(folder), read_metrics(folder))


def diverged(folder: Path) -> bool:
    """The run's outcome is "diverged" (:mod:`nnrnn.training.outcome`; a DIVERGED marker of an older grid too)."""
    ended = outcome.read(folder)
    return ended is not None and ended.name == outcome.DIVERGED


def searches(scale: str, models=None, tasks=None, data_dir=None) -> dict:
    """{folder name: search} for every (setting, label) of a scale's ``tuned`` column: the run it tunes (seed
    ``tune["seed"]``, at its size, over ``paper-params`` where that covers the model), each length cut to the
    scale's ``tune["share"]``, and ``tune["trials"]`` trials, of which the first ``tune["startup"]`` (default
    :data:`TPE_STARTUP`) are drawn at random."""
    spec = SCALES[scale]
    found = {}
    for planned in plan(scale, models, tasks, [spec["tune"].get("seed", 0)], data_dir, searching=True):
        if planned["column"] != TUNED:
            continue
        options = {k: v for k, v in planned["options"].items() if k not in ("task", "model", "progress")}
        for length in ("steps", "epochs"):
            if options.get(length):
                options[length] = max(1, round(options[length] * spec["tune"]["share"]))
        found[search_name(planned["setting"], planned["label"])] = {
            "setting": planned["setting"], "label": planned["label"], "task": planned["task"],
            "model": planned["model"], "preset": planned["preset"], "options": options,
            "extra": sorted(planned["extra"]), "trials": spec["tune"]["trials"],
            "startup": spec["tune"].get("startup", TPE_STARTUP)}
    return found


def search_name(setting: str, label: str) -> str:
    """The folder name of the search that tunes ``label`` on ``setting``."""
    return f"{setting}-{label}".replace(" ", "-").replace("γ", "gamma").replace(",", "")


SPEED = "speed.json"  # OUT/speed.json: the modern report's update times (nnrnn.experiments.modern)
TRIALS = "trials.json"  # OUT/trials.json: every search's trials in order (nnrnn.experiments.reproduce.tune)
PLAN = "plan.json"  # OUT/plan.json: what a grid recorded when it started (its scale and the rules' values)


def record_plan(out: Path, scale: str) -> dict:
    """Record, once, when a grid starts: its scale and the verdict rules' values and fingerprint
    (:mod:`.rules`).  A grid that resumes keeps the record of its start, so that a report can tell rules changed
    while it ran."""
    path = Path(out) / PLAN
    if path.is_file():
        return json.loads(path.read_text())
    record = {"scale": scale, "rules": rules.values(), "fingerprint": rules.fingerprint()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def recorded_rules(out: Path) -> dict | None:
    """The rules' values a grid recorded when it started; None for a grid that recorded none."""
    path = Path(out) / PLAN
    return json.loads(path.read_text()).get("rules") if path.is_file() else None
