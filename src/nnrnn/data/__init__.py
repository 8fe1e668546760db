"""Real data for the paper's two data tasks: MNIST (IDX files) and Penn Treebank characters.

Where files are looked for, which splits are used when only part of the official
files is present, and how ``nnrnn data fetch`` downloads them: docs/data.md.
Downloading lives in :mod:`nnrnn.data.fetch` (``from nnrnn.data.fetch import fetch``;
not re-exported here, so the name keeps meaning the module).
"""
from __future__ import annotations

from .mnist import MNISTData, load_mnist, read_idx
from .paths import data_root, default_dir, resolve_dir
from .ptb import EOS, PTBCorpus, load_ptb, read_ptb

__all__ = ["EOS", "MNISTData", "PTBCorpus", "data_root", "default_dir", "load_mnist", "load_ptb", "read_idx",
           "read_ptb", "resolve_dir"]
