"""The gated and oscillator cells' time loops as one autograd node each, with a hand-written backward: the GRU's
(torch.nn.GRU's equations, also the nnGRU's), coRNN's (both dampings), LEM's and the complex nnRNN's, each over all
steps in one call of the compiled loops of ``nnrnn/kernels/csrc/cell_loops.cpp``; and so the linear recurrences of
the LRU (:class:`DiagonalLoop`), the non-normal LRU (:class:`DenseLinearLoop`) and minGRU (:class:`MinGRULoop`),
whose references are their Python loops and parallel scans (``implementation = "loop"`` or ``"scan"``).  Each
computes what its Python loop computes (:func:`~nnrnn.models.gru.gru_reference`, :func:`~nnrnn.models.cornn.cornn_loop`,
:func:`~nnrnn.models.lem.lem_loop`; for the complex nnRNN its Python loops,
``nnrnn.models.nnrnn_complex._FusedComplexRecurrence`` and :func:`~nnrnn.models.nnrnn_complex.complex_reference`),
which stays beside it as the reference and as the path wherever the compiled
loops do not run (float64, other devices, no compiler, torch.compile tracing); the kernel policy chooses
(:func:`nnrnn.kernels.operations.choose_cells`).

As :mod:`.fused` does for the non-gated recurrence: the input projection of every step is one product before the
loop, and every weight gradient one product over all steps after it; the loop itself saves what its backward
cannot recompute from the states, per step:

* GRU, h_t = (1 - z) n + z h_{t-1}, n = tanh(x_n + r ⊙ a_n): the gates r, z, a_n = W_hn h_{t-1} + b_hn and n
  (4N).  Backward: dn = dh (1 - z)(1 - n²), dz = dh (h_{t-1} - n) z (1 - z), dr = dn a_n r (1 - r);
  ∂L/∂(W_ih x + b_ih) = [dr, dz, dn], ∂L/∂(W_hh h + b_hh) = [dr, dz, dn ⊙ r], dh_{t-1} = dh z + that W_hh.
* coRNN: the drive d = tanh(V u + b + W [y, z]) (N).  Backward, with D = ∂L/∂z_t + Δt ∂L/∂y_t (÷ (1 + Δt ε)
  for the implicit step): ∂L/∂(pre-activation) = Δt D (1 - d²), ∂L/∂y_{t-1} = ∂L/∂y_t - Δt γ D + (its W part),
  ∂L/∂z_{t-1} = (1 - Δt ε) D (explicit) or D (implicit) + (its W part).
* LEM: σ_y, σ_z, tanh_y and tanh_z (4N); its backward takes the step's two products in reverse order (y's drive
  reads the new z).
* the complex nnRNN: nothing beyond its outputs, as the non-gated loops: modReLU's Jacobian is recovered from
  h = φ(z) (:class:`~nnrnn.models.nnrnn_complex._FusedComplexRecurrence` gives the formula).

Double backward is not supported (``kernels.autograd.first_order_only``); the Python loops support it.
"""
from __future__ import annotations

import torch

from ..kernels import extension
from ..kernels.autograd import autocast_off, first_order_only
from ..kernels.operations import linear, step_products

_INSTEAD = "; the Python loop (float64, or NNRNN_CPP=0) runs through autograd, which supports them"


def _loops():
    return extension.recurrence_loops()


def _previous(states: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """The state before each step, (T, B, W): ``first``, then every state but the last."""
    return torch.cat([first.unsqueeze(0), states[:-1]])


def _input_grads(grad_pre: torch.Tensor, inputs: torch.Tensor, weight_ih: torch.Tensor, need_x: bool,
                 need_w: bool, need_b: bool):
    """(dx, dW_ih, db) of the projection W_ih x + b from ∂L/∂(W_ih x + b) (T, B, M) of every step."""
    flat = grad_pre.reshape(-1, grad_pre.shape[-1])
    grad_x = linear(grad_pre, weight_ih.t()) if need_x else None
    # as (xᵀ g)ᵀ: MKL is several times faster at this orientation when I << M (as models/fused.py)
    grad_w = torch.mm(inputs.reshape(flat.shape[0], -1).t(), flat).t().contiguous() if need_w else None
    grad_b = flat.sum(0) if need_b else None
    return grad_x, grad_w, grad_b


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1, t.shape[-1])


