"""A grid's compact data: everything its report is computed from, in one file beside the report (``data.json``), so
that anyone can compute the report again without the run folders.

Per run folder: whether it finished or diverged, its wall time, the configuration it trained with (its config.json
less the machine's folders; data written before 2026-12-02 holds none) and its metrics records cut to what the report
reads (every validation and test record; of the training records the update, the gradient norm and the learning
rate); per trained model the learned-structure statistics the claims use (``analysis/structure.json``); the
plan (every run's options), the rules the grid recorded when it started, the picks of a tuned column and its
searches' trials, the update times a modern report measured, the date and the lines of the first seeds' analysis
figures.  :func:`materialize` writes the run folders back from it (metrics
only, no checkpoints); :func:`nnrnn.experiments.reproduce.regenerate` writes the report from them.
A run folder's mechanism record (``mechanism.json``, :mod:`nnrnn.analysis.mechanism`) travels beside its records,
where it has one.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from ...analysis.mechanism import read_record
from ...tasks import TASKS
from ...training.runfolder import CONFIG, DIVERGED_MARKER, MECHANISM, WALL_SECONDS
from .collect import STRUCTURE, probe_norms, saved_config
from ..planning.grid import TRIALS, Grid, GridFolder, PlannedRun, diverged, finished, metrics, write_whole

TRAIN_KEYS = ("step", "split", "grad_norm", "lr")  # what the report reads of a training record
# files beside every tuned grid's report that it reads whole: the searches' trials (a grid's own, measured while it
# ran, are its Report's files)
FILES = (TRIALS,)


def _records(folder: Path) -> list[dict]:
    kept = []
    for record in metrics(folder):
        if record.get("split") == "train":
            record = {k: v for k, v in record.items() if k in TRAIN_KEYS}
        kept.append(record)
    return kept


def _folder(folder: Path) -> dict:
    wall = folder / WALL_SECONDS
    entry = {"diverged": diverged(folder), "finished": finished(folder),
             "wall_seconds": float(wall.read_text()) if wall.is_file() else None,
             "records": _records(folder)}
    config = saved_config(folder)
    if config is not None:  # what the run trained with, which the settings tables read (collect.ran_config)
        entry["config"] = config
    record = read_record(folder)
    if record is not None:  # only where a run measured it, so that data written before records stays as it was
        entry["mechanism"] = record
    return entry


def write_data(grid: Grid) -> Path:
    """``OUT/data.json``: the compact data of a grid's report (see the module's docstring)."""
    out = grid.out
    folders = {grid.run_folder(r).name: grid.run_folder(r) for r in grid.planned}
    structure = grid.structure
    cache = json.loads(structure.read_text()) if structure.is_file() else {}
    plan = grid.plan_record
    tuned = grid.tuned
    searches = sorted(p.name for p in grid.searches.iterdir()) if grid.searches.is_dir() else []
    notes = grid.notes
    data = {"scale": grid.scale, "date": grid.date, "runs": [r.as_dict() for r in grid.planned],
            "analysis": grid.analysis_lines,
            "notes": notes.read_text() if notes.is_file() else None,
            "plan": json.loads(plan.read_text()) if plan.is_file() else None,
            "tuned": json.loads(tuned.read_text()) if tuned.is_file() else None, "searches": searches,
            "structure": {name: entry["values"] for name, entry in cache.items() if name in folders},
            "probes": {task: norms for task in TASKS if (norms := probe_norms(grid, task)) is not None},
            "files": {name: json.loads((out / name).read_text()) for name in (*FILES, *grid.spec.report.files)
                      if (out / name).is_file()},
            "folders": {name: _folder(folder) for name, folder in sorted(folders.items())}}
    path = grid.data
    write_whole(path, json.dumps(data, separators=(",", ":")) + "\n")  # in plan order: options keep their order
    return path


def problem(data: dict, settings) -> str:
    """What makes ``data`` (a JSON object holding the compact data's keys) no compact data of a grid whose settings
    are ``settings`` ("" where nothing does): a part of another type, a run of another grid (a setting the scale has
    not, a folder the data does not hold), or no runs at all (its report would say "all 0 runs finished")."""
    def table_of(key, kind):
        value = data.get(key)
        return isinstance(value, dict) and all(isinstance(v, kind) for v in value.values())
    if not isinstance(data.get("date"), str):
        return "its date is not text"
    if not (isinstance(data.get("analysis"), list) and all(isinstance(line, str) for line in data["analysis"])):
        return "its analysis is not a list of lines"
    if not table_of("structure", dict) or not table_of("folders", dict):
        return "its structure and folders are not tables of run folders"
    runs = data.get("runs")
    fields = set(PlannedRun.stored())
    if not isinstance(runs, list) or not all(isinstance(r, dict) and set(r) <= fields and
                                             fields - {"extra"} <= set(r) and isinstance(r["options"], dict)
                                             and isinstance(r["name"], str) for r in runs):
        return "its runs are not a list of planned runs"
    if not runs:
        return "it holds no runs"
    foreign = sorted({r["setting"] for r in runs if r["setting"] not in settings}, key=str)
    if foreign:
        return f"its runs are of {', '.join(map(str, foreign))}, which the scale {data['scale']!r} has not"
    missing = sorted(r["name"] for r in runs if r["name"] not in data["folders"])
    if missing:
        return f"it holds no folder of the run {missing[0]}"
    for name, entry in data["folders"].items():
        if not (isinstance(entry.get("records"), list) and all(isinstance(r, dict) for r in entry["records"])
                and isinstance(entry.get("diverged"), bool)
                and (entry.get("wall_seconds") is None or isinstance(entry["wall_seconds"], (int, float)))
                and isinstance(entry.get("config", {}), dict)):
            return f"its folder {name} is not a run's records"
    return ""


def materialize(data: dict, out: Path, data_dir=None) -> list[PlannedRun]:
    """Write ``data``'s run folders (metrics.jsonl, DIVERGED, wall_seconds, config.json), structure cache, plan and
    picks into ``out``; return its plan, with ``data_dir`` (when given) as every run's data folder."""
    grid = GridFolder(Path(out))
    out = grid.out
    for name, entry in data["folders"].items():
        folder = grid.runs / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in entry["records"]))
        if entry["diverged"]:
            (folder / DIVERGED_MARKER).write_text("diverged (from the grid's compact data)\n")
        if entry["wall_seconds"] is not None:
            (folder / WALL_SECONDS).write_text(f"{entry['wall_seconds']}\n")
        if entry.get("config") is not None:
            (folder / CONFIG).write_text(json.dumps(entry["config"], indent=1))
        if entry.get("mechanism") is not None:  # .get: data written before runs recorded their mechanism
            (folder / MECHANISM).write_text(json.dumps(entry["mechanism"], indent=1))
    # no checkpoints here: an entry stamped "" is what the report's cache holds for a folder without them
    cache = {name: {"stamp": "", "quantities": sorted(STRUCTURE), "values": values}
             for name, values in data["structure"].items()}
    grid.structure.parent.mkdir(parents=True, exist_ok=True)
    grid.structure.write_text(json.dumps(cache, indent=1))
    if data.get("plan"):
        grid.plan_record.write_text(json.dumps(data["plan"], indent=1, sort_keys=True) + "\n")
    if data.get("tuned") is not None:
        grid.tuned.write_text(json.dumps(data["tuned"], indent=1, sort_keys=True) + "\n")
    if data.get("notes") is not None and not grid.notes.is_file():
        grid.notes.write_text(data["notes"])
    for task, norms in data.get("probes", {}).items():
        summary = grid.probe(task)
        if not summary.is_file():  # the first seed's analysis, of which the claims read the probe's norms
            summary.parent.mkdir(parents=True, exist_ok=True)
            summary.write_text(json.dumps({"gradient": {"norms": norms}}))
    for name, content in data.get("files", {}).items():
        (out / name).write_text(json.dumps(content, indent=1, sort_keys=True) + "\n")
    for name in data.get("searches", []):
        (grid.searches / name).mkdir(parents=True, exist_ok=True)
    planned = data["runs"]
    if data_dir is not None:
        planned = [{**r, "options": {**r["options"], "data_dir": str(data_dir)}} if "data_dir" in r["options"] else r
                   for r in planned]
    return [PlannedRun(**r) for r in planned]
