"""The recurrence of :mod:`.recurrence` as one autograd node with a hand-written backward.

    z_t = V h_{t-1} + W_ih x_t + b,    h_t = φ(z_t),    t = 1..T

:func:`fused_recurrence` computes what
:func:`~nnrnn.models.recurrence.reference_recurrence` computes, with the
same operations in the same order in the forward pass (results agree to
rounding: BLAS may round differently for differently aligned operands), but
as a single :class:`torch.autograd.Function`:

* forward: the input projection W_ih x_t + b of every step is one matrix
  product, written straight into the output buffer H (T × B × N); each step
  then adds V h_{t-1} and writes φ of the sum into H, so the loop builds no graph.
* saved for backward: only H (which is the output anyway), h0, the inputs
  and the weights; no per-step graph, no pre-activations.  φ'(z_t) is
  recovered from h_t = φ(z_t):

  - relu:    φ' = [h > 0]  (autograd's rule for relu at 0 too)
  - modrelu: φ' = [h ≠ 0]  (h = sign(z)·relu(|z| + b) is non-zero exactly
    where z ≠ 0 and |z| + b > 0, which is where the derivative is 1; at
    z = 0 autograd's derivative of the reference is 0 as well), and
    ∂h/∂b_mod = sign(z)·[|z| + b > 0], so dL/db_mod = Σ dz ⊙ sign(h)
  - tanh:    φ' = 1 - h²
  - None:    φ' = 1

* backward through time: one loop over t = T..1 of two operations,
  dz_t = (dL/dh_t) ⊙ φ'_t and dL/dh_{t-1} += dz_t V; then every weight
  gradient is a single matrix product over all steps at once (dV in a few
  chunks of steps on the oneDNN path):
  dV = Σ_t dz_tᵀ h_{t-1}, dW_ih = Σ_t dz_tᵀ x_t, db = Σ_t dz_t,
  dx = dz W_ih, dh_0 = dz_1 V.

The ``aten`` loops use only ``torch`` operations, so the same code runs on CUDA,
in float32 and float64; the other two are for float32 tensors on the CPU.
Double backward is not supported (it raises, ``kernels.first_order_only``); use the
reference loop for that.

Memory of the backward pass: ∂L/∂z (T × B × N) and, in the Python loops, φ' of
a chunk of steps (at most CHUNK_ELEMENTS), recomputed from h as the loop goes.

The two loops have three implementations; :func:`choose_loops` asks the kernel policy
(:mod:`nnrnn.kernels.policy`), which times them at the shape in use, or with ``NNRNN_TUNE=0`` applies the fixed
thresholds given here:

* ``compiled``: ``nnrnn/kernels/csrc/recurrence_loops.cpp``, the same loops in C++, each
  step one call of oneDNN's small-GEMM micro-kernel (``at::native::cpublas::brgemm``)
  with φ, φ' and modReLU's bias gradient fused into the same pass over the step.
  Float32 on the CPU, wherever it compiled (see :func:`nnrnn.kernels.recurrence_loops`),
  by the thresholds below B·N² = ``kernel_policy.COMPILED_MAX_WORK`` (2²⁴ with oneDNN, 2²² without).
  At small steps Python's per-step dispatch and MKL's cost per call are most of the loops' time, and the
  compiled loops remove them
  (docs/performance.md, 'Compiled loops').
* ``onednn``: Python issuing oneDNN inner products (multithreaded), for large
  float32 CPU steps (by the thresholds: where oneDNN is preferred, AVX-512).
* ``aten``: Python issuing ``addmm_`` and elementwise calls: large float32 steps on
  other CPUs (MKL), float64, CUDA, and machines where the C++ file did not compile.
"""
from __future__ import annotations

import torch

from ..kernels import operations as kernels
from ..kernels import policy as kernel_policy
from ..kernels.policy import ATEN, COMPILED, ONEDNN  # noqa: F401 -- ATEN: one of the names choose_loops returns
from ..kernels.operations import exporting_to_onnx, first_order_only, recurrence_loops
from .recurrence import NONLINEARITIES, reference_recurrence

