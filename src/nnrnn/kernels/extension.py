"""The compiled time loops of ``csrc/recurrence_loops.cpp``: built on first use, cached per torch version and
Python, loaded by :func:`recurrence_loops` (None, with the reason, where they cannot be built)."""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import platform
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

import torch

from .. import environment
from . import settings

LOOPS_SOURCE = Path(__file__).with_name("csrc") / "recurrence_loops.cpp"
# every source of the module: the non-gated recurrence's loops (which define the module) and the cells' loops
LOOPS_SOURCES = (LOOPS_SOURCE, LOOPS_SOURCE.with_name("cell_loops.cpp"))
# no -march: the cached build must run on any x86-64 that shares the cache (cell_loops.cpp compiles its σ and tanh
# for each instruction set instead).  -fno-trapping-math: nothing here reads floating-point exception flags, and
# with them GCC keeps the branches of the clamps and selects in σ and tanh, so that their loops did not vectorise
LOOPS_CFLAGS = ["-O3", "-fno-trapping-math"]
_loops: dict = {}  # {"module": module or None, "reason": why None}


extensions_dir = environment.extensions_dir  # where compiled loops are cached


def _loops_name() -> str:
    """Module name that changes with everything the binary depends on, so a stale build is never loaded."""
    key = hashlib.sha256()
    for part in (*(source.read_bytes() for source in LOOPS_SOURCES), torch.__version__.encode(), sys.version.encode(),
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
            module = load(name, [str(source) for source in LOOPS_SOURCES], extra_cflags=LOOPS_CFLAGS,
                          build_directory=str(build), verbose=False)
        os.replace(next(build.glob(name + "*.so")), target)
    finally:
        torch_logger.setLevel(level)
        shutil.rmtree(build, ignore_errors=True)
    print(f"nnrnn: compiled in {time.perf_counter() - start:.0f} s, cached in {target.parent}",
          file=sys.stderr, flush=True)
    return module


def _damage(path: Path) -> str:
    """Why the cached library at ``path`` cannot be loaded whole ("" where it can): empty, not an ELF file, or shorter
    than its own header says (a full disk or a killed copy cuts it short).  Checked before loading because the
    loader maps the file: reading a page past the end of a truncated library kills the process with SIGBUS, no
    exception to catch.  The section headers sit at the file's end and every loaded segment within it, so a cut
    anywhere is seen; a format this does not know (not 64-bit little-endian ELF) is left to the loader."""
    size = path.stat().st_size
    if size == 0:
        return "empty"
    with path.open("rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF":
            return "not a compiled library"
        if header[4:6] != b"\x02\x01" or len(header) < 64:
            return "" if len(header) == 64 else "cut short"
        phoff, shoff = struct.unpack_from("<QQ", header, 32)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", header, 54)
        if shoff + shentsize * shnum > size or phoff + phentsize * phnum > size:
            return "cut short"
        f.seek(phoff)
        for _ in range(phnum):
            entry = f.read(phentsize)
            offset, filesz = struct.unpack_from("<Q", entry, 8)[0], struct.unpack_from("<Q", entry, 32)[0]
            if offset + filesz > size:
                return "cut short"
    return ""


def _cached_or_built(name: str, target: Path):
    """The cached library where it is whole, else a fresh build in its place (one line says why)."""
    if target.exists():
        damage = _damage(target)
        if not damage:
            return _import_from(target, name)
        print(f"nnrnn: the cached compiled loops {target} are damaged ({damage}); compiling them again",
              file=sys.stderr, flush=True)
        target.unlink()  # the build renames a whole library into place; unlinking first means no reader maps this one
    return _build_loops(name, target)


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
        if settings.current().cpp:
            try:
                name = _loops_name()
                target = extensions_dir() / (name + ".so")
                _loops["module"] = _cached_or_built(name, target)
            except Exception as error:  # any failure to build or load means: use the Python loops
                _loops["reason"] = _short_reason(error)
                print(f"nnrnn: the C++ recurrence loops are unavailable ({_loops['reason']}), so the slower "
                      "Python loops run; install g++ (and ninja) to get them, or set NNRNN_CPP=0 to skip "
                      "this attempt", file=sys.stderr, flush=True)
    return _loops["module"]


def loops_unavailable_reason() -> str:
    """Why :func:`recurrence_loops` returned None ("" if it did not, or was not called yet)."""
    return "" if _loops.get("module") is not None else _loops.get("reason", "")
