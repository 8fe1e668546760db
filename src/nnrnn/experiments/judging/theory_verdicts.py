"""The claims of the paper's §3, its supplementary Table 3 and its Propositions, judged on the numbers
:mod:`nnrnn.analysis.claim_numbers` and :mod:`nnrnn.analysis.theta_example` compute (transient_numbers,
fisher_memory_numbers, table3, proposition1_numbers, proposition2_numbers): every function returns judgements (the
verdict and what decided it, as numbers and settings), which :mod:`.theory_sentences` says in the claims' own
words.  There are no seeds here: the transients are means over an ensemble of initial conditions, whose standard
error the rule uses; everything else is deterministic arithmetic, judged against the fixed thresholds of
:mod:`.rules`."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .rules import FAILS, HOLDS, PARTLY, rule
from .statistics import Stat, above_value, below


def _grade(passed: int, total: int) -> str:
    return HOLDS if passed == total else PARTLY if passed else FAILS


def peak(transient: dict, n_init: int) -> Stat:
    """The peak of the mean ‖h_t‖ with its standard error over the initial conditions."""
    return Stat(transient["peak"], transient["peak_se"], n_init)


# --------------------------------------------------------------------------------------------- Fig. 1b
@dataclass(frozen=True)
class Growth:
    """Transients that grow with α and β: ``larger``/``not_larger`` the steps up in α or β, each (the parameter,
    from, to, the other parameter's value), whose peak is / is not clearly above the one before; ``flat`` the
    (α, β) with no transient at all."""
    verdict: str
    numbers: dict
    flat: list
    larger: list
    not_larger: list


@dataclass(frozen=True)
class Ended:
    """Transients that end at t = N: ``ended`` the (α, β) whose mean ‖h_t‖ after N is 0 up to rounding."""
    verdict: str
    numbers: dict
    ended: list


@dataclass(frozen=True)
class Strength:
    """α sets the strength, β the shape: the peak's factor from the smallest α to the largest at each β
    (``by_alpha``) and from the smallest β to the largest at each α (``by_beta``), the α where β moves the peak."""
    verdict: str
    numbers: dict
    alphas: list
    betas: list
    by_alpha: dict
    by_beta: dict
    moved: list
    strong: bool
    beta_amplifies: list


def _steps(runs: dict, n_init: int) -> tuple[list, list]:
    """(larger, not larger): each step up in α at a fixed β and in β at a fixed α, by whether the peak is clearly
    above the one before it."""
    alphas, betas = sorted({a for a, _ in runs}), sorted({b for _, b in runs})
    steps = [((a0, b), (a1, b), ("α", a0, a1, b)) for b in betas for a0, a1 in zip(alphas, alphas[1:])]
    steps += [((a, b0), (a, b1), ("β", b0, b1, a)) for a in alphas for b0, b1 in zip(betas, betas[1:])]
    larger = [step for lo, hi, step in steps if below(peak(runs[lo], n_init), peak(runs[hi], n_init))]
    return larger, [step for _, _, step in steps if step not in larger]


def transients(numbers: dict) -> tuple[Growth, Ended, Strength]:
    """Fig. 1(b) (§3, "Non-normality drives expressive transients"), from
    :func:`nnrnn.analysis.claim_numbers.transient_numbers`: transients that grow with α and β, that end at t = N, and α
    setting their strength while β shapes them."""
    runs, n_init = numbers["runs"], numbers["n_init"]
    flat = [key for key, r in runs.items() if not above_value(peak(r, n_init), r["start"])]
    larger, not_larger = _steps(runs, n_init)
    growth = Growth(HOLDS if not not_larger else PARTLY if larger else FAILS, numbers, flat, larger, not_larger)
    ended = [key for key, r in runs.items() if r["after"] <= rule('ROUNDING') * r["peak"] and r["last"] > 0]
    return growth, Ended(_grade(len(ended), len(runs)), numbers, ended), _strength(numbers)


def _strength(numbers: dict) -> Strength:
    """"α contributes significantly to the strength of the exponential amplification, while β structures the shape
    of the transient": α multiplies the peak by at least AMPLIFIES (clearly) at every β; β moves the time of the
    peak; and β alone would not multiply the peak by AMPLIFIES (else it sets the strength too)."""
    runs, n_init = numbers["runs"], numbers["n_init"]
    alphas, betas = sorted({a for a, _ in runs}), sorted({b for _, b in runs})
    at = lambda key: peak(runs[key], n_init)  # noqa: E731
    by_alpha = {b: runs[alphas[-1], b]["peak"] / runs[alphas[0], b]["peak"] for b in betas}
    strong = all(by_alpha[b] >= rule('AMPLIFIES') and below(at((alphas[0], b)), at((alphas[-1], b))) for b in betas)
    by_beta = {a: runs[a, betas[-1]]["peak"] / runs[a, betas[0]]["peak"] for a in alphas}
    moved = [a for a in alphas if runs[a, betas[0]]["peak_t"] != runs[a, betas[-1]]["peak_t"]]
    beta_amplifies = [a for a in alphas
                      if by_beta[a] >= rule('AMPLIFIES') and below(at((a, betas[0])), at((a, betas[-1])))]
    verdict = HOLDS if strong and moved and not beta_amplifies else PARTLY if strong or moved else FAILS
    return Strength(verdict, numbers, alphas, betas, by_alpha, by_beta, moved, strong, beta_amplifies)


# --------------------------------------------------------------------------------------------- Fig. 1c
@dataclass(frozen=True)
class Retains:
    """The delay line retains the most: ``above`` the curves more than RETAINS_MOST above it at some k < N,
    ``worst`` the closest rival at each d."""
    verdict: str
    numbers: dict
    above: list
    worst: dict


@dataclass(frozen=True)
class BetaKept:
    """β does not degrade the delay line: ``kept`` the α where it does not (judged on J_tot, or on every k by the
    rule DEGRADED_ON)."""
    verdict: str
    beta: dict
    kept: list
    on_total: bool


@dataclass(frozen=True)
class Diagonal:
    """d > 0: ``parts`` maps each of the three parts (almost optimal for k < N, memory beyond N, larger J_tot) to
    the (α, β, d) where it holds; ``low`` the setting whose J(k) comes nearest below the optimum."""
    verdict: str
    diagonal: dict
    low: tuple
    parts: dict


def fisher_memory(numbers: dict) -> tuple[Retains, BetaKept, Diagonal]:
    """Fig. 1(c) and the text beside Proposition 1, from :func:`nnrnn.analysis.claim_numbers.fisher_memory_numbers`: the
    delay line with α > 1 retains the most up to N; β does not degrade it; d > 0 keeps J(k) almost optimal for
    k < N, extends it beyond N and raises J_tot."""
    rivals = numbers["rivals"]
    above = [key for key, (ratio, _) in rivals.items() if ratio > rule('RETAINS_MOST')]
    verdict = HOLDS if not above else PARTLY if all(key[2] > 0 for key in above) else FAILS
    worst = {d: max((key for key in rivals if key[2] == d), key=lambda key: rivals[key][0])
             for d in sorted({key[2] for key in rivals})}
    return Retains(verdict, numbers, above, worst), _beta(numbers["beta"]), _diagonal(numbers["diagonal"])


def _beta(beta: dict) -> BetaKept:
    """"non-zero β does not significantly degrade the delay line": ``beta`` maps α to (the smallest J_β(k)/J_0(k)
    over k < N, its k, J_tot at β = 0, J_tot at β > 0).  Judged on J_tot, at least NOT_DEGRADED of β = 0's (the rule
    DEGRADED_ON; "every k" judges the smallest ratio instead, which at k = N − 1 compares J ≈ 4e-6)."""
    on_total = rule('DEGRADED_ON') == "J_tot"
    kept = [a for a, (ratio, _, t0, t1) in beta.items() if (t1 / t0 if on_total else ratio) >= rule('NOT_DEGRADED')]
    return BetaKept(_grade(len(kept), len(beta)), beta, kept, on_total)


def _diagonal(diagonal: dict) -> Diagonal:
    """d > 0: J(k) at least NOT_DEGRADED of Ganguli's optimum for k < N, Σ_{k≥N} J(k) > 0, J_tot above d = 0's, at
    every (α, β)."""
    near = {key: v["near_optimal"] for key, v in diagonal.items()}
    low = min(near, key=lambda key: near[key][0])
    parts = {"almost optimal for k < N": [key for key in diagonal if near[key][0] >= rule('NOT_DEGRADED')],
             "memory beyond N": [key for key, v in diagonal.items() if v["beyond"] > 0],
             "larger J_tot": [key for key, v in diagonal.items() if v["total"] > v["total_d0"]]}
    passed = sum(len(keys) for keys in parts.values())
    return Diagonal(_grade(passed, 3 * len(diagonal)), diagonal, low, parts)


# --------------------------------------------------------------------------------------------- Table 3, Propositions
@dataclass(frozen=True)
class Table3:
    """``same``: the rows whose J_tot rounds to the paper's at its printed figures; ``within``: those within
    TABLE3_TOLERANCE; ``agreement``: the largest relative difference from the 80-digit computation (None where
    none is known)."""
    verdict: str
    rows: list
    same: list
    within: list
    agreement: float | None


def printed(value: float, paper: float, figures: int = 3) -> bool:
    """``value`` rounds to ``paper`` at the paper's printed significant figures."""
    decimals = figures - 1 - math.floor(math.log10(abs(paper)))
    return abs(value - paper) <= 0.5 * 10.0 ** -decimals * (1 + 1e-9)