class GRULoop(torch.autograd.Function):
    """outputs (T, B, N) = GRULoop.apply(inputs, h0, weight_ih, weight_hh, bias_ih, bias_hh): torch.nn.GRU's
    layer, T ≥ 1, B ≥ 1, float32 on the CPU."""

    @staticmethod
    def forward(ctx, inputs, h0, weight_ih, weight_hh, bias_ih, bias_hh):
        steps, batch, n = inputs.shape[0], inputs.shape[1], weight_hh.shape[1]
        h0 = h0.contiguous()
        projected = linear(inputs, weight_ih, bias_ih)
        h = inputs.new_empty(steps, batch, n)
        gates = inputs.new_empty(steps, batch, 4 * n)
        bias = bias_hh.contiguous() if bias_hh is not None else inputs.new_empty(0)
        _loops().gru_forward(projected, h0, weight_hh.t().contiguous(), bias, h, gates)
        ctx.has_bias = bias_hh is not None
        ctx.save_for_backward(h, h0, gates, inputs, weight_ih, weight_hh)
        return h

    @staticmethod
    @first_order_only("nnrnn's compiled GRU loop", _INSTEAD)
    def backward(ctx, grad_h):
        h, h0, gates, inputs, weight_ih, weight_hh = ctx.saved_tensors
        need_x, need_h0, need_wi, need_wh, need_bi, need_bh = ctx.needs_input_grad
        grad_in = torch.empty_like(gates[..., :3 * weight_hh.shape[1]], memory_format=torch.contiguous_format)
        grad_rec = torch.empty_like(grad_in)
        carry = torch.zeros_like(h0)
        _loops().gru_backward(grad_h.contiguous(), h, h0, gates, weight_hh.contiguous(), grad_in, grad_rec, carry)
        grad_x, grad_wi, grad_bi = _input_grads(grad_in, inputs, weight_ih, need_x, need_wi,
                                                need_bi and ctx.has_bias)
        grad_wh = step_products(_flat(grad_rec), _flat(_previous(h, h0))) if need_wh else None
        grad_bh = _flat(grad_rec).sum(0) if need_bh and ctx.has_bias else None
        return grad_x, carry if need_h0 else None, grad_wi, grad_wh, grad_bi, grad_bh


class CoRNNLoop(torch.autograd.Function):
    """states (T, B, 2N) = CoRNNLoop.apply(inputs, s0, weight_ih, weight_hh, bias, dt, gamma, epsilon, implicit):
    [y_t, z_t] of every step from s0 = [y_0, z_0]; T ≥ 1, B ≥ 1, float32 on the CPU."""

    @staticmethod
    def forward(ctx, inputs, s0, weight_ih, weight_hh, bias, dt, gamma, epsilon, implicit):
        steps, batch, n = inputs.shape[0], inputs.shape[1], weight_hh.shape[0]
        s0 = s0.contiguous()
        drive = linear(inputs, weight_ih, bias)
        states = inputs.new_empty(steps, batch, 2 * n)
        _loops().cornn_forward(drive, s0, weight_hh.t().contiguous(), states, dt, gamma, epsilon, implicit)
        ctx.constants = (dt, gamma, epsilon, implicit)
        ctx.has_bias = bias is not None
        ctx.save_for_backward(states, s0, drive, inputs, weight_ih, weight_hh)
        return states

    @staticmethod
    @first_order_only("nnrnn's compiled coRNN loop", _INSTEAD)
    def backward(ctx, grad_states):
        states, s0, drive, inputs, weight_ih, weight_hh = ctx.saved_tensors
        need_x, need_s0, need_wi, need_wh, need_b = ctx.needs_input_grad[:5]
        grad_pre = torch.empty_like(drive)
        carry = torch.zeros_like(s0)
        _loops().cornn_backward(grad_states.contiguous(), drive, weight_hh.contiguous(), grad_pre, carry,
                                *ctx.constants)
        grad_x, grad_wi, grad_b = _input_grads(grad_pre, inputs, weight_ih, need_x, need_wi,
                                               need_b and ctx.has_bias)
        grad_wh = step_products(_flat(grad_pre), _flat(_previous(states, s0))) if need_wh else None
        return grad_x, carry if need_s0 else None, grad_wi, grad_wh, grad_b, None, None, None, None


