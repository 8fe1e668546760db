"""A grid's declaration, by types: a :class:`Scale` (its seeds, settings, report and search), each :class:`Setting` (a
task with the scale's sizes, lengths and columns), each :class:`Variant` (a model with the options that make it) and
the :class:`Search` of a tuned column.  Each is a frozen dataclass; a :class:`Scale` checks itself and everything it
holds as it is declared, that is when the grid's module is imported (the parts are checked there, where the grid's
and the setting's names are known): a model, task, column, preset or training option that does not exist is a
LookupError, a bad number a ValueError, a value of the wrong kind a TypeError, each naming the grid, the setting and
the field; an unknown field is the dataclass's own TypeError, which names the field (the traceback, the grid's line).
What the declaration means (which runs a setting plans) is :func:`.grid.plan`'s."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields

from ... import presets
from ...models import MODELS, PAPER_MODELS
from ...models.published import Published
from ...tasks import TASKS
from ...training.options import DEFAULTS

TUNED = "tuned"
COLUMN_PRESETS = {"hidden": "paper", "params": "paper-params", TUNED: "paper-params"}  # each column's preset
COLUMNS = tuple(COLUMN_PRESETS)
BOTH = ("hidden", "params")
TPE_STARTUP = 10  # Optuna's TPE draws this many trials at random before it models the results (its default)
# the options a setting's own fields (and its runs' seeds) set: given in its options too, they would disagree
SET_BY_THE_GRID = ("task", "model", "seed", "hidden")


def _names(given, known, where: str, what: str) -> None:
    """A LookupError naming ``where`` when some of ``given`` are not in ``known``."""
    unknown = [g for g in given if g not in known]
    if unknown:
        raise LookupError(f"{where}: unknown {what} {', '.join(map(repr, unknown))}; known: {', '.join(known)}")


def _tuple_of(value, kind, where: str, name: str, empty: bool = False) -> None:
    """A TypeError naming ``where`` and the field unless ``value`` is a tuple of ``kind``; a ValueError when it is
    empty (unless ``empty``) or repeats an entry."""
    if not isinstance(value, tuple) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value):
        raise TypeError(f"{where}: {name} must be a tuple of {kind.__name__}; got {value!r}")
    if not value and not empty:
        raise ValueError(f"{where}: {name} must not be empty")
    if len(set(value)) != len(value):
        raise ValueError(f"{where}: {name} repeats an entry: {value!r}")


def _options(options, where: str, name: str = "options") -> None:
    """A TypeError unless ``options`` is a mapping; a LookupError for a key that is no training option; a ValueError
    for one a setting's own fields set."""
    if not isinstance(options, Mapping):
        raise TypeError(f"{where}: {name} must be a mapping of training options; got {options!r}")
    _names(options, DEFAULTS, where, f"training option(s) in {name}")
    taken = [k for k in options if k in SET_BY_THE_GRID]
    if taken:
        raise ValueError(f"{where}: {name} must not set {', '.join(taken)} (the grid sets them)")


@dataclass(frozen=True, kw_only=True)
class Variant:
    """A label of a setting that is not a model alone: a model with the options that make it (nnRNN with γ held,
    EURNN with 4 rotation layers), its display name and line style declared beside it
    (:func:`nnrnn.experiments.judging.labels.variant`)."""
    model: str
    """The model it trains (a name of :data:`nnrnn.models.MODELS`)."""
    options: Mapping = field(default_factory=dict)
    """The training options that make it, over the setting's (e.g. ``{"fixed_gamma": 1.0, "delta": 0.0}``)."""
    columns: tuple[str, ...] | None = None
    """The columns it runs in; None: the setting's first column."""
    equal_params: bool = False
    """Whether it runs at the column's parameter count even where its model is nnRNN, whose own N is the reference
    (the nnRNN without T at the parameter count of the nnRNN with T, :mod:`nnrnn.experiments.grids.thesis`)."""
    published: tuple[Published, ...] = ()
    """Its published figures, as a model class's ``PUBLISHED`` (:mod:`nnrnn.models.published`)."""

    def check(self, where: str, setting_columns: tuple[str, ...]) -> None:
        """Raise, naming ``where``, unless every field holds what it says."""
        if not isinstance(self.model, str):
            raise TypeError(f"{where}: model must be a model's name; got {self.model!r}")
        _names([self.model], MODELS, where, "model")
        _options(self.options, where)
        if self.columns is not None:
            _tuple_of(self.columns, str, where, "columns")
            _names(self.columns, setting_columns, where, "column(s) (not among its setting's columns)")
        if not isinstance(self.equal_params, bool):
            raise TypeError(f"{where}: equal_params must be True or False; got {self.equal_params!r}")
        if not isinstance(self.published, tuple) or not all(isinstance(p, Published) for p in self.published):
            raise TypeError(f"{where}: published must be a tuple of Published; got {self.published!r}")

    def as_entry(self) -> dict:
        """The variant as :func:`.grid.plan` merges it into a run's options: its model and options."""
        return {"model": self.model, **self.options}


