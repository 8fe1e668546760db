"""What ``nnrnn kernels`` prints: the kernel policy of this host whole, with the reason for each choice; with
``--tune SIZES`` the decisions a training update at each size makes, timed now; with ``--retune`` every decision
the timings cache holds for this host, timed again, beside what it said (docs/performance.md).  A scan's decision
is timed again by its model's description (:class:`.candidates.Scanned`), which the caller passes: the kernels
import no model."""
from __future__ import annotations

import dataclasses

import torch

from . import extension, host, onednn, tuning
from . import policy as kernel_policy
from .candidates import Scanned
from . import settings as kernel_settings

# The sizes of docs/performance.md's bar, by name: (T, B, N, I)
NAMED_SIZES = {"copy": (220, 10, 128, 10), "medium": (100, 128, 512, 1), "psmnist": (784, 128, 512, 1),
               "large": (150, 128, 1024, 200)}


def parse_sizes(text: str) -> list[tuple[int, int, int, int]]:
    """``copy,medium`` or ``100x128x512x1`` (T×B×N×I; I defaults to 1), comma-separated; ValueError otherwise."""
    sizes = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if part in NAMED_SIZES:
            sizes.append(NAMED_SIZES[part])
            continue
        fields = part.lower().split("x")
        if len(fields) not in (3, 4) or not all(f.isdigit() and int(f) > 0 for f in fields):
            raise ValueError(f"a size is one of {', '.join(NAMED_SIZES)} or TxBxN[xI] with positive whole "
                             f"numbers, not {part!r}")
        sizes.append(tuple(int(f) for f in fields) + ((1,) if len(fields) == 3 else ()))
    if not sizes:
        raise ValueError("--tune needs at least one size")
    return sizes


def table(rows: list[tuple[str, str, str]], head=("decision", "choice", "why")) -> list[str]:
    return [f"| {' | '.join(head)} |", "|" + "---|" * len(head)] + [f"| {' | '.join(row)} |" for row in rows]


def lines() -> list[str]:
    """The header and the CPU float32 policy's table, as ``nnrnn kernels`` prints them."""
    loops = extension.recurrence_loops()
    built = (f"yes (cached in {extension.extensions_dir()})" if loops
             else f"no, Python loops instead ({extension.loops_unavailable_reason()})")
    out = [f"{host.describe_cpu()}, CPU capability {torch.backends.cpu.get_cpu_capability()}",
           f"torch {torch.__version__}, {torch.get_num_threads()} threads",
           f"compiled recurrence loops: {built}",
           "oneDNN products: " + ("available" if onednn.kernel() is not None else "no usable oneDNN kernel here"),
           f"timings cache: {tuning.cache_path()}"
           + (f" (cannot be written: {tuning.write_error()})" if tuning.write_error() else ""), ""]
    policy = kernel_policy.policy("cpu", torch.float32)
    return out + [f"kernel policy, {policy.name}:"] + table(policy.describe())


def tune(sizes: list[tuple[int, int, int, int]]) -> list[str]:
    """Time every shape-dependent decision a training update at each size makes (loops, N × N products, input
    projection and input gradient), whatever the cache holds, store the results, and return the table."""
    settings = dataclasses.replace(kernel_settings.current(), tune=True)
    policy = kernel_policy.KernelPolicy("cpu", torch.float32, settings, remeasure=True)
    rows = []
    for t, b, n, i in sizes:
        decisions = (("loops", lambda: policy.loops(b, n, "modrelu")),
                     ("products", lambda: policy.products(n, n, n)),
                     ("input projection", lambda: policy.projections(t * b, i, n, True)),
                     ("input gradient", lambda: policy.projections(t * b, n, i, False)))
        for what, decide in decisions:
            before = set(policy.decisions)
            decide()
            for key in [k for k in policy.decisions if k not in before]:
                made = policy.decisions[key]
                times = tuning.format_times(made.times_ms) if made.times_ms else "not timed"
                how = ("thresholds' choice, the timing not trusted: " + made.untrusted if made.untrusted
                       else made.reason.split(" (")[0])
                rows.append((f"({t}, {b}, {n}, {i})", what, key, made.choice, times, how))
    head = ("size", "decision", "bucket", "choice", "median times", "how")
    return table(rows, head)


def _decide(policy: kernel_policy.KernelPolicy, bucket: str, scanned: dict[str, Scanned]):
    """A call that makes ``policy``'s decision for a cache entry's ``bucket`` key ("loops relu B8 N128",
    "products M512 K512 N512", "projections R4096 K1 M128 transposed", "scan nnlru T1024 B128 W64", the last by
    ``scanned[kind]``), or None for a key of another kind or a scan not in ``scanned``."""
    words = bucket.split()
    sizes = {w[0]: int(w[1:]) for w in words[1:] if w[:1].isupper() and w[1:].isdigit()}
    if words[0] == "loops" and len(words) == 4:
        nonlinearity = None if words[1] == "None" else words[1]
        return lambda: policy.loops(sizes["B"], sizes["N"], nonlinearity)
    if words[0] == "products" and len(sizes) == 3:
        return lambda: policy.products(sizes["M"], sizes["K"], sizes["N"])
    if words[0] == "projections" and len(sizes) == 3:
        return lambda: policy.projections(sizes["R"], sizes["K"], sizes["M"], words[-1] != "transposed")
    if words[0] == "scan" and len(words) == 5 and words[1] in scanned and len(sizes) == 3:
        return lambda: policy.scan(scanned[words[1]], sizes["T"], sizes["B"], sizes["W"])
    return None


def retune(scanned: tuple[Scanned, ...] = ()) -> list[str]:
    """Time again every decision the cache holds for this CPU, torch and thread count, store what can be trusted,
    and return the table of what each entry said and what it says now; a scan's by its description in
    ``scanned`` (the models' recurrences, which the command passes)."""
    by_kind = {s.kind: s for s in scanned}
    settings = dataclasses.replace(kernel_settings.current(), tune=True)
    policy = kernel_policy.KernelPolicy("cpu", torch.float32, settings, remeasure=True)
    prefix = tuning.cache_key(policy.name, "")
    rows = []
    for key, entry in sorted(tuning.entries().items()):
        ours = key.startswith(prefix) and isinstance(entry, dict)
        decide = _decide(policy, key[len(prefix):], by_kind) if ours else None
        if decide is None:
            continue
        bucket = key[len(prefix):]
        decide()
        made = policy.decisions[bucket]
        before = f"{entry.get('choice')} ({entry.get('date', 'no date')})"
        change = ("not stored: " + made.untrusted if made.untrusted else
                  "changed" if made.choice != entry.get("choice") else "same")
        times = tuning.format_times(made.times_ms) if made.times_ms else "not timed"
        rows.append((bucket, before, made.choice, times, change))
    if not rows:
        return ["the timings cache holds no decision for this CPU, torch version and thread count"]
    return table(rows, ("bucket", "cached (date)", "now", "median times now", "what changed"))
