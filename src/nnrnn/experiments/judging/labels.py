"""What a report calls a label and how its figures draw it: a model's are its class's
(:attr:`~nnrnn.models.traits.Traits.DISPLAY_NAME`, :attr:`~nnrnn.models.traits.Traits.LINE_STYLE`); a grid's
variant (a model with other options, under a label of its own, e.g. ``"nnrnn delay"``) states its own with
:func:`variant` in the grid module that defines it.  A label stated nowhere is an error, never a silent default."""
from __future__ import annotations

from dataclasses import dataclass

from ...models import MODELS


@dataclass(frozen=True)
class Label:
    """A variant's display name and its colour and matplotlib line style."""

    name: str
    style: tuple[str, object]


VARIANTS: dict[str, Label] = {}


def variant(label: str, name: str, style: tuple[str, object]) -> str:
    """Declare variant ``label``'s display name and line style (its grid module does, when imported); ``label`` back.
    A label that is a model's, or one already declared otherwise, is refused: two names for one label would depend on
    which grid was imported last."""
    if label in MODELS:
        raise ValueError(f"variant {label!r}: a model's label; a variant needs a label of its own")
    known = VARIANTS.get(label)
    if known is not None and known != Label(name, style):
        raise ValueError(f"variant {label!r} is declared twice, as {known} and as {Label(name, style)}")
    VARIANTS[label] = Label(name, style)
    return label


def _known(label: str) -> Label:
    if label in MODELS:
        cls = MODELS[label]
        return Label(cls.DISPLAY_NAME, cls.LINE_STYLE)
    if label not in VARIANTS:
        raise LookupError(f"label {label!r} is neither a model nor a declared variant; declare it in the grid that "
                          "defines it with nnrnn.experiments.judging.labels.variant(label, name, style)")
    return VARIANTS[label]


def declared(label: str) -> bool:
    """The label is a model's or a declared variant's."""
    return label in MODELS or label in VARIANTS


def display_name(label: str) -> str:
    """A label's name in a report: its model class's, or its variant's as its grid declared it."""
    return _known(label).name


def line_style(label: str) -> tuple[str, object]:
    """A label's colour and matplotlib line style, the same in every figure and every report."""
    return _known(label).style
