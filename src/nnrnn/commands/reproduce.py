"""``nnrnn reproduce --scale SCALE``: run the paper's grid at a scale and write its report."""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from ..errors import UserError
from ..experiments.grids import SCALES
from ..experiments.reporting import compact
from ..experiments.planning.cluster import CONNECT_TIMEOUT_S
from ..experiments.reproduce import regenerate, reproduce
from ..models import MODELS
from ..training import runlock


# what Ray reads as a cluster's address: auto, local, HOST:PORT, or a client's ray://HOST[:PORT]
_ADDRESS = re.compile(r"(?:ray://(?P<client>[^\s:/]+)(?::(?P<client_port>\d+))?|(?P<host>[^\s:/]+):(?P<port>\d+))")


def cluster_address(value: str) -> str:
    """``--cluster``'s value, checked where it is parsed: Ray refuses anything else with a ValueError traceback
    (an empty or spaced address), or waits on it."""
    match = _ADDRESS.fullmatch(value)
    ports = [int(p) for p in (match.group("port"), match.group("client_port")) if p] if match else []
    if value in ("auto", "local") or (match and all(0 < port < 65536 for port in ports)):
        return value
    raise argparse.ArgumentTypeError(f"{value!r} is not a cluster's address; give auto (the cluster this "
                                     f"machine joined), local (a new one here) or HOST:PORT of its head "
                                     f"(e.g. 10.0.0.5:6379)")


def add_arguments(p) -> None:
    p.description = ("Train a scale's grid of runs (tasks × models × seeds, in the columns fixed hidden units, fixed "
                    "parameter count and, for some scales, tuned), then write OUT/report.md judging the paper's "
                    "claims, with its tables and figures. Stopped at any moment, the same command continues: "
                    "finished runs are kept, interrupted ones resume. See docs/training.md.")
    p.add_argument("--scale", default="cpu", choices=list(SCALES),
                   help="; ".join(spec.about for spec in SCALES.values() if spec.about))
    p.add_argument("--out", default=None, help="folder (default runs/reproduce-SCALE)")
    every_task = sorted({task for spec in SCALES.values() for task in spec.tasks})
    p.add_argument("--tasks", nargs="+", choices=every_task, help="only these tasks (default: the scale's)")
    p.add_argument("--models", nargs="+", choices=list(MODELS), help="only these models (default: the scale's)")
    p.add_argument("--seeds", nargs="+", type=int, help="only these seeds (default: the scale's)")
    p.add_argument("--data-dir", dest="data_dir", help="folder with the MNIST and PTB files (docs/data.md)")
    p.add_argument("--jobs", type=int, default=1, help="on a CPU: runs trained at once, one thread each (default 1)")
    p.add_argument("--devices", nargs="+", help="the devices runs train on, each run on one of its own (cuda:0 "
                   "cuda:1 ..., or cpu; default: every visible GPU, else the CPU)")
    p.add_argument("--runs-per-device", dest="runs_per_device", type=int, help="runs trained at once on each "
                   "device (default 1 on a GPU; on the CPU it replaces --jobs)")
    p.add_argument("--cluster", type=cluster_address,
                   help="train the runs and searches as tasks of a Ray cluster: auto (the cluster this "
                   f"machine joined), its ADDRESS (HOST:PORT; nothing answering there within {CONNECT_TIMEOUT_S} s "
                   "is an error), or local (a cluster started on this machine for the grid); --out must be on a "
                   "filesystem every node sees (pip install 'nnrnn[ray]'; docs/training.md)")
    p.add_argument("--plan", dest="plan_only", action="store_true", help="print the grid's runs, trials and "
                   "estimated cost (device-hours, wall time) and train nothing")
    p.add_argument("--from-data", dest="from_data", help="write OUT/report.md again from a grid's compact data "
                   "(the data.json beside its report) alone, training nothing")
    p.add_argument("--runs", dest="runs_dir", help="keep the run folders in this folder instead of OUT/runs, to "
                   "share finished runs between grids that have runs in common")


# the keys of a grid's compact data (nnrnn.experiments.reporting.compact) that writing its report again reads
COMPACT_KEYS = ("scale", "date", "runs", "analysis", "structure", "folders")


def check_compact(path: Path) -> None:
    """UserError unless ``path`` holds a grid's compact data: a JSON object with :data:`COMPACT_KEYS`, of a scale
    nnrnn knows."""
    if not path.is_file():
        raise UserError(f"no compact data at {path}; give the data.json beside a grid's report")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{path} is not a grid's compact data ({error}); give the data.json beside a grid's "
                        f"report") from None
    missing = [key for key in COMPACT_KEYS if key not in data] if isinstance(data, dict) else list(COMPACT_KEYS)
    if missing or not isinstance(data["scale"], str) or data["scale"] not in SCALES:
        what = f"it lacks {', '.join(missing)}" if missing else f"unknown scale {data['scale']!r}"
        raise UserError(f"{path} is not a grid's compact data ({what}); give the data.json beside a grid's report")
    what = compact.problem(data, SCALES[data["scale"]].settings)  # its parts' types, and runs of this scale's own
    if what:
        raise UserError(f"{path} is not a grid's compact data ({what}); give the data.json beside a grid's report")


def main(args) -> int:
    if args.from_data:
        check_compact(Path(args.from_data))
        out = Path(args.out or f"runs/reproduce-{args.scale}")
        with runlock.hold(out):  # a grid still writing into --out would interleave its report with this one
            report = regenerate(Path(args.from_data), out, args.data_dir)
        print(f"report: {report}")
        return 0
    reproduce(args.scale, args.out or f"runs/reproduce-{args.scale}", args.models, args.tasks, args.seeds,
              args.data_dir, jobs=args.jobs, runs_dir=args.runs_dir, devices=args.devices,
              runs_per_device=args.runs_per_device, cluster=args.cluster, plan_only=args.plan_only)
    return 0
