"""Which kernels run nnrnn's float32 recurrences and matrix products on the CPU.

Two things live here: the oneDNN inner-product kernel for large products (below), and the
compiled time loops of ``csrc/recurrence_loops.cpp`` for the recurrence at small sizes
(:func:`recurrence_loops`, further below).

torch.mm goes to MKL's sgemm.  oneDNN's float32 inner-product kernel (the one behind
torch.nn.LSTM and torch.compile's CPU linear layers) is reached through
``torch.ops.mkldnn._linear_pointwise``:

    linear(X, W)          = X Wᵀ
    linear.binary(X, Y, W) = X Wᵀ + Y      (the recurrence's V h_{t-1} + z_t in one call)

Which of the two is faster depends on the processor and the shape; which one runs is decided by
:mod:`nnrnn.kernels.policy`, which also decides which loops run the recurrence (this module only holds the
kernels).  The op is private to torch, so it is checked on first use; without it everything uses torch.mm.
Tensors on other devices and in other dtypes always do.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch._C import _functions  # DelayedError: what once_differentiable marks gradients with

from .. import environment
from . import policy as kernel_policy
from .policy import GIVENS_LAYERS_PER_CHUNK  # noqa: F401 -- re-exported: the chunk size EURNN uses


LOW_PRECISION = (torch.float16, torch.bfloat16)  # composed in float32 and rounded once: see the parametrizations


def first_order_only(what: str, instead: str = ""):
    """For the backward of a hand-written autograd function: it runs without building a graph, and where
    autograd asks for one (``create_graph=True``) its gradients come back marked so that differentiating them
    raises a RuntimeError naming ``what`` and the way out (``instead``).  Gradients that are never
    differentiated (a ``create_graph=True`` backward whose second derivative involves other parameters only)
    are unaffected.  ``once_differentiable`` alone marks them only when the incoming gradient requires grad,
    so a gradient penalty through the function silently got a gradient that counted as a constant."""
    message = (f"{what} has a hand-written first-order backward: gradients of gradients (create_graph=True) "
               f"through it are not supported{instead}").encode()

    def decorate(backward):
        @functools.wraps(backward)
        def checked(ctx, *grads):
            with torch.no_grad():
                outputs = backward(ctx, *grads)
            if not torch.is_grad_enabled():
                return outputs
            single = not isinstance(outputs, tuple)
            outputs = (outputs,) if single else outputs
            marked = _functions.DelayedError(message, len(outputs))(
                *[None if g is None else g.detach().requires_grad_(True) for g in outputs])
            marked = marked if isinstance(marked, tuple) else (marked,)
            return marked[0] if single else marked
        return checked
    return decorate


def eager_or_traced(function: type[torch.autograd.Function], op):
    """How to call a hand-written autograd ``function``: its ``apply`` in eager mode, or ``op``, the same forward
    and backward registered as a ``torch.library`` custom op, while torch.compile or torch.export traces (a
    traced Python loop would be unrolled into the graph, or cannot be traced at all)."""
    return op if torch.compiler.is_compiling() else function.apply


def fixed_exponential_plan(like: torch.Tensor) -> bool:
    """Whether the matrix exponential (nnrnn.parametrizations.expm) runs its fixed plan, whose scaling is chosen on
    the device and which reads nothing to the host (True), or the plan made for the ‖A‖₂ read on the host
    (False): :meth:`nnrnn.kernels.policy.KernelPolicy.fixed_exponential_plan` for ``like``'s device and dtype."""
    return kernel_policy.policy_for(like).fixed_exponential_plan()


def givens_chunks(like: torch.Tensor, layers: int) -> int:
    """How many chunks EURNN's Givens product composes in parallel (nnrnn.models.eurnn), 1 for the layers in
    order: :meth:`nnrnn.kernels.policy.KernelPolicy.givens_chunks` for ``like``'s device and dtype."""
    return kernel_policy.policy_for(like).givens_chunks(layers)


def autocast_off(device_type: str):
    """A context that turns autocast off on ``device_type``: nnrnn composes V and runs its loops in the
    parameters' precision.  Devices with no autocast (``meta``, where models are built without memory)
    get a context that does nothing, since ``torch.autocast`` refuses them."""
    if torch.amp.is_autocast_available(device_type):
        return torch.autocast(device_type, enabled=False)
    return contextlib.nullcontext()


@torch.compiler.assume_constant_result  # read once while tracing: no graph break for the flag's lookup
def _in_onnx_export() -> bool:
    return torch.onnx.is_in_onnx_export()


def exporting_to_onnx() -> bool:
    """True while ``torch.onnx.export`` traces a model (also during its ``torch.export`` step).  ONNX has no
    function for nnrnn's custom ops, so the models then trace plain torch operators instead (see
    :func:`nnrnn.parametrizations.expm.expm_skew_traceable`, ``nnrnn.models.eurnn.givens_product_traceable``,
    :func:`nnrnn.models.recurrence.reference_recurrence`)."""
    return torch.compiler.is_compiling() and _in_onnx_export()


