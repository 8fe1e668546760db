"""The complex nnRNN: a hidden state in ℂ^N, V = P (Λ + T) Pᴴ with P unitary."""
from __future__ import annotations

import torch
from torch import nn
from torch.autograd.function import once_differentiable

from ..kernels.autograd import autocast_off, exporting_to_onnx
from ..kernels.operations import choose_cells
from ..kernels.settings import COMPILED
from ..parametrizations.unitary import INITS, complex_schur
from . import fused_cells, noise
from .base import (ParameterDtypeError, as_given, assign_constrained, cell_suffix, check_constructor, check_hx, kept,
                   stack_layers, time_major)
from .init import check_scheme, init_
from .traits import Traits

NONLINEARITIES = ("modrelu", None)
IMPLEMENTATIONS = ("fused", "reference")


def complex_modrelu(z: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """φ(z) = z/|z| · relu(|z| + b) for complex z, and φ(0) = 0 (where z/|z| is undefined; the limit
    does not exist for b > 0, and 0 keeps the gradient finite)."""
    r = z.abs()
    nonzero = r > 0
    scale = torch.relu(r + bias) / torch.where(nonzero, r, torch.ones_like(r))  # no 0/0 in the gradient either
    return z * torch.where(nonzero, scale, torch.zeros_like(r))


def complex_reference(projected: torch.Tensor, h0: torch.Tensor, v: torch.Tensor,
                      modrelu_bias: torch.Tensor | None, noise: torch.Tensor | None = None) -> torch.Tensor:
    """The recurrence in complex arithmetic, differentiated by autograd.

    projected (T, B, 2N) real = [Re, Im] of W_ih x_t + b; h0 (B, 2N) real = [Re h_0, Im h_0]; v (N, N)
    complex → outputs (T, B, 2N) real: h_t = φ(V h_{t−1} + W_ih x_t + b) as [Re h_t, Im h_t]; ``noise``
    (T, B, 2N) real, if given, is added to [Re h_t, Im h_t] after every step (:mod:`nnrnn.models.noise`).
    """
    n = v.shape[0]
    z_in = torch.complex(projected[..., :n], projected[..., n:])
    h = torch.complex(h0[:, :n], h0[:, n:])
    v_t = v.transpose(0, 1)
    outputs = []
    for t in range(projected.shape[0]):
        z = z_in[t] + h @ v_t
        h = complex_modrelu(z, modrelu_bias) if modrelu_bias is not None else z
        if noise is not None:
            h = h + torch.complex(noise[t, :, :n], noise[t, :, n:])
        outputs.append(h)
    if not outputs:
        return projected.new_zeros(0, *h0.shape)
    out = torch.stack(outputs)
    return torch.cat([out.real, out.imag], -1)


class _FusedComplexRecurrence(torch.autograd.Function):
    """The recurrence on [Re h, Im h] in one autograd node with a hand-written backward-through-time that
    keeps only the outputs (as :mod:`.fused` does for the real recurrence).

    Each complex product h Vᵀ (row form, h = a + ib, Vᵀ = C + iD) is three real products (Gauss):
    k1 = (a + b) C, k2 = a (D − C), k3 = b (C + D), Re = k1 − k3, Im = k1 + k2, a quarter fewer
    operations than the real embedding's four.  The backward's dL/dh_{t−1} = dz_t conj(V) is formed the
    same way, and dV = Σ_t dz_tᵀ conj(h_{t−1}) as three products over all steps at once.  Inside, real and
    imaginary parts are kept apart, (2, T, B, N), so that every product reads contiguous blocks.

    modReLU's Jacobian is recovered from h = φ(z), step by step in the backward loop (where the step's
    tensors are in cache): for h ≠ 0, s = |h|, u = h / s, |z| = s − b, and
    ∂h/∂z = (1 + b/|z|) I − (b/|z|) u uᵀ per unit (2 × 2, symmetric), ∂h/∂b = u; for h = 0 both are 0."""

    @staticmethod
    def forward(ctx, projected, h0, v_real, v_imag, bias):
        n = v_real.shape[0]
        c, d = v_real.t().contiguous(), v_imag.t().contiguous()  # V.real is a strided view: once, not per step
        m_a, m_b = d - c, c + d
        # (2, T, B, N), a copy always: with T·B ≤ 1 the permuted view is already contiguous, and writing the steps
        # into it would change ``projected`` in place (autograd refuses the backward)
        h = projected.unflatten(-1, (2, n)).permute(2, 0, 1, 3).clone(memory_format=torch.contiguous_format)
        prev = h0.unflatten(-1, (2, n)).transpose(0, 1).contiguous()
        for t in range(h.shape[1]):
            step = h[:, t]
            a, b = prev[0], prev[1]
            k1 = torch.mm(a + b, c)
            step[0].addmm_(b, m_b, alpha=-1).add_(k1)
            step[1].addmm_(a, m_a).add_(k1)
            if bias is not None:
                r = torch.hypot(step[0], step[1])
                alive = r > 0
                step.mul_(torch.relu(r + bias).div_(r.masked_fill(~alive, 1.0)).mul_(alive))
            prev = step
        ctx.save_for_backward(h, h0, v_real, v_imag, bias)
        ctx.modrelu = bias is not None
        return h.permute(1, 2, 0, 3).flatten(-2)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_h):
        h, h0, v_real, v_imag, bias = ctx.saved_tensors
        n = v_real.shape[0]
        steps, batch = h.shape[1], h.shape[2]
        grad_h = grad_h.unflatten(-1, (2, n)).permute(2, 0, 1, 3)  # (2, T, B, N), a view
        # dL/dh_{t-1} = dz_t conj(V): Gauss's three products with conj(V) = R − iI
        m_1, m_2, m_3 = v_real.contiguous(), -(v_imag + v_real), v_real - v_imag
        grad_z = torch.empty_like(h)
        grad_bias = torch.zeros_like(bias) if ctx.modrelu else None
        carry = h.new_zeros(2, batch, n)
        for t in range(steps - 1, -1, -1):
            g = grad_h[:, t] + carry
            dz = grad_z[:, t]
            if ctx.modrelu:
                ht = h[:, t]
                s = torch.hypot(ht[0], ht[1])
                dead = s == 0
                u = ht / s.masked_fill(dead, 1.0)
                ug = (u * g).sum(0)
                ratio = bias / (s - bias).masked_fill_(dead, 1.0)
                # not mul(out=dz): dz is a strided slice, which torch.compile cannot write through out=
                dz.copy_(torch.mul(g, (ratio + 1).masked_fill_(dead, 0.0)).sub_(u * (ratio * ug)))
                grad_bias += ug.sum(0)  # u is 0 where h is 0, and so is ug
            else:
                dz.copy_(g)
            p, q = dz[0], dz[1]
            k1 = torch.mm(p + q, m_1)
            carry = torch.empty_like(carry)
            torch.addmm(k1, q, m_3, alpha=-1, out=carry[0])
            torch.addmm(k1, p, m_2, out=carry[1])
        # dR + i dI = Σ_t (p + iq)ᵀ conj(h_{t−1}), h = a + ib: Gauss with x = pᵀ, y = qᵀ, c = a, d = −b
        h0_blocks = h0.unflatten(-1, (2, n)).transpose(0, 1)
        x, y = grad_z[0].reshape(-1, n), grad_z[1].reshape(-1, n)
        a = torch.cat([h0_blocks[0].unsqueeze(0), h[0, :-1]]).reshape(-1, n)
        b = torch.cat([h0_blocks[1].unsqueeze(0), h[1, :-1]]).reshape(-1, n)
        t1, t2 = torch.mm(x.t(), a), torch.mm(y.t(), b).neg_()
        t3 = torch.mm((x + y).t(), a - b)
        return (grad_z.permute(1, 2, 0, 3).flatten(-2), carry.transpose(0, 1).flatten(-2), t1 - t2, t3 - t1 - t2,
                grad_bias)


