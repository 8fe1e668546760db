"""Synthetic grids: run folders with made-up but plausible metrics for every run a scale plans, so that a report can
be written (and compared before and after a change) without training anything.

Each run's curves are drawn from a generator seeded by the run's name, so the same plan gives the same folders. A
few runs are marked diverged, one γ = 1 run stops learning at its start, and the learned structure is given through
the report's cache (``analysis/structure.json``) since no run has a checkpoint.
"""
from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from nnrnn.experiments.planning import grid

from nnrnn.experiments import grids
from nnrnn.experiments.reporting.collect import STRUCTURE as MEASURED
from nnrnn.experiments.grids import planned_grid
from nnrnn.training import runfolder

# the final metric each model reaches, per task (about the cpu-long report's numbers)
LEVEL = {"copy": {"rnn": 0.095, "rnn-orth": 0.0003, "eurnn": 0.03, "exprnn": 0.0001, "nnrnn": 0.0002, "lstm": 0.09},
         "psmnist": {"rnn": 0.55, "rnn-orth": 0.80, "eurnn": 0.78, "exprnn": 0.86, "nnrnn": 0.87, "lstm": 0.70},
         "ptb": {"rnn": 3.0, "rnn-orth": 2.5, "eurnn": 2.6, "exprnn": 2.31, "nnrnn": 2.20, "lstm": 2.25}}
START = {"copy": 0.3, "psmnist": 0.1, "ptb": 4.5}


def _curve(rng, task: str, level: float, points: int, stuck: bool) -> list[float]:
    start = START[task]
    if stuck:
        return [start * (1 - 0.05 * min(i, 2) / 2) + 0.001 * rng.standard_normal() for i in range(points)]
    shape = np.exp(-np.arange(points) / max(points / 5, 1))
    return [float(level + (start - level) * s + abs(level) * 0.02 * rng.standard_normal()) for s in shape]


def planned(**given) -> grid.PlannedRun:
    """A planned run with only the fields a test gives (the others empty)."""
    empty = {"setting": "", "task": "", "column": "", "label": "", "model": "", "seed": 0, "hidden": 0,
             "preset": None, "options": {}, "budget": 0, "name": ""}
    return grid.PlannedRun(**{**empty, **given})


def write_run(folder: Path, planned: grid.PlannedRun, diverged: bool = False, stuck: bool = False) -> None:
    """One finished (or diverged) run: training points with gradient norms and learning rates, validation points,
    a test record."""
    rng = np.random.default_rng(zlib.crc32(planned.name.encode()))
    folder.mkdir(parents=True, exist_ok=True)
    if diverged:
        (folder / runfolder.DIVERGED_MARKER).write_text("training diverged: synthetic\n")
        (folder / "metrics.jsonl").write_text(json.dumps({"step": 10, "split": "train", "loss": 1.0}) + "\n")
        return
    task, key = planned.task, grid.metric(planned.task)
    level = LEVEL[task].get(planned.model, LEVEL[task]["nnrnn"]) * (1 + 0.01 * rng.standard_normal())
    records, points = [], 12
    for i in range(4 * points):
        norm = float(np.exp(rng.standard_normal()) * (300.0 if planned.seed == 1 and i == 30 else 1.0))
        records.append({"step": 5 * (i + 1), "split": "train", "loss": 1.0, "grad_norm": norm,
                        "lr": 1e-3 / 2 ** (i // 20)})
    curve = _curve(rng, task, level, points, stuck)
    for i, value in enumerate(curve):
        record = {"step": 20 * (i + 1), "split": "valid", key: value}
        if task == "ptb":
            record["accuracy"] = 0.7 - 0.1 * value / 3
        records.append(record)
    test = {"step": 20 * points, "split": "test", key: curve[-1]}
    if task == "ptb":
        test["accuracy"] = 0.7 - 0.1 * curve[-1] / 3
    records.append(test)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / runfolder.WALL_SECONDS).write_text(f"{10 + rng.integers(100)}.0\n")


STRUCTURE = {"copy": 0.02, "psmnist": 0.2, "ptb": 0.4}


def write_structure(made: grid.Grid) -> None:
    """The learned-structure cache of every finished nnRNN run, as if measured from its checkpoint."""
    cache = {}
    for planned in made.planned:
        if planned.model != "nnrnn" or planned.label != "nnrnn":
            continue
        folder = made.run_folder(planned)
        rng = np.random.default_rng(zlib.crc32(folder.name.encode()) + 1)
        base = STRUCTURE[planned.task]
        values = {"triangular_fraction": base + 0.01 * rng.random(), "departure": base + 0.01 * rng.random(),
                  "mean_modulus": 0.99 - base / 10, "angle_concentration": 0.05 + base / 4 * rng.random(),
                  "delay_line": 1 + base + 0.1 * rng.random(), "in_block": 0.01 * rng.random(),
                  "in_block_to_link": 0.5 + rng.random(), "mean_gamma": 0.99 - base / 10}
        cache[folder.name] = {"stamp": "", "quantities": sorted(MEASURED), "values": values}
    made.structure.parent.mkdir(parents=True, exist_ok=True)
    made.structure.write_text(json.dumps(cache, indent=1))


def build(out: Path, scale: str, data_dir=None) -> grid.Grid:
    """Every run of ``scale`` written under ``out/runs``; the grid returned.  Diverged: the RNN's seed 2 in every
    setting; stuck at its start: γ = 1's seed 0."""
    made = planned_grid(out, scale, grid.plan(grids.SCALES[scale], data_dir=data_dir))
    for planned in made.planned:
        folder = made.run_folder(planned)
        if folder.exists():
            continue
        write_run(folder, planned, diverged=planned.model == "rnn" and planned.seed == 2,
                  stuck=planned.label.endswith("γ=1") and planned.seed == 0)
    write_structure(made)
    return made