def table3(rows: list[dict]) -> Table3:
    """Supplementary Table 3 from :func:`nnrnn.analysis.theta_example.table3`'s rows (alpha, beta, d, j_tot, paper and,
    where known, exact): holds when every J_tot rounds to the paper's value at its 3 printed significant figures."""
    same = [r for r in rows if printed(r["j_tot"], r["paper"])]
    within = [r for r in rows if abs(r["j_tot"] / r["paper"] - 1) <= rule('TABLE3_TOLERANCE')]
    exact = [abs(r["j_tot"] / r["exact"] - 1) for r in rows if r.get("exact")]
    return Table3(_grade(len(same), len(rows)), rows, same, within, max(exact) if exact else None)


@dataclass(frozen=True)
class Proposition1:
    """The bound on every Θ checked (``low``: the case nearest below it) and equality on the delay lines (their
    largest ``deviation``)."""
    verdict: str
    numbers: dict
    low: dict
    deviation: float


def proposition1(numbers: dict) -> Proposition1:
    """Proposition 1 from :func:`nnrnn.analysis.claim_numbers.proposition1_numbers`: J(k) ≥ the bound on every Θ checked
    (up to ROUNDING), and equal to it on the delay lines."""
    low = min(numbers["cases"], key=lambda c: c["min_ratio"])
    bound_ok = low["min_ratio"] >= 1 - rule('ROUNDING')
    deviation = max(c["max_deviation"] for c in numbers["delay"])
    equal = deviation <= rule('ROUNDING')
    return Proposition1(HOLDS if bound_ok and equal else PARTLY if bound_ok or equal else FAILS, numbers, low,
                        deviation)


@dataclass(frozen=True)
class Proposition2:
    """The four checks: degree at most j − i, no x⁰ term, the coefficient O(C(t, l)), polynomial growth."""
    verdict: str
    numbers: dict
    checks: tuple


def proposition2(numbers: dict) -> Proposition2:
    """Proposition 2 from :func:`nnrnn.analysis.claim_numbers.proposition2_numbers`: the exact coefficients
    (degree at most j − i, no x⁰ term, the xˡ coefficient over C(t, l) not growing with t) and, as its consequence,
    polynomial growth of degree at most n − 1 of max_ij abs((Aᵗ)_ij)."""
    checks = (numbers["degree_ok"], numbers["constant_zero"], numbers["ratio_growth"] <= 1 + rule('ROUNDING'),
              all(f["is_polynomial"] for f in numbers["fits"]))
    return Proposition2(HOLDS if all(checks) else PARTLY if any(checks) else FAILS, numbers, checks)
