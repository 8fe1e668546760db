"""The paper's claims on what nnRNN learned (§4.3, Fig. 3 and the supplement: Θ's lower triangle, the angles,
the delay line, the eigenvalues' moduli) in their own words, as :class:`~.rules.Claim` rows from the judgements
of :mod:`.structure_verdicts`."""
from __future__ import annotations

from . import family
from . import structure_verdicts as judge
from .comparisons import relation
from .rules import UNEQUAL, UNTESTED, Claim, rule


# --------------------------------------------------------------------------------------------- learned structure
@family.rests_on
def structure_claims(learned: dict, sizes: dict | None = None) -> list[Claim]:
    """§4.3 and the supplement on what nnRNN learned (:func:`.structure_verdicts.structure_judgements`)."""
    triangle, order_, uniform, aligned, delay, modulus = judge.structure_judgements(learned, sizes)
    return [_triangle_claim(triangle), _order_claim(order_), *_angle_claims(uniform, aligned), _delay_claim(delay),
            _modulus_claim(modulus)]


def _show(stats, quantity) -> str:
    return "no runs" if stats is None else stats[quantity].show(3)


@family.rests_on
def _triangle_claim(j: judge.Learned) -> Claim:
    return Claim(
        "\"For the copy task, Θ is practically composed of 2×2 rotation blocks along its diagonal (i.e. T = 0) [...] "
        "for the PTB task [...] T shows a lot of structure\"",
        "Fig. 3a, b",
        f"‖T‖/‖Θ‖: copy {_show(j.copy, 'triangular_fraction')}, PTB {_show(j.ptb, 'triangular_fraction')} "
        f"(T ≈ 0 read as below {rule('NEAR_ZERO'):.0%})", j.verdict)


@family.rests_on
def _order_claim(j: judge.TaskOrder) -> Claim:
    copy, ps, ptb, quantity, sizes = j.copy, j.psmnist, j.ptb, j.quantity, j.sizes
    here = (f"‖T‖/‖Θ‖: copy {_show(copy, 'triangular_fraction')}, psMNIST {_show(ps, 'triangular_fraction')}, "
            f"PTB {_show(ptb, 'triangular_fraction')}")
    if sizes and all(t in sizes for t in ("copy", "psmnist", "ptb")):
        here += " at N = " + ", ".join(f"{sizes[t]}" for t in ("copy", "psmnist", "ptb"))
    if j.verdict == UNEQUAL:
        here += "; not ordered here: ‖T‖/‖Θ‖ grows with N, and the tasks ran at unequal N"
    elif j.verdict != UNTESTED:
        if j.per_entry:
            here += (f"; T's rms entry over Λ's (like with like at any N): copy {_show(copy, quantity)}, psMNIST "
                     f"{_show(ps, quantity)}, PTB {_show(ptb, quantity)}")
        here += (f"; copy {relation(copy[quantity], ps[quantity])} psMNIST, psMNIST "
                 f"{relation(ps[quantity], ptb[quantity])} PTB")
    return Claim("supplement: the structure in the lower triangle is \"significantly weaker in the psMNIST task than "
                 "in the PTB task, while not being completely absent as in the copy task\" (copy < psMNIST < PTB)",
                 "Fig. 3 and the supplement's psMNIST Θ", here, j.verdict)


@family.rests_on
def _angle_claims(uniform: judge.Learned, aligned: judge.Learned) -> list[Claim]:
    """How the angles look after each task (Fig. 3's insets)."""
    copy, ps, ptb = uniform.copy, uniform.psmnist, uniform.ptb
    return [Claim("angles: \"roughly uniformly\" distributed after copy (and psMNIST)", "Fig. 3a insets",
                  "concentration of the angles θ_i (0 uniform on [0, π], 1 all equal): copy "
                  f"{_show(copy, 'angle_concentration')}, psMNIST {_show(ps, 'angle_concentration')} (roughly "
                  f"uniform: clearly below {rule('ROUGHLY_UNIFORM'):g})", uniform.verdict),
            Claim("angles: \"strongly align\" after PTB", "Fig. 3b inset",
                  f"concentration of the angles θ_i: PTB {_show(ptb, 'angle_concentration')} (strongly aligned: "
                  f"clearly above {rule('STRONGLY_ALIGNED'):g}, half way from uniform to all equal)", aligned.verdict)]


def _in_block(stats) -> str:
    """T inside Λ's 2×2 blocks, which links no two modes (it moves the block's eigenvalues): shown beside the
    delay line."""
    return "no runs" if stats is None else "not measured" if "in_block" not in stats else (
        f"{stats['in_block'].show(3, failed='n/a')} ({stats['in_block_to_link'].show(3, failed='n/a')} × the mean "
        "abs(T) of a link entry)")


@family.rests_on
def _delay_claim(j: judge.Learned) -> Claim:
    copy, ps, ptb = j.copy, j.psmnist, j.ptb
    return Claim(
        "PTB: the links of T between consecutive Schur modes (the delay line: each mode feeding the next) stand out "
        "against the rest of the triangle, which \"also shows structure\"", "Fig. 3c",
        f"mean abs(T) over the links from each diagonal block of Θ to the next over the mean abs(T) over the blocks "
        f"further below: PTB {_show(ptb, 'delay_line')}, copy {_show(copy, 'delay_line')}, psMNIST "
        f"{_show(ps, 'delay_line')} (above 1 needed); beside it, T inside the 2×2 blocks (no links), mean abs: PTB "
        f"{_in_block(ptb)}, copy {_in_block(copy)}, psMNIST {_in_block(ps)}", j.verdict)


@family.rests_on
def _modulus_claim(j: judge.Learned) -> Claim:
    copy, ps, ptb = j.copy, j.psmnist, j.ptb
    return Claim(
        "\"For the PTB task [...] the mean eigenvalue norm is balanced at γ̄ ∼ 0.958. In contrast for the copy "
        "task, matrices remain normal and γ̄ ∼ 1\"", "PTB 0.958, copy about 1",
        f"mean abs(λ) of V: PTB {_show(ptb, 'mean_modulus')}, copy {_show(copy, 'mean_modulus')}, psMNIST "
        f"{_show(ps, 'mean_modulus')}; mean trained γ: PTB {_show(ptb, 'mean_gamma')}, copy "
        f"{_show(copy, 'mean_gamma')} (each: PTB clearly below copy and below 1 needed)", j.verdict)