def complex_fused(projected: torch.Tensor, h0: torch.Tensor, v: torch.Tensor,
                  modrelu_bias: torch.Tensor | None, noise: torch.Tensor | None = None) -> torch.Tensor:
    """What :func:`complex_reference` computes, with real products and a hand-written backward
    (first-order gradients only).  With ``noise`` n_t, on the same loops: h_t = g_t + n_t, where g is the noiseless
    recurrence with one more input, V n_{t−1} (n_0 = 0), as :func:`nnrnn.models.fused._with_noise` does for the
    real recurrence."""
    if projected.shape[0] == 0:
        return projected.new_zeros(0, *h0.shape)
    if noise is not None:
        n = v.shape[0]
        carried = torch.complex(noise[:-1, ..., :n], noise[:-1, ..., n:]) @ v.transpose(0, 1)
        shift = torch.cat([noise.new_zeros(1, *noise.shape[1:]), torch.cat([carried.real, carried.imag], -1)])
        return complex_fused(projected + shift, h0, v, modrelu_bias) + noise
    if fused_cells.runs(projected) and choose_cells(projected, "nnrnn-complex") == COMPILED:  # one call, all steps
        return fused_cells.complex_compiled(projected, h0, v, modrelu_bias)
    return _FusedComplexRecurrence.apply(projected, h0, v.real, v.imag, modrelu_bias)


