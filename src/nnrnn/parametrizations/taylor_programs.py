"""Taylor polynomials of the exponential in fewer matrix products than Paterson–Stockmeyer, and their adjoint.

Bader, Blanes & Casas (2019, "Computing the matrix exponential with an optimized Taylor polynomial
approximation", Mathematics 7, 1174) evaluate the degree-m Taylor polynomial T_m(X) = Σ_{k≤m} X^k/k! exactly
(every coefficient up to X^m, nothing beyond) in

    m      1  2  4  8  12  18
    products  0  1  2  3   4   5

where Paterson–Stockmeyer (:mod:`.expm`'s reference evaluation) needs 0, 1, 2, 4, 5 and 7: each product
multiplies two linear combinations of the matrices formed so far, and the combinations' coefficients are
chosen so that the result's coefficients are the Taylor ones.  The coefficients here were solved for again
(:data:`PROGRAMS`' comment says how) and are checked by ``tests/parametrizations/test_taylor_programs.py``,
which expands each program in exact rational arithmetic.

A program is a straight-line list of products.  The matrices it refers to are, by index, 0: I, 1: X,
2: X² (always its first product, which the exponential has formed already to estimate ‖A‖₂), then each
further product in order; a step is (left, right), two coefficient tuples over the matrices before it, and
the result is one tuple over all of them.  The adjoint (:func:`adjoint`) runs the products backward
(C = LR passes back ∂L = ∂C Rᵀ and ∂R = Lᵀ ∂C to the matrices L and R combine): the exact derivative of
the computed polynomial, two products per product.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..kernels.operations import matmul


@dataclass(frozen=True)
class Program:
    degree: int
    steps: tuple  # ((left coefficients, right coefficients), ...) over the matrices before each step
    result: tuple  # coefficients over every matrix
    block: int = 0  # Paterson–Stockmeyer's block size q, 0 for a program of PROGRAMS

    @property
    def products(self) -> int:
        return len(self.steps)


_SQUARE = ((0.0, 1.0), (0.0, 1.0))  # X · X


def _t1() -> Program:
    return Program(1, (), (1.0, 1.0))


def _t2() -> Program:
    return Program(2, (_SQUARE,), (1.0, 1.0, 0.5))


def _t4() -> Program:
    # T4 = I + X + X² (I/2 + X/6 + X²/24)
    return Program(4, (_SQUARE, ((0.0, 0.0, 1.0), (1 / 2, 1 / 6, 1 / 24))), (1.0, 1.0, 0.0, 1.0))


def _t8(x1, x2, x3, x4, x5, x6, x7) -> Program:
    # X4 = X² (x1 X + x2 X²);  X8 = (x3 X² + X4)(x4 I + x5 X + x6 X² + x7 X4);  T8 = I + X + y2 X² + X8
    return Program(8, (_SQUARE,
                       ((0.0, 0.0, 1.0), (0.0, x1, x2)),
                       ((0.0, 0.0, x3, 1.0), (x4, x5, x6, x7))),
                   (1.0, 1.0, 0.5 - x3 * x4, 0.0, 1.0))


def _t12(b1, b2, b3, b4) -> Program:
    # B_i = b_i · (I, X, X², X³);  X6 = B3 + B4²;  T12 = B1 + (B2 + X6) X6
    left = tuple(u + v for u, v in zip(b2, b3))
    return Program(12, (_SQUARE,
                        ((0.0, 0.0, 1.0), (0.0, 1.0)),  # X³ = X² X
                        (tuple(b4), tuple(b4)),  # B4²
                        (left + (1.0,), tuple(b3) + (1.0,))),  # (B2 + B3 + B4²)(B3 + B4²)
                   tuple(b1) + (0.0, 1.0))


def _t18(a, b2, b3, b4, b5) -> Program:
    # B1 = a · (I, X, X², X³), B_i = b_i · (I, X, X², X³, X⁶);  X9 = B1 B5 + B4;  T18 = B2 + (B3 + X9) X9
    left = tuple(u + v for u, v in zip(b3, b4))
    return Program(18, (_SQUARE,
                        ((0.0, 0.0, 1.0), (0.0, 1.0)),  # X³ = X² X
                        ((0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)),  # X⁶ = X³ X³
                        (tuple(a), tuple(b5)),  # B1 B5
                        (left + (1.0,), tuple(b4) + (1.0,))),  # (B3 + B4 + B1 B5)(B4 + B1 B5)
                   tuple(b2) + (0.0, 1.0))


# The coefficients: solutions of the polynomial equations "the program's coefficient of X^k is 1/k! for every
# k ≤ m, and 0 above", found by Gauss–Newton from many random starts, refined in 40-digit arithmetic with the
# free coefficients first rounded to float64, and, of the solutions found, the one whose float32 evaluation
# was closest to exp at the largest ‖X‖₂ it serves.
PROGRAMS = {1: _t1(), 2: _t2(), 4: _t4(),
            8: _t8(-0.12802105804446287, -0.03200526451111572, -0.7875941710293536, -0.4628114986818055,
                   -0.13638629243521277, -0.011927392453875876, 0.024212332812935385)}


def paterson_stockmeyer(m: int, q: int) -> Program:
    """T_m by Paterson–Stockmeyer with block size q, as a program: X², …, X^q, then one product per Horner
    step (the products of :func:`nnrnn.parametrizations.expm.taylor_series`, for degrees no program of
    :data:`PROGRAMS` reaches)."""
    if m <= 1:
        return _t1()
    coefficients = [1.0 / math.factorial(k) for k in range(m + 1)]
    steps = [_SQUARE]
    for k in range(3, q + 1):  # X^k = X^{k-1} X
        steps.append((tuple(float(i == k - 1) for i in range(k)), (0.0, 1.0)))
    size = q + 1  # matrices so far: I, X, …, X^q

    def over(block, extra=()):  # a block's coefficients over (I, X, …) and the matrices after X^{q-1}
        out = [0.0] * size
        out[:len(block)] = block
        for i, c in extra:
            out[i] = c
        return out

    blocks = [coefficients[j:j + q] for j in range(0, m + 1, q)]
    if len(blocks[-1]) == 1:  # c·X^q: a scaling, not a product
        top = blocks.pop()[0]
        p = over(blocks.pop(), [(q, top)])
    else:
        p = over(blocks.pop())
    for block in reversed(blocks):
        steps.append((tuple(p), tuple(float(i == q) for i in range(size))))
        size += 1
        p = over(block, [(size - 1, 1.0)])
    return Program(m, tuple(steps), tuple(p), q)


def plan(theta: float, theta_max: float, tolerance: float, degree, reference: tuple[int, int, int]
         ) -> tuple[int, Program]:
    """(s, program) for ‖A‖₂ ≤ θ: the reference plan (s, m, q) (Paterson–Stockmeyer's, :func:`.expm.plan`), or a
    program of :data:`PROGRAMS` of the degree m = ``degree(θ/2^s, tolerance)`` needs (or above), s from the fewest
    squarings with θ/2^s ≤ ``theta_max`` to two more (the reference rule's range), whichever has the fewest
    products plus squarings (then the fewest squarings; the reference on a tie).  The squarings of
    :func:`exponential` cost little accuracy, so trading degree for squarings pays: at ‖A‖₂ = π, degree 8 after
    three squarings gave ‖PᵀP − I‖ = 3.6e-7 at n = 512 in float32, the reference (degree 13, one P·P) 6.9e-7."""
    s_ref, m_ref, q_ref = reference
    best = ((paterson_stockmeyer(m_ref, q_ref).products + s_ref, s_ref), (s_ref, paterson_stockmeyer(m_ref, q_ref)))
    s_min = max(0, math.ceil(math.log2(theta / theta_max))) if theta > theta_max else 0
    for s in range(s_min, s_min + 3):
        m = max(1, degree(theta / 2 ** s, tolerance))
        options = [program for d, program in PROGRAMS.items() if d >= m]
        if not options:
            continue
        program = min(options, key=lambda program: program.products)
        key = (program.products + s, s)
        if key < best[0]:
            best = (key, (s, program))
    return best[1]


def program(m: int, block: int) -> Program:
    """The program of degree m that :attr:`Program.block` names: PROGRAMS[m] for 0, else Paterson–Stockmeyer's."""
    return PROGRAMS[m] if block == 0 else paterson_stockmeyer(m, block)


def paterson_stockmeyer_block(m: int) -> int:
    """The block size q with the fewest products, (q − 1) + ⌊m/q⌋ − [q divides m]."""
    if m <= 1:
        return 1
    return min(((q - 1) + (m // q) - (m % q == 0), q) for q in range(2, m + 1))[1]


def _combine(coefficients, matrices) -> torch.Tensor:
    """Σ c_i M_i (M_0 = I, added on the diagonal); a new tensor unless it is a single M_i with c_i = 1."""
    terms = [(c, m) for c, m in zip(coefficients[1:], matrices[1:]) if c != 0]
    if len(terms) == 1 and terms[0][0] == 1.0 and coefficients[0] == 0:
        return terms[0][1]
    if not terms:
        return matrices[0] * coefficients[0]
    c, m = terms[0]
    out = m * c
    for c, m in terms[1:]:
        out.add_(m, alpha=c)
    if coefficients[0] != 0:
        out.diagonal().add_(coefficients[0])
    return out


def evaluate(program: Program, x: torch.Tensor, x2: torch.Tensor, eye: torch.Tensor, identity: bool = True,
             factors: list | None = None) -> tuple[torch.Tensor, list]:
    """(T_m(X), [I, X, X², products…]) for ``program``, or T_m(X) − I without ``identity``; X² is given (the
    exponential has it already).  With ``factors``, each product's two factors are appended to it (the adjoint
    then need not form them again)."""
    matrices = [eye, x]
    for k, (left, right) in enumerate(program.steps):
        if k == 0:
            matrices.append(x2)
            lhs = rhs = x
        else:
            lhs, rhs = _combine(left, matrices), _combine(right, matrices)
            matrices.append(matmul(lhs, rhs))
        if factors is not None:
            factors.append((lhs, rhs))
    return _combine(program.result if identity else (0.0,) + program.result[1:], matrices), matrices


def exponential(program: Program, s: int, x: torch.Tensor, x2: torch.Tensor, eye: torch.Tensor
                ) -> tuple[torch.Tensor, list, list, list]:
    """(T_m(X)^(2^s), the matrices of :func:`evaluate`, each squaring's input E_k, each product's factors).  The
    squarings are of E = P − I, E ← 2E + E·E: a product of P ≈ I with itself rounds at the size of its entries
    near 1 (about 1e-6 at n = 512 in float32), one of E at the size of E's."""
    factors = []
    e, matrices = evaluate(program, x, x2, eye, identity=False, factors=factors)
    squares = []
    for _ in range(s):
        squares.append(e)
        e = _square(e)
    return e + eye, matrices, squares, factors


def _square(e: torch.Tensor) -> torch.Tensor:
    return matmul(e, e).add_(e, alpha=2.0)


def squarings(first: list, count: int) -> list:
    """Each squaring's input from the first one's (what a compiled record keeps): E_{k+1} = 2E_k + E_k E_k."""
    squares = list(first)
    while len(squares) < count:
        squares.append(_square(squares[-1]))
    return squares


def exponential_adjoint(program: Program, grad: torch.Tensor, matrices: list, squares: list,
                        factors: list | None = None) -> torch.Tensor:
    """∂L/∂X from ∂L/∂P through :func:`exponential`: E_{k+1} = 2E_k + E_k E_k passes back 2g + g E_kᵀ + E_kᵀ g."""
    g = grad
    for e in reversed(squares):
        g = matmul(g, e.T).add_(matmul(e.T, g)).add_(g, alpha=2.0)
    return adjoint(program, g, matrices, factors)


class _Sum:
    """∂L/∂M_i for every matrix, accumulated in place into tensors this owns."""

    def __init__(self, count: int):
        self.values, self.owned = [None] * count, [False] * count

    def add(self, i: int, value: torch.Tensor, c: float = 1.0) -> None:
        if c == 0 or i == 0:  # the identity's gradient is not wanted
            return
        if self.values[i] is None:
            self.values[i], self.owned[i] = (value, False) if c == 1.0 else (value * c, True)
        elif self.owned[i]:
            self.values[i].add_(value, alpha=c)
        else:
            self.values[i], self.owned[i] = torch.add(self.values[i], value, alpha=c), True


def adjoint(program: Program, grad: torch.Tensor, matrices: list, factors: list | None = None) -> torch.Tensor:
    """∂L/∂X from ∂L/∂T_m(X), in reverse through :func:`evaluate`'s products (their factors formed again from
    ``matrices`` unless ``factors`` holds them)."""
    d = _Sum(len(matrices))
    for i, c in enumerate(program.result):
        d.add(i, grad, c)
    for k in reversed(range(len(program.steps))):
        g = d.values[2 + k]
        if g is None:
            continue
        left, right = program.steps[k]
        lhs, rhs = factors[k] if factors is not None else (_combine(left, matrices), _combine(right, matrices))
        d_left, d_right = matmul(g, rhs.T), matmul(lhs.T, g)
        for i, c in enumerate(left):
            d.add(i, d_left, c)
        for i, c in enumerate(right):
            d.add(i, d_right, c)
    return d.values[1] if d.values[1] is not None else torch.zeros_like(grad)


def taylor_coefficients(program: Program, number=float) -> list:
    """The coefficients of the polynomial ``program`` computes, X⁰ first, in ``number`` arithmetic (e.g.
    fractions.Fraction for exact ones): the matrices are polynomials in X, so scalar polynomials stand for them."""
    def times(p, q):
        out = [number(0)] * (len(p) + len(q) - 1)
        for i, u in enumerate(p):
            for j, v in enumerate(q):
                out[i + j] += u * v
        return out

    def combine(coefficients, polys):
        out = [number(0)] * max(len(p) for p in polys)
        for c, p in zip(coefficients, polys):
            for i, v in enumerate(p):
                out[i] += number(c) * v
        return out

    polys = [[number(1)], [number(0), number(1)]]
    for left, right in program.steps:
        polys.append(times(combine(left, polys), combine(right, polys)))
    return combine(program.result, polys)