@dataclass(frozen=True, kw_only=True)
class Setting:
    """One setting of a scale: a task at the scale's size and lengths, in its columns, with its models and
    variants."""
    task: str
    """The task it trains (a name of :data:`nnrnn.tasks.TASKS`); several settings may share one (PTB at two
    T_PTB)."""
    hidden: int | None
    """nnRNN's hidden units, the column ``hidden``'s size and the reference of the parameter count of the others;
    None: the paper's (its ``paper`` preset's nnRNN)."""
    options: Mapping
    """The training options every run of the setting takes (sizes, lengths, validation intervals), over its
    preset's."""
    columns: tuple[str, ...] = BOTH
    """The columns it runs: ``hidden`` (the hidden units fixed), ``params`` (the parameter count of nnRNN at
    ``hidden``), ``tuned`` (that count, with each label's options searched: the scale's :class:`Search`)."""
    models: tuple[str, ...] = PAPER_MODELS
    """The models it runs in each column (names of :data:`nnrnn.models.MODELS`)."""
    variants: Mapping[str, Variant] = field(default_factory=dict)
    """{label: :class:`Variant`} it runs beside its models."""
    preset: str | None = None
    """A preset that replaces every column's (a protocol's, e.g. ``long-memory``); None: each column's own
    (:data:`COLUMN_PRESETS`)."""
    paper_depth: bool = False
    """Whether each model stacks the layers its paper does (its class's ``DEPTH``), each as wide as the parameter
    count allows; else one layer."""
    paper_optimizer: bool = False
    """Whether each model whose paper names an optimizer (its class's ``PAPER_OPTIMIZER``) trains with it, over the
    task's procedure and the preset (:func:`.grid.paper_optimizer`); the setting's and a variant's own options still
    win."""

    def check(self, where: str) -> None:
        """Raise, naming ``where`` and the field, unless every field holds what it says."""
        if not isinstance(self.task, str):
            raise TypeError(f"{where}: task must be a task's name; got {self.task!r}")
        _names([self.task], TASKS, where, "task")
        if self.hidden is not None and (not isinstance(self.hidden, int) or isinstance(self.hidden, bool)):
            raise TypeError(f"{where}: hidden must be a whole number of units or None; got {self.hidden!r}")
        if self.hidden is not None and self.hidden <= 0:
            raise ValueError(f"{where}: hidden must be positive; got {self.hidden}")
        _options(self.options, where)
        _tuple_of(self.columns, str, where, "columns")
        _names(self.columns, COLUMNS, where, "column(s)")
        _tuple_of(self.models, str, where, "models", empty=bool(self.variants))
        _names(self.models, MODELS, where, "model(s)")
        if not isinstance(self.variants, Mapping):
            raise TypeError(f"{where}: variants must be a mapping of labels to Variants; got {self.variants!r}")
        for label, variant in self.variants.items():
            if not isinstance(variant, Variant):
                raise TypeError(f"{where}: variant {label!r} must be a Variant; got {variant!r}")
            if label in self.models:
                raise ValueError(f"{where}: variant {label!r} has the name of one of its models")
            variant.check(f"{where}, variant {label!r}", self.columns)
        if self.preset is not None:
            _names([self.preset], presets.preset_names(), where, "preset")
        for flag in ("paper_depth", "paper_optimizer"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{where}: {flag} must be True or False; got {getattr(self, flag)!r}")

    @property
    def labels(self) -> list[str]:
        """The labels it plans: its models, then its variants."""
        return [*self.models, *self.variants]


@dataclass(frozen=True, kw_only=True)
class Search:
    """The budget of a scale's searches, one per label of its ``tuned`` column (:func:`.grid.searches`)."""
    trials: int
    """Trials per search."""
    share: float
    """Each trial's length, as a share of the run's updates (or epochs), in (0, 1]."""
    seed: int = 0
    """The seed every trial trains on (best none of the scale's seeds, so that no pick is chosen on a run its row
    then averages in)."""
    startup: int = TPE_STARTUP
    """The trials Optuna's TPE sampler draws at random before it models the results."""
    settings: tuple[str, ...] | None = None
    """The settings it searches at (the memory grid: at one rung), each pick then held at every setting of its
    task; None: every setting."""

    def check(self, where: str) -> None:
        """Raise, naming ``where`` and the field, unless every field holds what it says."""
        for name, low in (("trials", 1), ("seed", 0), ("startup", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{where}: {name} must be a whole number; got {value!r}")
            if value < low:
                raise ValueError(f"{where}: {name} must be at least {low}; got {value}")
        if not isinstance(self.share, (int, float)) or isinstance(self.share, bool):
            raise TypeError(f"{where}: share must be a number; got {self.share!r}")
        if not 0 < self.share <= 1:
            raise ValueError(f"{where}: share must be in (0, 1]; got {self.share}")
        if self.settings is not None:
            _tuple_of(self.settings, str, where, "settings")

    def as_record(self) -> dict:
        """The search as a grid records it when it starts (``plan.json``): the fields not at their default, as the
        record has held them since before they were types."""
        defaults = {f.name: f.default for f in fields(self)}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items() if v != defaults.get(k)}

    @classmethod
    def from_record(cls, record: Mapping) -> Search:
        """The search a grid recorded (:meth:`as_record`)."""
        given = dict(record)
        if given.get("settings") is not None:
            given["settings"] = tuple(given["settings"])
        return cls(**given)


@dataclass(frozen=True, kw_only=True)
class Scale:
    """A grid as ``nnrnn reproduce --scale NAME`` runs it: one module of :mod:`nnrnn.experiments.grids` declares
    one."""
    name: str
    """Its name on the command line (``--scale NAME``)."""
    seeds: tuple[int, ...]
    """The seeds every run of its tables trains with."""
    settings: Mapping[str, Setting]
    """{setting's name: :class:`Setting`}, in the order its report shows them; the name is the task's (``copy``)
    or a task's with what sets it apart (``ptb-300``, ``copy-50``)."""
    report: object
    """The report it writes (a :class:`nnrnn.experiments.reporting.sections.Report`)."""
    about: str = ""
    """One line on what it is and how long it takes, for ``nnrnn reproduce --help``."""
    tune: Search | None = None
    """Its searches' budget when it has a ``tuned`` column; None: it searches nothing."""
    climb: Callable | None = None
    """An adaptive grid's way of training (the memory grid's ladder, ``climb(grid, execute)``, which trains its
    settings in turn, each planned from the results of the last); None: every run at once."""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"a grid's name must be a non-empty string; got {self.name!r}")
        where = f"grid {self.name!r}"
        if isinstance(self.seeds, list):  # written as a list in a declaration, held as a tuple
            object.__setattr__(self, "seeds", tuple(self.seeds))
        _tuple_of(self.seeds, int, where, "seeds")
        if min(self.seeds) < 0:
            raise ValueError(f"{where}: seeds must not be negative; got {self.seeds!r}")
        if not isinstance(self.settings, Mapping) or not self.settings:
            raise ValueError(f"{where}: settings must be a non-empty mapping of names to Settings")
        for name, setting in self.settings.items():
            if not isinstance(setting, Setting):
                raise TypeError(f"{where}: setting {name!r} must be a Setting; got {setting!r}")
            setting.check(f"{where}, setting {name!r}")
        if not isinstance(self.about, str):
            raise TypeError(f"{where}: about must be a string; got {self.about!r}")
        if self.tune is not None:
            if not isinstance(self.tune, Search):
                raise TypeError(f"{where}: tune must be a Search; got {self.tune!r}")
            self.tune.check(f"{where}, tune")
            _names(self.tune.settings or (), self.settings, f"{where}, tune", "setting(s)")
            if not any(TUNED in s.columns for s in self.settings.values()):
                raise ValueError(f"{where}: tune is given, but no setting has the {TUNED!r} column")
        if self.climb is not None and not callable(self.climb):
            raise TypeError(f"{where}: climb must be callable; got {self.climb!r}")

    @property
    def tasks(self) -> list[str]:
        """Its settings' tasks, each once, in order."""
        return list(dict.fromkeys(s.task for s in self.settings.values()))

    @property
    def models(self) -> list[str]:
        """Its settings' models and its variants' models, each once, in order."""
        return list(dict.fromkeys(m for s in self.settings.values()
                                  for m in (*s.models, *(v.model for v in s.variants.values()))))
