"""A grid's planning: its planned runs (:class:`PlannedRun`, one per run with its resolved options), the
:class:`Grid` (its folder and the names of every file in it, its scale's settings, its planned runs), and where each
run's folder is.  The lowest layer of :mod:`nnrnn.experiments` that knows grids: the scales themselves are modules of
:mod:`.grids`, execution (:mod:`.reproduce`) and the reports (:mod:`.report`) read this one."""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from ... import presets
from ...models import hidden_size_for, model_class, parameter_count
from ...tasks import make_task, task_class
from ...training.config import DEFAULTS, model_options, resolve_config
from ...training.network import embedding_width
from ...training import checkpoint, outcome
from ...training.runlog import read_metrics
from ..judging import rules
# the columns and the search's default, declared with the types of a declaration and read from here too
from .declaration import (AT_HIDDEN, BOTH, COLUMN_PRESETS, COLUMNS, PICKED, TPE_STARTUP, TUNED,  # noqa: F401
                          TUNED_HIDDEN, JointSearch, Scale, Search, Setting)
# the files of a grid's folder that its compact data holds whole (:mod:`.compact`), so named here rather than on
# :class:`GridFolder` alone
SPEED = "speed.json"  # the modern report's update times (nnrnn.experiments.grids.modern)
TRIALS = "trials.json"  # every search's trials in order (nnrnn.experiments.reproduce.tune)
PLAN = "plan.json"  # what a grid recorded when it started (its scale and the rules' values)
TUNE_SEED = 100  # the seed a scale's searches train on: none of the seeds its tables report, so no pick is chosen
#                 on a run its row then averages in


@dataclass(frozen=True)
class PlannedRun:
    """One run of a grid as planned: its setting (a task with the scale's options, e.g. ``ptb-300``), task,
    column, label (a model, or a variant's name), model, seed, hidden size, preset (None: the task's procedure),
    resolved options, the column's parameter budget, its folder's name (:func:`run_name`), the options that
    make a variant, and its configuration as :func:`plan` resolved it (None for a run read back from a grid's
    compact data, which stores no configuration)."""
    setting: str
    task: str
    column: str
    label: str
    model: str
    seed: int
    hidden: int
    preset: str | None
    options: dict
    budget: int
    name: str
    extra: dict = field(default_factory=dict)
    config: dict | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict:
        """The planned run as the compact data stores it (:mod:`.compact`): every field of :meth:`stored`."""
        found = asdict(replace(self, config=None))
        del found["config"]  # the data holds what was planned; the configuration follows from it
        return found

    @classmethod
    def stored(cls) -> tuple[str, ...]:
        """The fields the compact data stores of a planned run (:meth:`as_dict`)."""
        return tuple(f.name for f in fields(cls) if f.name != "config")

    def resolved(self) -> dict:
        """Its configuration: as :func:`plan` resolved it once, or, for a run read back from compact data, resolved
        from its options now."""
        return self.config if self.config is not None else resolve_config(self.options, self.preset)

    @property
    def units(self) -> str:
        """Its N as tables and legends give it: the hidden size, "layers × hidden size" for a stack."""
        layers = self.options.get("num_layers") or 1
        return f"{layers} × {self.hidden}" if layers > 1 else str(self.hidden)


