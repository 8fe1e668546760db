"""The ``nnrnn`` command's entry point, a package beside :mod:`nnrnn`: ``import nnrnn`` imports torch (as any
library built on torch does), and the command parses its arguments before that.  The table of commands and
the start are in :mod:`nnrnn_cli.command`; this file stays empty so that ``python -m nnrnn_cli`` reaches
:mod:`nnrnn_cli.__main__`'s Ctrl-C handling before importing anything."""
