"""The exponential of a real skew-symmetric matrix, P = exp(A), and its gradient.

    exp(A) = (T_m(A / 2^s))^(2^s),    T_m(X) = Σ_{k=0..m} X^k / k!

A truncated Taylor series with scaling and squaring, the series evaluated by
Paterson–Stockmeyer (Paterson & Stockmeyer 1973; Higham, *Functions of
Matrices*, §4.2): with the powers X², …, X^q formed once,

    T_m(X) = B_0 + X^q (B_1 + X^q (B_2 + … )),   B_j = Σ_{i<q} X^i / (jq + i)!,

which costs (q − 1) + ⌊m/q⌋ − [q divides m] matrix products; q is chosen to
minimise that.  The gradient is the exact derivative of the computed
polynomial: reverse mode through the same products (:func:`_adjoint`, twice
the forward's products), written out so that the evaluation's intermediates
are kept once and so that torch.compile can treat it as one custom op.

Why not ``torch.linalg.matrix_exp``: it picks degree and scaling from the
1-norm, which for a dense skew-symmetric A of spectral norm θ is up to
~√n·θ/2, so it squares several times more than needed, and its degree-8 and
degree-18 evaluations (Bader, Blanes & Casas 2019) combine terms with
coefficients up to ~11 that cancel.  In float32 both cost accuracy: its PᵀP − I
is about two orders of magnitude above this function's at n = 512-1024 (docs/performance.md,
'What makes an update fast'), and this function does fewer products.

Degree and scaling: A is normal, so ‖A^k‖₂ = ‖A‖₂^k and the truncation error
of T_m in the 2-norm is at most Σ_{k>m} θ^k / k! with θ = ‖A‖₂.  θ comes from
a fixed number of power-iteration steps on A² (symmetric, semidefinite,
already formed as the first product), times a 1.1 safety margin, computed by
tensor ops on A's device.  Each squaring doubles the error already present and
adds one product's rounding (about 1e-6 for a dense float32 product at
n = 1024), while the series itself loses accuracy in proportion to e^θ (its
terms grow to ~θ^θ/θ! before they cancel); θ / 2^s ≤ THETA_MAX = 2 was the
measured best compromise.  There are two plans, chosen per device by
:func:`nnrnn.kernels.fixed_exponential_plan`:

* read (the CPU): θ is read on the host, and the plan made for it: m the
  smallest degree whose tail is at most half the unit roundoff of the dtype,
  s the fewest squarings with θ / 2^s ≤ THETA_MAX (or up to two more, where
  they save products);
  the series is then evaluated by the cheapest of that plan and the programs of :mod:`.taylor_programs`
  (degree 8 in 3 products where Paterson–Stockmeyer needs 4, squarings of P − I rather than of P), over the
  same range of squarings: one product fewer forward and two fewer backward at every ‖A‖₂ from 0.3 to π,
  and P at least as orthogonal.  ``REFERENCE_EVALUATION = True`` evaluates by :func:`taylor_series` instead
  (the reference the programs are tested against);
* fixed (GPUs, and anywhere ``NNRNN_EXPM_PLAN=fixed``): nothing is read to
  the host, so an update never waits for the device and can be captured in a
  CUDA graph.  m is the degree θ = THETA_MAX needs, MAX_SQUARINGS squarings
  are computed and each is kept or skipped by ``torch.where`` on s = ⌈log₂(θ /
  THETA_MAX)⌉, computed on the device; the result is as accurate as the read
  plan's up to ‖A‖₂ ≈ THETA_MAX·2^MAX_SQUARINGS / 1.1 ≈ 14.5, and NaN beyond
  (training stops as diverged rather than going on with a matrix that is
  not exp(A)).  It pays for that worst case whatever A is: at ‖A‖₂ = 1 about
  1.7× the read plan's time on the CPU at n = 512, at ‖A‖₂ = π about 1.3×
  (docs/performance.md, 'No host reads in an update').
"""
from __future__ import annotations

import functools
import math

import torch

from ..kernels.autograd import autocast_off, exporting_to_onnx, first_order_only

from ..kernels.operations import fixed_exponential_plan, matmul
from . import taylor_programs

THETA_MAX = 2.0
NORM_SAFETY = 1.1
POWER_STEPS = 8
POWER_VECTORS = 4
# The read plan evaluates the series by the programs of taylor_programs (fewer products than Paterson–Stockmeyer,
# the same degree and scaling rule); True: by taylor_series, the reference they are tested against.
REFERENCE_EVALUATION = False
MAX_SQUARINGS = 3  # the fixed plan: ‖A‖₂ up to THETA_MAX·2³/NORM_SAFETY ≈ 14.5 (4.6π); inits start at ≤ π