@dataclass(frozen=True)
class GridFolder:
    """A grid's folder and the name of every file in it, each named here only."""
    out: Path

    def run_folder(self, planned: PlannedRun) -> Path:
        """Runs with identical settings (e.g. nnRNN in both columns) share one folder."""
        return self.runs / planned.name

    @property
    def runs(self) -> Path:
        return self.out / "runs"

    @property
    def report(self) -> Path:
        return self.out / "report.md"

    @property
    def data(self) -> Path:
        """The compact data the report is computed from (:mod:`.compact`)."""
        return self.out / "data.json"

    @property
    def notes(self) -> Path:
        """What the numbers cannot say themselves, written by hand beside the report."""
        return self.out / "notes.md"

    @property
    def figures(self) -> Path:
        return self.out / "figures"

    @property
    def tuned(self) -> Path:
        """The tuned column's picks (:func:`nnrnn.experiments.reproduce.tune`)."""
        return self.out / "tuned.json"

    @property
    def preset(self) -> Path:
        """The tuned column as a preset (:func:`nnrnn.experiments.reproduce.tuned_preset`)."""
        return self.out / "preset.json"

    @property
    def trials(self) -> Path:
        """Every search's trials in order (:func:`nnrnn.experiments.reproduce.tune`)."""
        return self.out / TRIALS

    @property
    def speed(self) -> Path:
        """The modern report's update times (:mod:`nnrnn.experiments.grids.modern`)."""
        return self.out / SPEED

    @property
    def plan_record(self) -> Path:
        """What a grid recorded when it started (:func:`record_plan`)."""
        return self.out / PLAN

    @property
    def searches(self) -> Path:
        """The tuned column's searches, one folder each (:func:`search_name`)."""
        return self.out / "searches"

    @property
    def joint_search(self) -> Path:
        """A joint search's folder (:mod:`.joint`), among the searches: its study and its trials' runs."""
        return self.searches / JOINT

    @property
    def structure(self) -> Path:
        """The learned structure of every trained model, measured once (:func:`.collect.learned_structure`)."""
        return self.out / "analysis" / "structure.json"

    def analysis(self, task: str) -> Path:
        """The folder of the analysis of ``task``'s first nnRNN seed."""
        return self.out / "analysis" / task

    def probe(self, task: str) -> Path:
        """The summary of that analysis, which holds its gradient probe."""
        return self.analysis(task) / "summary.json"


@dataclass(frozen=True)
class Grid(GridFolder):
    """A grid: its folder, its scale's name and settings (a module of :mod:`.grids`), its planned runs, and for its
    report the date it gives (None: today) and the lines of its first seeds' analysis figures (None: made from the
    checkpoints)."""
    scale: str = ""
    spec: Scale | None = None
    planned: list[PlannedRun] = field(default_factory=list)
    date: str | None = None
    analysis_lines: list[str] | None = None

    @property
    def tune(self) -> Search:
        """The budget its searches had: as recorded when the grid started (:func:`record_plan`), else its scale's
        ``tune`` now (a grid recorded before the record held it)."""
        path = self.plan_record
        recorded = json.loads(path.read_text()).get("tune") if path.is_file() else None
        return Search.from_record(recorded) if recorded else self.spec.tune

    @property
    def joint(self) -> JointSearch | None:
        """Its joint search as recorded when the grid started (:func:`record_plan`), else its scale's ``joint``
        now; None for a grid without one."""
        path = self.plan_record
        recorded = json.loads(path.read_text()).get("joint") if path.is_file() else None
        if self.spec.joint is None:
            return None
        return self.spec.joint.recorded(recorded) if recorded else self.spec.joint

    def searched_labels(self, setting: str) -> list[str]:
        """Every label ``setting`` searched for, models then variants, as recorded when the grid started
        (:func:`record_plan`), else as its scale's module has them now."""
        path = self.plan_record
        recorded = json.loads(path.read_text()).get("labels") if path.is_file() else None
        if recorded and setting in recorded:
            return recorded[setting]
        return self.spec.settings[setting].labels

    @property
    def settings(self) -> list[str]:
        """The settings of the planned runs, in plan order."""
        return list(dict.fromkeys(r.setting for r in self.planned))


def column_preset(setting: Setting, column: str) -> str:
    """The preset a setting's column starts from: the setting's own (a protocol's, e.g. ``long-memory``) or the
    column's."""
    return setting.preset or COLUMN_PRESETS[column]


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
    return parameter_count(config["model"], input_size, hidden, output_size, vocab, **_shape(config))


def _label_options(column: str, preset: str, task: str, bptt, variant: dict, setting_options: dict, pick):
    """(the preset, the options beyond the model, the training procedure) of one label in one column, or None
    when the column leaves the label out: ``tuned`` without a ``pick``, the paper's columns for a model the
    paper gives no hyperparameters for."""
    model = variant["model"]
    base = preset if presets.covers(preset, task, model, bptt) else None
    extra = {k: v for k, v in variant.items() if k != "model"}
    if column in PICKED:
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