RECURRENCES = {"fused": complex_fused, "reference": complex_reference}


class ComplexNonNormalRNN(nn.Module, Traits):
    r"""The nnRNN with a complex hidden state: for each element of the input sequence, each layer and
    direction computes

    .. math::
        h_t = \phi(V h_{t-1} + W_{ih} x_t + b), \qquad V = P (\Lambda + T) P^H, \qquad h_t \in \mathbb{C}^N

    with P = exp(A) unitary (A skew-Hermitian, :mod:`nnrnn.parametrizations.unitary`), Λ = diag(γ_j e^{iθ_j})
    (N free angles and moduli) and T strictly lower triangular and complex, so the eigenvalues of V are
    exactly γ_j e^{iθ_j}.  φ is the complex modReLU, φ(z) = z/|z| · relu(|z| + b) with a real bias per
    unit (φ(0) = 0), or the identity.  W_ih maps the real input into ℂ^N (a real and an imaginary
    matrix), b is complex.  The layer reads and writes real tensors: a state or an output is
    [Re h, Im h], 2N real features per direction.

    Args:
        input_size: the number of real features in the input x.
        hidden_size: N, the number of complex units.
        num_layers, bias, batch_first, dropout, bidirectional, device, dtype: as torch.nn.RNN's; ``dtype`` is
            the real dtype (float32 computes in complex64, float64 in complex128).
        nonlinearity: ``'modrelu'`` (default) or ``None``.
        init: P's initial generator: ``'random'`` (Haar-distributed P, default) or ``'identity'`` (P = I);
            θ ~ U(0, 2π), γ = 1, T = 0.
        generator: a ``torch.Generator`` for reproducible P and θ.
        input_init, bias_init: schemes of :mod:`nnrnn.models.init` for each of W_ih's real and imaginary
            parts (Glorot normal, scaled by 1/√2 so that |W_ih|'s variance is Glorot's) and for b (zeros).
        state_noise: σ (default 0), Gaussian noise added to [Re h_t, Im h_t] after every step, each part of
            standard deviation σ (:mod:`nnrnn.models.noise`); the fused loops take it as one more input.

    Inputs: input, h_0
        * **input**: (L, N_in) unbatched, (L, B, N_in), or (B, L, N_in) with ``batch_first``; or a
          ``PackedSequence``.
        * **h_0**: (D·num_layers, B, 2N) real, [Re h_0, Im h_0] (unbatched: (D·num_layers, 2N)); zeros if
          omitted.

    Outputs: output, h_n
        * **output**: (L, B, D·2N) real ([Re h_t, Im h_t] per direction; batch-first, unbatched and packed as
          torch.nn.RNN's).
        * **h_n**: shaped like h_0.

    Attributes:
        hidden_size: N (complex units).  output_size: 2N, the real features per direction (what a read-out
            sees).
        weight_ih_l[k]: (2N, N_in) for k = 0, else (2N, D·2N): [Re W_ih; Im W_ih].
        bias_ih_l[k]: (2N): [Re b; Im b].
        modrelu_bias_l[k]: (N) real, U(−0.01, 0.01).
        weight_hh_l[k]: (2, N, N) = [Re V, Im V], composed on access from P's generator storage
            ``parametrizations.weight_hh_l[k].original`` (N × N real) and the
            :class:`~nnrnn.parametrizations.unitary.ComplexSchurForm` ``parametrizations.weight_hh_l[k][0]``
            (``theta``, ``gamma``, ``lower_real``, ``lower_imag``).
        implementation: ``"fused"`` (default; the real embedding with a hand-written backward) or
            ``"reference"`` (complex autograd loop).
    """
    DISPLAY_NAME = "complex nnRNN"
    LINE_STYLE = ('#bcbd22', (0, (2, 3)))
    COMPLEX_RECURRENCE = True

    CONFIG_OPTIONS = ("nonlinearity", "input_init", "bias_init", "bias", "init", "state_noise")
    state_noise = 0.0  # σ of the noise added to [Re h, Im h] after every step; here for models saved before it
    TRAIN_OPTIONS = ("lr_orth", "delta", "t_decay")
    ORTHOGONAL_FACTOR, SCHUR_FORM = True, True  # the traits beyond these: Traits' (nnrnn.models.traits)
    TUNED_OPTIONS = ("delta", "t_decay")  # the Schur form's penalties, the supplement's sets
    INITS = INITS
    NONLINEARITIES = NONLINEARITIES
    REAL_FEATURES_PER_UNIT = 2  # a read-out sees [Re h, Im h]
    implementation = "fused"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity="modrelu",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None, *, init: str = "random", generator: torch.Generator | None = None,
                 input_init: str = "xavier", bias_init: str = "zeros", state_noise: float = 0.0):
        super().__init__()
        num_layers, dropout = check_constructor(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                                                bidirectional, dtype, complex_ok=True)  # the real dtype: below
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        if nonlinearity == "none":
            nonlinearity = None
        if nonlinearity not in NONLINEARITIES:
            raise ValueError(f"nonlinearity must be 'modrelu' or None for the complex nnRNN; got {nonlinearity!r}")
        self.nonlinearity = nonlinearity
        if init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
        if dtype is not None and dtype not in (torch.float32, torch.float64):
            raise TypeError(f"dtype must be torch.float32 or torch.float64 (the real dtype); got {dtype}")
        self.bias, self.batch_first, self.bidirectional = bias, batch_first, bidirectional
        self.dropout = dropout
        self.init = init
        self.input_init = check_scheme("input_init", input_init)
        self.bias_init = check_scheme("bias_init", bias_init)
        self.state_noise = noise.check_state_noise(state_noise)
        factory = {"device": device, "dtype": dtype}
        n, d = hidden_size, self.num_directions
        self.cells = [cell_suffix(layer, k) for layer in range(num_layers) for k in range(d)]
        self._v_cache: dict = {}
        for index, suffix in enumerate(self.cells):
            layer_input = input_size if index < d else 2 * n * d
            self.register_parameter("weight_ih" + suffix, nn.Parameter(torch.empty(2 * n, layer_input, **factory)))
            if bias:
                self.register_parameter("bias_ih" + suffix, nn.Parameter(torch.empty(2 * n, **factory)))
            if nonlinearity == "modrelu":
                self.register_parameter("modrelu_bias" + suffix, nn.Parameter(torch.empty(n, **factory)))
            self.register_parameter("weight_hh" + suffix, nn.Parameter(torch.empty(2, n, n, **factory)))
            complex_schur(self, "weight_hh" + suffix, init=init, generator=generator)
        self._reset_shared()

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    def __setattr__(self, name: str, value) -> None:
        if not assign_constrained(self, name, value):
            super().__setattr__(name, value)

    @property
    def output_size(self) -> int:
        """2N: the real features per direction of an output or state, [Re h, Im h]."""
        return 2 * self.hidden_size

    # ------------------------------------------------------------------ parameters
    def _reset_shared(self) -> None:
        with torch.no_grad():
            for suffix in self.cells:
                weight = getattr(self, "weight_ih" + suffix)
                for part in weight.chunk(2):
                    init_(part, self.input_init)
                weight.mul_(2 ** -0.5)
                if self.bias:
                    init_(getattr(self, "bias_ih" + suffix), self.bias_init, fan_in=weight.shape[1])
                if self.nonlinearity == "modrelu":
                    getattr(self, "modrelu_bias" + suffix).uniform_(-0.01, 0.01)

    def reset_parameters(self) -> None:
        """Re-draw every parameter by the model's initialisation."""
        self._reset_shared()
        for suffix in self.cells:
            plist = self.parametrizations["weight_hh" + suffix]
            plist[0].reset_(plist.original)
        self._v_cache.clear()

    def cell(self, layer: int = 0, direction: int = 0) -> str:
        if not (0 <= layer < self.num_layers and 0 <= direction < self.num_directions):
            raise ValueError(f"layer must be in [0, {self.num_layers}) and direction in [0, {self.num_directions}); "
                             f"got layer={layer}, direction={direction}")
        return self.cells[layer * self.num_directions + direction]

    def schur_form(self, layer: int = 0, direction: int = 0):
        """The :class:`~nnrnn.parametrizations.unitary.ComplexSchurForm` of one layer and direction."""
        return self.parametrizations["weight_hh" + self.cell(layer, direction)][0]

    def schur_forms(self) -> list:
        return [self.parametrizations["weight_hh" + s][0] for s in self.cells]

    def schur_factors(self, layer: int = 0, direction: int = 0):
        """(P, Λ, T), complex, with V = P (Λ + T) Pᴴ."""
        plist = self.parametrizations["weight_hh" + self.cell(layer, direction)]
        return plist[0].factors(plist.original)

    def recurrent_matrix(self, layer: int = 0, direction: int = 0) -> torch.Tensor:
        """V (complex N × N) of one layer and direction, composed from the current parameters (reused while
        autograd is off and none of them changed, as :meth:`RecurrentModel.recurrent_matrix` does)."""
        suffix = self.cell(layer, direction)
        plist = self.parametrizations["weight_hh" + suffix]
        form = plist[0]

        def compose():
            w = getattr(self, "weight_hh" + suffix)
            return torch.complex(w[0], w[1])
        return kept(self._v_cache, suffix, (plist.original, form.theta, form.gamma, form.lower_real, form.lower_imag),
                    compose)

    def __getstate__(self):
        state = super().__getstate__()
        state["_v_cache"] = {}  # composed matrices are not part of the model
        return state

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        """Σ over layers and directions of δ Σ_j (1 − γ_j)² + (t_decay / 2) ‖T‖²_F."""
        return sum(form.regularization(delta, t_decay) for form in self.schur_forms())

    def flatten_parameters(self) -> None:
        """As torch.nn.RNN's; nothing to do."""

    # ------------------------------------------------------------------ forward
    def forward(self, input, hx: torch.Tensor | None = None):
        if exporting_to_onnx():
            raise NotImplementedError("nnrnn-complex cannot be exported to ONNX: its exponential's degree and "
                                      "scaling are chosen from the matrix's values, which torch.export cannot trace; "
                                      "the other nnrnn models export (docs/layers.md)")
        if self.implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}; "
                             f"got {self.implementation!r}")
        x, lengths, unbatched = time_major(self, input, hx)
        dtype = self.weight_ih_l0.dtype
        if dtype not in (torch.float32, torch.float64):  # moved there by .to() / .half(): the constructor refuses it
            raise ParameterDtypeError(f"the complex nnRNN computes in torch.float32 or torch.float64 (complex64 or "
                                      f"complex128); its parameters are {dtype}: move it back with .float()")
        x = x.to(dtype)  # complex arithmetic has no low-precision kernels: autocast runs in the model's dtype
        hx = self._check_hx(hx, x.shape[1], unbatched, x, dtype)

        def run_cell(layer, direction, xs, h0):
            s = self.cell(layer, direction)
            bias = getattr(self, "bias_ih" + s) if self.bias else None
            projected = nn.functional.linear(xs, getattr(self, "weight_ih" + s), bias)
            modrelu_bias = getattr(self, "modrelu_bias" + s) if self.nonlinearity == "modrelu" else None
            out = RECURRENCES[self.implementation](projected, h0, self.recurrent_matrix(layer, direction), modrelu_bias,
                                                   noise.draw(self.state_noise, *projected.shape, projected))
            return out, (out[-1] if out.shape[0] else h0)
        with autocast_off(x.device.type):
            output, h_n = stack_layers(self, x, lengths, hx, run_cell)
        return as_given(self, output, h_n, input, lengths, unbatched)

    def _check_hx(self, hx, batch: int, unbatched: bool, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return check_hx(self, hx, batch, unbatched, x, dtype, self.output_size, "2 * hidden_size: [Re h, Im h]")

    # ------------------------------------------------------------------ description
    @classmethod
    def parameter_count(cls, input_size: int, hidden_size: int, bias: bool = True, nonlinearity="modrelu",
                        num_layers: int = 1, bidirectional: bool = False, **options) -> int:
        """Free real parameters: W_ih 2N × input per cell, b 2N, modReLU's N, and per cell's V
        :meth:`recurrent_parameter_count`."""
        d = 2 if bidirectional else 1
        n = hidden_size
        inputs = 2 * n * input_size + (num_layers - 1) * 2 * n * d * 2 * n
        per_cell = 2 * n * bool(bias) + n * (nonlinearity == "modrelu") + cls.recurrent_parameter_count(n)
        return d * inputs + num_layers * d * per_cell

    @classmethod
    def recurrent_parameter_count(cls, hidden_size: int, **_) -> int:
        """N² (A skew-Hermitian) + N(N−1) (T complex) + N (θ) + N (γ) real numbers."""
        n = hidden_size
        return n * n + n * (n - 1) + 2 * n

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        s += f", nonlinearity={self.nonlinearity!r}"
        for name, default in (("bias", True), ("batch_first", False), ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        return ", ".join([s, *noise.repr_part(self.state_noise)])