class LEMLoop(torch.autograd.Function):
    """states (T, B, 2N) = LEMLoop.apply(inputs, s0, weight_ih, weight_hh, weight_zy, bias, dt): [y_t, z_t] of
    every step from s0 = [y_0, z_0]; T ≥ 1, B ≥ 1, float32 on the CPU."""

    @staticmethod
    def forward(ctx, inputs, s0, weight_ih, weight_hh, weight_zy, bias, dt):
        steps, batch, n = inputs.shape[0], inputs.shape[1], weight_zy.shape[0]
        s0 = s0.contiguous()
        gates = linear(inputs, weight_ih, bias)
        states = inputs.new_empty(steps, batch, 2 * n)
        _loops().lem_forward(gates, s0, weight_hh.t().contiguous(), weight_zy.t().contiguous(), states, dt)
        ctx.dt, ctx.has_bias = dt, bias is not None
        ctx.save_for_backward(states, s0, gates, inputs, weight_ih, weight_hh, weight_zy)
        return states

    @staticmethod
    @first_order_only("nnrnn's compiled LEM loop", _INSTEAD)
    def backward(ctx, grad_states):
        states, s0, gates, inputs, weight_ih, weight_hh, weight_zy = ctx.saved_tensors
        need_x, need_s0, need_wi, need_wh, need_wzy, need_b = ctx.needs_input_grad[:6]
        n = weight_zy.shape[0]
        grad_pre = torch.empty_like(gates)
        carry = torch.zeros_like(s0)
        _loops().lem_backward(grad_states.contiguous(), states, s0, gates, weight_hh.contiguous(),
                              weight_zy.contiguous(), grad_pre, carry, ctx.dt)
        grad_x, grad_wi, grad_b = _input_grads(grad_pre, inputs, weight_ih, need_x, need_wi,
                                               need_b and ctx.has_bias)
        grad_wh = grad_wzy = None
        if need_wh:  # W_hh's rows [W_2; W_1; W_z] act on y_{t-1} for the gates of y and z and z's drive
            y_prev = _flat(_previous(states, s0)[..., :n])
            grad_rec = torch.cat([grad_pre[..., :2 * n], grad_pre[..., 3 * n:]], -1)
            grad_wh = step_products(_flat(grad_rec), y_prev)
        if need_wzy:  # W_y acts on z_t for y's drive
            grad_wzy = step_products(_flat(grad_pre[..., 2 * n:3 * n]), _flat(states[..., n:]))
        return grad_x, carry if need_s0 else None, grad_wi, grad_wh, grad_wzy, grad_b, None


def real_form(v_real: torch.Tensor, v_imag: torch.Tensor) -> torch.Tensor:
    """M (2N × 2N) with [a, b] M = [Re, Im] of (a + ib) Vᵀ: [[C, D], [−D, C]], C + iD = Vᵀ."""
    c, d = v_real.t(), v_imag.t()
    return torch.cat([torch.cat([c, d], 1), torch.cat([-d, c], 1)], 0)


class ComplexLoop(torch.autograd.Function):
    """outputs (T, B, 2N) = ComplexLoop.apply(projected, h0, v_real, v_imag, modrelu_bias): the complex nnRNN's
    recurrence on [Re h, Im h] (:func:`~nnrnn.models.nnrnn_complex.complex_reference`'s contract), in its real 2N
    form: one (2N × 2N) product a step, where the Python loop makes Gauss's three N × N ones, since at its sizes a
    step's cost is the calls, not the arithmetic.  T ≥ 1, B ≥ 1, float32 on the CPU (float64 for the tests)."""

    @staticmethod
    def forward(ctx, projected, h0, v_real, v_imag, bias):
        m = real_form(v_real, v_imag).contiguous()
        h = projected.clone(memory_format=torch.contiguous_format)
        h0 = h0.contiguous()
        _loops().complex_forward(h, h0, m, bias.contiguous() if bias is not None else h.new_empty(0))
        ctx.save_for_backward(h, h0, m, bias)
        return h

    @staticmethod
    @first_order_only("nnrnn's compiled complex loop", "; model.implementation = 'reference' runs the recurrence "
                                                       "through autograd, which supports them")
    def backward(ctx, grad_h):
        h, h0, m, bias = ctx.saved_tensors
        need_p, need_h0, need_r, need_i, need_b = ctx.needs_input_grad
        n = m.shape[0] // 2
        g = torch.empty_like(h)
        bias_grad = h.new_zeros(n) if bias is not None and need_b else h.new_empty(0)
        _loops().complex_backward(g, grad_h.contiguous(), h, m.t().contiguous(),
                                  bias.contiguous() if bias is not None else h.new_empty(0), bias_grad)
        grad_r = grad_i = None
        if need_r or need_i:  # Σ dz_tᵀ h_{t-1} = dMᵀ, and from M's blocks V's real and imaginary parts
            dm_t = step_products(_flat(g), _flat(_previous(h, h0)))
            grad_r = dm_t[:n, :n] + dm_t[n:, n:]
            grad_i = dm_t[n:, :n] - dm_t[:n, n:]
        return (g if need_p else None, torch.mm(g[0], m.t()) if need_h0 else None, grad_r, grad_i,
                bias_grad if bias is not None and need_b else None)


