"""The kernel policy on this machine: each candidate kernel's time per decision, the policy's choice, and what the
measured policy buys over the fixed thresholds in whole training updates.

Part 1 (leave it out with ``--no-candidates``): for each of ``--sizes``, the shape-dependent decisions of an
nnRNN training update (the loops, the N × N products of composing V, the input projection and the input's
gradient), each candidate timed at the size in one process, alternating, median of ``--rounds`` rounds (more
than the policy's own few tenths of a second), next to the fixed thresholds' choice and the measured policy's
(nnrnn.kernels.tuning.pick on these medians).  ``thr / chosen`` is the thresholds' choice's time over the
chosen one's: above 1 where measuring gains.

Part 2 (leave it out with ``--no-updates``): whole nnRNN training updates (training_update.py's: forward,
read-out and loss at every step, penalty, backward, RMSprop) with the thresholds' policy and with the measured
one, and torch.nn.RNN(relu)'s, alternating in one process, median of ``--repeats`` rounds after a warm-up
(during which the measured policy times its decisions), as ratios to torch.nn.RNN(relu); and the median over
rounds of the ratio measured / thresholds of the two updates run back to back, which a busy machine's drift
moves less.

Usage::

    python benchmarks/kernel_policy.py                                   # the bar sizes, both parts
    python benchmarks/kernel_policy.py --sizes 100x64x256x1 --no-updates --rounds 5
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

from training_update import BASELINE, SIZES, Update, implementations, parse_sizes  # noqa: E402

from nnrnn.kernels import candidates as kernel_candidates  # noqa: E402
from nnrnn.kernels import policy as kernel_policy  # noqa: E402
from nnrnn.kernels import settings as kernel_settings  # noqa: E402
from nnrnn.kernels import tuning as kernel_tuning  # noqa: E402
from nnrnn.kernels.host import describe_cpu  # noqa: E402

BAR = "copy,medium,psmnist,large"


def policies():
    """(the thresholds' policy, the measured policy) for float32 on the CPU, the environment's other settings."""
    settings = kernel_settings.current()
    fixed = kernel_policy.KernelPolicy("cpu", torch.float32, dataclasses.replace(settings, tune=False))
    measured = kernel_policy.KernelPolicy("cpu", torch.float32, dataclasses.replace(settings, tune=True),
                                          remeasure=True)
    return fixed, measured


def decisions(policy, size):
    """(what, bucket, candidates, the thresholds' decision, runners) of an update at ``size``."""
    t, b, n, i = size
    loops = policy.loop_candidates()
    products = [kernel_policy.TORCH, kernel_policy.ONEDNN] if policy._onednn_candidate() else [kernel_policy.TORCH]
    return [
        ("loops", loops, policy._loops_threshold(loops, b, n),
         lambda names: kernel_candidates.loops(names, b, n, "modrelu")),
        ("products", products, _threshold(policy, "products", n, n, n),
         lambda names: kernel_candidates.products(names, n, n, n)),
        ("input projection", products, _threshold(policy, "projections", t * b, i, n, True),
         lambda names: kernel_candidates.projections(names, t * b, i, n, True)),
        ("input gradient", products, _threshold(policy, "projections", t * b, n, i, False),
         lambda names: kernel_candidates.projections(names, t * b, n, i, False)),
    ]


def _threshold(policy, method, *shape):
    fresh = kernel_policy.KernelPolicy("cpu", torch.float32, policy.settings)
    chosen = getattr(fresh, method)(*shape)
    return kernel_policy.Decision(kernel_policy.ONEDNN if chosen else kernel_policy.TORCH, "")


def candidate_table(sizes, rounds):
    fixed, _ = policies()
    print("| size | decision | " + "median ms per candidate | thresholds | measured | thr / chosen |")
    print("|---|---|---|---|---|---|")
    for _, size in sizes:
        for what, names, threshold, runners in decisions(fixed, size):
            if len(names) < 2:
                continue
            seconds = _rounds(runners(names), rounds)
            chosen = kernel_tuning.pick(seconds, threshold.choice)
            times = ", ".join(f"{name} {1e3 * s:.3g}" for name, s in sorted(seconds.items(), key=lambda x: x[1]))
            print(f"| {size} | {what} | {times} | {threshold.choice} | {chosen} | "
                  f"{seconds[threshold.choice] / seconds[chosen]:.2f} |", flush=True)


def _rounds(runners, rounds):
    """Each candidate's median over ``rounds`` alternating rounds after one warm-up call each."""
    names = list(runners)
    times = {name: [] for name in names}
    with torch.no_grad():
        for name in names:
            runners[name]()
        for r in range(rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                start = time.perf_counter()
                runners[name]()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def update_table(sizes, repeats, model):
    fixed, measured = policies()
    build = implementations()
    print(f"\n| (T, B, N, I) | torch.nn.RNN(relu) | {model}, thresholds | {model}, measured | measured / thresholds | "
          "same, per round |")
    print("|---|---|---|---|---|---|")
    shown = set()  # decisions printed already: a later size reuses those of its buckets
    for _, size in sizes:
        torch.manual_seed(0)
        jobs = {"rnn": (Update(build[BASELINE][0], size), fixed), "fixed": (Update(build[model][0], size), fixed),
                "measured": (Update(build[model][0], size), measured)}
        times = {name: [] for name in jobs}
        names = list(jobs)
        for r in range(repeats + 1):  # round 0: the warm-up, where the measured policy times its decisions
            for name in (names if r % 2 == 0 else names[::-1]):  # the two policies' updates back to back
                update, policy = jobs[name]
                kernel_policy.install(policy)
                start = time.perf_counter()
                update()
                if r:
                    times[name].append(time.perf_counter() - start)
        med = {name: statistics.median(values) for name, values in times.items()}
        # the two policies' updates of one round ran back to back: their ratio drifts less with the load
        paired = statistics.median(m / f for m, f in zip(times["measured"], times["fixed"]))
        print(f"| {size} | 1.00 ({1e3 * med['rnn']:.0f} ms) | {med['fixed'] / med['rnn']:.2f} | "
              f"{med['measured'] / med['rnn']:.2f} | {med['measured'] / med['fixed']:.2f} | {paired:.2f} |",
              flush=True)
        for key, made in measured.decisions.items():
            if key not in shown:
                print(f"  measured policy: {key} = {made.choice} ({made.reason})")
                shown.add(key)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=BAR, help=f"comma-separated {', '.join(SIZES)} or TxBxNxI "
                                                    f"(default {BAR})")
    parser.add_argument("--rounds", type=int, default=15, help="rounds per candidate in part 1 (default 15)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds of whole updates in part 2 (default 5)")
    parser.add_argument("--model", default="nnrnn", help="the model of part 2 (training_update.py's names)")
    parser.add_argument("--no-updates", action="store_true", help="part 1 only")
    parser.add_argument("--no-candidates", action="store_true", help="part 2 only")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sizes = parse_sizes(args.sizes)
    print(f"{describe_cpu()}, {torch.backends.cpu.get_cpu_capability()}; torch {torch.__version__}, "
          f"{args.threads} thread(s)\n", flush=True)
    if not args.no_candidates:
        candidate_table(sizes, args.rounds)
    if not args.no_updates:
        update_table(sizes, args.repeats, args.model)


if __name__ == "__main__":
    main()
