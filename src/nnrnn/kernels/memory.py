"""The process's allocator setting for training: freed memory kept for reuse (see :func:`keep_freed_memory`)."""
from __future__ import annotations

import platform

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