class DiagonalLoop(torch.autograd.Function):
    r"""states (T, B, 2N) = DiagonalLoop.apply(b, s0, lr, li): the LRU's linear recurrence with a constant complex
    diagonal λ = lr + i·li (N), on the real features [Re s, Im s] of the state,

    .. math::
        s_t = \lambda \odot s_{t-1} + b_t, \qquad s_{-1} = s_0,

    b (T, B, 2N) as [Re b, Im b]; what :func:`~nnrnn.models.lru.lru_loop` computes from b with λ s_0 added to its
    first step.  Backward, with G the gradient written as one complex number per unit, G = ∂L/∂Re + i ∂L/∂Im:
    G_t = ∂L/∂s_t + conj(λ) G_{t+1} (= ∂L/∂b_t), ∂L/∂s_0 = conj(λ) G_0 and ∂L/∂λ = Σ_{t,b} G_t conj(s_{t−1}).
    Nothing is saved but the states.  T ≥ 1, B ≥ 1, float32 on the CPU (float64 for the tests)."""

    @staticmethod
    def forward(ctx, b, s0, lr, li):
        b, s0, lr, li = b.contiguous(), s0.contiguous(), lr.contiguous(), li.contiguous()
        states = torch.empty_like(b, memory_format=torch.contiguous_format)
        _loops().diagonal_forward(b, s0, lr, li, states)
        ctx.save_for_backward(states, s0, lr, li)
        return states

    @staticmethod
    @first_order_only("nnrnn's compiled LRU recurrence", "; model.implementation = 'loop' or 'scan' runs it through "
                                                         "autograd, which supports them")
    def backward(ctx, grad_states):
        states, s0, lr, li = ctx.saved_tensors
        n = lr.shape[0]
        grad_b = torch.empty_like(states)
        grad_s0 = torch.empty_like(s0)
        grad_lambda = states.new_zeros(2 * n)
        _loops().diagonal_backward(grad_states.contiguous(), states, s0, lr, li, grad_b, grad_s0, grad_lambda)
        return grad_b, grad_s0, grad_lambda[:n], grad_lambda[n:]


class DenseLinearLoop(torch.autograd.Function):
    """states (T, B, W) = DenseLinearLoop.apply(b, z0, m): the non-normal LRU's z_t = M z_{t−1} + b_t from
    z_{−1} = z0, M (W × W), W even (its [Re s, Im s]); what :func:`~nnrnn.models.nnlru.nnlru_loop` computes with
    M z0 added to the first step.  It runs on the complex nnRNN's compiled loops without modReLU (their step is
    cur += prev · Mᵀ in the forward, g_t = ∂L/∂z_t + g_{t+1} M in the backward); ∂L/∂b_t = g_t, ∂L/∂z0 = g_0 M and
    ∂L/∂M = Σ_t g_tᵀ z_{t−1}, one product over all steps.  T ≥ 1, B ≥ 1, float32 on the CPU (float64 for the
    tests)."""

    @staticmethod
    def forward(ctx, b, z0, m):
        states = b.clone(memory_format=torch.contiguous_format)
        z0 = z0.contiguous()
        _loops().complex_forward(states, z0, m.t().contiguous(), states.new_empty(0))
        ctx.save_for_backward(states, z0, m)
        return states

    @staticmethod
    @first_order_only("nnrnn's compiled nnLRU recurrence", "; model.implementation = 'loop' or 'scan' runs it "
                                                          "through autograd, which supports them")
    def backward(ctx, grad_states):
        states, z0, m = ctx.saved_tensors
        g = torch.empty_like(states)
        empty = states.new_empty(0)
        _loops().complex_backward(g, grad_states.contiguous(), states, m.contiguous(), empty, empty)
        need_b, need_z0, need_m = ctx.needs_input_grad
        grad_m = step_products(_flat(g), _flat(_previous(states, z0))) if need_m else None
        return g, torch.mm(g[0], m) if need_z0 else None, grad_m


