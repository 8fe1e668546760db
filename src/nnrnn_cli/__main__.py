"""``python -m nnrnn_cli``: the ``nnrnn`` command."""
try:  # a Ctrl-C this early is one line too (entry() handles those from here on)
    from .command import entry
except KeyboardInterrupt:
    import sys
    print("nnrnn: interrupted", file=sys.stderr)
    raise SystemExit(130) from None

entry()
