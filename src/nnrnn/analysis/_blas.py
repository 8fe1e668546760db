"""Run the analysis' small dense linear algebra on one OpenBLAS thread.

NumPy and SciPy each bundle an OpenBLAS whose worker threads busy-wait.  On a
machine with few cores and other busy processes, a single 100 × 100 SVD or
eigenvalue call then takes over a hundred times longer (docs/performance.md,
'Small linear algebra in the analysis').  The matrices here are small, so :func:`single_threaded_blas`
sets every loaded OpenBLAS to one thread for the duration of a call and restores
the previous count afterwards.  It does nothing when the user has set
``OPENBLAS_NUM_THREADS`` (their choice wins), when the platform has no
``/proc/self/maps``, or when the libraries lack the symbols.  The setting is
process-wide while it lasts.
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading

_lock = threading.Lock()
_funcs: list | None = None
_depth = 0
_saved: list[int] = []


def _setters() -> list:
    global _funcs
    if _funcs is None:
        found = []
        try:
            with open("/proc/self/maps") as fh:
                paths = sorted({line.split()[-1] for line in fh
                                if "openblas" in line.lower() and line.split()[-1].startswith("/")})
        except OSError:
            paths = []
        for path in paths:
            try:
                lib = ctypes.CDLL(path)
                f = lib.openblas_set_num_threads_local
            except (OSError, AttributeError):
                continue
            f.restype, f.argtypes = ctypes.c_int, [ctypes.c_int]
            found.append(f)
        _funcs = found
    return _funcs


class single_threaded_blas:
    """Context manager and decorator: OpenBLAS on one thread inside, restored on exit (re-entrant)."""

    def __enter__(self):
        global _depth, _saved
        if os.environ.get("OPENBLAS_NUM_THREADS"):
            return self
        with _lock:
            if _depth == 0:
                try:
                    _saved = [f(1) for f in _setters()]
                except Exception:  # never let a tuning knob break the analysis
                    _saved = []
            _depth += 1
        return self

    def __exit__(self, *exc):
        global _depth
        if os.environ.get("OPENBLAS_NUM_THREADS"):
            return False
        with _lock:
            _depth -= 1
            if _depth == 0:
                for f, n in zip(_setters(), _saved):
                    try:
                        f(max(int(n), 1))
                    except Exception:
                        pass
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with single_threaded_blas():
                return func(*args, **kwargs)
        return wrapper
