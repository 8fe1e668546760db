"""A grid's report, ``OUT/report.md``, with its figures, and beside it ``OUT/data.json``, the compact data it is
computed from (:mod:`.compact`): the skeleton every report shares (the introduction, the data each run saw, the
sections of the grid's :class:`~.sections.Report` in order, the notes written by hand), written once here."""
from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path

from .compact import materialize, write_data
from .planning.grid import Grid, PlannedRun, reading_once
from .grids import SCALES
from .grids.paper import REPORT as REPRODUCTION, analyse_first_seed
from .reporting.sections import Report, data_section, introduction, notes


def report_of(grid: Grid) -> Report:
    """The report a grid writes: its scale's ``report``, the paper's claims judged (:mod:`.reproduction`) for a
    scale that names none."""
    return grid.spec.get("report", REPRODUCTION)


def write_report(grid: Grid) -> Path:
    """``OUT/report.md`` and ``OUT/data.json`` of ``grid``.  Its ``date`` (default today) is the one the report
    gives; its ``analysis_lines``, the lines of the first seeds' analysis figures where they cannot be made from
    checkpoints (a report written from compact data)."""
    report = report_of(grid)
    with reading_once():
        analysis = grid.analysis_lines
        if analysis is None:
            analysis = analyse_first_seed(grid) if report.analysed else []
        grid = dataclasses.replace(grid, date=grid.date or datetime.date.today().isoformat(), analysis_lines=analysis)
        grid.figures.mkdir(parents=True, exist_ok=True)
        lines = introduction(grid, report.heading) + data_section(grid)
        for section in report.sections:
            lines += section(grid)
        grid.report.write_text("\n".join(lines + notes(grid)))
        write_data(grid)
    return grid.report


def planned_grid(out, scale: str, planned: list[PlannedRun], **given) -> Grid:
    """The grid of scale ``scale`` (a module of :mod:`.grids`) in the folder ``out`` with its planned runs."""
    return Grid(Path(out), scale, SCALES[scale], planned, **given)


def regenerate(path: Path, out: Path, data_dir=None) -> Path:
    """The report of the compact data at ``path``, written into ``out`` from that data alone (``data_dir``: where
    the MNIST and PTB files are here, for the data section's counts)."""
    data = json.loads(Path(path).read_text())
    planned = materialize(data, out, data_dir)
    return write_report(planned_grid(out, data["scale"], planned, date=data["date"], analysis_lines=data["analysis"]))
