"""Every kernel decision nnrnn makes, in one object per (device type, dtype), with the reason for each.

The decisions:

* **loops**: which implementation runs the fused recurrence's two time loops (:mod:`.loops`): the
  compiled C++ loops, Python issuing oneDNN products, or Python issuing torch.addmm (``aten``);
* **cell loops**: whether a gated or oscillator cell (the GRU, the nnGRU, coRNN, LEM), the complex nnRNN or a
  linear recurrence (the LRU's, the non-normal LRU's, minGRU's) runs its whole time loop
  in the compiled loops of ``csrc/cell_loops.cpp`` or steps its Python loop (torch.nn.GRU's kernel for the GRUs);
* **products**: whether an N × N matrix product and its gradient (``operations.matmul``: composing V) go to
  oneDNN or to torch.mm;
* **projections**: whether the input projection of all steps and the input's gradient (``operations.linear``) go
  to oneDNN or to torch's linear;
* **scans**: whether a model's linear recurrence over time (the LRU's, the non-normal LRU's, minGRU's) runs by
  its parallel scan or by its step-by-step loop, the model describing the two (:class:`.candidates.Scanned`);
* **exponential plan**: the matrix exponential's fixed plan (nothing read to the host) or the plan read from
  ‖A‖₂ (fewer products);
* **Givens chunks**: EURNN's layers composed in order or by chunks in parallel;
* **capture**: whether the trainer replays its update from CUDA graphs.

The first four depend on the host and the shape: where more than one kernel can run, the policy times the
candidates at the shape in use the first time a shape bucket (each size rounded to a power of two) is met,
and keeps the fastest (:mod:`nnrnn.kernels.tuning`: alternating rounds, medians, a budget of a few tenths
of a second, the result cached on disk for this CPU and torch version).  A candidate replaces the fixed
threshold's choice only when it is faster by more than the timing's noise margin.  The fixed thresholds
below (measured on the AVX-512 AMD EPYC hosts this project was first tuned on, docs/performance.md 'Loop
choice') decide when measuring is off (``NNRNN_TUNE=0``, which the test suite sets), while torch.compile
traces, and for devices other than the CPU.  A scan's shape bucket is (T, B, state width) and the model's kind.
The other three decisions depend on the device only.

The environment variables of :mod:`nnrnn.environment` override the policy; they are read once, when the first
policy is made (:func:`reset` reads them again).  A training run records the decisions it made
(:meth:`KernelPolicy.record`) and a resumed run or an evaluation takes them back (:func:`pin`), since the
kernels round float32 differently.

The policy sits above the kernels it chooses among and what it times (:mod:`.candidates`, :mod:`.loops`,
:mod:`.onednn`, :mod:`.extension`), and below :mod:`.operations`, which asks it before each call.
"""
from __future__ import annotations

import dataclasses
import math
import threading

import torch

from . import candidates as timed
from . import extension, onednn, tuning
from . import settings as kernel_settings
from .loops import COMPILED_KINDS
from .candidates import LOOP, SCAN, Scanned
from .settings import ATEN, COMPILED, ONEDNN, TORCH, Settings


# The fixed thresholds (the fallback), from docs/performance.md 'Loop choice'.
COMPILED_MAX_WORK = {True: 1 << 24, False: 1 << 22}  # compiled loops below this B·N², {oneDNN preferred: …}
ONEDNN_STEP_MIN_WORK, ONEDNN_STEP_MIN_N = 1 << 21, 256  # oneDNN per step from this B·N² and N up
ONEDNN_PRODUCT_MIN_SIDE = 256  # N × N products by oneDNN with every side at least this
ONEDNN_LINEAR_MIN_ROWS, ONEDNN_LINEAR_MIN_SIDE = 1024, 128  # projections by oneDNN from these sizes
GIVENS_LAYERS_PER_CHUNK = 8
# Below these sizes oneDNN's cost per call (about 15 µs) is never repaid: torch without timing.
MEASURE_MIN_SIDE, MEASURE_MIN_ROWS = 32, 256


def _bucket(size: int) -> int:
    """``size`` rounded to the nearest power of two (the shape bucket a measurement stands for)."""
    if size <= 1:
        return 1
    low = 1 << (size.bit_length() - 1)
    return low * 2 if size - low > low // 2 else low


