"""Every grid ``nnrnn reproduce --scale NAME`` runs, one module each: a module of this package that declares
``NAME`` (the scale's name on the command line) and ``SCALE`` (its seeds, settings and, under ``"report"``, the
:class:`~nnrnn.experiments.reporting.sections.Report` it writes) is a grid.  :data:`SCALES` is read from the
package's modules,
so adding a grid is adding one file here."""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from ..planning.grid import Grid, PlannedRun


def _scales() -> dict[str, dict]:
    """{name: scale} of every module in this package, in the order of their names."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found[module.NAME] = module.SCALE
    return found


SCALES = _scales()


def planned_grid(out, scale: str, planned: list[PlannedRun], **given) -> Grid:
    """The grid of scale ``scale`` (a module of this package) in the folder ``out`` with its planned runs."""
    return Grid(Path(out), scale, SCALES[scale], planned, **given)
