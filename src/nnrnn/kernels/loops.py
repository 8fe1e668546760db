"""The fused recurrence's two time loops, in three implementations (:mod:`nnrnn.models.fused` is the autograd
node around them; the formulas are in its docstring):

    forward:   h_t = φ(V h_{t-1} + z_t),  z_t = W_ih x_t + b given,       t = 1..T
    backward:  dz_t = (∂L/∂h_t + dz_{t+1} V) ⊙ φ'(z_t),                    t = T..1
               dV = Σ_t dz_tᵀ h_{t-1}

* ``compiled`` (settings.COMPILED): ``csrc/recurrence_loops.cpp`` (:mod:`.extension`), float32 on the CPU, for
  the nonlinearities of :data:`COMPILED_KINDS` (the policy gives ELU to the other two);
* ``onednn``: Python issuing oneDNN inner products (:mod:`.onednn`), float32 on the CPU;
* ``aten``: Python issuing ``addmm_`` and elementwise calls: any device and dtype.

Which one runs is the caller's argument (:func:`nnrnn.kernels.operations.choose_loops` asks the policy); this
module chooses nothing, so the policy can time it (:mod:`.candidates`).
"""
from __future__ import annotations

import weakref

import torch

from . import extension, onednn
from .settings import COMPILED, ONEDNN

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
    elif nonlinearity == "elu":
        torch.nn.functional.elu_(out if out is z else out.copy_(z))
    elif out is not z:
        out.copy_(z)


KIND = {None: 0, "relu": 1, "tanh": 2, "modrelu": 3, "elu": 4}  # the enum of recurrence_loops.cpp, then ELU's
COMPILED_KINDS = (None, "relu", "tanh", "modrelu")  # the nonlinearities recurrence_loops.cpp computes


_last_transposed: list = []  # [(a weak reference to V, its version and address, Vᵀ contiguous)]: at most one


def _transposed(v: torch.Tensor, keep: bool = False) -> torch.Tensor:
    """Vᵀ, contiguous (what the compiled loops take).  Kept for the V of the last call where V needs no gradient
    or the caller runs without autograd (``keep``: a plain RNN's V is its parameter, which requires grad even
    under no_grad): inference one step at a time passes the same V again and again, and copying its transpose
    was a good part of a step's time beyond the product itself.  A write through ``.data`` moves no version
    counter; :func:`forget_transposed` drops the kept one (the models call it when switching modes, as they drop
    their composed V)."""
    if _last_transposed:
        ref, version, kept = _last_transposed[0]
        if ref() is v and (v._version, v.data_ptr()) == version:  # ``p.data = new`` keeps p, moves its address
            return kept
    v_t = v.t().contiguous()
    _last_transposed.clear()
    if keep or not v.requires_grad:
        _last_transposed.append((weakref.ref(v), (v._version, v.data_ptr()), v_t))
    return v_t


def forget_transposed() -> None:
    """Drop the kept Vᵀ (:func:`_transposed`)."""
    _last_transposed.clear()


def forward_loop(h: torch.Tensor, h0: torch.Tensor, v: torch.Tensor, nonlinearity: str | None,
                  modrelu_bias: torch.Tensor | None, loops: str, inference: bool = False) -> None:
    """In place: h[t] holds W_ih x_t + b on entry and h_t on exit (same operations as the reference);
    ``inference``: no gradient will be taken, so a V that requires one may keep its transpose."""
    if loops == COMPILED:
        bias = modrelu_bias.contiguous() if nonlinearity == "modrelu" else h.new_empty(0)
        extension.recurrence_loops().forward_loop(h, h0.contiguous(), _transposed(v, inference), KIND[nonlinearity],
                                                  bias)
        return
    op = onednn.kernel() if loops == ONEDNN else None
    prev = h0
    sign = h.new_empty(h.shape[1:]) if nonlinearity == "modrelu" else None
    v_t = v.t()
    for step in h.unbind(0):
        z = op.binary(prev, step, v, None, "add") if op is not None else step.addmm_(prev, v_t)
        _phi_into(step, z, nonlinearity, modrelu_bias, sign)
        prev = step


