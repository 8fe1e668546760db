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
  - elu:     φ' = min(h, 0) + 1  (1 for z > 0, e^z = h + 1 otherwise)
  - None:    φ' = 1

* backward through time: one loop over t = T..1 of two operations,
  dz_t = (dL/dh_t) ⊙ φ'_t and dL/dh_{t-1} += dz_t V; then every weight
  gradient is a single matrix product over all steps at once (dV in a few
  chunks of steps on the oneDNN path):
  dV = Σ_t dz_tᵀ h_{t-1}, dW_ih = Σ_t dz_tᵀ x_t, db = Σ_t dz_t,
  dx = dz W_ih, dh_0 = dz_1 V.

The ``aten`` loops use only ``torch`` operations, so the same code runs on CUDA,
in float32 and float64; the other two are for float32 tensors on the CPU.
Double backward is not supported (it raises, ``kernels.autograd.first_order_only``); use the
reference loop for that.

Memory of the backward pass: ∂L/∂z (T × B × N) and, in the Python loops, φ' of
a chunk of steps (at most ``kernels.loops.CHUNK_ELEMENTS``), recomputed from h as the loop goes.

The two loops have three implementations; :func:`nnrnn.kernels.operations.choose_loops` asks the kernel policy
(:mod:`nnrnn.kernels.policy`), which times them at the shape in use, or with ``NNRNN_TUNE=0`` applies the fixed
thresholds given here:

* ``compiled``: ``nnrnn/kernels/csrc/recurrence_loops.cpp``, the same loops in C++, each
  step one call of oneDNN's small-GEMM micro-kernel (``at::native::cpublas::brgemm``)
  with φ, φ' and modReLU's bias gradient fused into the same pass over the step.
  Float32 on the CPU, wherever it compiled (see :func:`nnrnn.kernels.extension.recurrence_loops`),
  by the thresholds below B·N² = ``kernels.policy.COMPILED_MAX_WORK`` (2²⁴ with oneDNN, 2²² without).
  At small steps Python's per-step dispatch and MKL's cost per call are most of the loops' time, and the
  compiled loops remove them
  (docs/performance.md, 'Compiled loops').
* ``onednn``: Python issuing oneDNN inner products (multithreaded), for large
  float32 CPU steps (by the thresholds: where oneDNN is preferred, AVX-512).
* ``aten``: Python issuing ``addmm_`` and elementwise calls: large float32 steps on
  other CPUs (MKL), float64, CUDA, and machines where the C++ file did not compile.
