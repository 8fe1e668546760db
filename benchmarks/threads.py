"""Oversubscription: one training update of torch.nn.LSTM and torch.nn.GRU with 2 threads against 1, in one
process, the two settings alternating, medians (docs/training.md, "Threads").

    python benchmarks/threads.py [--threads 2] [--rounds 9]

On a machine whose cores other work keeps busy, more threads than free cores make every step wait for a thread
the operating system has set aside; the ratio printed is then well above 1.  The load average is printed beside
it.
"""
import argparse
import os
import statistics
import time

import torch


def update_time_ratio(cls, threads: int, rounds: int) -> float:
    """Median time of an update with ``threads`` threads over the median with one."""
    torch.manual_seed(0)
    x = torch.randn(200, 10, 10)
    model = cls(10, 128)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-4)

    def update():
        out, _ = model(x)
        optimizer.zero_grad()
        out.pow(2).mean().backward()
        optimizer.step()
    times = {1: [], threads: []}
    for n in times:  # warm-up, each setting
        torch.set_num_threads(n)
        update()
    for r in range(rounds):
        for n in ((1, threads) if r % 2 == 0 else (threads, 1)):
            torch.set_num_threads(n)
            start = time.perf_counter()
            update()
            times[n].append(time.perf_counter() - start)
    return statistics.median(times[threads]) / statistics.median(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    for name, cls in (("LSTM", torch.nn.LSTM), ("GRU", torch.nn.GRU)):
        ratio = update_time_ratio(cls, args.threads, args.rounds)
        print(f"{name}: an update with {args.threads} threads takes {ratio:.2f}x the time with 1 "
              f"(load average {os.getloadavg()[0]:.1f}, {len(os.sched_getaffinity(0))} cores)", flush=True)


if __name__ == "__main__":
    main()