CHUNK_ELEMENTS = 1 << 20  # size of the temporaries of φ' and of the modReLU bias gradient
# oneDNN copies the transposed operand dzᵀ of dV = Σ dz_tᵀ h_{t-1} to contiguous memory, so dV is
# summed over chunks of steps of about this many elements each (1 M: 4 MB in float32)
DV_CHUNK_ELEMENTS = 1 << 20


def _phi_into(out: torch.Tensor, z: torch.Tensor, nonlinearity: str | None,
              modrelu_bias: torch.Tensor | None, sign: torch.Tensor | None) -> None:
    """out = φ(z); z may be out itself, or a temporary that is overwritten."""
    if nonlinearity == "modrelu":
        torch.sign(z, out=sign)
        # |z| + b as b + sign(z)·z (exact: sign(z)·z = |z|), then sign(z)·relu(|z| + b)
        torch.addcmul(modrelu_bias, sign, z, out=out).relu_().mul_(sign)
    elif nonlinearity == "relu":
        torch.clamp_min(z, 0, out=out)
    elif nonlinearity == "tanh":
        torch.tanh(z, out=out)
    elif out is not z:
        out.copy_(z)


# ----------------------------------------------------------------------------- the two loops

# Which loops run a recurrence (COMPILED, ONEDNN, ATEN): the compiled ones (csrc/recurrence_loops.cpp), Python
# issuing oneDNN products, or Python issuing torch.mm (addmm_).
_KIND = {None: 0, "relu": 1, "tanh": 2, "modrelu": 3}  # the enum of recurrence_loops.cpp


def choose_loops(h: torch.Tensor, nonlinearity: str | None = "relu") -> str:
    """COMPILED, ONEDNN or ATEN for outputs h (T × B × N): the kernel policy's choice for h's device, dtype and
    (B, N) (benchmarks/recurrence_loops.py and benchmarks/kernel_policy.py time them)."""
    return kernel_policy.policy_for(h).loops(h.shape[1], h.shape[2], nonlinearity)


def _forward_loop(h: torch.Tensor, h0: torch.Tensor, v: torch.Tensor, nonlinearity: str | None,
                  modrelu_bias: torch.Tensor | None, loops: str) -> None:
    """In place: h[t] holds W_ih x_t + b on entry and h_t on exit (same operations as the reference)."""
    if loops == COMPILED:
        bias = modrelu_bias.contiguous() if nonlinearity == "modrelu" else h.new_empty(0)
        recurrence_loops().forward_loop(h, h0.contiguous(), v.t().contiguous(), _KIND[nonlinearity], bias)
        return
    onednn = loops == ONEDNN
    prev = h0
    sign = h.new_empty(h.shape[1:]) if nonlinearity == "modrelu" else None
    v_t = v.t()
    for step in h.unbind(0):
        z = kernels.onednn().binary(prev, step, v, None, "add") if onednn else step.addmm_(prev, v_t)
        _phi_into(step, z, nonlinearity, modrelu_bias, sign)
        prev = step


def _derivative(h: torch.Tensor, nonlinearity: str, out: torch.Tensor) -> torch.Tensor:
    """φ'(z) from h = φ(z), as a float tensor written to ``out`` (multiplying by a float mask is
    several times faster than masking with a boolean one on CPU)."""
    if nonlinearity == "relu":
        return torch.sign(h, out=out)  # h ≥ 0, so sign(h) = [h > 0]
    if nonlinearity == "modrelu":
        return torch.sign(h, out=out).abs_()  # [h ≠ 0]
    return torch.mul(h, h, out=out).neg_().add_(1)  # tanh