class MinGRULoop(torch.autograd.Function):
    r"""h (T, B, N) = MinGRULoop.apply(gate, candidate, h0, noise): minGRU's layer from its projections,

    .. math::
        z_t = \sigma(\mathrm{gate}_t), \quad \tau_t = g(k_t), \quad h_t = (1 - z_t) \odot h_{t-1} + z_t \odot \tau_t
        + \epsilon_t,

    g(k) = k + ½ for k ≥ 0 and σ(k) below, ε the state noise (None: none); what
    :func:`~nnrnn.models.mingru.mingru_loop` computes.  σ and g over all steps in one pass each, then the steps.
    Backward, with G_t = ∂L/∂h_t + (1 − z_{t+1}) G_{t+1} (= ∂L/∂ε_t): ∂L/∂gate_t = G_t (τ_t − h_{t−1}) z_t (1 − z_t),
    ∂L/∂k_t = G_t z_t g'(k_t) (g' = 1 for k ≥ 0, τ (1 − τ) below), ∂L/∂h0 = (1 − z_0) G_0.  Saved: z, τ, the
    candidate and the states.  T ≥ 1, B ≥ 1, float32 on the CPU (float64 for the tests)."""

    @staticmethod
    def forward(ctx, gate, candidate, h0, noise):
        gate, candidate, h0 = gate.contiguous(), candidate.contiguous(), h0.contiguous()
        z, tau, h = (torch.empty_like(candidate, memory_format=torch.contiguous_format) for _ in range(3))
        _loops().mingru_forward(gate, candidate, h0, noise.contiguous() if noise is not None else h.new_empty(0),
                                z, tau, h)
        ctx.save_for_backward(z, tau, candidate, h, h0)
        return h

    @staticmethod
    @first_order_only("nnrnn's compiled minGRU loop", "; model.implementation = 'loop' runs it through autograd, "
                                                      "which supports them")
    def backward(ctx, grad_h):
        z, tau, candidate, h, h0 = ctx.saved_tensors
        grad_gate, grad_k, grad_noise = torch.empty_like(z), torch.empty_like(z), torch.empty_like(z)
        grad_h0 = torch.empty_like(h0)
        _loops().mingru_backward(grad_h.contiguous(), z, tau, candidate, h, h0, grad_gate, grad_k, grad_noise, grad_h0)
        return grad_gate, grad_k, grad_h0, grad_noise if ctx.needs_input_grad[3] else None


def runs(inputs: torch.Tensor) -> bool:
    """Whether the loops can take ``inputs`` (T, B, I): at least one step and one sequence (an empty input takes
    the Python loop, which handles it)."""
    return inputs.shape[0] > 0 and inputs.shape[1] > 0


def gru_compiled(inputs, h0, weight_ih, weight_hh, bias_ih, bias_hh) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`~nnrnn.models.gru.gru_reference`'s contract (outputs (T, B, N), h_T) by :class:`GRULoop`.  Under
    autocast, in the parameters' precision (as torch.nn.LSTM runs where oneDNN has no bfloat16 kernel): the compiled
    loops are float32's."""
    with autocast_off(inputs.device.type):
        outputs = GRULoop.apply(inputs, h0, weight_ih, weight_hh, bias_ih, bias_hh)
    return outputs, outputs[-1].clone()


def cornn_compiled(inputs, s0, weight_ih, weight_hh, bias, dt, gamma, epsilon, implicit) -> torch.Tensor:
    """[y_t, z_t] of every step (T, B, 2N) by :class:`CoRNNLoop` (under autocast, as :func:`gru_compiled`)."""
    with autocast_off(inputs.device.type):
        return CoRNNLoop.apply(inputs, s0, weight_ih, weight_hh, bias, dt, gamma, epsilon, implicit)


def complex_compiled(projected, h0, v, modrelu_bias) -> torch.Tensor:
    """:func:`~nnrnn.models.nnrnn_complex.complex_reference`'s outputs by :class:`ComplexLoop` (the model turns
    autocast off around its loops)."""
    return ComplexLoop.apply(projected, h0, v.real, v.imag, modrelu_bias)


def lem_compiled(inputs, s0, weight_ih, weight_hh, weight_zy, bias, dt) -> torch.Tensor:
    """[y_t, z_t] of every step (T, B, 2N) by :class:`LEMLoop` (under autocast, as :func:`gru_compiled`)."""
    with autocast_off(inputs.device.type):
        return LEMLoop.apply(inputs, s0, weight_ih, weight_hh, weight_zy, bias, dt)