def _derivative(h: torch.Tensor, nonlinearity: str, out: torch.Tensor) -> torch.Tensor:
    """φ'(z) from h = φ(z), as a float tensor written to ``out`` (multiplying by a float mask is
    several times faster than masking with a boolean one on CPU)."""
    if nonlinearity == "relu":
        return torch.sign(h, out=out)  # h ≥ 0, so sign(h) = [h > 0]
    if nonlinearity == "modrelu":
        return torch.sign(h, out=out).abs_()  # [h ≠ 0]
    if nonlinearity == "elu":  # 1 where h > 0, e^z = h + 1 elsewhere (both 1 at z = 0, as autograd's)
        return torch.clamp_max(h, 0, out=out).add_(1)
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


def backward_loop(grad_h: torch.Tensor, h: torch.Tensor, nonlinearity: str | None, v: torch.Tensor,
                   loops: str, modrelu_bias_grad: torch.Tensor | None = None) -> torch.Tensor:
    """∂L/∂z_t of every step (T × B × N) from ∂L/∂h_t of the outputs (left unchanged).  The compiled
    loops also add modReLU's bias gradient into ``modrelu_bias_grad`` (zeros) when it is given."""
    steps = grad_h.shape[0]
    if loops == COMPILED:
        g = torch.empty_like(grad_h, memory_format=torch.contiguous_format)
        bias_grad = h.new_empty(0) if modrelu_bias_grad is None else modrelu_bias_grad
        extension.recurrence_loops().backward_loop(g, grad_h.contiguous(), h, v.contiguous(), KIND[nonlinearity],
                                         bias_grad)
        return g
    if loops == ONEDNN:
        # oneDNN writes dz_t V + ∂L/∂h_{t-1} to a new tensor anyway, so φ' is applied on the way
        # into g and the incoming gradient needs no copy.
        incoming = grad_h.contiguous().unbind(0)
        g = torch.empty_like(grad_h, memory_format=torch.contiguous_format)
        out = g.unbind(0)
        v_t = v.t().contiguous()  # oneDNN takes the weight as (out, in): dz V = dz (Vᵀ)ᵀ
        carry, op = None, onednn.kernel()
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


def modrelu_bias_grad(g: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """Σ_t,b dz ⊙ sign(h) (∂h/∂b_mod = sign(z)·[|z| + b_mod > 0], and dz is 0 where h is), in chunks of
    steps so that the temporary stays small."""
    steps, batch, n = h.shape
    chunk = max(1, CHUNK_ELEMENTS // max(1, batch * n))
    total = h.new_zeros(n)
    for start in range(0, steps, chunk):
        part = torch.sign(h[start:start + chunk]).mul_(g[start:start + chunk])
        total.add_(part.view(-1, n).sum(0))
    return total


def recurrent_weight_grad(g: torch.Tensor, h: torch.Tensor, h0: torch.Tensor, loops: str) -> torch.Tensor:
    """dV = Σ_t dz_tᵀ h_{t-1} from dz (T × B × N), the outputs h and h0: one product over all steps, in chunks
    of steps on the oneDNN path."""
    steps, batch, n = h.shape
    grad_v = torch.mm(g[0].t(), h0)
    if steps > 1 and loops == ONEDNN:  # (N × TB)(TB × N): linear(X, W) = X Wᵀ with X = dzᵀ, W = Hᵀ
        chunk = max(1, DV_CHUNK_ELEMENTS // (batch * n))
        for start in range(1, steps, chunk):
            stop = min(steps, start + chunk)
            dz_t = g[start:stop].reshape(-1, n).t()
            grad_v.add_(onednn.kernel()(dz_t, h[start - 1:stop - 1].reshape(-1, n).t(), None, "none", [], ""))
    elif steps > 1:
        grad_v.addmm_(g[1:].reshape(-1, n).t(), h[:-1].reshape(-1, n))
    return grad_v


def backward(grad_h: torch.Tensor, h: torch.Tensor, h0: torch.Tensor, v: torch.Tensor, nonlinearity: str | None,
             loops: str, need_v: bool, need_modrelu_bias: bool):
    """(dz, dV, d b_mod) of the loops: dz (T × B × N) by :func:`backward_loop`, dV and modReLU's bias gradient
    where asked (None otherwise)."""
    fused_bias_grad = need_modrelu_bias and nonlinearity == "modrelu" and loops == COMPILED
    grad_mb = h.new_zeros(h.shape[2]) if fused_bias_grad else None
    g = backward_loop(grad_h, h, nonlinearity, v, loops, grad_mb)
    grad_v = recurrent_weight_grad(g, h, h0, loops) if need_v else None
    if need_modrelu_bias and nonlinearity == "modrelu" and not fused_bias_grad:
        grad_mb = modrelu_bias_grad(g, h)
    return g, grad_v, grad_mb
