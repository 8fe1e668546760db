"""What ``state_noise`` costs a training update: forward and backward of each model with σ > 0 against the same
model with σ = 0, measured in the same process, the two alternating, the median of the rounds after a warm-up
(docs/design.md, "Noise in the state").  The non-gated models keep their fused loops (the noise is one more input);
the LSTM and the GRU leave torch's kernels for their Python reference loops.

    python benchmarks/state_noise.py --steps 220 --batch 10 --hidden 128 --rounds 7 --models nnrnn,lstm
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import nnrnn


def update_seconds(model, x) -> float:
    start = time.perf_counter()
    out, _ = model(x)
    out.square().sum().backward()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=220, help="sequence length (copy at T = 200: 220)")
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--inputs", type=int, default=10)
    parser.add_argument("--sigma", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds; the first is a warm-up")
    parser.add_argument("--models", default="nnrnn,lstm")
    args = parser.parse_args()
    x = torch.randn(args.steps, args.batch, args.inputs)
    print(f"{args.steps} steps, batch {args.batch}, hidden {args.hidden}, {torch.get_num_threads()} thread(s)")
    print(f"{'model':<14}{'σ = 0 (ms)':>12}{f'σ = {args.sigma} (ms)':>16}{'noisy / quiet':>16}")
    for name in args.models.split(","):
        models = {}
        for sigma in (0.0, args.sigma):
            torch.manual_seed(0)
            models[sigma] = nnrnn.create(name, args.inputs, args.hidden, state_noise=sigma)
        times = {sigma: [] for sigma in models}
        for round_ in range(args.rounds):
            for sigma, model in models.items():
                seconds = update_seconds(model, x)
                if round_:
                    times[sigma].append(seconds)
        quiet, noisy = (statistics.median(times[s] or [float("nan")]) for s in models)
        print(f"{name:<14}{quiet * 1e3:>12.1f}{noisy * 1e3:>16.1f}{noisy / quiet:>16.2f}")


if __name__ == "__main__":
    main()
