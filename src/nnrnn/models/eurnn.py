"""EURNN: the efficient unitary RNN of Jing et al. (2017), real orthogonal version.

V is a product of ``capacity`` layers of 2×2 Givens rotations ("tunable
space"): layer ℓ rotates unit pairs (0,1), (2,3), … when ℓ is even and
(1,2), (3,4), … when ℓ is odd, each pair by its own angle φ:

    [h_a, h_b] <- [cos φ · h_a - sin φ · h_b,  sin φ · h_a + cos φ · h_b]

so V is exactly orthogonal (det +1) for any angles.  Capacity L gives
⌈L/2⌉·⌊N/2⌋ + ⌊L/2⌋·⌊(N-1)/2⌋ angles; L = N reaches all of SO(N).  The
default L = max(2, N // 2) is our reading of the paper's parameter-matched
sizes (EURNN 256 ~ 18.9K, 1024 ~ 269K parameters), which imply about N/2
layers.  Angles start U(-π, π) as in Jing et al.'s code.  The complex
(unitary) variant and the FFT-style layout are not implemented.

V = R_{L-1} ⋯ R_1 R_0 is composed by :class:`GivensProduct` in O(N²) memory
(see there) rather than by autograd, which would keep all L intermediates; on a GPU by chunks of layers
in parallel (:func:`nnrnn.kernels.givens_chunks` chooses; see the comment above :func:`chunk_products`).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ..kernels.autograd import LOW_PRECISION, eager_or_traced, exporting_to_onnx, first_order_only

from ..kernels.operations import givens_chunks
from .base import RecurrentModel
from .published import Published


def default_capacity(hidden_size: int) -> int:
    return max(2, hidden_size // 2)


def _pair_rows(m: torch.Tensor, odd: bool) -> torch.Tensor:
    """View (k, 2, cols) of the rows layer parity ``odd`` rotates: pair i is rows (a, a + 1), a = 2i + odd."""
    start = 1 if odd else 0
    k = (m.shape[0] - start) // 2
    return m[start:start + 2 * k].view(k, 2, m.shape[1])


def _rotate_(rows: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
    """In place (x_a, x_b) <- (cos·x_a - sin·x_b, sin·x_a + cos·x_b) on ``rows`` = (k, 2, cols); cos, sin (k, 1)."""
    a, b = rows[:, 0], rows[:, 1]
    sin_a = sin * a  # the one temporary: b's update needs the old a
    a.mul_(cos).addcmul_(sin, b, value=-1)
    b.mul_(cos).add_(sin_a)


def _cos_sin(angles: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of every layer's angles, shaped (layers, pairs, 1) to broadcast over a pair's row."""
    return angles.cos()[..., None], angles.sin()[..., None]


class GivensProduct(torch.autograd.Function):
    """V = R_{L-1} ⋯ R_0 from even-layer angles (⌈L/2⌉, ⌊n/2⌋) and odd-layer angles (⌊L/2⌋, ⌊(n-1)/2⌋).

    Forward rotates an identity in place and saves only V.  Backward walks the
    layers from last to first, rebuilding each layer's input from its output
    O as Rᵀ O (R is orthogonal) and pulling the gradient G back as Rᵀ G.  For a
    pair with output rows (o_a, o_b), ∂o_a/∂φ = -o_b and ∂o_b/∂φ = o_a, so
    ∂L/∂φ = Σ_j (G_b,j · o_a,j - G_a,j · o_b,j).
    """

    @staticmethod
    def forward(ctx, even_angles: torch.Tensor, odd_angles: torch.Tensor, n: int) -> torch.Tensor:
        v = _givens_forward(even_angles, odd_angles, n)
        ctx.save_for_backward(even_angles, odd_angles, v)
        return v

    @staticmethod
    @first_order_only("EURNN's Givens product")
    def backward(ctx, grad_v: torch.Tensor):
        return *_givens_backward(*ctx.saved_tensors, grad_v), None


