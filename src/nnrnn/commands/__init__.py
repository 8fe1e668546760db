"""The ``nnrnn`` command's commands, one module each, listed in :data:`nnrnn_cli.command.COMMANDS` with their help
lines.  Each module has ``add_arguments(parser)`` (its description and options) and ``main(args) -> int``
(the exit code), and imports what it needs at its top: this is the top layer, nothing in the library
imports it (docs/contributing.md, tests/test_layers.py)."""