def autocast_enabled(device_type: str) -> bool:
    """``torch.is_autocast_enabled`` that answers False for devices with no autocast (``meta``)."""
    return torch.amp.is_autocast_available(device_type) and torch.is_autocast_enabled(device_type)


KEEP_FREED_BYTES = 1 << 30
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for reuse instead of handing it back to the system: blocks up
    to KEEP_FREED_BYTES come from the heap rather than mmap, and the heap is not trimmed below that.

    Why: a training update allocates and frees several T × B × N tensors (26 MB each at (100, 128, 512),
    79 MB at PTB's size).  By default each comes back from the kernel as fresh pages, and the first write to
    each page faults, a cost that grows with the update's size (docs/performance.md, 'Freed memory').
    Kept, the same memory is reused from one update to the next, as PyTorch's CUDA
    caching allocator does on GPUs.  The process then keeps its peak heap instead of returning it between
    updates.  The nnrnn command line calls this for its own process (``NNRNN_KEEP_FREED_MEMORY=0`` turns it
    off); a program that uses nnrnn as a library may call it itself.  Returns whether malloc took the
    settings: False on systems without glibc."""
    import ctypes
    import ctypes.util
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return (libc.mallopt(_M_MMAP_THRESHOLD, KEEP_FREED_BYTES) == 1
                and libc.mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES) == 1)
    except (OSError, AttributeError):
        return False


@functools.cache
def onednn():
    """The oneDNN op if this torch build has it and it computes X Wᵀ (+ Y), else None (checked once, on first use:
    it runs a few small products)."""
    if not torch.backends.mkldnn.is_available():
        return None
    try:
        op = torch.ops.mkldnn._linear_pointwise
        g = torch.Generator().manual_seed(0)  # not the global one: a run's random numbers stay as they were
        x, w, y = (torch.randn(*shape, generator=g) for shape in ((3, 4), (5, 4), (3, 5)))
        ok = torch.allclose(op.binary(x, y, w, None, "add"), torch.addmm(y, x, w.t()), atol=1e-5) and \
            torch.allclose(op(x.t(), y.t(), None, "none", [], ""), x.t() @ y, atol=1e-5)
    except (AttributeError, RuntimeError):
        return None
    return op if ok else None


def onednn_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b by oneDNN (which reorders the weight operand anyway, so passing bᵀ as a view costs nothing)."""
    return onednn()(a, b.t(), None, "none", [], "")


def use_onednn(x: torch.Tensor, batch: int, n: int) -> bool:
    """Whether the recurrence's (batch × n) · (n × n) steps go to oneDNN: its loops are the ``onednn`` ones."""
    return kernel_policy.policy_for(x).loops(batch, n) == kernel_policy.ONEDNN


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b by oneDNN.  While torch.compile traces (also a backward, under compiled autograd) by torch.mm:
    inductor lowers the oneDNN op only for a frozen weight."""
    if torch.compiler.is_compiling():
        return torch.mm(a, b)
    return onednn_mm(a, b)


class MatMul(torch.autograd.Function):
    """a @ b by oneDNN, forward and backward (what :func:`matmul` runs where the policy chooses oneDNN)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _mm(a, b)

    @staticmethod
    @first_order_only("nnrnn's oneDNN matrix product", "; NNRNN_ONEDNN=0 uses torch.mm instead")
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad = grad.contiguous()  # an expanded gradient (from .sum(), stride 0) takes oneDNN's slow path: 30x
        grad_a = _mm(grad, b.t()) if ctx.needs_input_grad[0] else None
        grad_b = _mm(a.t(), grad) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b, by oneDNN (forward and backward) for float32 CPU matrices where the kernel policy chooses it
    (:meth:`nnrnn.kernels.policy.KernelPolicy.products`); torch.matmul otherwise, and while torch.compile
    traces: inductor lowers the oneDNN op only for a frozen (constant) weight and fails on any other."""
    if a.dim() == 2 and b.dim() == 2 and a.device.type == "cpu" and a.dtype == torch.float32 \
            and b.dtype == a.dtype and not torch.compiler.is_compiling() \
            and kernel_policy.policy_for(a).products(a.shape[0], a.shape[1], b.shape[1]):
        return MatMul.apply(a, b)
    return torch.matmul(a, b)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x Wᵀ (+ b) over x's last dimension, (…, K) · (M × K)ᵀ -> (…, M), contiguous; no autograd (for the
    fused recurrence's forward and backward, which run under no_grad).  By oneDNN for float32 CPU tensors
    where the kernel policy chooses it (:meth:`nnrnn.kernels.policy.KernelPolicy.projections`), by torch
    otherwise."""
    rows = x.numel() // max(1, x.shape[-1])
    if x.device.type == "cpu" and x.dtype == torch.float32 and weight.dtype == x.dtype and rows > 0 \
            and kernel_policy.policy_for(x).projections(rows, x.shape[-1], weight.shape[0], weight.is_contiguous()):
        flat = onednn()(x.reshape(rows, x.shape[-1]), weight, bias, "none", [], "")
        return flat.view(*x.shape[:-1], weight.shape[0])
    return torch.nn.functional.linear(x, weight, bias).contiguous()


# ----------------------------------------------------------------------------- compiled time loops

LOOPS_SOURCE = Path(__file__).with_name("csrc") / "recurrence_loops.cpp"
LOOPS_CFLAGS = ["-O3"]  # no -march: the cached build must run on any x86-64 that shares the cache
_loops: dict = {}  # {"module": module or None, "reason": why None}


extensions_dir = environment.extensions_dir  # where compiled loops are cached


def _loops_name() -> str:
    """Module name that changes with everything the binary depends on, so a stale build is never loaded."""
    key = hashlib.sha256()
    for part in (LOOPS_SOURCE.read_bytes(), torch.__version__.encode(), sys.version.encode(),
                 platform.machine().encode(), " ".join(LOOPS_CFLAGS).encode()):
        key.update(part)
    return "nnrnn_recurrence_loops_" + key.hexdigest()[:16]


def _import_from(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _ninja_on_path():
    """torch runs ``ninja`` from PATH; the pip package's binary is not on it unless the venv is active.  So for
    the build call only, where ninja is not found, PATH gets the package's folder, and is restored after."""
    path = os.environ.get("PATH", "")
    try:
        import ninja
        needed = shutil.which("ninja") is None
    except ImportError:
        needed = False
    if needed:
        os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + path
    try:
        yield
    finally:
        if needed:
            os.environ["PATH"] = path


def _build_loops(name: str, target: Path):
    """Compile into a private temporary folder, then move the library into place with one rename:
    concurrent builds (torchrun's processes) cannot see each other's half-written files, and a build
    killed half-way leaves at most a stray temporary folder, never a half-written library or a lock
    (torch's own cache folder would keep a lock file that makes the next build wait forever)."""
    from torch.utils.cpp_extension import load  # imported here: it is slow to import and rarely needed

    target.parent.mkdir(parents=True, exist_ok=True)
    print("nnrnn: compiling the C++ recurrence loops (once per torch version, about 10 s)...",
          file=sys.stderr, flush=True)
    start = time.perf_counter()
    build = Path(tempfile.mkdtemp(prefix=name + "-", dir=target.parent))
    torch_logger = logging.getLogger("torch.utils.cpp_extension")
    level = torch_logger.level
    torch_logger.setLevel(logging.ERROR)  # its banners about compiler versions; a failure raises anyway
    try:
        with _ninja_on_path():
            module = load(name, [str(LOOPS_SOURCE)], extra_cflags=LOOPS_CFLAGS, build_directory=str(build),
                          verbose=False)
        os.replace(next(build.glob(name + "*.so")), target)
    finally:
        torch_logger.setLevel(level)
        shutil.rmtree(build, ignore_errors=True)
    print(f"nnrnn: compiled in {time.perf_counter() - start:.0f} s, cached in {target.parent}",
          file=sys.stderr, flush=True)
    return module


def _short_reason(error: Exception) -> str:
    """The line of a failed build that says what went wrong (not the compiler's command lines)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("[", "FAILED", "ninja: build stopped"))
              and " -c " not in line and " -o " not in line]
    for line in useful:
        if "error" in line.lower() or "not found" in line.lower():
            return line[:200]
    return (useful or lines or [type(error).__name__])[-1][:200]


def recurrence_loops():
    """The compiled loops (a module with ``forward_loop`` and ``backward_loop``), or None.

    Compiled on first use with :func:`torch.utils.cpp_extension.load` and cached (see
    :func:`extensions_dir`); ``make install`` does it up front.  None, after one line on stderr,
    when compiling fails (no C++ compiler, no ninja): the Python loops of ``fused.py`` then do the
    work.  ``NNRNN_CPP=0`` turns the compiled loops off.
    """
    if "module" not in _loops:
        _loops["module"], _loops["reason"] = None, "NNRNN_CPP=0"
        if kernel_policy.settings().cpp:
            try:
                name = _loops_name()
                target = extensions_dir() / (name + ".so")
                _loops["module"] = _import_from(target, name) if target.exists() else _build_loops(name, target)
            except Exception as error:  # any failure to build or load means: use the Python loops
                _loops["reason"] = _short_reason(error)
                print(f"nnrnn: the C++ recurrence loops are unavailable ({_loops['reason']}), so the slower "
                      "Python loops run; install g++ (and ninja) to get them, or set NNRNN_CPP=0 to skip "
                      "this attempt", file=sys.stderr, flush=True)
    return _loops["module"]


def loops_unavailable_reason() -> str:
    """Why :func:`recurrence_loops` returned None ("" if it did not, or was not called yet)."""
    return "" if _loops.get("module") is not None else _loops.get("reason", "")
