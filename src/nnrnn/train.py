"""``nnrnn.train`` moved to :mod:`nnrnn.training.train`; this name stays for code that imports it.

It is the same module object, so attributes read, set or monkeypatched through either name agree."""
import sys

from .training import train as _moved

sys.modules[__name__] = _moved
