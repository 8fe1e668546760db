"""``python -m nnrnn``: the ``nnrnn`` command, after ``import nnrnn`` (and torch); the ``nnrnn`` command itself
starts from :mod:`nnrnn_cli` without them."""
from nnrnn_cli.command import entry

entry()
