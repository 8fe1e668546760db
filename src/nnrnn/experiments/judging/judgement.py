"""What every judgement of the paper's experiment claims shares: :class:`Judgement` (a claim's verdict, which
each claim's judgement extends with the comparisons behind it) and the grading of a verdict from its parts."""
from __future__ import annotations

from dataclasses import dataclass

from .rules import FAILS, HOLDS, PARTLY
from .statistics import Stat, all_failed, below


@dataclass(frozen=True)
class Judgement:
    """A claim's verdict; each subclass adds the comparisons behind it."""
    verdict: str


def _grade(count: int, total: int) -> str:
    """Holds when all ``total`` parts pass, partly when some do, does not hold when none does."""
    return HOLDS if count == total else PARTLY if count else FAILS


def _capped(verdict: str, good: Stat) -> str:
    """At most "partly" when some seed of the model the claim calls good failed."""
    return PARTLY if verdict == HOLDS and good.failed else verdict


def _worse(bad: Stat, good: Stat, lower: bool) -> bool:
    """``bad`` worse than ``good`` by the rule (lower is better when ``lower``), or every seed of ``bad`` failed
    while ``good`` has values."""
    if all_failed(bad):
        return not good.empty
    return below(good, bad) if lower else below(bad, good)
