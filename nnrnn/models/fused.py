"""The recurrence of :mod:`.recurrence` as one autograd node with a hand-written backward.

    z_t = V h_{t-1} + W_ih x_t + b,    h_t = φ(z_t),    t = 1..T

:func:`fused_recurrence` computes what
:func:`~nnrnn.models.recurrence.reference_recurrence` computes, with the
same operations in the same order in the forward pass (results agree to
rounding: BLAS may round differently for differently aligned operands), but
as a single :class:`torch.autograd.Function`:

* forward: the input projection W_ih x_t + b of every step is one matrix
  product, written straight into the output buffer H (T × B × N); each step
  then adds V h_{t-1} in place (``addmm_``) and applies φ in place, so the
  loop allocates nothing and builds no graph.
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

* backward through time: one loop over t = T..1 of two in-place operations,
  dz_t = (dL/dh_t) ⊙ φ'_t and dL/dh_{t-1} += dz_t V; then every weight
  gradient is a single matrix product over all steps at once:
  dV = Σ_t dz_tᵀ h_{t-1}, dW_ih = Σ_t dz_tᵀ x_t, db = Σ_t dz_t,
  dx = dz W_ih, dh_0 = dz_1 V.

Only ``torch`` tensor operations are used (no CPU-only calls), so the same
code runs on CUDA, in float32 and float64.  Double backward is not supported
(``once_differentiable``); use the reference loop for that.

Memory of the backward pass: ∂L/∂z (T × B × N, built in place from a copy of
the incoming gradient) and, for relu and modReLU, a boolean mask of φ' = 0
(T × B × N bytes; tanh needs 1 - h² in full precision).

Both loops are plain Python issuing ATen calls on preallocated buffers: per
step, one ``addmm_`` plus one in-place activation (four small elementwise
calls for modReLU) forward, one ``masked_fill_``/``mul_`` and one ``addmm_``
backward.  There is no C++ extension: on CPU the per-step matrix products
dominate from N = 128 up; at the copy-task sizes (T = 220, B = 10, N = 128)
a prototype that ran the same loops from C++ saved about 1.2 ms of a
15–18 ms nnRNN update, whose largest single cost there is composing V
(matrix_exp's backward), not the loops.
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from .recurrence import NONLINEARITIES

CHUNK_ELEMENTS = 1 << 20  # size of the temporaries of the modReLU bias gradient


# ----------------------------------------------------------------------------- the two loops

def _forward_loop(h: torch.Tensor, h0: torch.Tensor, v_t: torch.Tensor, nonlinearity: str | None,
                  modrelu_bias: torch.Tensor | None) -> None:
    """In place: h[t] holds W_ih x_t + b on entry and h_t on exit (same operations as the reference)."""
    prev = h0
    if nonlinearity == "modrelu":
        sign = h.new_empty(h.shape[1:])
        for step in h.unbind(0):
            step.addmm_(prev, v_t)
            torch.sign(step, out=sign)
            # |z| + b as b + sign(z)·z (exact: sign(z)·z = |z|), then sign(z)·relu(|z| + b)
            torch.addcmul(modrelu_bias, sign, step, out=step).relu_().mul_(sign)
            prev = step
    elif nonlinearity == "relu":
        for step in h.unbind(0):
            step.addmm_(prev, v_t).relu_()
            prev = step
    elif nonlinearity == "tanh":
        for step in h.unbind(0):
            step.addmm_(prev, v_t).tanh_()
            prev = step
    else:
        for step in h.unbind(0):
            step.addmm_(prev, v_t)
            prev = step


def _derivative(h: torch.Tensor, nonlinearity: str | None) -> torch.Tensor | None:
    """φ'(z_t) of every step at once, from h_t = φ(z_t): for relu and modReLU, where φ' is 0 or 1,
    a boolean mask of the zeros (a quarter of the memory of a float tensor); for tanh, 1 - h²;
    None for the identity."""
    if nonlinearity == "relu":
        return h <= 0
    if nonlinearity == "modrelu":
        return h == 0
    if nonlinearity == "tanh":
        return torch.mul(h, h).neg_().add_(1)
    return None


def _backward_loop(g: torch.Tensor, d: torch.Tensor | None, v: torch.Tensor) -> None:
    """In place: g[t] holds ∂L/∂h_t from the outputs on entry and ∂L/∂z_t on exit."""
    steps = g.unbind(0)
    derivatives = d.unbind(0) if d is not None else None
    boolean = d is not None and d.dtype == torch.bool
    for t in range(len(steps) - 1, -1, -1):
        if boolean:
            steps[t].masked_fill_(derivatives[t], 0)
        elif derivatives is not None:
            steps[t].mul_(derivatives[t])
        if t:
            steps[t - 1].addmm_(steps[t], v)  # z_t = h_{t-1} Vᵀ + …  =>  ∂z_t/∂h_{t-1} contributes dz_t V


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

class FusedRecurrence(torch.autograd.Function):
    """outputs (T, B, N) = FusedRecurrence.apply(inputs, h0, weight_ih, bias, weight_hh,
    nonlinearity, modrelu_bias), T ≥ 1; see the module docstring."""

    @staticmethod
    def forward(ctx, inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias):
        with torch.no_grad():
            h = torch.nn.functional.linear(inputs, weight_ih, bias).contiguous()
            _forward_loop(h, h0, weight_hh.t(), nonlinearity, modrelu_bias)
        ctx.nonlinearity = nonlinearity
        ctx.has_bias = bias is not None
        ctx.save_for_backward(h, h0, inputs, weight_ih, weight_hh)
        return h

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_h):
        h, h0, inputs, weight_ih, weight_hh = ctx.saved_tensors
        nonlinearity = ctx.nonlinearity
        need_x, need_h0, need_w, need_b, need_v, _, need_mb = ctx.needs_input_grad
        steps, batch, n = h.shape
        g = grad_h.clone(memory_format=torch.contiguous_format)  # becomes ∂L/∂z in place
        _backward_loop(g, _derivative(h, nonlinearity), weight_hh)
        dz = g.view(steps * batch, n)
        grad_x = grad_h0 = grad_w = grad_b = grad_v = grad_mb = None
        if need_x:
            grad_x = torch.matmul(g, weight_ih)
        if need_h0:
            grad_h0 = torch.mm(g[0], weight_hh)
        if need_w:
            # as (xᵀ dz)ᵀ: MKL is several times faster at this orientation when I << N
            grad_w = torch.mm(inputs.reshape(steps * batch, -1).t(), dz).t().contiguous()
        if need_b and ctx.has_bias:
            grad_b = dz.sum(0)
        if need_v:
            grad_v = torch.mm(g[0].t(), h0)
            if steps > 1:
                grad_v.addmm_(g[1:].reshape(-1, n).t(), h[:-1].reshape(-1, n))
        if need_mb and nonlinearity == "modrelu":
            grad_mb = _modrelu_bias_grad(g, h)
        return grad_x, grad_h0, grad_w, grad_b, grad_v, None, grad_mb


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
    outputs = FusedRecurrence.apply(inputs, h0, weight_ih, bias, weight_hh, nonlinearity, modrelu_bias)
    return outputs, outputs[-1].clone()  # a tensor of its own, as the reference returns
