"""Time one training update of every recurrent model against torch.nn.RNN(relu), on this machine.

One update = zero_grad, forward over all T steps, linear read-out of every
step's hidden state into C = 10 classes, cross-entropy over all steps (plus
the model's own penalty, e.g. nnRNN's δ Σ(1-γ)² + t_decay ‖T‖², where it has
one), backward, RMSprop step.

All implementations run in ONE process, round-robin (one update of each, in
an order rotated every round, repeated), after one warm-up update each; the
table gives the median.  Columns:

* ``median s``: median seconds per update.
* ``× RNN``: that median divided by torch.nn.RNN(relu)'s.
* ``× LSTM``, ``× GRU``: divided by torch.nn.LSTM's, torch.nn.GRU's at the same size (n/a when ``--only`` leaves
  it out).
* ``[Python loop]``, ``[torch kernel]``: a gated or oscillator model with its compiled loop turned off (what ran
  before the compiled cell loops, and what runs where they do not build), for the before/after ratio in one process.
  ``[Python path]``: the same for the LRU, the nnLRU and minGRU, whose recurrence then runs by its parallel scan or
  its Python loop, as the kernel policy chooses.
* ``[grid]``: the LRU, the nnLRU or minGRU as the memory grid plans it: its paper's depth, each layer as wide as an
  nnRNN of N units' parameter count allows (at the memory size the LRU 6 layers of 11, the nnLRU 6 of 10, minGRU 3
  of 33).
* ``GFLOP``: matmul FLOPs of one update, counted analytically: the recurrence
  (forward 2TBN(N+I), backward dh 2TBN², dV 2TBN², dW_ih 2TBNI; times 4 for
  the LSTM's gates, 3 for the GRUs') and the read-out (6TBNC).  The composition of V from its
  parameters (matrix_exp for nnRNN/expRNN, Givens layers for EURNN) is not
  counted, so those models' fractions understate the work they do.
* ``compose %``: composing V from its parameters and back-propagating a gradient through that
  composition alone (timed right after each update, the same matrices), as a share of the update.
  For nnRNN and expRNN that is the matrix exponential and its adjoint, and for nnRNN the products of
  P (Λ + T) Pᵀ; the rest of the update is the recurrence, the read-out and the optimizer step.
* ``[reference exponential]``: nnRNN or expRNN with P = exp(A) by Paterson–Stockmeyer, the evaluation before the
  Taylor programs of ``nnrnn/parametrizations/taylor_programs.py``, for the before/after ratio in one process.
* ``[dynamic]``: the same model with dynamic trivialization, the base of P moved after every update
  (``dynamic=True`` and ``nnrnn.parametrizations.rebase_``; not the paper's training).
* ``% roof``: achieved GFLOP/s over the roofline, itself measured here as the
  best GFLOP/s of a 2048³ float32 matrix product with the same thread count
  (5 samples at start-up, one more after every round), by the faster of the
  two kernels torch has on CPU: torch.mm (MKL's sgemm) and oneDNN's
  inner-product kernel (what torch.nn.LSTM uses, and nnrnn's fused loop at
  large sizes on CPUs with AVX-512).
* ``peak MB``: peak memory of one update, measured in a subprocess (one per
  size) started with MALLOC_MMAP_THRESHOLD_ fixed, so that freed tensors go
  back to the OS, and MKL_DISABLE_FAST_MM, so that MKL keeps no buffer pool.
  There, each implementation first runs one update at a tiny size (one-time
  library initialisation, off the record); then, at the real size, the
  optimizer state is created (an RMSprop step on zero gradients), the
  kernel's peak-RSS mark is reset (``echo 5 > /proc/self/clear_refs``), one
  update runs, and VmHWM − VmRSS(before) is reported: everything the update
  allocates beyond the resting model and optimizer state (activations saved
  for backward, backward temporaries, gradients).  Linux only; elsewhere the
  column reads n/a.
* ``saved MB``: bytes of the distinct storages autograd saves for backward
  in the forward pass (``torch.autograd.graph.saved_tensors_hooks``),
  parameters left out, i.e. the activation memory held between forward and
  backward.

Usage::

    python benchmarks/training_update.py                  # memory, copy and medium sizes, about 3 minutes
    python benchmarks/training_update.py --sizes all      # and large: several minutes more on 2 cores
    python benchmarks/training_update.py --sizes copy --repeats 21 --threads 1
    python benchmarks/training_update.py --sizes 220x10x128x10 --only nnrnn,rnn --no-memory
    python benchmarks/training_update.py --sizes memory --threads 1 --no-memory   # every model, the memory grid's

On a shared machine, ``--threads 1`` gives steadier numbers: with two
OpenMP threads on two cores, any other busy process stalls every parallel
region of every implementation.
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

import nnrnn  # noqa: E402
from nnrnn.kernels import memory, onednn, policy  # noqa: E402
from nnrnn.parametrizations import expm  # noqa: E402
from nnrnn.kernels.settings import Settings  # noqa: E402
from nnrnn.doctor.harness import alternate, medians  # noqa: E402
from nnrnn.kernels.host import describe_cpu  # noqa: E402

CLASSES = 10
CLOCK = [time.perf_counter]  # what times an update: wall time, or with --cpu-time the thread's CPU time
PAPER_CODE_COPY_SECONDS = 0.17  # the paper's released code, copy-task sizes (measured before, see the issue)
SIZES = {  # name: (T, B, N, I)
    "memory": (200, 16, 64, 10),  # the memory grid's (docs/memory)
    "copy": (220, 10, 128, 10),
    "medium": (100, 128, 512, 1),
    "psmnist": (784, 128, 512, 1),
    "large": (150, 128, 1024, 200),  # PTB: 1024 units reading a 200-wide character embedding
}
BASELINE = "torch.nn.RNN(relu)"


class TorchRNN(nn.Module):
    def __init__(self, kind, input_size, hidden_size):
        super().__init__()
        if kind == "rnn":
            self.rnn = nn.RNN(input_size, hidden_size, nonlinearity="relu")
        elif kind == "gru":
            self.rnn = nn.GRU(input_size, hidden_size)
        else:
            self.rnn = nn.LSTM(input_size, hidden_size)

    def forward(self, x):
        return self.rnn(x)


class PythonLoops(nn.Module):
    """A model run with the compiled cell loops off (a kernel policy without the C++ loops, installed for its
    forward only: its backward is autograd's then, which asks the policy nothing)."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        if hasattr(model, "output_size"):  # the complex nnRNN's [Re h, Im h]: what the read-out reads
            self.output_size = model.output_size
        self.without = {}  # dtype -> the policy without the C++ loops, kept: its decisions (a scan's, timed) too

    def forward(self, x):
        kept = policy.policy("cpu", x.dtype)
        without = self.without.get(x.dtype)
        if without is None:
            without = self.without[x.dtype] = policy.KernelPolicy(
                "cpu", x.dtype, dataclasses.replace(Settings.read(), cpp=False))
        policy.install(without)
        try:
            return self.model(x)
        finally:
            policy.install(kept)


class ReferenceExponential(nn.Module):
    """An nnRNN or expRNN whose P = exp(A) is evaluated by Paterson–Stockmeyer, the reference the read plan's
    Taylor programs replaced (``nnrnn.parametrizations.expm.REFERENCE_EVALUATION``, set for its forward and its
    compositions only: the backward follows what the forward recorded), for the before/after ratio in one process."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def _reference(self, function, *args):
        kept = expm.REFERENCE_EVALUATION
        expm.REFERENCE_EVALUATION = True
        try:
            return function(*args)
        finally:
            expm.REFERENCE_EVALUATION = kept

    def forward(self, x):
        return self._reference(self.model, x)

    def recurrent_matrix(self, *args):
        return self._reference(self.model.recurrent_matrix, *args)

    def regularization(self, *args):
        return self.model.regularization(*args)


def implementations():
    """name -> (builder(I, N) -> module, gates: how many N × N recurrent products a step makes)."""
    def nnrnn_model(name, implementation="fused"):
        def build(i, n):
            model = nnrnn.create(name, i, n)
            model.implementation = implementation
            return model
        return build

    def dynamic(name):
        def build(i, n):
            return nnrnn.create(name, i, n, dynamic=True)
        return build

    impls = {
        BASELINE: (lambda i, n: TorchRNN("rnn", i, n), 1),
        "torch.nn.LSTM": (lambda i, n: TorchRNN("lstm", i, n), 4),
        "torch.nn.GRU": (lambda i, n: TorchRNN("gru", i, n), 3),
        "nnrnn": (nnrnn_model("nnrnn"), 1),
        "nnrnn [dynamic]": (dynamic("nnrnn"), 1),
        "nnrnn [reference loop]": (nnrnn_model("nnrnn", "reference"), 1),
    }
    for name in ("exprnn", "eurnn", "rnn", "rnn-orth"):
        impls[name] = (nnrnn_model(name), 1)
    impls["exprnn [dynamic]"] = (dynamic("exprnn"), 1)
    for name in ("nnrnn", "exprnn"):
        impls[f"{name} [reference exponential]"] = (
            (lambda name: lambda i, n: ReferenceExponential(nnrnn_model(name)(i, n)))(name), 1)
    impls["lstm"] = (lambda i, n: nnrnn.create("lstm", i, n), 4)

    def torch_kernel(name, **options):
        def build(i, n):
            model = nnrnn.create(name, i, n, **options)
            model.implementation = "torch"
            return model
        return build

    impls["gru"] = (lambda i, n: nnrnn.create("gru", i, n), 3)
    impls["gru [torch kernel]"] = (torch_kernel("gru"), 3)
    impls["nngru"] = (lambda i, n: nnrnn.create("nngru", i, n), 3)
    impls["nngru [torch kernel]"] = (torch_kernel("nngru"), 3)
    impls["nngru [schur_gates]"] = (lambda i, n: nnrnn.create("nngru", i, n, schur_gates=True), 3)
    # today's long-memory RNNs (issue 50): coRNN's two N×N products a step, LEM's four; the LRU and minGRU have none
    # (a diagonal recurrence, a scan over time)
    for name, products in (("cornn", 2), ("lem", 4), ("lru", 0), ("nnlru", 0), ("mingru", 0)):
        impls[name] = ((lambda name: lambda i, n: nnrnn.create(name, i, n))(name), products)
    # the memory grid's LRU, nnLRU and minGRU (issue 69): their papers' depth (DEPTH), each as wide as the nnRNN's
    # parameter count at this n allows, as the grid plans them; "[Python path]" with the compiled loops off (their
    # scans or Python loops, as the kernel policy chooses)
    for name in ("lru", "nnlru", "mingru"):
        impls[f"{name} [Python path]"] = ((lambda name: lambda i, n: PythonLoops(nnrnn.create(name, i, n)))(name), 0)
        impls[f"{name} [grid]"] = ((lambda name: lambda i, n: grid_model(name, i, n))(name), 0)
        impls[f"{name} [grid] [Python path]"] = ((lambda name: lambda i, n: PythonLoops(grid_model(name, i, n)))(name),
                                                 0)
    impls["cornn [implicit]"] = (lambda i, n: nnrnn.create("cornn", i, n, damping="implicit"), 2)
    for name in ("cornn", "lem"):
        impls[f"{name} [Python loop]"] = ((lambda name: lambda i, n: PythonLoops(nnrnn.create(name, i, n)))(name),
                                          impls[name][1])
    impls["cornn [implicit] [Python loop]"] = (
        lambda i, n: PythonLoops(nnrnn.create("cornn", i, n, damping="implicit")), 2)
    # the complex nnRNN with as many real parameters as an nnRNN of n units: about n/√2 complex units
    impls["nnrnn-complex [= params]"] = (
        lambda i, n: nnrnn.create("nnrnn-complex", i, complex_units(n, i)), 1)
    impls["nnrnn-complex [= params] [Python loop]"] = (
        lambda i, n: PythonLoops(nnrnn.create("nnrnn-complex", i, complex_units(n, i))), 1)
    return impls


def grid_model(name, i, n):
    """``name`` at its paper's depth, as wide as an nnRNN of n units' parameter count (read-out included) allows:
    the memory grid's planning (nnrnn.experiments.planning.grid), at T = 200 the LRU 6 layers of 11, the nnLRU 6 of
    10, minGRU 3 of 33."""
    depth = nnrnn.models.model_class(name).DEPTH
    width = nnrnn.hidden_size_for(name, nnrnn.parameter_count("nnrnn", i, n, CLASSES), i, CLASSES, num_layers=depth)
    model = nnrnn.create(name, i, width, num_layers=depth)
    model.output_size = width  # what Update's read-out reads
    return model


def complex_units(n, i):
    """The complex nnRNN's N whose parameter count (read-out included) is closest to an nnRNN's of n units."""
    return nnrnn.hidden_size_for("nnrnn-complex", nnrnn.parameter_count("nnrnn", i, n, CLASSES), i, CLASSES)


class Update:
    """Model, read-out, optimizer and data of one implementation at one size."""

    def __init__(self, build, size, seed=0):
        t, b, n, i = size
        torch.manual_seed(seed)
        self.model = build(i, n)
        self.readout = nn.Linear(getattr(self.model, "output_size", n), CLASSES)  # complex: [Re h, Im h]
        params = list(self.model.parameters()) + list(self.readout.parameters())
        self.optimizer = torch.optim.RMSprop(params, lr=1e-4)
        self.x = torch.randn(t, b, i)
        self.y = torch.randint(CLASSES, (t, b))
        self.penalty = getattr(self.model, "regularization", None) if isinstance(
            self.model, (nnrnn.models.RecurrentModel, nnrnn.NonNormalGRU, nnrnn.ComplexNonNormalRNN,
                         ReferenceExponential)) else None

    def loss(self):
        out, _ = self.model(self.x)
        loss = F.cross_entropy(self.readout(out).reshape(-1, CLASSES), self.y.reshape(-1))
        if self.penalty is not None:
            loss = loss + self.penalty(1e-4, 1e-6)
        return loss

    def __call__(self):
        self.optimizer.zero_grad(set_to_none=True)
        self.loss().backward()
        self.optimizer.step()
        if getattr(self.model, "dynamic", False):  # dynamic trivialization: move the base after every update
            nnrnn.parametrizations.rebase_(self.model)

    def compose(self):
        """Composing V and back-propagating a gradient through the composition alone (what the recurrence
        adds is the rest of the update)."""
        if not hasattr(self.model, "recurrent_matrix") or isinstance(self.model, nnrnn.LSTM):
            return
        v = self.model.recurrent_matrix()
        if v.requires_grad and v.grad_fn is not None:
            v.backward(self.v_grad if hasattr(self, "v_grad") else torch.ones_like(v))


def matmul_flops(size, gates):
    t, b, n, i = size
    recurrence = 2 * t * b * n * (n + i) + 2 * t * b * n * n * 2 + 2 * t * b * n * i
    return gates * recurrence + 6 * t * b * n * CLASSES


class Roofline:
    """Best GFLOP/s seen for a float32 n×n matrix product, by torch.mm or (where this torch has it)
    oneDNN; sampled at start-up and once every round, so that one busy spell on a shared machine
    does not set it."""

    def __init__(self, n=2048):
        self.n = n
        self.a, self.b = torch.randn(n, n), torch.randn(n, n)
        self.out = torch.empty(n, n)
        self.best = 0.0
        self.kernels = {"torch.mm": lambda: torch.mm(self.a, self.b, out=self.out)}
        if onednn.kernel() is not None:
            self.kernels["oneDNN"] = lambda: onednn.kernel()(self.a, self.b, None, "none", [], "")
        self.best_kernel = None
        for kernel in self.kernels.values():
            kernel()

    def sample(self, repeats=1):
        for _ in range(repeats):
            for name, kernel in self.kernels.items():
                start = time.perf_counter()
                kernel()
                rate = 2 * self.n ** 3 / (time.perf_counter() - start) / 1e9
                if rate > self.best:
                    self.best, self.best_kernel = rate, name
        return self.best


def parse_sizes(text):
    sizes = []
    for item in text.split(","):
        item = item.strip()
        if item == "all":
            sizes.extend(SIZES.items())
        elif item in SIZES:
            sizes.append((item, SIZES[item]))
        else:
            parts = item.lower().split("x")
            if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts):
                raise SystemExit(f"--sizes: {item!r} is neither one of {', '.join(SIZES)} nor TxBxNxI")
            sizes.append((item, tuple(int(p) for p in parts)))
    return sizes


# ----------------------------------------------------------------------------- memory (subprocess)

def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


class SavedBytes:
    """Counts the distinct storages autograd saves for backward (parameters left out)."""

    def __init__(self, update):
        self.params = {p.untyped_storage().data_ptr() for g in update.optimizer.param_groups for p in g["params"]}
        self.seen = {}

    def pack(self, tensor):
        if isinstance(tensor, torch.Tensor):
            storage = tensor.untyped_storage()
            if storage.data_ptr() not in self.params:
                self.seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, lambda tensor: tensor)

    def total(self):
        return sum(self.seen.values())


def init_optimizer_state(update):
    """One RMSprop step on zero gradients: creates the optimizer state, leaves the parameters as they are."""
    for group in update.optimizer.param_groups:
        for p in group["params"]:
            p.grad = torch.zeros_like(p)
    update.optimizer.step()
    update.optimizer.zero_grad(set_to_none=True)


def memory_worker(size, names, threads):
    torch.set_num_threads(threads)
    impls = implementations()
    for name in names:  # one-time library initialisation, off the record: one update at a tiny size
        Update(impls[name][0], (3, 2, 8, size[3]))()
    gc.collect()
    results = {}
    for name in names:
        update = Update(impls[name][0], size)
        init_optimizer_state(update)
        saved = SavedBytes(update)
        gc.collect()
        try:
            rss = _status_kb("VmRSS")
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            rss = None
        with saved.hooks():
            update()
        peak = (_status_kb("VmHWM") - rss) / 1024 if rss is not None else None
        results[name] = {"peak_mb": peak, "saved_mb": saved.total() / 2 ** 20}
        del update
        gc.collect()
    print(json.dumps(results))


def measure_memory(size, names, threads):
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0", MKL_DISABLE_FAST_MM="1")
    cmd = [sys.executable, __file__, "--memory-worker", "x".join(map(str, size)), "--threads", str(threads),
           "--only", ",".join(names)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"  (memory subprocess failed: {proc.stderr.strip().splitlines()[-1:]})", flush=True)
        return {}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- timing

def run_size(label, size, repeats, budget, threads, memory, only, roofline):
    impls = implementations()
    if only:
        impls = {k: v for k, v in impls.items() if k in only or k == BASELINE}
    names = list(impls)
    updates = {name: Update(impls[name][0], size) for name in names}
    warm_up = alternate(updates, 1)  # the optimizer's state, the kernels' first-call costs
    round_seconds = sum(s[0] for s in warm_up.values())
    if budget and round_seconds * repeats > budget:
        repeats = max(3, int(budget / round_seconds))
    for name in names:  # the shape and dtype of that model's V (the complex nnRNN's: fewer units, complex)
        v = updates[name].model.recurrent_matrix() if hasattr(updates[name].model, "recurrent_matrix") else None
        updates[name].v_grad = torch.randn(size[2], size[2]) if v is None else torch.randn_like(v.detach())
    calls = {}
    for name in names:  # each update followed by the composition of its V alone
        calls[name], calls[name, "compose"] = updates[name], updates[name].compose
    seconds = medians(alternate(calls, repeats, after_round=roofline.sample, clock=CLOCK[0]))
    del updates, calls
    gc.collect()
    mem = measure_memory(size, names, threads) if memory else {}
    return repeats, {name: (seconds[name], impls[name][1], seconds[name, "compose"]) for name in names}, mem


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="memory,copy,medium",
                        help=f"comma-separated names ({', '.join(f'{k}={v}' for k, v in SIZES.items())}), "
                             "'all', or TxBxNxI; default memory,copy,medium (large takes several minutes on 2 "
                             "cores)")
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds per size (default 7)")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds of timed rounds per size; fewer repeats (at least 3) when one round "
                             "would exceed it; 0 for no limit (default 60)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(),
                        help=f"torch.set_num_threads for every implementation (default {torch.get_num_threads()})")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocess")
    parser.add_argument("--roofline-n", type=int, default=2048, help="side of the roofline's product (default 2048)")
    parser.add_argument("--keep-freed-memory", action="store_true",
                        help="nnrnn.kernels.memory.keep_freed_memory() first, as the nnrnn command line "
                             "does for its training runs (default: the allocator as a library user's program has it)")
    parser.add_argument("--only", default="", help="comma-separated implementations (the baseline is always run)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time each update by the calling thread's CPU time (time.thread_time), not wall time: "
                             "on a shared machine other processes preempting this one then inflate no update "
                             "(needs --threads 1, whose work all runs on that thread; the roofline stays wall time)")
    parser.add_argument("--memory-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cpu_time:
        if args.threads != 1:
            parser.error("--cpu-time needs --threads 1: other threads' CPU time is not the calling thread's")
        CLOCK[0] = time.thread_time
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [name for name in only if name not in implementations()]
    if unknown:
        parser.error(f"--only: unknown {', '.join(map(repr, unknown))}; choose from {', '.join(implementations())}")
    if args.memory_worker:
        memory_worker(parse_sizes(args.memory_worker)[0][1], only, args.threads)
        return
    torch.set_num_threads(args.threads)
    if args.keep_freed_memory and not memory.keep_freed_memory():
        print("--keep-freed-memory: not available here (glibc's malloc only)", flush=True)
    sizes = parse_sizes(args.sizes)
    roofline = Roofline(args.roofline_n)
    roofline.sample(5)
    print(f"host: {describe_cpu()}, {torch.backends.cpu.get_cpu_capability()}; torch {torch.__version__}, "
          f"{args.threads} thread(s)", flush=True)
    for label, size in sizes:
        t, b, n, i = size
        repeats, results, mem = run_size(label, size, args.repeats, args.budget, args.threads,
                                         not args.no_memory, only, roofline)
        base = results[BASELINE][0]
        roof = roofline.best
        print(f"\n{label}: T={t} B={b} N={n} I={i}, median of {repeats} round-robin rounds"
              f"{' (thread CPU time)' if CLOCK[0] is time.thread_time else ''}; "
              f"roofline (best float32 {roofline.n}³ product, {roofline.best_kernel}) {roof:.1f} GFLOP/s", flush=True)
        gru = results.get("torch.nn.GRU", (None,))[0]
        lstm = results.get("torch.nn.LSTM", (None,))[0]
        print(f"{'implementation':30s} {'median s':>9s} {'× RNN':>6s} {'× LSTM':>6s} {'× GRU':>6s} {'GFLOP':>6s} "
              f"{'% roof':>6s} {'compose %':>9s} {'peak MB':>8s} {'saved MB':>8s}")
        for name, (seconds, gates, compose) in results.items():
            flops = matmul_flops(size, gates)
            m = mem.get(name, {})
            peak = f"{m['peak_mb']:8.1f}" if m.get("peak_mb") is not None else f"{'n/a':>8s}"
            saved = f"{m['saved_mb']:8.1f}" if "saved_mb" in m else f"{'n/a':>8s}"
            share = f"{100 * compose / seconds:9.1f}" if compose > 0 else f"{'':>9s}"
            per_gru = f"{seconds / gru:6.2f}" if gru else f"{'n/a':>6s}"
            per_lstm = f"{seconds / lstm:6.2f}" if lstm else f"{'n/a':>6s}"
            print(f"{name:30s} {seconds:9.4f} {seconds / base:6.2f} {per_lstm} {per_gru} {flops / 1e9:6.2f} "
                  f"{100 * flops / seconds / 1e9 / roof:6.1f} {share} {peak} {saved}")
        name = "nnrnn-complex [= params]"
        if name in results and "nnrnn" in results:
            print(f"{name} (N = {complex_units(n, i)} complex units) / nnrnn: "
                  f"{results[name][0] / results['nnrnn'][0]:.2f}")
        if size == SIZES["copy"] and "nnrnn" in results:
            print(f"nnrnn vs the paper's code ({PAPER_CODE_COPY_SECONDS} s/update): "
                  f"{PAPER_CODE_COPY_SECONDS / results['nnrnn'][0]:.1f}× faster")


if __name__ == "__main__":
    main()