def _givens_forward(even_angles: torch.Tensor, odd_angles: torch.Tensor, n: int) -> torch.Tensor:
    """V, by the layers in order (the reference) or by chunks in parallel, as :func:`givens_chunks` chooses."""
    chunks = givens_chunks(even_angles, len(even_angles) + len(odd_angles))
    if chunks > 1:
        return product_tree(chunk_products(even_angles, odd_angles, n, chunks))
    return sequential_forward(even_angles, odd_angles, n)


def _givens_backward(even_angles: torch.Tensor, odd_angles: torch.Tensor, v: torch.Tensor, grad_v: torch.Tensor):
    """(∂L/∂even_angles, ∂L/∂odd_angles) from V and ∂L/∂V, as :func:`givens_chunks` chooses."""
    chunks = givens_chunks(even_angles, len(even_angles) + len(odd_angles))
    if chunks > 1:
        return chunked_backward(even_angles, odd_angles, grad_v, chunks)
    return sequential_backward(even_angles, odd_angles, v, grad_v)


def sequential_forward(even_angles: torch.Tensor, odd_angles: torch.Tensor, n: int) -> torch.Tensor:
    """V = R_{L-1} ⋯ R_0, one layer after another, in place on an identity (the reference)."""
    v = torch.eye(n, dtype=even_angles.dtype, device=even_angles.device)
    cos_sin = _cos_sin(even_angles), _cos_sin(odd_angles)
    for layer in range(len(even_angles) + len(odd_angles)):
        odd, i = layer % 2, layer // 2
        cos, sin = cos_sin[odd]
        _rotate_(_pair_rows(v, odd), cos[i], sin[i])
    return v


def sequential_backward(even_angles: torch.Tensor, odd_angles: torch.Tensor, v: torch.Tensor, grad_v: torch.Tensor):
    """The reference backward of :class:`GivensProduct`, one layer after another."""
    n = v.shape[0]
    # [O | G] side by side, so one rotation per layer carries both back.
    og = torch.cat([v, grad_v], dim=1)
    grads = torch.empty_like(even_angles), torch.empty_like(odd_angles)
    cos_sin = _cos_sin(even_angles), _cos_sin(odd_angles)
    for layer in reversed(range(len(even_angles) + len(odd_angles))):
        odd, i = layer % 2, layer // 2
        cos, sin = cos_sin[odd]
        rows = _pair_rows(og, odd)
        o, g = rows[..., :n], rows[..., n:]
        grads[odd][i] = torch.linalg.vecdot(g[:, 1], o[:, 0]) - torch.linalg.vecdot(g[:, 0], o[:, 1])
        if layer:  # layer 0's input (the identity) and gradient are not needed
            _rotate_(rows, cos[i], -sin[i])  # Rᵀ = R(-φ)
    return grads


# On a GPU, the L layers one after another are L dependent rounds of small kernels (54 ms for V at N = 512,
# L = 256 on an H200, docs/performance.md).  Chunked: the layers are cut into K chunks of c consecutive layers
# (c even, so that every chunk starts with an even layer; the last chunk padded with zero angles, identity
# rotations), all K chunks are rotated in lockstep, c rounds of one batched rotation each, and V is their
# product by a tree of batched matrix products (⌈log₂ K⌉ rounds).  The backward pulls ∂L/∂V back to each
# chunk's output, ∂L/∂C_j = (C_{K-1} ⋯ C_{j+1})ᵀ G (C_{j-1} ⋯ C_0)ᵀ, with prefix and suffix products by doubling
# (⌈log₂ K⌉ rounds), then walks every chunk's layers back in lockstep as the reference walks all of them.
# Cost: about 4K dense products of N × N besides the reference's O(L N²), so it pays only where launches,
# not arithmetic, bound the time.

def _chunk_angles(angles: torch.Tensor, chunks: int, per_chunk: int) -> torch.Tensor:
    """(chunks, per_chunk, pairs): one parity's angles, zero-padded, chunk j holding its layers in order."""
    padded = angles.new_zeros(chunks * per_chunk, angles.shape[1])
    padded[:len(angles)] = angles
    return padded.view(chunks, per_chunk, angles.shape[1])