def unit_roundoff(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps / 2


def taylor_degree(theta: float, tolerance: float) -> int:
    """The smallest m with Σ_{k>m} θ^k/k! ≤ tolerance (θ ≥ 0); the tail is summed from its small end,
    not subtracted from e^θ, which would lose it to rounding at float64 tolerances."""
    terms = [1.0]
    while len(terms) <= theta or terms[-1] > tolerance * 1e-6:
        terms.append(terms[-1] * theta / len(terms))
    tail = 0.0
    for m in range(len(terms) - 1, 0, -1):  # tail = Σ_{k>m} θ^k/k!
        if tail + terms[m] > tolerance:
            return m
        tail += terms[m]
    return 0  # Σ_{k≥1} θ^k/k! is within the tolerance: the constant term alone


def paterson_stockmeyer_plan(m: int) -> tuple[int, int]:
    """(products, q) of the cheapest Paterson–Stockmeyer evaluation of a degree-m polynomial: q − 1
    powers, then one product per Horner step, of which the first is free when the top block is a
    single coefficient (c·X^q needs no product)."""
    if m <= 1:
        return 0, 1
    return min([((q - 1) + (m // q) - (m % q == 0), q) for q in range(2, m + 1)])


def _horner_block(powers: list, coefficients: list[float], eye: torch.Tensor) -> torch.Tensor:
    """Σ_i c_i X^i over one Paterson–Stockmeyer block (powers[i] = X^i, powers[0] unused)."""
    out = eye * coefficients[0]
    for power, c in zip(powers[1:], coefficients[1:]):
        out = out + power * c
    return out


def plan(theta: float, dtype: torch.dtype) -> tuple[int, int, int]:
    """(s, m, q): squarings, Taylor degree and Paterson–Stockmeyer block size for ‖A‖₂ ≤ θ."""
    tolerance = unit_roundoff(dtype) / 2
    s_min = max(0, math.ceil(math.log2(theta / THETA_MAX))) if theta > THETA_MAX else 0
    best = None
    for s in range(s_min, s_min + 3):  # more squarings only cost accuracy once the degree is small
        # at least I + A, whose derivative (the identity) is exact at A = 0
        m = max(1, taylor_degree(theta / 2 ** s, tolerance))
        products, q = paterson_stockmeyer_plan(m)
        key = (products + s, s)
        if best is None or key < best[0]:
            best = (key, (s, m, q))
    return best[1]


def fixed_plan(dtype: torch.dtype) -> tuple[int, int]:
    """(m, q): the Taylor degree that any ‖X‖₂ ≤ THETA_MAX needs in ``dtype``, and its Paterson–Stockmeyer
    block size.  At least I + X, whose derivative (the identity) is exact at X = 0."""
    m = max(1, taylor_degree(THETA_MAX, unit_roundoff(dtype) / 2))
    return m, paterson_stockmeyer_plan(m)[1]


def spectral_norm_from_square(a2: torch.Tensor) -> torch.Tensor:
    """‖A‖₂ of a skew-symmetric (or skew-Hermitian) A, from A² (= −AᴴA), as a 0-dim real tensor on A's
    device: block power iteration on −A², fixed start and a fixed number of steps, so the result is
    deterministic and nothing is read to the host; a lower estimate that converges from below."""
    n = a2.shape[-1]
    real = a2.real.dtype if a2.is_complex() else a2.dtype
    # quasi-random start vectors made by tensor ops (a torch.Generator cannot be made inside torch.compile):
    # no entry is zero, so none is orthogonal to a coordinate direction, as a block-diagonal A's singular
    # vectors are
    rows = torch.arange(1, n + 1, dtype=real, device=a2.device)[:, None]
    columns = torch.arange(1, POWER_VECTORS + 1, dtype=real, device=a2.device)
    start = torch.sin(rows * columns * 0.7548776662466927 + columns)
    x = (start / torch.linalg.vector_norm(start, dim=0)).to(a2.dtype)
    # A² rather than −A²: the same magnitudes.  For a symmetric M and unit x, ‖Mx‖² = xᵀM²x ≤ ‖M²x‖, so the
    # estimate never decreases from one step to the next and the last step's is the largest
    for _ in range(POWER_STEPS - 1):
        y = torch.mm(a2, x)
        x = y / torch.linalg.vector_norm(y, dim=0).clamp_min(torch.finfo(real).tiny)  # A = 0 gives x = 0
    return torch.linalg.vector_norm(torch.mm(a2, x), dim=0).max().sqrt()


def squarings(theta: torch.Tensor) -> torch.Tensor:
    """s (a 0-dim tensor, float): the fewest squarings with θ / 2^s ≤ THETA_MAX, at most MAX_SQUARINGS."""
    needed = torch.ceil(torch.log2(theta.clamp_min(torch.finfo(theta.dtype).tiny) / THETA_MAX))
    return needed.clamp(0, MAX_SQUARINGS)


def within_capacity(p: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """P, or NaN everywhere where ‖A‖₂ is beyond what MAX_SQUARINGS squarings make accurate: a wrong
    exponential would train on silently, NaN stops training as diverged."""
    return torch.where(theta <= THETA_MAX * 2 ** MAX_SQUARINGS, p, torch.full_like(p, math.nan))


def _evaluate(a: torch.Tensor):
    """exp(A) and what its adjoint needs: (P, record).  No autograd: :func:`_adjoint` differentiates it.
    The plan :func:`nnrnn.kernels.fixed_exponential_plan` chooses for A's device: fixed (the same products
    whatever A is, the scaling and each squaring's use tensors on A's device), or made for the ‖A‖₂ read
    on the host."""
    n = a.shape[-1]
    eye = torch.eye(n, dtype=a.dtype, device=a.device)
    a2 = matmul(a, a)
    theta = NORM_SAFETY * spectral_norm_from_square(a2)
    steps, squares = [], []
    if not fixed_exponential_plan(a):
        read = float(theta)  # not finite where A² overflowed: no plan is accurate, P is NaN as the fixed plan's
        if not REFERENCE_EVALUATION:  # the fewest products (taylor_programs)
            theta_read = read if math.isfinite(read) else 0.0
            s, program = taylor_programs.plan(theta_read, THETA_MAX, unit_roundoff(a.dtype) / 2, taylor_degree,
                                              plan(theta_read, a.dtype))
            scale = 2.0 ** -s
            x, x2 = (a * scale, a2 * scale ** 2) if s else (a, a2)
            p, matrices, squares, factors = taylor_programs.exponential(program, s, x, x2, eye)
            p = p if math.isfinite(read) else torch.full_like(p, math.nan)
            return p, (scale, s, program, matrices, squares, factors)
        s, m, q = plan(read if math.isfinite(read) else 0.0, a.dtype)
        scale = 2.0 ** -s
        x, x2 = (a * scale, a2 * scale ** 2) if s else (a, a2)
        p, powers = taylor_series(x, x2, m, q, eye, matmul, steps)
        for _ in range(s):
            squares.append(p)
            p = matmul(p, p)
        return (p if math.isfinite(read) else torch.full_like(p, math.nan)), (scale, s, m, q, powers, steps, squares)
    m, q = fixed_plan(a.dtype)
    s = squarings(theta)
    scale = torch.exp2(-s).to(a.dtype)
    x, x2 = a * scale, a2 * (scale * scale)
    p, powers = taylor_series(x, x2, m, q, eye, matmul, steps)
    for k in range(MAX_SQUARINGS):
        squares.append(p)
        p = torch.where(s > k, matmul(p, p), p)
    return within_capacity(p, theta), (scale, s, m, q, powers, steps, squares)


def taylor_series(x: torch.Tensor, x2: torch.Tensor, m: int, q: int, eye: torch.Tensor, product=torch.matmul,
                  steps: list | None = None) -> tuple[torch.Tensor, list]:
    """(T_m(X), [None, X, X², …, X^q]) by Paterson–Stockmeyer with block size q, products by ``product``; with
    ``steps``, each Horner step's left factor is appended to it (what :func:`_adjoint` needs)."""
    coefficients = [1.0 / math.factorial(k) for k in range(m + 1)]
    powers = [None, x, x2]
    if m <= 1:
        return eye + x, powers
    while len(powers) <= q:
        powers.append(product(powers[-1], x))
    blocks = [coefficients[j:j + q] for j in range(0, m + 1, q)]
    if len(blocks[-1]) == 1:  # c·X^q: a scaling, not a product
        top = blocks.pop()[0]
        p = _horner_block(powers[:q], blocks.pop(), eye) + powers[q] * top
    else:
        p = _horner_block(powers[:len(blocks[-1])], blocks.pop(), eye)
    for block in reversed(blocks):
        if steps is not None:
            steps.append(p)  # the factor of P_{j+1} X^q, kept for the adjoint
        p = _horner_block(powers[:q], block, eye) + product(p, powers[q])
    return p, powers


def _adjoint(grad: torch.Tensor, record) -> torch.Tensor:
    """∂L/∂A from ∂L/∂P, in reverse through the evaluation of :func:`_evaluate` (products C = XY pass
    back ∂X += ∂C Yᵀ and ∂Y += Xᵀ ∂C): the exact derivative of the computed polynomial."""
    if isinstance(record[2], taylor_programs.Program):  # the read plan
        scale, _, program, matrices, squares, factors = record
        # a new tensor also where it is grad itself
        return taylor_programs.exponential_adjoint(program, grad.contiguous(), matrices, squares, factors) * scale
    scale, s, m, q, powers, steps, squares = record
    g = grad.contiguous()
    for k in reversed(range(len(squares))):  # P_{k+1} = P_k P_k (the fixed plan: where k < s, else P_k)
        p = squares[k]
        squared = matmul(g, p.T) + matmul(p.T, g)
        g = squared if isinstance(s, int) else torch.where(s > k, squared, g)
    x = powers[1]
    d_powers = [None] * (q + 1)

    def accumulate(k: int, value: torch.Tensor) -> None:
        d_powers[k] = value if d_powers[k] is None else d_powers[k] + value

    if m == 1:
        accumulate(1, g)
    else:
        coefficients = [1.0 / math.factorial(k) for k in range(m + 1)]
        blocks = [coefficients[j:j + q] for j in range(0, m + 1, q)]
        top = blocks.pop()[0] if len(blocks[-1]) == 1 else None
        for j, prev in enumerate(reversed(steps)):  # undo P_j = B_j + P_{j+1} X^q, j = 0, 1, …
            for i, c in enumerate(blocks[j][1:], 1):
                accumulate(i, g * c)
            accumulate(q, matmul(prev.T, g))
            g = matmul(g, powers[q].T)
        for i, c in enumerate(blocks[-1][1:], 1):  # the top block, B_top (+ c X^q)
            accumulate(i, g * c)
        if top is not None:
            accumulate(q, g * top)
        for k in range(q, 1, -1):  # X^k = X^{k-1} X  (X² = X X)
            if d_powers[k] is not None:
                accumulate(k - 1, matmul(d_powers[k], x.T))
                accumulate(1, matmul(powers[k - 1].T, d_powers[k]))
    return d_powers[1] * scale  # a new tensor also where d_powers[1] is grad itself (exp(A) = I + A)


class _ExpmSkew(torch.autograd.Function):
    """exp(A) with the adjoint of :func:`_adjoint` as its backward (first-order gradients)."""

    @staticmethod
    def forward(ctx, a):
        with autocast_off(a.device.type):  # in A's precision, also under autocast
            p, ctx.record = _evaluate(a)
        return p

    @staticmethod
    @first_order_only("nnrnn's matrix exponential (P = exp(A) of nnRNN and expRNN)")
    def backward(ctx, grad):
        with autocast_off(grad.device.type):
            return _adjoint(grad, ctx.record)  # autograd gives grad in P's dtype, also under autocast


def expm_skew(a: torch.Tensor) -> torch.Tensor:
    """exp(A) for a real skew-symmetric (n × n) A, differentiable; see the module docstring.

    The result is orthogonal to rounding error: ‖PᵀP − I‖_max ~1e-7 at n = 128 and ~1e-6 at
    n = 1024 in float32 for ‖A‖₂ ≤ π.  A is not checked for skew-symmetry (only its use of the
    2-norm relies on it); pass ``skew(x)``.  The gradient is the exact derivative of the computed
    series (first order only).
    """
    if a.dim() != 2 or a.shape[0] != a.shape[1] or not a.is_floating_point():
        raise ValueError(f"expm_skew needs a real square matrix; got shape {tuple(a.shape)} and dtype {a.dtype}")
    if a.shape[0] == 0 or a.device.type == "meta":  # the norm below needs entries; meta tensors have none
        return a.clone()
    if exporting_to_onnx():
        return expm_skew_traceable(a)
    if torch.compiler.is_compiling():  # custom ops whose backward reuses the forward's products
        if torch.is_grad_enabled() and a.requires_grad:
            return expm_skew_recorded_op(a)[0]
        return expm_skew_op(a)
    return _ExpmSkew.apply(a)


# An exporter without nnrnn's custom ops (ONNX) gets exp(A) as a graph whose operators do not depend on A's
# values: the scaling is computed in the graph from a bound on ‖A‖₂ that needs no iteration, the Taylor
# degree is the one any θ ≤ THETA_MAX needs, and the squarings are MAX_TRACED_SQUARINGS products, each kept
# or skipped by a comparison with the computed scaling.  The bound: ‖A^k‖₂ = ‖A‖₂^k (A is normal) and
# ‖A^k‖₂ ≤ ‖A^k‖₁, so min over k = 1, 2, 4 of ‖A^k‖₁^(1/k).  ‖A‖₁ or the Frobenius norm alone can be several
# times ‖A‖₂ after training, and each extra squaring doubles the rounding error already in P.
MAX_TRACED_SQUARINGS = 16  # enough for ‖A‖₂ up to THETA_MAX · 2^16; a larger A would get an inexact exp(A)


def expm_skew_traceable(a: torch.Tensor) -> torch.Tensor:
    """exp(A) by operators whose sequence does not depend on A's values (see the comment above)."""
    n = a.shape[-1]
    m = max(1, taylor_degree(THETA_MAX, unit_roundoff(a.dtype) / 2))
    _, q = paterson_stockmeyer_plan(m)
    a2 = torch.mm(a, a)
    a4 = torch.mm(a2, a2)
    one_norms = torch.stack([m.abs().sum(0).max() for m in (a, a2, a4)])
    bound = (one_norms ** one_norms.new_tensor([1.0, 0.5, 0.25])).min()
    squarings = torch.ceil(torch.log2(bound / THETA_MAX)).clamp(0, MAX_TRACED_SQUARINGS)
    scale = torch.exp2(-squarings)
    x = a * scale
    eye = torch.eye(n, dtype=a.dtype, device=a.device)
    powers = [eye, x, a2 * scale * scale]
    while len(powers) <= q:
        powers.append(torch.mm(powers[-1], x))
    coefficients = [1.0 / math.factorial(k) for k in range(m + 1)]
    blocks = [coefficients[j:j + q] for j in range(0, m + 1, q)]
    p = None
    for block in reversed(blocks):  # Paterson–Stockmeyer: P = B_j + P X^q
        term = sum(powers[i] * c for i, c in enumerate(block))
        p = term if p is None else term + torch.mm(p, powers[q])
    for k in range(MAX_TRACED_SQUARINGS):
        p = torch.where(squarings > k, torch.mm(p, p), p)
    return p


# While compiling, the exponential is a custom op with its own backward (Dynamo would otherwise trace the
# adjoint's reverse pass as autograd's, keeping every intermediate).  For training, the products the adjoint
# needs leave the op as one stacked tensor of a length fixed by the dtype, with the plan beside it, so that
# the backward reuses them instead of evaluating the series again.  Each device runs the plan it runs eagerly
# (kernels.fixed_exponential_plan): the fixed plan's record is its scaling exponent s, a tensor on A's device
# that nothing reads on the host; the read plan's is [s, m, q, #powers, #steps, #squarings] on the CPU, and
# of its squarings only the first one's input is kept (the backward squares again for the others).

def _horner_steps(m: int, q: int) -> int:
    """How many Horner steps (each one product, kept for the adjoint) :func:`taylor_series` takes for (m, q)."""
    if m == 1:
        return 0
    blocks = math.ceil((m + 1) / q)
    return blocks - 2 if (m + 1) % q == 1 else blocks - 1


@functools.cache
def record_capacity(dtype: torch.dtype) -> int:
    """The most matrices a record holds for this dtype: X … X^q (X² at least), the Horner steps, and each
    squaring's input (the fixed plan) or the first one's (a read plan, whose degree is at most the fixed one's)."""
    m_max, q_max = fixed_plan(dtype)
    fixed = max(q_max, 2) + _horner_steps(m_max, q_max) + MAX_SQUARINGS
    read = 1 + max(max(q, 2) + _horner_steps(m, q) for m, q in
                   ((m, paterson_stockmeyer_plan(m)[1]) for m in range(1, m_max + 1)))
    programs = 2 + max(program.products for program in taylor_programs.PROGRAMS.values())  # X, products, a square
    return max(fixed, read, programs)


def _pack(record) -> tuple[torch.Tensor, torch.Tensor]:
    """The record of :func:`_evaluate` as (products (record_capacity, n, n), plan)."""
    if isinstance(record[2], taylor_programs.Program):
        # X and its products, the first squaring's input (not each product's factors: the backward forms them
        # again); the plan says which program
        _, s, program, matrices, squares, _ = record
        products = matrices[1:] + squares[:1]
        x = matrices[1]
        code = [s, program.degree, program.block, len(products) - len(squares[:1]), -1, len(squares)]
    else:
        _, s, m, q, powers, steps, squares = record
        fixed = isinstance(s, torch.Tensor)
        products = powers[1:] + steps + (squares if fixed else squares[:1])
        x = powers[1]
        code = None if fixed else [s, m, q, len(powers) - 1, len(steps), len(squares)]
    if len(products) > record_capacity(x.dtype):  # the bound failed: never drop a matrix the adjoint needs
        raise RuntimeError(f"expm_skew: {len(products)} products to keep, room for {record_capacity(x.dtype)}")
    stacked = torch.cat([torch.stack(products), x.new_zeros(record_capacity(x.dtype) - len(products), *x.shape)])
    if code is None:  # the fixed plan
        return stacked, s.reshape(1)
    return stacked, torch.tensor(code, dtype=torch.float64)


def _unpack(products: torch.Tensor, plan_: torch.Tensor):
    matrices = list(products.unbind(0))
    if plan_.numel() == 1:  # the fixed plan (a shape, not a value: nothing is read)
        m, q = fixed_plan(products.dtype)
        n_powers, n_steps, n_squares = max(q, 2), _horner_steps(m, q), MAX_SQUARINGS
        s = plan_[0]
        scale = torch.exp2(-s).to(products.dtype)
    else:
        s, m, q, n_powers, n_steps, n_squares = (int(v) for v in plan_.tolist())
        scale = 2.0 ** -s
        if n_steps == -1:  # a program (see _pack): I, X and its products, then the first squaring's input
            program = taylor_programs.program(m, q)
            eye = torch.eye(products.shape[-1], dtype=products.dtype, device=products.device)
            squares = taylor_programs.squarings(matrices[n_powers:n_powers + min(n_squares, 1)], n_squares)
            return scale, s, program, [eye] + matrices[:n_powers], squares, None
    powers = [None] + matrices[:n_powers]
    steps = matrices[n_powers:n_powers + n_steps]
    kept = n_squares if plan_.numel() == 1 else min(n_squares, 1)
    squares = matrices[n_powers + n_steps:n_powers + n_steps + kept]
    while len(squares) < n_squares:
        squares.append(matmul(squares[-1], squares[-1]))
    return scale, s, m, q, powers, steps, squares


# the schema written out, not inferred: older torch cannot read string annotations (see models/fused.py)
@torch.library.custom_op("nnrnn::expm_skew", mutates_args=(),
                         schema="(Tensor a) -> Tensor")
def expm_skew_op(a: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return _evaluate(a)[0]


@expm_skew_op.register_fake
def _(a):
    return torch.empty_like(a)


@torch.library.custom_op("nnrnn::expm_skew_recorded", mutates_args=(),
                         schema="(Tensor a) -> (Tensor, Tensor, Tensor)")
def expm_skew_recorded_op(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        p, record = _evaluate(a)
        return p, *_pack(record)


@expm_skew_recorded_op.register_fake
def _(a):
    n = a.shape[-1]
    plan_ = a.new_empty(1) if fixed_exponential_plan(a) else a.new_empty(6, dtype=torch.float64, device="cpu")
    return torch.empty_like(a), a.new_empty(record_capacity(a.dtype), n, n), plan_


@torch.library.custom_op("nnrnn::expm_skew_adjoint", mutates_args=(),
                         schema="(Tensor grad, Tensor products, Tensor plan_) -> Tensor")
def expm_skew_adjoint_op(grad: torch.Tensor, products: torch.Tensor, plan_: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return _adjoint(grad, _unpack(products, plan_))


@expm_skew_adjoint_op.register_fake
def _(grad, products, plan_):
    return torch.empty_like(grad)


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(output[1], output[2])
    ctx.mark_non_differentiable(output[1], output[2])


def _backward(ctx, grad, _products_grad, _plan_grad):
    products, plan_ = ctx.saved_tensors
    return expm_skew_adjoint_op(grad, products, plan_)


expm_skew_recorded_op.register_autograd(_backward, setup_context=_setup_context)