def plan(spec: Scale, models=None, tasks=None, seeds=None, data_dir=None, picks: dict | None = None,
         searching: bool = False, resolved: dict | None = None) -> list[PlannedRun]:
    """One entry per run of the scale ``spec`` (a module of :mod:`.grids`): its setting, task, column, label,
    model, seed and resolved options.

    A setting runs its ``models`` (default: the paper's six) in each of its columns, and its ``variants``
    (a label → the model and the options that make it, e.g. nnRNN with γ held) in the setting's first column
    (or the columns the variant names).  A column holds the hidden units fixed (``hidden``) or the parameter
    count (``params``, ``tuned``: nnRNN's count at the reference size; nnRNN itself keeps the reference size there,
    a variant of it too unless it says ``equal_params``).  ``hidden`` and ``params`` take the
    paper's hyperparameters (presets ``paper``, ``paper-params``) and leave out models the paper gives none
    for; ``tuned`` takes each label's options from ``picks[setting][label]`` (the grid's own search,
    :func:`tune`) over ``paper-params`` where it covers the model, and leaves out labels without a pick
    (``searching``: plans them without one, the runs a search starts from).  A setting may name its own
    ``preset`` (a protocol's), which then replaces the column's; with ``paper_depth`` each model stacks the layers
    its paper does (its class's ``DEPTH``), each layer as wide as the parameter count allows; with
    ``paper_optimizer`` each model whose paper names an optimizer trains with it (:func:`paper_optimizer`).
    ``models`` and ``tasks`` filter by model and task name (a variant goes with its model).  Every configuration
    is resolved once per ``resolved`` (:func:`resolve_once`; the plans of one invocation share one), each run's
    carried in its :class:`PlannedRun`."""
    found = []
    resolved = {} if resolved is None else resolved
    for setting_name, setting in spec.settings.items():
        task = setting.task
        if tasks and task not in tasks:
            continue
        cls = task_class(task)
        io = sizes(task, data_dir)
        columns = setting.columns
        entries = _entries(setting)
        bptt = setting.options.get("bptt")
        for column in columns:
            preset = column_preset(setting, column)
            reference = setting.hidden or presets.load("paper")[presets.table_key(task, bptt)]["nnrnn"]["hidden"]
            reference_config = resolve_once({"task": task, "model": "nnrnn", **setting.options}, preset, resolved)
            budget = network_parameters(reference_config, reference, io)
            for label, variant, label_columns, at_budget in entries:
                model = variant["model"]
                if column not in label_columns or models and model not in models:
                    continue
                pick = None if column not in PICKED else {} if searching else \
                    (picks or {}).get(presets.table_key(task, bptt), {}).get(label)
                planned = _label_options(column, preset, task, bptt, variant, setting.options, pick)
                if planned is None:
                    continue
                base, extra, procedure = planned
                procedure = {**procedure, **paper_optimizer(model, setting)}
                model_config = resolve_once({"task": task, **procedure, **variant, **setting.options}, base, resolved)
                hidden = reference if column in AT_HIDDEN or model == "nnrnn" and not at_budget else \
                    budget_hidden(model, budget, model_config, io)
                for seed in seeds or spec.seeds:
                    options = {"task": task, "model": model, "seed": seed, "hidden": hidden, "progress": False,
                               **procedure, **setting.options, **extra}
                    if data_dir and cls.has_data_files:
                        options["data_dir"] = data_dir
                    config = resolve_once(options, base, resolved)
                    found.append(PlannedRun(setting_name, task, column, label, model, seed, hidden, base, options,
                                            budget, run_name(config),
                                            {k: v for k, v in variant.items() if k != "model"}, config))
    return found


def _entries(setting: Setting) -> list[tuple[str, dict, tuple[str, ...], bool]]:
    """(label, the model and the options that make it, its columns, whether it is sized by the column's parameter
    count even as an nnRNN) of every label a setting plans: its models in every column (each at its paper's depth
    where the setting asks), its variants in theirs (the first one's unless a variant names its own)."""
    columns = setting.columns
    entries = [(m, {"model": m, **_depth(m, setting)}, columns, False) for m in setting.models]
    return entries + [(label, variant.as_entry(), variant.columns or columns[:1], variant.equal_params)
                      for label, variant in setting.variants.items()]