def _chunk_layers(even_angles: torch.Tensor, odd_angles: torch.Tensor, chunks: int):
    """(layers per chunk c, (cos, sin) of the even and of the odd layers, each (chunks, c/2, pairs, 1))."""
    layers = len(even_angles) + len(odd_angles)
    per_chunk = 2 * math.ceil(layers / (2 * chunks))
    return per_chunk, tuple(_cos_sin(_chunk_angles(a, chunks, per_chunk // 2)) for a in (even_angles, odd_angles))


def _batched_pair_rows(m: torch.Tensor, odd: bool) -> torch.Tensor:
    """View (chunks, k, 2, cols) of the rows that layer parity ``odd`` rotates in each of a batch of matrices."""
    start = 1 if odd else 0
    k = (m.shape[1] - start) // 2
    return m[:, start:start + 2 * k].view(m.shape[0], k, 2, m.shape[2])


def _batched_rotate_(rows: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
    a, b = rows[:, :, 0], rows[:, :, 1]
    sin_a = sin * a
    a.mul_(cos).addcmul_(sin, b, value=-1)
    b.mul_(cos).add_(sin_a)


def chunk_products(even_angles: torch.Tensor, odd_angles: torch.Tensor, n: int, chunks: int) -> torch.Tensor:
    """(chunks, n, n): C_j, the product of chunk j's layers, all chunks rotated in lockstep."""
    per_chunk, cos_sin = _chunk_layers(even_angles, odd_angles, chunks)
    c = torch.eye(n, dtype=even_angles.dtype, device=even_angles.device).expand(chunks, n, n).contiguous()
    for step in range(per_chunk):
        odd = step % 2
        cos, sin = cos_sin[odd]
        _batched_rotate_(_batched_pair_rows(c, odd), cos[:, step // 2], sin[:, step // 2])
    return c


def product_tree(c: torch.Tensor) -> torch.Tensor:
    """C_{K-1} ⋯ C_0 by rounds of batched products of neighbours."""
    while len(c) > 1:
        pairs = len(c) // 2
        products = torch.bmm(c[1:2 * pairs:2], c[0:2 * pairs:2])
        c = torch.cat([products, c[2 * pairs:]]) if len(c) % 2 else products
    return c[0]


def _inclusive_products(c: torch.Tensor, reverse: bool) -> torch.Tensor:
    """P_j = C_j ⋯ C_0 (or, reverse, C_{K-1} ⋯ C_j) for every j, by doubling (Hillis–Steele)."""
    p, shift = c, 1
    while shift < len(c):
        if reverse:
            p = torch.cat([torch.bmm(p[shift:], p[:-shift]), p[-shift:]])
        else:
            p = torch.cat([p[:shift], torch.bmm(p[shift:], p[:-shift])])
        shift *= 2
    return p


def chunked_backward(even_angles: torch.Tensor, odd_angles: torch.Tensor, grad_v: torch.Tensor, chunks: int):
    """What :func:`sequential_backward` computes, by chunks in parallel (see the comment above)."""
    n = grad_v.shape[0]
    c = chunk_products(even_angles, odd_angles, n, chunks)
    eye = torch.eye(n, dtype=c.dtype, device=c.device)[None]
    before = torch.cat([eye, _inclusive_products(c, reverse=False)[:-1]])  # C_{j-1} ⋯ C_0
    after = torch.cat([_inclusive_products(c, reverse=True)[1:], eye])  # C_{K-1} ⋯ C_{j+1}
    grad_c = torch.bmm(torch.bmm(after.transpose(1, 2), grad_v.expand_as(c)), before.transpose(1, 2))
    og = torch.cat([c, grad_c], dim=2)
    per_chunk, cos_sin = _chunk_layers(even_angles, odd_angles, chunks)
    grads = [even_angles.new_empty(chunks, per_chunk // 2, even_angles.shape[1]),
             odd_angles.new_empty(chunks, per_chunk // 2, odd_angles.shape[1])]
    for step in reversed(range(per_chunk)):
        odd, i = step % 2, step // 2
        cos, sin = cos_sin[odd]
        rows = _batched_pair_rows(og, odd)
        o, g = rows[..., :n], rows[..., n:]
        grads[odd][:, i] = torch.linalg.vecdot(g[:, :, 1], o[:, :, 0]) - torch.linalg.vecdot(g[:, :, 0], o[:, :, 1])
        if step:
            _batched_rotate_(rows, cos[:, i], -sin[:, i])
    return (grads[0].flatten(0, 1)[:len(even_angles)].contiguous(),
            grads[1].flatten(0, 1)[:len(odd_angles)].contiguous())


# While compiling, the product is one custom op with the same forward and backward: traced, its loop
# would be unrolled into the graph, every layer's rotation forward and back.

# the schema written out, not inferred: older torch cannot read string annotations (see models/fused.py)
@torch.library.custom_op("nnrnn::givens_product", mutates_args=(),
                         schema="(Tensor even_angles, Tensor odd_angles, SymInt n) -> Tensor")
def givens_product_op(even_angles: torch.Tensor, odd_angles: torch.Tensor, n: int) -> torch.Tensor:
    with torch.no_grad():
        return GivensProduct.apply(even_angles, odd_angles, n)


@givens_product_op.register_fake
def _(even_angles, odd_angles, n):
    return even_angles.new_empty(n, n)


@torch.library.custom_op("nnrnn::givens_product_backward", mutates_args=(),
                         schema="(Tensor even_angles, Tensor odd_angles, Tensor v, Tensor grad) -> Tensor[]")
def givens_product_backward_op(even_angles: torch.Tensor, odd_angles: torch.Tensor, v: torch.Tensor,
                               grad: torch.Tensor) -> list[torch.Tensor]:
    return list(_givens_backward(even_angles, odd_angles, v, grad))


@givens_product_backward_op.register_fake
def _(even_angles, odd_angles, v, grad):
    return [torch.empty_like(even_angles), torch.empty_like(odd_angles)]


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1], output)


def _op_backward(ctx, grad):
    even, odd, v = ctx.saved_tensors
    g_even, g_odd = givens_product_backward_op(even, odd, v, grad.contiguous())
    return g_even, g_odd, None


givens_product_op.register_autograd(_op_backward, setup_context=_setup_context)


def givens_product_traceable(even_angles: torch.Tensor, odd_angles: torch.Tensor, n: int) -> torch.Tensor:
    """V as :class:`GivensProduct` composes it, by out-of-place operators (for exporters without nnrnn's custom
    ops, ONNX): each layer's rotation is one expression of the previous layer's rows."""
    v = torch.eye(n, dtype=even_angles.dtype, device=even_angles.device)
    for layer in range(len(even_angles) + len(odd_angles)):
        odd, i = layer % 2, layer // 2
        angles = (odd_angles if odd else even_angles)[i][:, None]
        start = 1 if odd else 0
        k = (n - start) // 2
        rows = v[start:start + 2 * k].view(k, 2, n)
        a, b = rows[:, 0], rows[:, 1]
        cos, sin = angles.cos(), angles.sin()
        rotated = torch.stack([cos * a - sin * b, sin * a + cos * b], 1).view(2 * k, n)
        v = torch.cat([v[:start], rotated, v[start + 2 * k:]])
    return v


class EURNN(RecurrentModel):
    r"""EURNN (Jing et al. 2017), the real orthogonal tunable-space version: each layer and direction computes

    .. math::
        h_t = \phi(V h_{t-1} + W_{ih} x_t + b), \qquad V = R_{L-1} \cdots R_1 R_0,

    each R_ℓ a layer of 2×2 Givens rotations of unit pairs (0,1), (2,3), … (ℓ even) or (1,2), (3,4), …
    (ℓ odd), each pair by its own angle, so V is exactly orthogonal for any angles.

    Args:
        input_size, hidden_size, num_layers, nonlinearity, bias, batch_first, dropout, bidirectional,
            device, dtype: as :class:`~nnrnn.NonNormalRNN` (torch.nn.RNN's, modReLU by default).
        capacity: L, the number of Givens layers (default max(2, hidden_size // 2)).
        input_init, bias_init: schemes of :mod:`nnrnn.models.init`.

    Inputs and outputs: as :class:`~nnrnn.NonNormalRNN`: ``input`` (L, B, N_in) (or batch-first,
    unbatched, packed), ``h_0`` (D·num_layers, B, N) → ``output`` (L, B, D·N), ``h_n`` like h_0.

    Attributes:
        weight_ih_l[k], bias_ih_l[k], modrelu_bias_l[k]: as :class:`~nnrnn.NonNormalRNN`.
        even_angles_l[k]: (⌈L/2⌉, ⌊N/2⌋), U(-π, π).
        odd_angles_l[k]: (⌊L/2⌋, ⌊(N-1)/2⌋), U(-π, π).
        weight_hh_l[k]: V (N, N), composed from the angles on access; it cannot be assigned.
    """
    # its published figures on the protocols the grids run (nnrnn.models.published)
    PUBLISHED = (
        Published("ptb", "test bpc", 1.69, "N = 1024, T_PTB = 150, the full training file", "the paper's Table 1"),
    )
    DISPLAY_NAME = "EURNN"
    PAPER_OPTIMIZER = "rmsprop"  # the paper's release (utils.select_optimizer)
    LINE_STYLE = ('#2ca02c', (0, (1, 1.5)))

    CONFIG_OPTIONS = RecurrentModel.CONFIG_OPTIONS + ("capacity",)
    ORTHOGONAL = True

    def __init__(self, *args, capacity: int | None = None, **kwargs):
        if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0):
            raise ValueError(f"capacity must be a positive int; got {capacity!r}")
        self._capacity_option = capacity
        super().__init__(*args, **kwargs)

    @property
    def capacity(self) -> int:
        return default_capacity(self.hidden_size) if self._capacity_option is None else self._capacity_option

    def _make_recurrent(self, suffix, factory):
        n, layers = self.hidden_size, self.capacity
        self.register_parameter("even_angles" + suffix, nn.Parameter(torch.empty((layers + 1) // 2, n // 2, **factory)))
        self.register_parameter("odd_angles" + suffix, nn.Parameter(torch.empty(layers // 2, (n - 1) // 2, **factory)))
        self._reset_recurrent(suffix)

    def _reset_recurrent(self, suffix):
        with torch.no_grad():
            getattr(self, "even_angles" + suffix).uniform_(-math.pi, math.pi)
            getattr(self, "odd_angles" + suffix).uniform_(-math.pi, math.pi)

    def _compose(self, suffix):
        even, odd = getattr(self, "even_angles" + suffix), getattr(self, "odd_angles" + suffix)
        product = givens_product_traceable if exporting_to_onnx() else eager_or_traced(GivensProduct, givens_product_op)
        if even.dtype in LOW_PRECISION:  # composed in float32, then rounded once
            return product(even.float(), odd.float(), self.hidden_size).to(even.dtype)
        return product(even, odd, self.hidden_size)

    def _recurrent_parameters(self, suffix):
        return [getattr(self, "even_angles" + suffix), getattr(self, "odd_angles" + suffix)]

    def _weight_suffix(self, name: str) -> str | None:
        """The cell suffix of ``weight_hh_l{k}[_reverse]`` for one of this model's cells, else None."""
        suffix = name[len("weight_hh"):] if name.startswith("weight_hh_l") else None
        return suffix if suffix in self.__dict__.get("cells", ()) else None

    def __getattr__(self, name: str):
        """``weight_hh_l{k}`` (and ``_reverse``) reads V composed from that cell's angles, as nnRNN's and
        expRNN's parametrized weights do; code written for torch.nn.RNN that reads the weight keeps working."""
        suffix = self._weight_suffix(name)
        if suffix is not None:
            return self._compose(suffix)
        return super().__getattr__(name)

    def __setattr__(self, name: str, value) -> None:
        suffix = self._weight_suffix(name)
        if suffix is not None:
            raise ValueError(f"EURNN's {name} is a product of Givens rotations and cannot be assigned; "
                             f"set its angles even_angles{suffix} and odd_angles{suffix} instead")
        super().__setattr__(name, value)

    def extra_repr(self) -> str:
        return super().extra_repr() + (f", capacity={self._capacity_option}" if self._capacity_option else "")

    @classmethod
    def recurrent_parameter_count(cls, hidden_size, capacity=None, **_) -> int:
        n = hidden_size
        layers = default_capacity(n) if capacity is None else capacity
        return (layers + 1) // 2 * (n // 2) + layers // 2 * ((n - 1) // 2)
