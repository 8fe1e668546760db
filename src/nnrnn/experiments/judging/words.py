"""Rendering results in sentences: the models' names, a result as a sentence shows it, the columns' words and a
setting's title."""
from __future__ import annotations

from ...tasks import task_class
from .paper import GAMMA_HELD, GAMMA_ONE
from .statistics import Stat

NAMES = {"rnn": "RNN", "rnn-orth": "RNN-orth", "eurnn": "EURNN", "exprnn": "expRNN", "nnrnn": "nnRNN",
         "lstm": "LSTM", "gru": "GRU", "nngru": "nnGRU", "nnrnn-complex": "complex nnRNN",
         "nnrnn delay": "nnRNN (delay init)", GAMMA_ONE: "nnRNN, γ = 1", GAMMA_HELD: "nnRNN, γ = 0.958",
         "eurnn, capacity 4": "EURNN, capacity 4", "rnn-orth, clipped at 1": "RNN-orth, clipped at 1",
         "cornn": "coRNN", "lem": "LEM", "lru": "LRU", "mingru": "minGRU", "rnn chain": "RNN (chain init)",
         "nnrnn normal": "nnRNN without T (normal)", "nnlru": "nnLRU"}


def name(label: str) -> str:
    return NAMES.get(label, label)



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
            "tuned": "fixed parameter count, tuned"}.get(column, column)


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

