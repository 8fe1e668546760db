"""What :mod:`.policy` times for each decision: for every candidate kernel, a call that does the work
that kernel would do at the shape in use, on made-up float32 CPU tensors.  The kernels' own candidates are
built here; a model's parallel scan and its loop come described by the model (:class:`Scanned`), since the
kernels sit below the models.

The tensors come from a generator of their own, so timing leaves torch's global random state (a training
run's) unchanged, and a run that measured draws the same numbers as one that found its choices cached.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from . import loops as loop_kernels
from . import onednn

LOOP_WORK = 1 << 28  # steps × B·N² per timed call of the loops: enough steps that per-call costs weigh as in use
MIN_STEPS, MAX_STEPS = 4, 32
# Projections are timed on at most this many rows: the kernels' time grows with the rows alike, while an output
# of tens of MB comes from fresh pages or reused ones by the allocator's state, which alternating candidates
# change for each other (a (16384 × 512) output measured 6× apart both ways on one host).
PROJECTION_ROWS = 4096


def _random(generator: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=generator).mul_(scale)


def loops(names: list[str], batch: int, n: int, nonlinearity: str | None) -> dict:
    """{name: call}: the fused recurrence's forward and backward (both loops, dV) by each loop implementation,
    over a few steps of (batch × n) states with one input."""
    g = torch.Generator().manual_seed(0)
    steps = max(MIN_STEPS, min(MAX_STEPS, LOOP_WORK // max(1, batch * n * n)))
    x, h0 = _random(g, steps, batch, 1), _random(g, batch, n, scale=0.1)
    w, b = _random(g, n, 1), _random(g, n, scale=0.1)
    v = _random(g, n, n, scale=0.9 / n ** 0.5)  # a spectral radius below 1: the states stay finite
    mb = _random(g, n, scale=0.01) if nonlinearity == "modrelu" else None
    grad = _random(g, steps, batch, n)

    projected = torch.nn.functional.linear(x, w, b)  # the same for every candidate: left out of the timing

    def timed(name):
        def call():
            h = projected.clone()
            loop_kernels.forward_loop(h, h0, v, nonlinearity, mb, name)
            loop_kernels.backward(grad, h, h0, v, nonlinearity, name, need_v=True, need_modrelu_bias=mb is not None)
        return call
    return {name: timed(name) for name in names}


def products(names: list[str], m: int, k: int, n: int) -> dict:
    """{name: call}: a @ b and its backward through autograd, as composing V runs them: by torch.mm, or by
    kernels.matmul's oneDNN function (whose Python autograd node costs more per call than torch.mm's)."""
    g = torch.Generator().manual_seed(0)
    a, b, grad = _random(g, m, k).requires_grad_(), _random(g, k, n).requires_grad_(), _random(g, m, n)
    products = {"torch": torch.mm, "onednn": onednn.MatMul.apply}

    def timed(product):
        def call():
            with torch.enable_grad():
                product(a, b).backward(grad)
            a.grad = b.grad = None
        return call
    return {name: timed(products[name]) for name in names}


def projections(names: list[str], rows: int, k: int, m: int, weight_contiguous: bool) -> dict:
    """{name: call}: x Wᵀ for x (rows × k) and W (m × k), W a transposed view where the decision is for one,
    by torch's linear or oneDNN."""
    g = torch.Generator().manual_seed(0)
    x = _random(g, min(rows, PROJECTION_ROWS), k)
    weight = _random(g, m, k) if weight_contiguous else _random(g, k, m).t()
    op = onednn.kernel()
    calls = {"torch": lambda: torch.nn.functional.linear(x, weight).contiguous(),
             "onednn": lambda: op(x, weight, None, "none", [], "")}
    return {name: calls[name] for name in names}


@dataclasses.dataclass(frozen=True)
class Scanned:
    """A model's linear recurrence that runs by a parallel scan over time or by its step-by-step loop, described
    to the policy (which sits below the models and imports none of them).

    ``kind``: the model's name ("lru"), part of the decision's key; ``crossover``: batch × state width at and below
    which the scan beat the loop on a CPU (the fixed rule, docs/performance.md "Parallel scans"); ``runs``:
    {"scan": f, "loop": f}, the two functions, each f(*inputs) -> a tensor or a tuple of tensors; ``inputs``:
    inputs(generator, steps, batch, width) -> the made-up float32 inputs of f for a state of ``width`` real
    features.  Without ``runs`` the fixed rule decides (nothing to time)."""
    kind: str
    crossover: int
    runs: dict[str, Callable] | None = None
    inputs: Callable[[torch.Generator, int, int, int], tuple] | None = None


SCAN, LOOP = "scan", "loop"


def scans(scanned: Scanned, names: list[str], steps: int, batch: int, width: int) -> dict:
    """{name: call}: the forward and backward of ``scanned``'s scan or loop over ``steps`` steps of (batch × width)
    states, as a training update runs them."""
    made = [t.requires_grad_() if t.is_floating_point() else t
            for t in scanned.inputs(torch.Generator().manual_seed(0), steps, batch, width)]

    def timed(run):
        def call():
            with torch.enable_grad():
                out = run(*made)
                sum(o.sum() for o in (out if isinstance(out, tuple) else (out,))).backward()
            for t in made:
                t.grad = None
        return call
    return {name: timed(scanned.runs[name]) for name in names}
