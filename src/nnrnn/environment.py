"""The environment variables nnrnn reads, all read through this module (docs/training.md lists them).

| variable | default | effect |
|---|---|---|
| ``NNRNN_DEBUG`` | off | the command line re-raises the errors it would print as one line, with their traceback |
| ``NNRNN_CPP`` | on | off: the fused recurrence runs its Python loops, never the compiled C++ ones |
| ``NNRNN_ONEDNN`` | auto | on: large float32 CPU products go to oneDNN on any CPU; off: never; \
unset: where the CPU has AVX-512 |
| ``NNRNN_KEEP_FREED_MEMORY`` | on | off: the ``nnrnn`` command leaves glibc's malloc settings alone |
| ``NNRNN_EXTENSIONS_DIR`` | ``$XDG_CACHE_HOME/nnrnn`` | where the compiled loops are cached |
| ``NNRNN_DATA`` | | a folder searched first for data files |

A boolean is off for ``0``, ``false``, ``no`` and ``off`` (any case), on for any other non-empty value, and
takes its default when unset or empty.
"""
from __future__ import annotations

import os

OFF = ("0", "false", "no", "off")


def flag(name: str, default: bool | None = False) -> bool | None:
    """The boolean environment variable ``name``: ``default`` when unset or empty, False for one of :data:`OFF`,
    else True."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    return value not in OFF