def _depth(model: str, setting: Setting) -> dict:
    """``num_layers`` at the model's paper's depth (its ``DEPTH``) where ``setting`` asks for ``paper_depth`` and
    that paper stacks layers; else nothing (one layer, the default, which keeps the run names of one layer)."""
    depth = model_class(model).DEPTH
    return {"num_layers": depth} if setting.paper_depth and depth > 1 else {}


def paper_optimizer(model: str, setting: Setting) -> dict:
    """``optimizer`` as the model's paper names it (its class's ``PAPER_OPTIMIZER``) where ``setting`` asks for
    ``paper_optimizer``; else nothing.  It goes with the task's procedure, over it and over the preset's, and under
    the setting's own options and a label's (what a grid gives explicitly wins): issue 67, where a procedure's
    RMSprop won over the Adam a search derived from the paper."""
    chosen = model_class(model).PAPER_OPTIMIZER
    return {"optimizer": chosen} if setting.paper_optimizer and chosen else {}


def _shape(config: dict) -> dict:
    """The options that size ``config``'s network: its model's constructor options and the depth."""
    return {**model_options(config), "num_layers": config.get("num_layers") or 1}


def budget_hidden(model: str, budget: int, config: dict, io) -> int:
    """The hidden size at which ``config``'s network (each of its layers that wide) has about ``budget``
    parameters."""
    input_size, output_size, vocab = network_sizes(config, io)
    return hidden_size_for(model, budget, input_size, output_size, vocab, **_shape(config))


def resolve_once(options: dict, preset: str | None, resolved: dict) -> dict:
    """``resolve_config(options, preset)``, resolved once per ``resolved`` ({options and preset: configuration},
    one per invocation): a grid's plans share their runs (a tuned grid plans before and after its searches), and
    planning, its cost and its workers read what was resolved.  The configuration returned is shared: read it, or
    copy it to change it."""
    key = json.dumps([options, preset], sort_keys=True, default=str)
    if key not in resolved:
        resolved[key] = resolve_config(options, preset)
    return resolved[key]


def run_name(config: dict) -> str:
    """TASK-MODEL-hN-sSEED-DIGEST of a resolved configuration, the digest of every option that differs from the
    defaults: runs with identical settings share a folder, in any grid, and adding an option keeps the names
    valid."""
    kept = {k: v for k, v in config.items() if k not in ("data_dir", "preset")}  # neither changes what is trained
    kept = {k: v for k, v in kept.items() if k not in DEFAULTS or DEFAULTS[k] != v}
    digest = hashlib.md5(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:6]
    return f"{config['task']}-{config['model']}-h{config['hidden']}-s{config['seed']}-{digest}"


_read_once: list[dict] = []  # inside reading_once(): {run folder: its metrics records}


@contextlib.contextmanager
def reading_once():
    """Within the block, each run folder's metrics are read once and kept: a report asks for them thousands of
    times (cpu-long's, 12,956 reads of 300 files), and the runs it reports on do not change while it is written."""
    _read_once.append({})
    try:
        yield
    finally:
        _read_once.pop()


def metrics(folder: Path) -> list[dict]:
    """The run folder's metrics records (:func:`nnrnn.training.runlog.read_metrics`), read once inside
    :func:`reading_once`, afresh outside it."""
    if not _read_once:
        return read_metrics(folder)
    kept = _read_once[-1]
    if folder not in kept:
        kept[folder] = read_metrics(folder)
    return kept[folder]


def finished(folder: Path) -> bool:
    """The run folder's run has finished (:func:`nnrnn.training.outcome.finished`, the definition ``nnrnn runs``
    uses too)."""
    return outcome.finished(outcome.read(folder), metrics(folder))


def diverged(folder: Path) -> bool:
    """The run's outcome is "diverged" (:mod:`nnrnn.training.outcome`; a DIVERGED marker of an older grid too)."""
    ended = outcome.read(folder)
    return ended is not None and ended.name == outcome.DIVERGED


