"""Mutation score per module from a finished `mutmut run`, and the surviving mutants.

Reads mutmut's result files (``mutants/<path>.meta``, one per mutated source file) in the current
folder.  A mutant counts as killed when a test failed on it (or timed out: the mutation made the code
loop); the score is killed / (killed + survived).  Mutants no selected test reaches ("no tests") are
listed separately: no test could kill them.

Usage (from the repository root, after ``mutmut run``; ``make mutate`` does both)::

    python tools/mutation_report.py            # the table and the survivors' names
    python tools/mutation_report.py --diffs    # each survivor's diff too (``mutmut show``)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

KILLED = {1, 3, 24, 36, 152, 255, -24}  # test failures and timeouts (mutmut's exit codes)
SURVIVED = {0}
NO_TESTS = {5, 33}


def results(root: Path) -> dict[str, dict[str, int | None]]:
    """{source path: {mutant name: exit code or None}}."""
    found = {}
    for meta in sorted((root / "mutants").rglob("*.meta")):
        data = json.loads(meta.read_text())
        source = str(meta.relative_to(root / "mutants"))[:-len(".meta")]
        found[source] = data.get("exit_code_by_key", {})
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--diffs", action="store_true", help="print each survivor's diff (mutmut show)")
    args = parser.parse_args(argv)
    found = results(Path.cwd())
    if not found:
        print("no mutmut results in ./mutants; run `mutmut run` (or `make mutate`) first", file=sys.stderr)
        return 2
    print(f"{'module':40s} {'mutants':>8s} {'killed':>7s} {'survived':>9s} {'no tests':>9s} "
          f"{'unchecked':>10s} {'score':>6s}")
    survivors, totals = [], Counter()
    for source, codes in found.items():
        count = Counter("killed" if c in KILLED else "survived" if c in SURVIVED else "no tests" if c in NO_TESTS
                        else "unchecked" if c is None else "other" for c in codes.values())
        totals.update(count)
        decided = count["killed"] + count["survived"]
        score = f"{count['killed'] / decided:6.1%}" if decided else "   n/a"
        print(f"{source:40s} {len(codes):8d} {count['killed']:7d} {count['survived']:9d} {count['no tests']:9d} "
              f"{count['unchecked']:10d} {score}")
        survivors += [name for name, c in codes.items() if c in SURVIVED]
    decided = totals["killed"] + totals["survived"]
    print(f"{'all':40s} {sum(totals.values()):8d} {totals['killed']:7d} {totals['survived']:9d} "
          f"{totals['no tests']:9d} {totals['unchecked']:10d} {totals['killed'] / max(decided, 1):6.1%}")
    print(f"\n{len(survivors)} surviving mutant(s):")
    for name in survivors:
        print(f"  {name}")
        if args.diffs:
            diff = subprocess.run(["mutmut", "show", name], capture_output=True, text=True).stdout
            print("    " + diff.replace("\n", "\n    "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