def onednn_preferred(settings: Settings) -> bool:
    """The thresholds' rule: oneDNN only where the CPU has AVX-512, unless NNRNN_ONEDNN says otherwise."""
    if settings.onednn is not None:
        return settings.onednn
    return torch.backends.cpu.get_cpu_capability().startswith("AVX512")


@dataclasses.dataclass
class Decision:
    choice: str
    reason: str
    times_ms: dict | None = None  # each candidate's median, where measured
    untrusted: str = ""  # why a timing taken for it decided nothing (tuning.trusted), "" otherwise


class KernelPolicy:
    """The kernel decisions for tensors of one device type and dtype (see the module's text)."""

    def __init__(self, device_type: str, dtype: torch.dtype, settings: Settings | None = None,
                 remeasure: bool = False):
        self.device_type, self.dtype = device_type, dtype
        self.settings = settings or Settings.read()
        self.remeasure = remeasure  # time again what the cache holds (``nnrnn kernels --tune``)
        self.decisions: dict[str, Decision] = {}  # by bucket key, as made in this process
        self.pinned: dict[str, str] = {}  # by bucket key, from a run's record
        # the choice by exact shape: a call that asks again (one step at a time, every update) does not work out
        # its bucket, candidates and threshold again
        self._by_shape: dict[tuple, str | bool] = {}
        self._lock = threading.RLock()  # a measured loop makes its projection's decision inside

    @property
    def name(self) -> str:
        return f"{self.device_type}/{str(self.dtype).removeprefix('torch.')}"

    def _float32_cpu(self) -> bool:
        return self.device_type == "cpu" and self.dtype == torch.float32

    def _onednn_candidate(self) -> bool:
        return self._float32_cpu() and self.settings.onednn is not False and onednn.kernel() is not None

    def _measuring(self) -> bool:
        return (self.settings.tune and self.settings.onednn is None and self._float32_cpu()
                and not torch.compiler.is_compiling())

    def _decide(self, key: str, candidates: list[str], threshold: Decision, measure) -> str:
        """The choice for bucket ``key`` among ``candidates``: pinned by a run's record, else made once in this
        process by measuring (``measure()`` returns a Decision) where the policy measures, else the threshold's."""
        made = self.decisions.get(key)
        if made is not None:
            return made.choice
        with self._lock:
            if key in self.decisions:
                return self.decisions[key].choice
            if self.pinned.get(key) in candidates and self.settings.onednn is None:  # NNRNN_ONEDNN beats a record
                made = Decision(self.pinned[key], "recorded by the run this process resumes or evaluates")
            elif len(candidates) > 1 and measure is not None and self._measuring():
                made = self._measured(key, candidates, threshold, measure)
            else:
                made = threshold
            if not torch.compiler.is_compiling():  # a traced decision is the threshold's: not kept for eager calls
                self.decisions[key] = made
        return made.choice

    def _measured(self, key: str, candidates: list[str], threshold: Decision, runners) -> Decision:
        """The decision for ``key`` from the cache, else by timing ``runners(candidates)``; the threshold's when
        timing fails (a kernel that raises at this shape, say: measuring is never a reason to fail)."""
        full = tuning.cache_key(self.name, key)
        entry = None if self.remeasure else tuning.lookup(full, candidates)
        if entry is not None:
            times = tuning.format_times(entry["times_ms"])
            return Decision(entry["choice"], f"measured on this CPU before ({times}; thresholds: {threshold.choice})",
                            entry["times_ms"])
        try:
            timing = tuning.measure(runners(candidates))
        except Exception as error:  # noqa: BLE001 -- any failure: the thresholds decide
            return Decision(threshold.choice, f"{threshold.reason} (timing failed: {type(error).__name__})")
        seconds = timing.medians()
        times_ms = {name: round(s * 1e3, 4) for name, s in seconds.items()}
        untrusted = tuning.trusted(timing)
        if untrusted:  # a busy minute decides nothing and is not cached: a later process times again
            return Decision(threshold.choice, f"{threshold.reason} (timed, not trusted: {untrusted}; "
                                              f"{tuning.format_times(times_ms)})", times_ms, untrusted)
        choice = tuning.pick(seconds, threshold.choice)
        tuning.store(full, {"choice": choice, "times_ms": times_ms})
        return Decision(choice, f"measured ({tuning.format_times(times_ms)}; thresholds: "
                                f"{threshold.choice})", times_ms)

    # ------------------------------------------------------------------------- the decisions

    def loop_candidates(self) -> list[str]:
        compiled = self._float32_cpu() and self.settings.cpp and extension.recurrence_loops() is not None
        return [COMPILED] * compiled + [ONEDNN] * self._onednn_candidate() + [ATEN]

    def _remembered(self, shape: tuple, decide):
        """``decide()``'s answer for ``shape``, worked out once per exact shape (not while torch.compile traces,
        whose decisions are not kept)."""
        known = self._by_shape.get(shape)
        if known is None:
            known = decide()
            if not torch.compiler.is_compiling():
                self._by_shape[shape] = known
        return known

    def loops(self, batch: int, n: int, nonlinearity: str | None = "relu") -> str:
        """COMPILED, ONEDNN or ATEN for the fused recurrence's loops over (batch × n) states."""
        return self._remembered(("loops", batch, n, nonlinearity), lambda: self._loops(batch, n, nonlinearity))

    def _loops(self, batch: int, n: int, nonlinearity: str | None) -> str:
        candidates = [c for c in self.loop_candidates() if c != COMPILED or nonlinearity in COMPILED_KINDS]
        forced = self.settings.loops
        if forced is not None and forced in candidates:
            return forced
        key = f"loops {nonlinearity} B{_bucket(batch)} N{_bucket(n)}"
        return self._decide(key, candidates, self._loops_threshold(candidates, batch, n),
                            lambda names: timed.loops(names, batch, n, nonlinearity))

    def _loops_threshold(self, candidates: list[str], batch: int, n: int) -> Decision:
        preferred, work = onednn_preferred(self.settings), batch * n * n
        limit = COMPILED_MAX_WORK[preferred]
        if COMPILED in candidates and work < limit:
            return Decision(COMPILED, f"threshold: B·N² = 2^{math.log2(work):.1f} < 2^{int(math.log2(limit))}")
        if ONEDNN in candidates and preferred and n >= ONEDNN_STEP_MIN_N and work >= ONEDNN_STEP_MIN_WORK:
            return Decision(ONEDNN, f"threshold: B·N² = 2^{math.log2(work):.1f} ≥ 2^21, N ≥ 256, oneDNN preferred")
        return Decision(ATEN, "threshold: " + ("the only candidate" if candidates == [ATEN] else
                                              "large steps without oneDNN preferred, or below oneDNN's sizes"))

    def cells(self, cell: str) -> str:
        """COMPILED or TORCH for the time loop of ``cell`` (``"gru"``, ``"cornn"``, ``"lem"``, ``"nnrnn-complex"``,
        ``"lru"``, ``"nnlru"``, ``"mingru"``):
        the compiled loops wherever they run (float32 on the CPU, built, ``NNRNN_CPP`` not 0), the Python loop
        elsewhere.  Not timed: at every shape measured the compiled loop was the faster (docs/performance.md,
        'Gated and oscillator cells')."""
        return self._remembered(("cells", cell), lambda: self._cells(cell))

    def _cells(self, cell: str) -> str:
        compiled = self._float32_cpu() and self.settings.cpp and extension.recurrence_loops() is not None
        candidates = [COMPILED] * compiled + [TORCH]
        rule = (Decision(COMPILED, "the compiled loop runs here: one call for all steps, no per-step dispatch")
                if compiled else
                Decision(TORCH, "the Python loop: " + ("the compiled loops are for float32 on the CPU"
                                                       if not self._float32_cpu() else
                                                       "the compiled loops are unavailable here")))
        return self._decide(f"cells {cell}", candidates, rule, None)

    def products(self, m: int, k: int, n: int) -> bool:
        """Whether an (m × k)·(k × n) product and its gradient go to oneDNN (else torch.mm)."""
        return self._remembered(("products", m, k, n), lambda: self._products(m, k, n))

    def _products(self, m: int, k: int, n: int) -> bool:
        key = f"products M{_bucket(m)} K{_bucket(k)} N{_bucket(n)}"
        made = self.decisions.get(key)  # the common case, once per product: no threshold to work out
        if made is not None:
            return made.choice == ONEDNN
        candidates = [TORCH, ONEDNN] if self._onednn_candidate() else [TORCH]
        preferred = ONEDNN in candidates and onednn_preferred(self.settings)
        side = min(m, k, n)
        threshold = (Decision(ONEDNN, "threshold: every side ≥ 256, oneDNN preferred")
                     if preferred and side >= ONEDNN_PRODUCT_MIN_SIDE else
                     Decision(TORCH, "threshold: oneDNN not preferred, or a side below 256"))
        runners = (lambda names: timed.products(names, m, k, n)) if side >= MEASURE_MIN_SIDE else None
        return self._decide(key, candidates, threshold, runners) == ONEDNN

    def projections(self, rows: int, k: int, m: int, weight_contiguous: bool) -> bool:
        """Whether (rows × k)·(m × k)ᵀ (the input projection, or with a transposed weight the input's gradient)
        goes to oneDNN (else torch's linear)."""
        return self._remembered(("projections", rows, k, m, weight_contiguous),
                                lambda: self._projections(rows, k, m, weight_contiguous))

    def _projections(self, rows: int, k: int, m: int, weight_contiguous: bool) -> bool:
        layout = "" if weight_contiguous else " transposed"
        key = f"projections R{_bucket(rows)} K{_bucket(k)} M{_bucket(m)}{layout}"
        made = self.decisions.get(key)
        if made is not None:
            return made.choice == ONEDNN
        candidates = [TORCH, ONEDNN] if self._onednn_candidate() else [TORCH]
        preferred = ONEDNN in candidates and onednn_preferred(self.settings)
        threshold = (Decision(ONEDNN, "threshold: ≥ 1024 rows and a side ≥ 128, oneDNN preferred")
                     if preferred and rows >= ONEDNN_LINEAR_MIN_ROWS and max(k, m) >= ONEDNN_LINEAR_MIN_SIDE else
                     Decision(TORCH, "threshold: oneDNN not preferred, or below 1024 rows or a side of 128"))
        big = rows >= MEASURE_MIN_ROWS and max(k, m) >= MEASURE_MIN_SIDE
        runners = (lambda names: timed.projections(names, rows, k, m, weight_contiguous)) if big else None
        return self._decide(key, candidates, threshold, runners) == ONEDNN

    def scan(self, scanned: Scanned, steps: int, batch: int, width: int) -> bool:
        """Whether ``scanned`` (a model's recurrence) runs its parallel scan (else its loop) over ``steps`` steps of
        (batch × width) states, width its real features per step."""
        return self._remembered(("scan", scanned.kind, steps, batch, width),
                                lambda: self._scan(scanned, steps, batch, width))

    def _scan(self, scanned: Scanned, steps: int, batch: int, width: int) -> bool:
        key = f"scan {scanned.kind} T{_bucket(steps)} B{_bucket(batch)} W{_bucket(width)}"
        threshold = self._scan_threshold(scanned, batch, width)
        timable = scanned.runs is not None and scanned.inputs is not None and self._measuring()
        if key not in self.pinned and key not in self.decisions and not timable:
            # untimed, the fixed rule holds for each shape, not for its bucket's first: the rule of the models
            # before the policy chose (a batch of 129 next to one of 128 gets its own answer)
            return threshold.choice == SCAN
        runners = lambda names: timed.scans(scanned, names, steps, batch, width)  # noqa: E731
        return self._decide(key, [SCAN, LOOP], threshold, runners) == SCAN

    def _scan_threshold(self, scanned: Scanned, batch: int, width: int) -> Decision:
        return scan_rule(self.device_type, scanned, batch, width)

    def fixed_exponential_plan(self) -> bool:
        """Whether the matrix exponential runs its fixed plan (True) or the plan read from ‖A‖₂ on the host."""
        if self.settings.expm_plan is not None:  # the environment beats a run's record
            return self.settings.expm_plan == "fixed"
        return self._decide("exponential plan", ["fixed", "read"], self._plan_rule(), None) == "fixed"

    def _plan_rule(self) -> Decision:
        if self.settings.expm_plan is not None:
            return Decision(self.settings.expm_plan, f"NNRNN_EXPM_PLAN={self.settings.expm_plan}")
        if self.device_type == "cpu":
            return Decision("read", "on the CPU a read costs nothing and the plan read from A needs fewer products")
        return Decision("fixed", "a read on this device waits for it and cannot be captured in a CUDA graph")

    def givens_chunks(self, layers: int) -> int:
        """How many chunks EURNN's ``layers`` Givens layers are composed by (1: the layers in order)."""
        if self.settings.givens_chunks is not None:
            return max(1, min(self.settings.givens_chunks, layers))
        chunked = math.ceil(layers / GIVENS_LAYERS_PER_CHUNK)
        rule = (Decision("in order", "on the CPU the chunks' extra N × N products cost more than the layers' loop")
                if self.device_type == "cpu" else
                Decision("chunks", f"chunks of {GIVENS_LAYERS_PER_CHUNK} layers: each layer is a round of launches"))
        return 1 if self._decide("givens", ["in order", "chunks"], rule, None) == "in order" else max(1, chunked)

    def capture(self, graphs: bool | None = None) -> bool:
        """Whether the trainer may replay its update from CUDA graphs (it still probes the update first).
        ``graphs``: whether the trainer's graph API works on this device (training.step.GRAPHS says; a test
        replaces it); None: where the device is CUDA."""
        available = self.device_type == "cuda" if graphs is None else graphs
        rule = (Decision("on", "CUDA graphs remove the launches of the update's many small kernels (--no-cuda-graph "
                               "turns it off for a run)")
                if available else Decision("off", "CUDA graphs need a CUDA device"))
        return self._decide("capture", ["on", "off"], rule, None) == "on"

    # ------------------------------------------------------------------------- what was decided

    def how(self) -> str:
        """How the shape-dependent decisions are made, and why so."""
        if not self._float32_cpu():
            return "fixed rules (only float32 on the CPU has more than one kernel to time)"
        if not self.settings.tune:
            return "fixed thresholds (NNRNN_TUNE=0)"
        if self.settings.onednn is not None:
            return f"fixed thresholds (NNRNN_ONEDNN={int(self.settings.onednn)})"
        return "timed at the shape in use, once per shape bucket and CPU (fixed thresholds with NNRNN_TUNE=0)"

    def describe(self) -> list[tuple[str, str, str]]:
        """(decision, choice, reason): first each kind of decision and how it is made, then every decision made
        so far in this process, by shape bucket, in the order made."""
        loops = self.loop_candidates()
        onednn = "oneDNN or torch" if self._onednn_candidate() else "torch (no usable oneDNN kernel, or NNRNN_ONEDNN=0)"
        forced = f"NNRNN_LOOPS={self.settings.loops}" if self.settings.loops in loops else self.how()
        plan, chunks = self._plan_rule(), self.givens_chunks(2 * GIVENS_LAYERS_PER_CHUNK)
        cells = ("compiled / torch" if COMPILED in loops else "torch") + " (GRU, nnGRU, coRNN, LEM, complex nnRNN)"
        rows = [("recurrence loops", " / ".join(loops), forced),
                ("N × N products", onednn, self.how()),
                ("input projections", onednn, self.how()),
                ("scan or loop over time", "scan / loop", self.how() if self._float32_cpu() else
                 "fixed rule: the scan off the CPU, on it at and below each recurrence's crossover"),
                ("exponential plan", plan.choice, plan.reason),
                ("Givens product", "in order" if chunks == 1 else f"chunks of {GIVENS_LAYERS_PER_CHUNK} layers",
                 f"NNRNN_GIVENS_CHUNKS={self.settings.givens_chunks}" if self.settings.givens_chunks
                 else self.decisions["givens"].reason),
                ("CUDA-graph capture", "on" if self.capture() else "off", self.decisions["capture"].reason),
                ("cell loops", cells, "fixed rule: the compiled loop wherever it runs")]
        return rows + [(key, made.choice, made.reason) for key, made in self.decisions.items()
                       if key not in ("givens", "capture", "exponential plan")]

    def record(self) -> dict[str, str]:
        """{bucket key: choice} of the decisions made so far, for a run folder (see :func:`pin`)."""
        return {key: made.choice for key, made in self.decisions.items()}

    def pin(self, record: dict[str, str]) -> None:
        """Take the choices of a run's record for its buckets (a decision made here before is made again)."""
        with self._lock:
            for key, choice in record.items():
                self.pinned[key] = choice
                self.decisions.pop(key, None)
            self._by_shape.clear()


