"""A result a model's paper printed: :class:`Published`, which a model class lists in its ``PUBLISHED``
(:class:`~nnrnn.models.traits.Traits`), so that a report sets it beside its own result
(:mod:`nnrnn.experiments.grids.modern`)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Published:
    """One published figure of a model, with the scale it was measured at and where it is printed.  Only what was
    read in a paper or its authors' repository."""
    task: str
    """The task it was measured on (a name of :data:`nnrnn.tasks.TASKS`), on its standard protocol."""
    measure: str
    """What the value is, in the paper's units (``test accuracy (%)``, ``test bpc``)."""
    value: float
    """The figure as printed."""
    scale: str
    """The size and training it was measured at (units, parameters, training data, epochs)."""
    source: str
    """Where it is printed."""
