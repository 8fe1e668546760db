"""The paper's claims on what nnRNN learned (§4.3, Fig. 3 and the supplement), each judged from the quantities of
the trained models (:mod:`.collect` collects them, over every seed): every function returns a
judgement, which :mod:`.structure_sentences` says in the claim's own words."""
from __future__ import annotations

from dataclasses import dataclass

from .judgement import Judgement, _grade
from .rules import FAILS, HOLDS, PARTLY, UNEQUAL, UNTESTED, rule
from .statistics import above_value, below, below_value


# --------------------------------------------------------------------------------------------- learned structure
@dataclass(frozen=True)
class Learned(Judgement):
    """A claim on what nnRNN learned: ``learned[task][quantity]`` a Stat over every seed's trained nnRNN."""
    copy: dict | None
    psmnist: dict | None
    ptb: dict | None


@dataclass(frozen=True)
class TaskOrder(Learned):
    """The order of T's strength, copy < psMNIST < PTB, on ``quantity`` (``per_entry``); ``unequal``: the tasks ran
    at unequal N; ``first`` and ``second`` the orders copy–psMNIST and psMNIST–PTB."""
    sizes: dict
    quantity: str
    per_entry: bool
    unequal: bool


def _unmeasured(stats, quantity) -> bool:
    """A structure statistic no seed gave a finite value of (NaN, e.g. an older cache or a model without the
    quantity): its claim is not tested, which is not a failure."""
    return quantity not in stats or stats[quantity].empty


def structure_judgements(learned: dict, sizes: dict | None = None) -> list[Learned]:
    """§4.3 and the supplement on what nnRNN learned; ``learned[task][quantity]`` is a Stat over every seed's
    trained nnRNN (fixed hidden units).  Quantities: ``triangular_fraction`` ‖T‖_F/‖Θ‖_F,
    ``departure`` (Henrici, normalised), ``mean_modulus`` (mean |λ| of V), ``angle_concentration`` (1 −
    sd(θ_i)/sd of the uniform law on [0, π]: 0 for evenly spread angles, 1 when all are equal) and ``delay_line``
    (mean |T_{i+1,i}| over the mean |T_{i+k,i}|, k ≥ 2).  ``sizes`` ({task: N}) lets the order of the tasks be
    judged like with like: ‖T‖/‖Θ‖ grows with N, so two tasks at unequal N are not ordered by it.  In order: T
    near 0 after copy and structured after PTB, the order of the tasks, uniform angles, aligned angles, the delay
    line, the mean eigenvalue norm."""
    tasks = tuple(None if learned.get(t) is None else {q: s.named(f"{t}: {q.replace('_', ' ')}")
                                                       for q, s in learned[t].items()}
                  for t in ("copy", "psmnist", "ptb"))
    return [triangle(*tasks), task_order(*tasks, sizes or {}), uniform_angles(*tasks), aligned_angles(*tasks),
            delay_line(*tasks), modulus(*tasks)]


def triangle(copy, ps, ptb) -> Learned:
    """Fig. 3a, b: T ≈ 0 after copy (‖T‖/‖Θ‖ clearly below NEAR_ZERO) and larger after PTB."""
    if copy is None or ptb is None or any(_unmeasured(st, "triangular_fraction") for st in (copy, ptb)):
        return Learned(UNTESTED, copy, ps, ptb)
    near_zero = below_value(copy["triangular_fraction"], rule('NEAR_ZERO'))
    grows = below(copy["triangular_fraction"], ptb["triangular_fraction"])
    return Learned(HOLDS if near_zero and grows else PARTLY if near_zero or grows else FAILS, copy, ps, ptb)


def task_order(copy, ps, ptb, sizes: dict) -> TaskOrder:
    """The supplement's order of T's strength, copy < psMNIST < PTB: on T's root-mean-square entry over Λ's (the
    rule ORDER_ON "per-entry", like with like at any N), or on ‖T‖/‖Θ‖ at equal N only ("fraction")."""
    per_entry = rule('ORDER_ON') == "per-entry"
    quantity = "triangle_per_entry" if per_entry else "triangular_fraction"
    unequal = len({sizes.get(t) for t in ("copy", "psmnist", "ptb")}) > 1
    if None in (copy, ps, ptb) or any(_unmeasured(st, quantity) for st in (copy, ps, ptb)):
        verdict = UNTESTED
    elif unequal and not per_entry:
        verdict = UNEQUAL
    else:
        first, second = below(copy[quantity], ps[quantity]), below(ps[quantity], ptb[quantity])
        verdict = HOLDS if first and second else PARTLY if first or second else FAILS
    return TaskOrder(verdict, copy, ps, ptb, sizes, quantity, per_entry, unequal)


def uniform_angles(copy, ps, ptb) -> Learned:
    """Fig. 3a insets: the angles' concentration clearly below ROUGHLY_UNIFORM after copy and psMNIST."""
    spread = [st for st in (copy, ps) if st is not None]
    if len(spread) < 2 or any(_unmeasured(st, "angle_concentration") for st in spread):
        return Learned(UNTESTED, copy, ps, ptb)
    even = [st for st in spread if below_value(st["angle_concentration"], rule('ROUGHLY_UNIFORM'))]
    return Learned(_grade(len(even), 2), copy, ps, ptb)


def aligned_angles(copy, ps, ptb) -> Learned:
    """Fig. 3b inset: the angles' concentration clearly above STRONGLY_ALIGNED after PTB."""
    verdict = (UNTESTED if ptb is None or _unmeasured(ptb, "angle_concentration") else
               HOLDS if above_value(ptb["angle_concentration"], rule('STRONGLY_ALIGNED')) else FAILS)
    return Learned(verdict, copy, ps, ptb)


def delay_line(copy, ps, ptb) -> Learned:
    """Fig. 3c: after PTB the links of T between consecutive Schur modes clearly above 1× the rest of the
    triangle."""
    verdict = (UNTESTED if ptb is None or _unmeasured(ptb, "delay_line") else
               HOLDS if above_value(ptb["delay_line"], 1.0) else FAILS)
    return Learned(verdict, copy, ps, ptb)


def modulus(copy, ps, ptb) -> Learned:
    """§4.3: the mean eigenvalue norm after PTB clearly below copy's and below 1, on mean |λ| of V and on the mean
    trained γ (the paper's γ̄ is its eigenvalue norm; with strict T the trained γ and |λ| differ, so both are
    judged)."""
    if copy is None or ptb is None or any(_unmeasured(st, q) for st in (copy, ptb)
                                          for q in ("mean_modulus", "mean_gamma")):
        return Learned(UNTESTED, copy, ps, ptb)
    by = [q for q in ("mean_modulus", "mean_gamma") if below(ptb[q], copy[q]) and below_value(ptb[q], 1.0)]
    return Learned(_grade(len(by), 2), copy, ps, ptb)
