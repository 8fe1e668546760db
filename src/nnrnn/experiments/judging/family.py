"""A report's family of comparisons, controlled together for their multiplicity (rule FAMILY; issue 67).

A report makes many comparisons, and "clearly" is meant to survive them all: at rule FAMILY
"benjamini-hochberg" every comparison a report's sentences make to reach a verdict is one member of the report's
family, and a comparison passes ("clearly") when its Benjamini–Hochberg adjusted p value
(``scipy.stats.false_discovery_control``, :func:`controlled`) over the family is below LEVEL.  The
comparisons are the ones the rules (:mod:`.statistics`, :mod:`.significance`) make, so their code does not change:
each asks :func:`level` for the level its raw p value must be under, which is the largest raw p at which
Benjamini–Hochberg, the family's other members held as they are, still rejects it (a comparison not in the family,
judged again under other rules, gets the level it would have if added).

The family of a report is found by writing the report more than once (:func:`control`): the first time at
LEVEL, each comparison made recorded; then again, each judged against the family the previous writing recorded,
until a writing makes no comparison the family lacks (at most :data:`PASSES` writings; a comparison made only under
an earlier writing's verdicts stays in the family, which only makes it more cautious).

What is and is not in a family:

* in: every comparison of this report's own runs that a sentence or claim row rests on (two results over seeds, a
  result against a fixed threshold, seeds solved by Fisher's exact test, times to solve by the log-rank test);
* its own family (:func:`group`): the theory's claims, whose "seeds" are a deterministic model's initial conditions;
* out (:func:`outside`): the paper's published numbers compared among themselves (what the paper's own rows said
  by this rule, not this report's question), and nothing recorded while a report judges its verdicts again under
  the rules its grid started with (:func:`unrecorded`).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from dataclasses import dataclass, field

from scipy import stats

from .rules import rule

BH = "benjamini-hochberg"
PASSES = 4  # writings of a report at most, until its family stops growing
DEFAULT = "the report's comparisons"


@dataclass
class Member:
    """One comparison of a family: its test, its two sides (``a``, ``b``: their labels, "" where unnamed, and
    ``shown``: their results in words), its raw p value, its effect (a − b) with an interval (NaN where the data
    hold no per-seed values), the seeds on each side, and the claim rows that rest on it."""
    test: str
    a: str
    b: str
    shown: tuple
    p: float
    effect: float
    low: float = math.nan
    high: float = math.nan
    n: tuple = (0, 0)
    interval: str = ""  # how the interval was had ("bootstrap", "t"), "" for none
    rows: list = field(default_factory=list)


@dataclass
class Family:
    """The members recorded (by key, in the order first made) in each group, and the raw p values the levels are
    read from (the previous writing's: None during the first)."""
    members: dict = field(default_factory=dict)  # {group: {key: Member}}
    judged_by: dict | None = None                # {group: {key: p}}

    def group_members(self, name: str) -> dict:
        return self.members.setdefault(name, {})

    def adjusted(self, name: str, key) -> float:
        """The Benjamini–Hochberg adjusted p value of ``key`` in the group ``name`` (NaN where not a member)."""
        members = self.group_members(name)
        if key not in members:
            return math.nan
        keys = list(members)
        return controlled([members[k].p for k in keys])[keys.index(key)]

    def size(self, name: str) -> int:
        return sum(math.isfinite(m.p) for m in self.group_members(name).values())


def controlled(ps) -> list[float]:
    """Benjamini–Hochberg adjusted p values of a family of comparisons (``scipy.stats.false_discovery_control``),
    in their order; a NaN p value (a comparison that could not be made) stays NaN and is not counted."""
    ps = list(ps)
    finite = [i for i, p in enumerate(ps) if math.isfinite(p)]
    out = [math.nan] * len(ps)
    if finite:
        for i, q in zip(finite, stats.false_discovery_control([ps[i] for i in finite])):
            out[i] = float(q)
    return out


_FAMILY: contextvars.ContextVar[Family | None] = contextvars.ContextVar("family", default=None)
_GROUP: contextvars.ContextVar[str] = contextvars.ContextVar("family_group", default=DEFAULT)
_RECORD: contextvars.ContextVar[bool] = contextvars.ContextVar("family_record", default=True)
_OUTSIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("family_outside", default=False)
_ROWS: contextvars.ContextVar[list | None] = contextvars.ContextVar("family_rows", default=None)


def active() -> Family | None:
    """The family being controlled, where rule FAMILY controls one and a report is being written under it."""
    family = _FAMILY.get()
    return family if family is not None and rule("FAMILY") == BH and rule("TEST") != "two standard errors" else None


def bh_level(p: float, others) -> float:
    """The largest raw p value at which Benjamini–Hochberg at LEVEL rejects a comparison whose family's other
    members have the raw p values ``others``: max over k of LEVEL·k/m such that at least k − 1 others lie at or
    below it (m the family's size with this comparison)."""
    others = sorted(q for q in others if math.isfinite(q))
    m, alpha = len(others) + 1, rule("LEVEL")
    best = 0.0
    for k in range(1, m + 1):
        t = alpha * k / m
        if sum(q <= t for q in others) >= k - 1:
            best = t
    return best


def level(key, p: float, member) -> float:
    """The level the raw p value ``p`` of the comparison ``key`` must be below to pass: LEVEL alone outside a
    controlled family; else the Benjamini–Hochberg level given the family's other members (:func:`bh_level`).
    ``member()`` makes the comparison's :class:`Member`, recorded (with the claim row being judged) when first
    made."""
    family = active()
    if family is None or _OUTSIDE.get() or not math.isfinite(p):
        return rule("LEVEL")
    name = _GROUP.get()
    members = family.group_members(name)
    if _RECORD.get():
        if key not in members:
            members[key] = member()
        rows = _ROWS.get()
        if rows is not None and key not in rows:
            rows.append(key)
    if family.judged_by is None:  # the first writing: the family is not known yet
        return rule("LEVEL")
    judged = family.judged_by.get(name, {})
    return bh_level(p, [q for k, q in judged.items() if k != key])


def adjusted(key) -> float:
    """The adjusted p value of ``key`` in the family being controlled (NaN outside one, or where not a member)."""
    family = active()
    if family is None or _OUTSIDE.get():
        return math.nan
    return family.adjusted(_GROUP.get(), key)


def size() -> int:
    """How many comparisons the family being controlled holds, in the group in force (0 outside one)."""
    family = active()
    return family.size(_GROUP.get()) if family is not None else 0


def control(write):
    """``write()`` (a report's writing, which makes its comparisons) under its family's control: written once to
    find the family, then again against it until no new comparison appears (at most :data:`PASSES` times); returns
    the last writing's result and the family."""
    family = Family()
    token = _FAMILY.set(family)
    try:
        result = write()
        for _ in range(PASSES - 1):
            seen = {name: {k: m.p for k, m in members.items()} for name, members in family.members.items()}
            if family.judged_by == seen:
                break
            family.judged_by = seen
            for members in family.members.values():
                for m in members.values():
                    m.rows.clear()
            result = write()
        return result, family
    finally:
        _FAMILY.reset(token)


@contextlib.contextmanager
def group(name: str):
    """Comparisons made inside the block form their own family ``name`` (the theory's claims)."""
    token = _GROUP.set(name)
    try:
        yield
    finally:
        _GROUP.reset(token)


@contextlib.contextmanager
def outside():
    """Comparisons made inside the block are no member of any family and are judged at LEVEL alone (the paper's
    published numbers compared among themselves)."""
    token = _OUTSIDE.set(True)
    try:
        yield
    finally:
        _OUTSIDE.reset(token)


@contextlib.contextmanager
def unrecorded():
    """Comparisons made inside the block are judged against the family but not added to it (a report's verdicts
    judged again under the rules its grid started with)."""
    token = _RECORD.set(False)
    try:
        yield
    finally:
        _RECORD.reset(token)


def rests_on(function):
    """Decorate a function that returns a claim row (a :class:`~.rules.Claim`) or a list of them: the comparisons
    it makes are recorded as the ones its rows rest on; those made inside a decorated function it calls are that
    one's rows' alone (rows judged together, as copy's three in one column, share the comparisons made for them
    together)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        keys: list = []
        token = _ROWS.set(keys)
        try:
            result = function(*args, **kwargs)
        finally:
            _ROWS.reset(token)
        family = _FAMILY.get()
        if family is not None:
            for claim in result if isinstance(result, list) else [result]:
                for members in family.members.values():
                    for key in keys:
                        if key in members and claim.claim not in members[key].rows:
                            members[key].rows.append(claim.claim)
        return result
    return wrapper


def cited(claim: str) -> str:
    """"; tests: the report's comparisons 3, 5–7 (all exploratory: fewer than 5 seeds a side)" (and the theory's, by
    their own numbers) for the row ``claim``, "" where it rests on none or no family is controlled."""
    family = active()
    if family is None:
        return ""
    parts, exploratory = [], []
    for name, members in family.members.items():
        found = [(i, m) for i, m in enumerate(members.values(), 1) if claim in m.rows]
        if found:
            parts.append(f"{name} {span([i for i, _ in found])}")
            exploratory += [min(n for n in m.n if n or m.test != "one-sample t") < rule("EXPLORATORY_UNDER")
                            for _, m in found]
    if not parts:
        return ""
    under = f"fewer than {rule('EXPLORATORY_UNDER')} seeds a side"
    return "; tests: " + "; ".join(parts) + (f" (all exploratory: {under})" if all(exploratory) else
                                             f" (some exploratory: {under})" if any(exploratory) else "")


def span(numbers_: list[int]) -> str:
    """"3, 5–7" from [3, 5, 6, 7]."""
    parts, run = [], []
    for n in numbers_:
        if run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}–{run[-1]}")
        run = [n]
    if run:
        parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}–{run[-1]}")
    return ", ".join(parts)
