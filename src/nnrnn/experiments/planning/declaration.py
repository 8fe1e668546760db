"""A grid's declaration, by types: a :class:`Scale` (its seeds, settings, report and search), each :class:`Setting` (a
task with the scale's sizes, lengths and columns), each :class:`Variant` (a model with the options that make it) and
the :class:`Search` of a tuned column, or the :class:`JointSearch` that picks one set of options for every label of
the column together.  Each is a frozen dataclass; a :class:`Scale` checks itself and everything it
holds as it is declared, that is when the grid's module is imported (the parts are checked there, where the grid's
and the setting's names are known): a model, task, column, preset or training option that does not exist is a
LookupError, a bad number a ValueError, a value of the wrong kind a TypeError, each naming the grid, the setting and
the field; an unknown field is the dataclass's own TypeError, which names the field (the traceback, the grid's line).
What the declaration means (which runs a setting plans) is :func:`.grid.plan`'s."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace

from ... import presets
from ...models import MODELS, PAPER_MODELS
from ...models.published import Published
from ...tasks import TASKS
from ...training.options import DEFAULTS

TUNED = "tuned"
# the tuned column's picks at the hidden units fixed: one factor (the size) apart from ``tuned``, so it has no search
# of its own (docs/design.md, the memory grid)
TUNED_HIDDEN = "tuned-hidden"
COLUMN_PRESETS = {"hidden": "paper", "params": "paper-params", TUNED: "paper-params",
                  TUNED_HIDDEN: "paper-params"}  # each column's preset
COLUMNS = tuple(COLUMN_PRESETS)
PICKED = (TUNED, TUNED_HIDDEN)  # the columns whose runs train with the tuned column's picks
AT_HIDDEN = ("hidden", TUNED_HIDDEN)  # the columns that hold every model at the reference hidden units
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
    ``hidden``), ``tuned`` (that count, with each label's options searched: the scale's :class:`Search`),
    ``tuned-hidden`` (the hidden units fixed, with the ``tuned`` column's picks)."""
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
        if TUNED_HIDDEN in self.columns and TUNED not in self.columns:
            raise ValueError(f"{where}: the {TUNED_HIDDEN!r} column trains with the {TUNED!r} column's picks; "
                             f"give both columns")
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
        _budget(self, where)
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


def _budget(search, where: str) -> None:
    """Raise, naming ``where`` and the field, unless a search's trials, seed, startup and share are what they say."""
    for name, low in (("trials", 1), ("seed", 0), ("startup", 0)):
        value = getattr(search, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{where}: {name} must be a whole number; got {value!r}")
        if value < low:
            raise ValueError(f"{where}: {name} must be at least {low}; got {value}")
    if not isinstance(search.share, (int, float)) or isinstance(search.share, bool):
        raise TypeError(f"{where}: share must be a number; got {search.share!r}")
    if not 0 < search.share <= 1:
        raise ValueError(f"{where}: share must be in (0, 1]; got {search.share}")


LOG, CHOICES = "log", "choices"  # a joint search's dimension: ("log", low, high) or ("choices", (value, ...))


@dataclass(frozen=True, kw_only=True)
class JointSearch:
    """One search for every label of one setting's ``tuned`` column together (the thesis-joint grid): every trial
    draws one set of options and trains each label with it, each option on the labels whose model has it
    (:func:`.joint.applies`: δ and the L2 decay on T on the Schur form's only), and its value, which the search
    minimizes, is the mean over the labels of ``measure``.  The pick, the best finished trial's options, is then
    every label's options in the tuned column at every setting of the task (one option set for all)."""
    setting: str
    """The setting it searches at (a name of the scale's settings, one with the ``tuned`` column): its labels are
    the arms every trial trains."""
    space: Mapping[str, tuple]
    """{training option: its dimension}, ``("log", low, high)`` (log-uniform) or ``("choices", (value, ...))``."""
    first: Mapping
    """The options of its first trial (the published settings), a point of ``space`` in every dimension."""
    measure: Callable
    """``measure(configuration, metrics records) -> float`` of one label's run, lower better; a trial's value is
    the mean over its labels."""
    trials: int
    """Trials, the first included."""
    share: float = 1.0
    """Each trial's length, as a share of the setting's updates, in (0, 1]."""
    seed: int = 0
    """The seed every trial trains on: none of the scale's seeds (the scale checks), so that no pick is chosen on a
    run its rows then average in."""
    startup: int = TPE_STARTUP
    """The trials Optuna's TPE sampler draws at random before it models the results."""

    def check(self, where: str) -> None:
        """Raise, naming ``where`` and the field, unless every field holds what it says."""
        _budget(self, where)
        if not isinstance(self.setting, str):
            raise TypeError(f"{where}: setting must be a setting's name; got {self.setting!r}")
        _options(self.space, where, "space")
        if not self.space:
            raise ValueError(f"{where}: space must not be empty")
        for name, dimension in self.space.items():
            _dimension(dimension, f"{where}, space {name!r}")
        _options(self.first, where, "first")
        if set(self.first) != set(self.space):
            raise ValueError(f"{where}: first must give every dimension of space, and no other; it gives "
                             f"{', '.join(self.first) or 'none'}, space has {', '.join(self.space)}")
        outside = [k for k, v in self.first.items() if not inside(v, self.space[k])]
        if outside:
            shown = ", ".join(f"{k} = {self.first[k]!r}" for k in outside)
            raise ValueError(f"{where}: first is not a point of space: {shown}")
        if not callable(self.measure):
            raise TypeError(f"{where}: measure must be callable; got {self.measure!r}")

    def as_record(self) -> dict:
        """The search as a grid records it when it starts (``plan.json``'s ``joint``): every field but the measure
        (a function), tuples as JSON's lists."""
        return json_ready({f.name: getattr(self, f.name) for f in fields(self) if f.name != "measure"})

    def recorded(self, record: Mapping) -> JointSearch:
        """This search with the budget a grid recorded (:meth:`as_record`), its measure this one's, its dimensions in
        this one's order (the record's keys are sorted)."""
        given = record["space"]
        order = [*(k for k in self.space if k in given), *(k for k in given if k not in self.space)]
        space = {k: (given[k][0], *given[k][1:]) if given[k][0] == LOG else (given[k][0], tuple(given[k][1]))
                 for k in order}
        first = {k: record["first"][k] for k in order if k in record["first"]}
        return replace(self, **{**record, "space": space, "first": first})


def json_ready(value):
    """``value`` with its tuples as lists, as JSON reads it back."""
    if isinstance(value, Mapping):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [json_ready(v) for v in value]
    return value


def _dimension(dimension, where: str) -> None:
    """Raise, naming ``where``, unless ``dimension`` is ``("log", low, high)`` with 0 < low < high or ``("choices",
    (value, ...))`` with at least one value and none repeated."""
    if not isinstance(dimension, tuple) or not dimension or dimension[0] not in (LOG, CHOICES):
        raise TypeError(f"{where}: a dimension is ({LOG!r}, low, high) or ({CHOICES!r}, (value, ...)); "
                        f"got {dimension!r}")
    if dimension[0] == LOG:
        numbers = dimension[1:]
        if len(numbers) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in numbers):
            raise TypeError(f"{where}: a log-uniform dimension is ({LOG!r}, low, high); got {dimension!r}")
        if not 0 < numbers[0] < numbers[1]:
            raise ValueError(f"{where}: a log-uniform range needs 0 < low < high; got {numbers[0]!r}, {numbers[1]!r}")
    elif len(dimension) != 2 or not isinstance(dimension[1], tuple):
        raise TypeError(f"{where}: a dimension of choices is ({CHOICES!r}, (value, ...)); got {dimension!r}")
    elif not dimension[1] or len(set(dimension[1])) != len(dimension[1]):
        raise ValueError(f"{where}: its choices must be at least one, none repeated; got {dimension[1]!r}")