# ----------------------------------------------------------------------------- the policies of this process

_policies: dict[tuple[str, torch.dtype], KernelPolicy] = {}
def policy(device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> KernelPolicy:
    """The policy of ``device``'s type and ``dtype`` (one per process)."""
    device_type = torch.device(device).type
    found = _policies.get((device_type, dtype))
    if found is None:
        found = _policies.setdefault((device_type, dtype), KernelPolicy(device_type, dtype, kernel_settings.current()))
    return found


def scan_rule(device_type: str, scanned: Scanned, batch: int, width: int) -> Decision:
    """The fixed rule of the scan-or-loop choice: off the CPU the scan (a loop step is a round of kernel launches:
    on an H100 the scans were 15–24× faster at T = 784 and 1000); on the CPU the scan only at and below the
    recurrence's measured crossover of batch × width, since above it the loop's steps work in cache while each of
    the scan's levels streams the whole (T, B, width) tensor through memory (docs/performance.md, "Parallel
    scans")."""
    if device_type != "cpu":
        return Decision(SCAN, "threshold: off the CPU a loop step is a round of kernel launches")
    if batch * width <= scanned.crossover:
        return Decision(SCAN, f"threshold: B·width = {batch * width} ≤ {scanned.crossover}")
    return Decision(LOOP, f"threshold: B·width = {batch * width} > {scanned.crossover}")


def policy_for(like: torch.Tensor) -> KernelPolicy:
    """The policy of ``like``'s device and dtype."""
    found = _policies.get((like.device.type, like.dtype))
    return found if found is not None else policy(like.device, like.dtype)


def install(chosen: KernelPolicy) -> None:
    """Make ``chosen`` the policy of its device type and dtype in this process (a benchmark that compares two
    policies in one process switches between them)."""
    _policies[(chosen.device_type, chosen.dtype)] = chosen


def reset() -> None:
    """Forget every decision and pin and read the environment again (tests; a process whose settings changed)."""
    _policies.clear()
    kernel_settings.reset()
    tuning.reset()


def record() -> dict[str, dict[str, str]]:
    """Every policy's decisions so far, {"cpu/float32": {bucket key: choice}}, for a run to save."""
    return {found.name: found.record() for found in _policies.values() if found.decisions}


def pin(saved: dict | None) -> None:
    """Take back the decisions a run recorded (:func:`record`); nothing for None (a run saved before records)."""
    for name, decisions in (saved or {}).items():
        device_type, _, dtype = name.partition("/")
        dtype_ = getattr(torch, dtype, None)
        if isinstance(decisions, dict) and isinstance(dtype_, torch.dtype):
            policy(device_type, dtype_).pin({str(k): str(v) for k, v in decisions.items()})


def used_line() -> str:
    """One line for ``nnrnn eval``: which kernel choices this process used, and whether the run recorded them."""
    made = [(found.name, key, decision) for found in _policies.values() for key, decision in found.decisions.items()]
    pinned = [f"{key} = {d.choice}" for _, key, d in made if d.reason.startswith("recorded")]
    here = [f"{key} = {d.choice}" for _, key, d in made if not d.reason.startswith("recorded")]
    parts = [f"{len(pinned)} as the run recorded them ({'; '.join(pinned)})"] if pinned else []
    if here:
        parts.append(f"{len(here)} chosen here, for shapes the run did not record ({'; '.join(here)})")
    return "kernels: " + (", ".join(parts) if parts else "none chosen") + " (`nnrnn kernels` says why)"
