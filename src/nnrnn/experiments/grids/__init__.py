"""Every grid ``nnrnn reproduce --scale NAME`` runs, one module each: a module of this package that declares
``NAME`` (the scale's name on the command line) and ``SCALE`` (a
:class:`~nnrnn.experiments.planning.declaration.Scale` of that name: its seeds, settings, search and the
:class:`~nnrnn.experiments.reporting.sections.Report` it writes, checked as the module is imported) is a grid.
:data:`SCALES` is read from the package's modules, so adding a grid is adding one file here."""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from ..judging import labels
from ..planning.declaration import Scale
from ..planning.grid import Grid, PlannedRun


def _scales() -> dict[str, Scale]:
    """{name: scale} of every module in this package, in the order of their names."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if module.SCALE.name != module.NAME:
            raise ValueError(f"grid module {info.name}: its SCALE is named {module.SCALE.name!r}, its NAME "
                             f"{module.NAME!r}; give both one name")
        found[module.NAME] = module.SCALE
        for setting, spec in module.SCALE.settings.items():
            for label in spec.variants:
                if label not in labels.VARIANTS:
                    raise LookupError(f"grid {module.NAME!r}, setting {setting!r}: variant {label!r} has no display "
                                      "name or line style; declare it in the grid's module with "
                                      "nnrnn.experiments.judging.labels.variant(label, name, style)")
    return found


SCALES = _scales()


def planned_grid(out, scale: str, planned: list[PlannedRun], **given) -> Grid:
    """The grid of scale ``scale`` (a module of this package) in the folder ``out`` with its planned runs."""
    return Grid(Path(out), scale, SCALES[scale], planned, **given)