def searches(spec: Scale, models=None, tasks=None, data_dir=None, resolved: dict | None = None) -> dict:
    """{folder name: search} for every (setting, label) of the ``tuned`` column of the scale ``spec``: the run it
    tunes (seed ``tune.seed``, at its size, over ``paper-params`` where that covers the model), each length cut
    to the scale's ``tune.share``, and ``tune.trials`` trials, of which the first ``tune.startup`` are drawn at
    random."""
    found = {}
    tune = spec.tune
    for planned in plan(spec, models, tasks, [tune.seed], data_dir, searching=True, resolved=resolved):
        if planned.column != TUNED or planned.setting not in (tune.settings or (planned.setting,)):
            continue  # a scale may tune at some of its settings only (the memory grid: at one rung)
        options = {k: v for k, v in planned.options.items() if k not in ("task", "model", "progress")}
        for length in ("steps", "epochs"):
            if options.get(length):
                options[length] = max(1, round(options[length] * tune.share))
        found[search_name(planned.setting, planned.label)] = {
            "setting": planned.setting, "label": planned.label, "task": planned.task,
            "model": planned.model, "preset": planned.preset, "options": options,
            "extra": sorted(planned.extra), "trials": tune.trials, "startup": tune.startup}
    return found


JOINT = "joint"  # the folder of a scale's joint search, among its searches


def joint_arms(spec: Scale, data_dir=None, resolved: dict | None = None) -> dict[str, PlannedRun]:
    """{label: its run} of every label a joint search's trial trains (``spec.joint``): its setting's ``tuned``
    column as that search starts it (over ``paper-params`` where it covers the model), on seed ``joint.seed``, each
    length cut to ``joint.share``; a trial puts its drawn options over these (:mod:`.joint`)."""
    joint, resolved = spec.joint, {} if resolved is None else resolved
    found = {}
    for planned in plan(spec, seeds=[joint.seed], data_dir=data_dir, searching=True, resolved=resolved):
        if planned.column != TUNED or planned.setting != joint.setting:
            continue
        options = dict(planned.options)
        for length in ("steps", "epochs"):
            if options.get(length):
                options[length] = max(1, round(options[length] * joint.share))
        config = resolve_once(options, planned.preset, resolved)
        found[planned.label] = replace(planned, options=options, name=run_name(config), config=config)
    return found


def search_name(setting: str, label: str) -> str:
    """The folder name of the search that tunes ``label`` on ``setting``."""
    return f"{setting}-{label}".replace(" ", "-").replace("γ", "gamma").replace(",", "")




def record_plan(out: Path, scale: str, spec: Scale | None = None) -> dict:
    """Record, once, when a grid starts: its scale, the verdict rules' values and fingerprint (:mod:`.rules`) and
    its searches' budget (``spec.tune`` or ``spec.joint``, ``spec`` the scale's declaration).  A grid that resumes
    keeps the record of its start, so that a report can tell rules changed while it ran and says how its own searches
    searched."""
    path = GridFolder(Path(out)).plan_record
    if path.is_file():
        return json.loads(path.read_text())
    record = {"scale": scale, "rules": rules.values(), "fingerprint": rules.fingerprint()}
    if spec is not None and spec.tune is not None:  # how its searches search, which the report states (the
        # scale's module may change later), in the record's form of before the declarations were types
        record["tune"] = spec.tune.as_record()
        # and what each setting searched for: a label whose every trial failed has no runs to tell it
        record["labels"] = {name: setting.labels for name, setting in spec.settings.items()}
    if spec is not None and spec.joint is not None:  # a joint search's budget, space and first trial likewise
        record["joint"] = spec.joint.as_record()
        record["labels"] = {name: setting.labels for name, setting in spec.settings.items()}
    write_whole(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def recorded_rules(out: Path) -> dict | None:
    """The rules' values a grid recorded when it started; None for a grid that recorded none."""
    path = GridFolder(Path(out)).plan_record
    return json.loads(path.read_text()).get("rules") if path.is_file() else None


AGAIN = "run the same command again (finished runs are kept, interrupted ones resume)"  # how a grid goes on


def write_whole(path: Path, text: str) -> None:
    """``text`` into ``path`` whole or not at all (a temporary file renamed over it): a full disk leaves the
    previous file, and says so in one line ending with how the grid goes on (:data:`AGAIN`)."""
    checkpoint.atomic_write(path, lambda f: f.write(text.encode()), again=AGAIN)