"""
from __future__ import annotations

import contextlib

import torch

from ..kernels import loops
from ..kernels.autograd import exporting_to_onnx, first_order_only
from ..kernels.operations import choose_loops, linear
from .recurrence import NONLINEARITIES, reference_recurrence

# ----------------------------------------------------------------------------- autograd function

def _forward(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias, loops_name=None) -> torch.Tensor:
    """H (T, B, N): the input projection of every step, then the loop over steps in place (by ``loops_name``,
    else by :func:`~nnrnn.kernels.operations.choose_loops`' choice)."""
    inference = not torch.is_grad_enabled()
    with contextlib.nullcontext() if inference else torch.no_grad():  # one step at a time pays for every context
        h = linear(inputs, weight_ih, bias)
        loops.forward_loop(h, h0, weight_hh, nonlinearity, modrelu_bias, loops_name or choose_loops(h, nonlinearity),
                           inference)
    return h


def _backward(grad_h, h, h0, inputs, weight_ih, weight_hh, nonlinearity, has_bias: bool, needs,
              loops_name=None) -> list:
    """Gradients (inputs, h0, weight_ih, bias, weight_hh, modrelu_bias), None where ``needs`` says no."""
    need_x, need_h0, need_w, need_b, need_v, need_mb = needs
    # the forward's choice: the policy's decision for h's device, dtype and shape bucket, made once
    loops_name = loops_name or choose_loops(h, nonlinearity)
    steps, batch, n = h.shape
    g, grad_v, grad_mb = loops.backward(grad_h, h, h0, weight_hh, nonlinearity, loops_name, need_v, need_mb)
    dz = g.view(steps * batch, n)
    grad_x = grad_h0 = grad_w = grad_b = None
    if need_x:
        grad_x = linear(g, weight_ih.t())
    if need_h0:
        grad_h0 = torch.mm(g[0], weight_hh)
    if need_w:
        # as (xᵀ dz)ᵀ: MKL is several times faster at this orientation when I << N
        grad_w = torch.mm(inputs.reshape(steps * batch, -1).t(), dz).t().contiguous()
    if need_b and has_bias:
        grad_b = dz.sum(0)
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
# compiling the recurrence is one opaque custom op with a shape function and this same backward.  Each op's schema
# is written out, not inferred from the annotations: torch 2.4.1 cannot read them as strings (`from __future__
# import annotations`), 2.6.0 not `list[torch.Tensor]` (docs/design.md, "Supported torch").

_KINDS = {kind: name for name, kind in loops.KIND.items()}


@torch.library.custom_op("nnrnn::recurrence", mutates_args=(), schema=(
    "(Tensor inputs, Tensor h0, Tensor weight_ih, Tensor? bias, Tensor weight_hh, SymInt kind, Tensor? modrelu_bias) "
    "-> Tensor"))
def recurrence_op(inputs: torch.Tensor, h0: torch.Tensor, weight_ih: torch.Tensor, bias: torch.Tensor | None,
                  weight_hh: torch.Tensor, kind: int, modrelu_bias: torch.Tensor | None) -> torch.Tensor:
    return _forward(inputs, h0, weight_ih, bias, weight_hh, _KINDS[kind], modrelu_bias)


@recurrence_op.register_fake
def _(inputs, h0, weight_ih, bias, weight_hh, kind, modrelu_bias):
    return inputs.new_empty(inputs.shape[0], inputs.shape[1], weight_ih.shape[0])


@torch.library.custom_op("nnrnn::recurrence_backward", mutates_args=(), schema=(
    "(Tensor grad_h, Tensor h, Tensor h0, Tensor inputs, Tensor weight_ih, Tensor weight_hh, SymInt kind, "
    "bool has_bias, bool has_modrelu_bias, bool need_inputs, bool need_h0) -> Tensor[]"))
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
                     nonlinearity: str | None, modrelu_bias: torch.Tensor | None,
                     noise: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """inputs (T, B, I), h0 (B, N) -> outputs (T, B, N), h_T (B, N); same contract as
    :func:`~nnrnn.models.recurrence.reference_recurrence`, ``noise`` included (:func:`_with_noise`)."""
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
    if noise is not None:
        return _with_noise(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias, noise)
    if exporting_to_onnx():  # the same steps as plain operators, one per time step of the traced input
        return reference_recurrence(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias)
    if torch.compiler.is_compiling():
        outputs = recurrence_op(inputs, h0, weight_ih, bias, weight_hh, loops.KIND[nonlinearity], modrelu_bias)
    elif torch.is_grad_enabled():
        outputs = FusedRecurrence.apply(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias)
    else:  # inference (e.g. generating one token at a time): the same loops without an autograd node
        outputs = _forward(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias)
    return outputs, outputs[-1].clone()  # a tensor of its own, as the reference returns


def _with_noise(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias, noise):
    """The recurrence with ``noise`` n_t added to the state after every step, h_t = φ(V h_{t-1} + u_t) + n_t, on the
    fast loops unchanged: with g_t = h_t − n_t it is the noiseless recurrence g_t = φ(V g_{t-1} + u_t + V n_{t-1})
    (n_0 = 0), so the noise enters as one more input, n_{t-1} read through V ([x_t, n_{t-1}] times [W_ih, V]: one
    wider input projection, and the gradients of W_ih and V through autograd's cat), and h = g + n."""
    shifted = torch.cat([noise.new_zeros(1, *noise.shape[1:]), noise[:-1]])
    g, _ = fused_recurrence(torch.cat([inputs, shifted], -1), h0, torch.cat([weight_ih, weight_hh], 1), bias,
                            weight_hh, nonlinearity, modrelu_bias)
    outputs = g + noise
    return outputs, outputs[-1].clone()
