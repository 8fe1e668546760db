"""Rendering results in sentences: the models' names, a result as a sentence shows it, the columns' words and a
setting's title."""
from __future__ import annotations

from ...tasks import task_class
from .labels import display_name
from .statistics import Stat


def name(label: str) -> str:
    """A label's name in a report: its model class's or its variant's (:mod:`.labels`); a LookupError for a label
    stated nowhere."""
    return display_name(label)



def _join(labels) -> str:
    labels = [name(m) for m in labels]
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def _said(stat, digits: int, failed: str = "diverged") -> str:
    """A result in a sentence; one whose every seed failed says so."""
    if stat is None or (stat.empty and not stat.failed):
        return "no runs"
    if stat.empty:
        return f"(every seed {failed}, {stat.failed} of {stat.failed})"
    return stat.show(digits, failed)


def _show_bpc(stat) -> str:
    return _said(stat, 3)



def _scoped(here: str, scope: str) -> str:
    return here + (f" (this scale: {scope})" if scope else "")


def _paper(stat: Stat) -> str:
    """A number as the paper prints it: the mean to two decimals, its s.e. as given."""
    return f"{stat.mean:.2f} ± {stat.se:g}"


def _show_speed(stat) -> str:
    if stat is None or (stat.empty and not stat.failed):
        return "time to solve unknown"
    if stat.empty:
        return f"never solved ({stat.failed} of {stat.failed} seeds)"
    never = f" ({stat.failed} of {stat.n + stat.failed} seeds never solved)" if stat.failed else ""
    return f"solved after {Stat(stat.mean, stat.se, stat.n).show(0)} updates{never}"


def column_words(column: str) -> str:
    return {"hidden": "fixed hidden units", "params": "fixed parameter count",
            "tuned": "fixed parameter count, tuned", "tuned-hidden": "fixed hidden units, tuned"}.get(column, column)


def _ratio(r) -> str:
    """3e8× for 3·10⁸, 4.2× for 4.2."""
    text = f"{r:.2g}" if r >= 1e4 else f"{r:.3g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text + "×"


def title(planned: list, setting: str) -> str:
    """A setting's title from its first planned run (:class:`~.grid.PlannedRun`): its task's, with the length that
    defines it."""
    sample = next(r for r in planned if r.setting == setting)
    return task_class(sample.task).title(sample.options)

