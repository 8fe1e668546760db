"""A grid's report, ``OUT/report.md``, with its figures, and beside it ``OUT/data.json``, the compact data it is
computed from (:mod:`.compact`): the skeleton every report shares (the introduction, the data each run saw, the
sections of the grid's :class:`~.sections.Report` in order, the list of the comparisons its verdicts rest on,
controlled together as one family, and the notes written by hand), written once here."""
from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

from .compact import write_data
from ..judging import family
from ..planning.grid import Grid, reading_once, write_whole
from .sections import Report, data_section, family_section, introduction, notes


def report_of(grid: Grid) -> Report:
    """The report a grid writes: its scale's ``report``."""
    return grid.spec.report


def write_report(grid: Grid) -> Path:
    """``OUT/report.md`` and ``OUT/data.json`` of ``grid``.  Its ``date`` (default today) is the one the report
    gives; its ``analysis_lines``, the lines of the first seeds' analysis figures where they cannot be made from
    checkpoints (a report written from compact data)."""
    report = report_of(grid)
    with reading_once():
        analysis = grid.analysis_lines
        if analysis is None:
            analysis = report.analyse(grid) if report.analyse else []
        grid = dataclasses.replace(grid, date=grid.date or datetime.date.today().isoformat(), analysis_lines=analysis)
        grid.figures.mkdir(parents=True, exist_ok=True)

        def written() -> list[str]:
            lines = introduction(grid, report.heading) + data_section(grid)
            for section in report.sections:
                lines += section(grid)
            return lines
        # written until its family of comparisons is known, each comparison judged against it (rule FAMILY)
        lines, controlled = family.control(written)
        write_whole(grid.report, "\n".join(lines + family_section(controlled) + notes(grid)))
        write_data(grid)
    return grid.report
