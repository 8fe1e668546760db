"""What ``import nnrnn`` costs beyond ``import torch``: fresh processes that import torch alone and torch then
nnrnn, alternating, each timing its own imports; medians (docs/performance.md, "Import").

    python benchmarks/import_time.py [--rounds 11] [--src src]

Each process times ``import torch`` and then ``import nnrnn`` with ``time.perf_counter`` around the statements, so
the interpreter's own start is left out; the difference of the medians is nnrnn's share.  It also lists the
compiler machinery (torch._dynamo, torch._inductor) that the import loaded, which should be none.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys, time
start = time.perf_counter()
import torch
torch_s = time.perf_counter() - start
nnrnn_s = None
if {with_nnrnn}:
    start = time.perf_counter()
    import nnrnn
    nnrnn_s = time.perf_counter() - start
print(json.dumps({{"torch": torch_s, "nnrnn": nnrnn_s,
                  "compiler": sorted(m for m in ("torch._dynamo", "torch._inductor") if m in sys.modules)}}))
"""


def probe(with_nnrnn: bool, src: str) -> dict:
    env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", PROBE.format(with_nnrnn=with_nnrnn)], capture_output=True, text=True,
                         env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"),
                        help="the source tree to import nnrnn from")
    args = parser.parse_args()
    probe(True, args.src)  # warm the file cache and the bytecode
    alone, together, extra, compiler = [], [], [], set()
    for r in range(args.rounds):
        for with_nnrnn in ((False, True) if r % 2 == 0 else (True, False)):
            result = probe(with_nnrnn, args.src)
            (together if with_nnrnn else alone).append(result["torch"])
            if with_nnrnn:
                extra.append(result["nnrnn"])
                compiler.update(result["compiler"])
    print(json.dumps({"rounds": args.rounds, "import torch s": round(statistics.median(alone), 3),
                      "import nnrnn after torch s": round(statistics.median(extra), 3),
                      "compiler modules": sorted(compiler)}))
    print(f"nnrnn beyond torch: {statistics.median(extra):.3f} s (median of {args.rounds}; import torch "
          f"{statistics.median(alone):.3f} s), {statistics.median(extra) / statistics.median(alone):.2f} of torch's")


if __name__ == "__main__":
    main()
