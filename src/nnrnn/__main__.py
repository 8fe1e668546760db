try:  # a Ctrl-C this early is one line too (entry() handles those from here on)
    from .cli import entry
except KeyboardInterrupt:
    import sys
    print("nnrnn: interrupted", file=sys.stderr)
    raise SystemExit(130) from None

entry()