def inside(value, dimension: tuple) -> bool:
    """Whether ``value`` is a point of a joint search's ``dimension`` (one of its choices, or within its range)."""
    if dimension[0] == CHOICES:
        return value in dimension[1]
    return isinstance(value, (int, float)) and not isinstance(value, bool) and dimension[1] <= value <= dimension[2]


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
    """Its searches' budget when it has a ``tuned`` column, one search per label; None: none of those."""
    joint: JointSearch | None = None
    """Its one search for every label of its ``tuned`` column together, instead of ``tune``; None: none."""
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
        if self.joint is not None:
            self._check_joint(where)
        if self.climb is not None and not callable(self.climb):
            raise TypeError(f"{where}: climb must be callable; got {self.climb!r}")

    def _check_joint(self, where: str) -> None:
        """Raise, naming the field, unless ``joint`` is a :class:`JointSearch` at a tuned setting of this scale, on a
        seed none of its runs train on, and the scale's only search."""
        if not isinstance(self.joint, JointSearch):
            raise TypeError(f"{where}: joint must be a JointSearch; got {self.joint!r}")
        self.joint.check(f"{where}, joint")
        if self.tune is not None:
            raise ValueError(f"{where}: give tune (a search per label) or joint (one for all), not both")
        _names([self.joint.setting], self.settings, f"{where}, joint", "setting")
        if TUNED not in self.settings[self.joint.setting].columns:
            raise ValueError(f"{where}, joint: setting {self.joint.setting!r} has no {TUNED!r} column for its pick")
        if self.joint.seed in self.seeds:
            raise ValueError(f"{where}, joint: seed {self.joint.seed} is one of the grid's seeds; search on another, "
                             "so that no pick is chosen on a run its rows then average in")

    @property
    def searched(self) -> bool:
        """Whether a search picks its ``tuned`` column's options (``tune`` or ``joint``)."""
        return self.tune is not None or self.joint is not None

    @property
    def tasks(self) -> list[str]:
        """Its settings' tasks, each once, in order."""
        return list(dict.fromkeys(s.task for s in self.settings.values()))

    @property
    def models(self) -> list[str]:
        """Its settings' models and its variants' models, each once, in order."""
        return list(dict.fromkeys(m for s in self.settings.values()
                                  for m in (*s.models, *(v.model for v in s.variants.values()))))
