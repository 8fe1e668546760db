"""A row of the doctor's table, and the table."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Row:
    check: str
    model: str
    task: str
    result: str      # "ok", "FAIL" or "skipped (why)"
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.result == "FAIL"


def table(rows: list[Row]) -> str:
    lines = ["| check | model | task | result | detail |", "|---|---|---|---|---|"]
    lines += [f"| {r.check} | {r.model} | {r.task} | {r.result} | {r.detail} |" for r in rows]
    return "\n".join(lines)
