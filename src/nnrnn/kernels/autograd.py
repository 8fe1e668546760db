"""How nnrnn's hand-written kernels meet autograd, autocast and tracing: first-order backwards that refuse to be
differentiated again, the eager or traced form of a custom function, autocast turned off around a kernel, and
whether ``torch.onnx.export`` is tracing."""
from __future__ import annotations

import contextlib
import functools

import torch
from torch._C import _functions  # DelayedError: what once_differentiable marks gradients with


LOW_PRECISION = (torch.float16, torch.bfloat16)  # composed in float32 and rounded once: see the parametrizations


def first_order_only(what: str, instead: str = ""):
    """For the backward of a hand-written autograd function: it runs without building a graph, and where
    autograd asks for one (``create_graph=True``) its gradients come back marked so that differentiating them
    raises a RuntimeError naming ``what`` and the way out (``instead``).  Gradients that are never
    differentiated (a ``create_graph=True`` backward whose second derivative involves other parameters only)
    are unaffected.  ``once_differentiable`` alone marks them only when the incoming gradient requires grad,
    so a gradient penalty through the function silently got a gradient that counted as a constant."""
    message = (f"{what} has a hand-written first-order backward: gradients of gradients (create_graph=True) "
               f"through it are not supported{instead}").encode()

    def decorate(backward):
        @functools.wraps(backward)
        def checked(ctx, *grads):
            with torch.no_grad():
                outputs = backward(ctx, *grads)
            if not torch.is_grad_enabled():
                return outputs
            single = not isinstance(outputs, tuple)
            outputs = (outputs,) if single else outputs
            marked = _functions.DelayedError(message, len(outputs))(
                *[None if g is None else g.detach().requires_grad_(True) for g in outputs])
            marked = marked if isinstance(marked, tuple) else (marked,)
            return marked[0] if single else marked
        return checked
    return decorate


def eager_or_traced(function: type[torch.autograd.Function], op):
    """How to call a hand-written autograd ``function``: its ``apply`` in eager mode, or ``op``, the same forward
    and backward registered as a ``torch.library`` custom op, while torch.compile or torch.export traces (a
    traced Python loop would be unrolled into the graph, or cannot be traced at all)."""
    return op if torch.compiler.is_compiling() else function.apply


_NOTHING = contextlib.nullcontext()


def autocast_off(device_type: str):
    """A context that turns autocast off on ``device_type``: nnrnn composes V and runs its loops in the
    parameters' precision.  Where autocast is not on (and on devices with no autocast, ``meta``, where models are
    built without memory, which ``torch.autocast`` refuses) a context that does nothing: entering torch.autocast
    costs microseconds that a step at a time pays on every call."""
    if autocast_enabled(device_type):
        return torch.autocast(device_type, enabled=False)
    return _NOTHING


def exporting_to_onnx() -> bool:
    """True while ``torch.onnx.export`` traces a model (also during its ``torch.export`` step).  ONNX has no
    function for nnrnn's custom ops, so the models then trace plain torch operators instead (see
    :func:`nnrnn.parametrizations.expm.expm_skew_traceable`, ``nnrnn.models.eurnn.givens_product_traceable``,
    :func:`nnrnn.models.recurrence.reference_recurrence`)."""
    if not torch.compiler.is_compiling():
        return False
    # imported here, while tracing: marking the flag constant (torch.compiler.assume_constant_result) imports
    # torch._dynamo, a second of `import nnrnn` that only tracing needs.  Dynamo runs an import in traced code
    # as Python does, so the marked function is what it traces.
    from .onnx_flag import in_onnx_export
    return in_onnx_export()


def autocast_enabled(device_type: str) -> bool:
    """``torch.is_autocast_enabled`` that answers False for devices with no autocast (``meta``)."""
    return torch.amp.is_autocast_available(device_type) and torch.is_autocast_enabled(device_type)