def _derivatives(h: torch.Tensor, nonlinearity: str | None):
    """φ'_t for t = T..1, computed for chunks of steps at once (fewer small calls than one per step,
    a buffer of at most CHUNK_ELEMENTS rather than T × B × N); None for the identity."""
    steps = h.shape[0]
    if nonlinearity is None:
        yield from (None for _ in range(steps))
        return
    chunk = max(1, min(steps, CHUNK_ELEMENTS // max(1, h[0].numel())))
    buffer = h.new_empty((chunk,) + h.shape[1:])
    for stop in range(steps, 0, -chunk):
        start = max(0, stop - chunk)
        yield from reversed(_derivative(h[start:stop], nonlinearity, buffer[:stop - start]).unbind(0))


def _backward_loop(grad_h: torch.Tensor, h: torch.Tensor, nonlinearity: str | None, v: torch.Tensor,
                   loops: str, modrelu_bias_grad: torch.Tensor | None = None) -> torch.Tensor:
    """∂L/∂z_t of every step (T × B × N) from ∂L/∂h_t of the outputs (left unchanged).  The compiled
    loops also add modReLU's bias gradient into ``modrelu_bias_grad`` (zeros) when it is given."""
    steps = grad_h.shape[0]
    if loops == COMPILED:
        g = torch.empty_like(grad_h, memory_format=torch.contiguous_format)
        bias_grad = h.new_empty(0) if modrelu_bias_grad is None else modrelu_bias_grad
        recurrence_loops().backward_loop(g, grad_h.contiguous(), h, v.contiguous(), _KIND[nonlinearity],
                                         bias_grad)
        return g
    if loops == ONEDNN:
        # oneDNN writes dz_t V + ∂L/∂h_{t-1} to a new tensor anyway, so φ' is applied on the way
        # into g and the incoming gradient needs no copy.
        incoming = grad_h.contiguous().unbind(0)
        g = torch.empty_like(grad_h, memory_format=torch.contiguous_format)
        out = g.unbind(0)
        v_t = v.t().contiguous()  # oneDNN takes the weight as (out, in): dz V = dz (Vᵀ)ᵀ
        carry, op = None, kernels.onednn()
        for t, d in zip(range(steps - 1, -1, -1), _derivatives(h, nonlinearity)):
            y = incoming[t] if carry is None else op.binary(carry, incoming[t], v_t, None, "add")
            if d is None:
                out[t].copy_(y)
            else:
                torch.mul(y, d, out=out[t])
            carry = out[t]
        return g
    g = torch.empty_like(grad_h, memory_format=torch.contiguous_format)
    out, incoming = g.unbind(0), grad_h.unbind(0)
    for t, d in zip(range(steps - 1, -1, -1), _derivatives(h, nonlinearity)):
        # z_{t+1} = h_t Vᵀ + …  =>  ∂L/∂h_t = incoming_t + dz_{t+1} V, written straight into g (no copy first)
        if t == steps - 1:
            out[t].copy_(incoming[t])
        else:
            torch.addmm(incoming[t], out[t + 1], v, out=out[t])
        if d is not None:
            out[t].mul_(d)
    return g


def _modrelu_bias_grad(g: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """Σ_t,b dz ⊙ sign(h) (∂h/∂b_mod = sign(z)·[|z| + b_mod > 0], and dz is 0 where h is), in chunks of
    steps so that the temporary stays small."""
    steps, batch, n = h.shape
    chunk = max(1, CHUNK_ELEMENTS // max(1, batch * n))
    total = h.new_zeros(n)
    for start in range(0, steps, chunk):
        part = torch.sign(h[start:start + chunk]).mul_(g[start:start + chunk])
        total.add_(part.view(-1, n).sum(0))
    return total


# ----------------------------------------------------------------------------- autograd function

def _forward(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias, loops=None) -> torch.Tensor:
    """H (T, B, N): the input projection of every step, then the loop over steps in place (by ``loops``, else
    by :func:`choose_loops`' choice)."""
    with torch.no_grad():
        h = kernels.linear(inputs, weight_ih, bias)
        _forward_loop(h, h0, weight_hh, nonlinearity, modrelu_bias, loops or choose_loops(h, nonlinearity))
    return h


def _backward(grad_h, h, h0, inputs, weight_ih, weight_hh, nonlinearity, has_bias: bool, needs,
              loops=None) -> list:
    """Gradients (inputs, h0, weight_ih, bias, weight_hh, modrelu_bias), None where ``needs`` says no."""
    need_x, need_h0, need_w, need_b, need_v, need_mb = needs
    # the forward's choice: the policy's decision for h's device, dtype and shape bucket, made once
    loops = loops or choose_loops(h, nonlinearity)
    steps, batch, n = h.shape
    fused_bias_grad = need_mb and nonlinearity == "modrelu" and loops == COMPILED
    grad_mb = h.new_zeros(n) if fused_bias_grad else None
    g = _backward_loop(grad_h, h, nonlinearity, weight_hh, loops, grad_mb)
    dz = g.view(steps * batch, n)
    grad_x = grad_h0 = grad_w = grad_b = grad_v = None
    if need_x:
        grad_x = kernels.linear(g, weight_ih.t())
    if need_h0:
        grad_h0 = torch.mm(g[0], weight_hh)
    if need_w:
        # as (xᵀ dz)ᵀ: MKL is several times faster at this orientation when I << N
        grad_w = torch.mm(inputs.reshape(steps * batch, -1).t(), dz).t().contiguous()
    if need_b and has_bias:
        grad_b = dz.sum(0)
    if need_v:
        grad_v = torch.mm(g[0].t(), h0)
        if steps > 1 and loops == ONEDNN:  # (N × TB)(TB × N): linear(X, W) = X Wᵀ with X = dzᵀ, W = Hᵀ
            chunk = max(1, DV_CHUNK_ELEMENTS // (batch * n))
            for start in range(1, steps, chunk):
                stop = min(steps, start + chunk)
                dz_t = g[start:stop].reshape(-1, n).t()
                grad_v.add_(kernels.onednn()(dz_t, h[start - 1:stop - 1].reshape(-1, n).t(), None, "none", [], ""))
        elif steps > 1:
            grad_v.addmm_(g[1:].reshape(-1, n).t(), h[:-1].reshape(-1, n))
    if need_mb and nonlinearity == "modrelu" and not fused_bias_grad:
        grad_mb = _modrelu_bias_grad(g, h)
    return [grad_x, grad_h0, grad_w, grad_b, grad_v, grad_mb]


class FusedRecurrence(torch.autograd.Function):
    """outputs (T, B, N) = FusedRecurrence.apply(inputs, h0, weight_ih, bias, weight_hh,
    nonlinearity, modrelu_bias), T ≥ 1; see the module docstring."""

    @staticmethod
    def forward(ctx, inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias):
        h = _forward(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias)
        ctx.nonlinearity = nonlinearity
        ctx.has_bias = bias is not None
        ctx.save_for_backward(h, h0, inputs, weight_ih, weight_hh)
        return h

    @staticmethod
    @first_order_only("nnrnn's fused recurrence",
                      "; model.implementation = 'reference' runs the recurrence through autograd, which supports them")
    def backward(ctx, grad_h):
        h, h0, inputs, weight_ih, weight_hh = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grads = _backward(grad_h, h, h0, inputs, weight_ih, weight_hh, ctx.nonlinearity, ctx.has_bias,
                          needs[:5] + needs[6:])
        return (*grads[:5], None, grads[5])


# ----------------------------------------------------------------------------- as a torch.library op
# torch.compile and torch.export cannot trace the loops (compiled C++, or data-dependent choices), so while
# compiling the recurrence is one opaque custom op with a shape function and this same backward.

_KINDS = {kind: name for name, kind in _KIND.items()}


@torch.library.custom_op("nnrnn::recurrence", mutates_args=())
def recurrence_op(inputs: torch.Tensor, h0: torch.Tensor, weight_ih: torch.Tensor, bias: torch.Tensor | None,
                  weight_hh: torch.Tensor, kind: int, modrelu_bias: torch.Tensor | None) -> torch.Tensor:
    return _forward(inputs, h0, weight_ih, bias, weight_hh, _KINDS[kind], modrelu_bias)


@recurrence_op.register_fake
def _(inputs, h0, weight_ih, bias, weight_hh, kind, modrelu_bias):
    return inputs.new_empty(inputs.shape[0], inputs.shape[1], weight_ih.shape[0])


@torch.library.custom_op("nnrnn::recurrence_backward", mutates_args=())
def recurrence_backward_op(grad_h: torch.Tensor, h: torch.Tensor, h0: torch.Tensor, inputs: torch.Tensor,
                           weight_ih: torch.Tensor, weight_hh: torch.Tensor, kind: int, has_bias: bool,
                           has_modrelu_bias: bool, need_inputs: bool, need_h0: bool) -> list[torch.Tensor]:
    grads = _backward(grad_h, h, h0, inputs, weight_ih, weight_hh, _KINDS[kind], has_bias,
                      (need_inputs, need_h0, True, has_bias, True, has_modrelu_bias))
    return [g if g is not None else h.new_empty(0) for g in grads]  # an op returns tensors, not None


@recurrence_backward_op.register_fake
def _(grad_h, h, h0, inputs, weight_ih, weight_hh, kind, has_bias, has_modrelu_bias, need_inputs, need_h0):
    n = h.shape[-1]
    return [torch.empty_like(inputs) if need_inputs else h.new_empty(0),
            torch.empty_like(h0) if need_h0 else h.new_empty(0), torch.empty_like(weight_ih),
            h.new_empty(n if has_bias else 0), torch.empty_like(weight_hh), h.new_empty(n if has_modrelu_bias else 0)]


def _setup_context(ctx, inputs, output):
    x, h0, weight_ih, bias, weight_hh, kind, modrelu_bias = inputs
    ctx.kind, ctx.has_bias, ctx.has_modrelu_bias = kind, bias is not None, modrelu_bias is not None
    ctx.save_for_backward(output, h0, x, weight_ih, weight_hh)


def _op_backward(ctx, grad_h):
    h, h0, x, weight_ih, weight_hh = ctx.saved_tensors
    need_x, need_h0 = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    gx, gh0, gw, gb, gv, gmb = recurrence_backward_op(grad_h.contiguous(), h, h0, x, weight_ih, weight_hh, ctx.kind,
                                                      ctx.has_bias, ctx.has_modrelu_bias, need_x, need_h0)
    return (gx if need_x else None, gh0 if need_h0 else None, gw, gb if ctx.has_bias else None, gv, None,
            gmb if ctx.has_modrelu_bias else None)


recurrence_op.register_autograd(_op_backward, setup_context=_setup_context)


def fused_recurrence(inputs: torch.Tensor, h0: torch.Tensor, weight_ih: torch.Tensor,
                     bias: torch.Tensor | None, weight_hh: torch.Tensor,
                     nonlinearity: str | None, modrelu_bias: torch.Tensor | None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """inputs (T, B, I), h0 (B, N) -> outputs (T, B, N), h_T (B, N); same contract as
    :func:`~nnrnn.models.recurrence.reference_recurrence`."""
    if nonlinearity not in NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {NONLINEARITIES}; got {nonlinearity!r}")
    if nonlinearity == "modrelu" and modrelu_bias is None:
        raise ValueError("modrelu needs modrelu_bias")
    if nonlinearity != "modrelu":
        modrelu_bias = None
    if inputs.shape[0] == 0:
        return inputs.new_zeros(0, *h0.shape), h0
    if inputs.shape[1] == 0:  # an empty batch: empty outputs, as torch.nn.RNN gives (the loops need rows)
        return torch.nn.functional.linear(inputs, weight_ih, bias), h0.clone()
    if exporting_to_onnx():  # the same steps as plain operators, one per time step of the traced input
        return reference_recurrence(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias)
    if torch.compiler.is_compiling():
        outputs = recurrence_op(inputs, h0, weight_ih, bias, weight_hh, _KIND[nonlinearity], modrelu_bias)
    elif torch.is_grad_enabled():
        outputs = FusedRecurrence.apply(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias)
    else:  # inference (e.g. generating one token at a time): the same loops without an autograd node
        outputs = _forward(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias)
    return outputs, outputs[-1].clone()  # a tensor of its own, as the reference returns
