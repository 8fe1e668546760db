"""``nnrnn runs FOLDER...``: a table of the run folders in folders."""
from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..tasks import task_class
from ..training.runlog import find_runs, run_summary
from .presets import format_table


def add_arguments(p) -> None:
    p.description = ("A table of the run folders in FOLDER (and below it): task, model, hidden units, updates done, "
                     "best validation score, test score and whether it finished.")
    p.add_argument("folders", nargs="+", metavar="FOLDER", help="a folder of runs, such as runs, or a run folder")


def main(args) -> int:
    rows = []
    for folder in args.folders:
        if not Path(folder).is_dir():
            raise UserError(f"no folder {folder}; give folders that hold run folders (such as runs)")
        for found in find_runs(Path(folder)):
            try:
                summary = run_summary(found, lambda task: task_class(task).monitor)
            except UserError as error:  # one damaged run is a row saying so, not the end of the listing
                rows.append([str(found), *["-"] * 6, f"unreadable: {error}"])
                continue
            rows.append([str(found), summary["task"], summary["model"], str(summary["hidden"]),
                         str(summary["step"]), summary["best"], summary["test"], summary["status"]])
    if not rows:
        raise UserError(f"no runs in {', '.join(args.folders)} (a run folder holds config.json and metrics.jsonl)")
    print("\n".join(format_table(["run", "task", "model", "hidden", "updates", "best validation", "test",
                                   "status"], rows)))
    return 0
