"""The theory's claims (§3: Fig. 1b and 1c, supplementary Table 3, Propositions 1 and 2) in their own words, as
:class:`~.rules.Claim` rows from the judgements of :mod:`.theory_verdicts`."""
from __future__ import annotations

from . import family
from . import theory_verdicts as theory
from .rules import HOLDS, Claim, rule


# --------------------------------------------------------------------------------------------- the theory (§3)
def _ab(a: float, b: float) -> str:
    return f"α = {a:g}, β = {b:g}"


def _abd(key) -> str:
    return f"α = {key[0]:g}, β = {key[1]:g}, d = {key[2]:g}"


def _settings(keys) -> str:
    """(α, β) pairs grouped by α: "α = 0.95 (β = 0, 0.005), α = 1 (β = 0)"."""
    alphas = list(dict.fromkeys(a for a, _ in keys))
    return ", ".join(f"α = {a:g} (β = " + ", ".join(f"{b:g}" for x, b in keys if x == a) + ")" for a in alphas)


def _step(step: tuple) -> str:
    what, low, high, at = step
    return f"{what} {low:g} → {high:g} at {'β' if what == 'α' else 'α'} = {at:g}"


def _when(transient: dict) -> str:
    return f"{transient['peak_t']}" + (" (no transient)" if transient["peak_t"] == 0 else "")


@family.rests_on
def transient_claims(numbers: dict) -> list[Claim]:
    """Fig. 1(b)'s three claims (:func:`.theory_verdicts.transients`) in words."""
    growth, ended, strength = theory.transients(numbers)
    runs, n_init = numbers["runs"], numbers["n_init"]
    setting = f"N = {numbers['n']}, d = {numbers['d']:g}, Fig. 1b"
    ensemble = (f"peak of the mean ‖h_t‖ over {n_init} initial conditions on the unit sphere (± its s.e. over "
                "them) and its t: ")
    peaks = "; ".join(f"{_ab(a, b)}: {theory.peak(r, n_init).show(2)} at t = {r['peak_t']}"
                      for (a, b), r in runs.items())
    larger, not_larger = [_step(s) for s in growth.larger], [_step(s) for s in growth.not_larger]
    here = (ensemble + peaks + (f"; no transient at all (‖h_t‖ never clearly above ‖h_0‖ = 1) at "
                                f"{_settings(growth.flat)}" if growth.flat else "")
            + f"; clearly larger: {', '.join(larger) if larger else 'none'}"
            + (f"; not clearly larger: {', '.join(not_larger)}" if not_larger else ""))
    claims = [Claim("Fig. 1b: \"trajectories of single units exhibit increasing large transients with increasing α "
                    "and β\"", f"α = 0.95, 1, 1.05 and β = 0, 0.005 ({setting})", here, growth.verdict)]
    claims.append(Claim(
        "Fig. 1b: the transients \"abruptly end at t = N\" (Θᴺ = 0)", setting,
        f"largest mean ‖h_t‖ for t ≥ N: {max(r['after'] for r in runs.values()):.3g} (0 needed, up to rounding); "
        f"at t = N − 1: " + "; ".join(f"{_ab(a, b)}: {r['last']:.3g} ({100 * r['last'] / r['peak']:.2g}% of its peak)"
                                      for (a, b), r in runs.items())
        + ("" if len(ended.ended) == len(runs) else "; not ended at N: "
           + ", ".join(_ab(*key) for key in runs if key not in ended.ended)), ended.verdict))
    return claims + [_strength_claim(strength, setting)]


@family.rests_on
def _strength_claim(j: theory.Strength, setting: str) -> Claim:
    runs, alphas, betas = j.numbers["runs"], j.alphas, j.betas
    conclusion = ("α and β both amplify: β sets the strength as well as the shape" if j.strong and j.beta_amplifies
                  else "α sets the strength and β the shape" if j.verdict == HOLDS else
                  "α does not set the strength" if not j.strong else "β does not move the peak")
    here = (f"α {alphas[0]:g} → {alphas[-1]:g} multiplies the peak of the mean ‖h_t‖ by "
            + ", ".join(f"{j.by_alpha[b]:.3g} at β = {b:g}" for b in betas)
            + f"; β {betas[0]:g} → {betas[-1]:g} moves the peak "
            + (", ".join(f"from t = {_when(runs[a, betas[0]])} to t = {_when(runs[a, betas[-1]])} at α = {a:g}"
                         for a in reversed(j.moved)) if j.moved else "at no α")
            + " and multiplies it by " + ", ".join(f"{j.by_beta[a]:.3g} at α = {a:g}" for a in reversed(alphas))
            + f" (significantly: at least ×{rule('AMPLIFIES'):g} and clearly above): {conclusion}")
    return Claim("Fig. 1b: \"α contributes significantly to the strength of the exponential amplification, while β "
                 "structures the shape of the transient\"", setting, here, j.verdict)


@family.rests_on
def fisher_memory_claims(numbers: dict) -> list[Claim]:
    """Fig. 1(c)'s three claims (:func:`.theory_verdicts.fisher_memory`) in words."""
    retains, beta, diagonal = theory.fisher_memory(numbers)
    rivals = numbers["rivals"]
    setting = f"Fig. 1c: N = {numbers['n']}, ε = 1, u = e₁"
    claims = [Claim(
        f"Fig. 1c: \"The delay line [...] with α>1 [...] retains the most Fisher information across time up to "
        f"time step N\" (α = {numbers['delay_alpha']:g}, β = 0, d = 0)", setting,
        "largest J(k)/J_delay(k) over k < N of any other curve: "
        + "; ".join(f"d = {d:g}: {rivals[key][0]:.4g} ({_abd(key)}, k = {rivals[key][1]})"
                    for d, key in retains.worst.items())
        + f" (the most: no curve more than {rule('RETAINS_MOST') - 1:.0%} above it at any k < N)"
        + (f"; above it: {'; '.join(_abd(key) for key in retains.above)}" if retains.above else ""), retains.verdict)]
    return claims + [_beta_claim(beta, setting), _diagonal_claim(diagonal, setting)]


@family.rests_on
def _beta_claim(j: theory.BetaKept, setting: str) -> Claim:
    floor = rule('NOT_DEGRADED')
    totals = "J_tot from β = 0 to β > 0: " + "; ".join(f"α = {a:g}: {t0:.3f} → {t1:.3f}"
                                                      for a, (_, _, t0, t1) in j.beta.items())
    worst = "smallest J_β(k)/J_{β=0}(k) over k < N: " + "; ".join(f"α = {a:g}: {ratio:.3g} (k = {k})"
                                                                   for a, (ratio, k, _, _) in j.beta.items())
    here = (f"{totals} (not significantly degraded: J_tot with β at least {floor:g} of J_tot without); {worst} "
            "(shown, not judged: the last k carry almost no information)" if j.on_total else
            f"{worst} (not significantly degraded: at least {floor:g} at every k < N); {totals}")
    here += (f"; degraded at α = {', '.join(f'{a:g}' for a in j.beta if a not in j.kept)}"
             if len(j.kept) < len(j.beta) else "")
    return Claim("Fig. 1c: \"non-zero β [...] does not significantly degrade the information propagation of the delay "
                 "line\"", f"{setting}, β = 0.005 against β = 0 at d = 0", here, j.verdict)


@family.rests_on
def _diagonal_claim(j: theory.Diagonal, setting: str) -> Claim:
    diagonal, near = j.diagonal, j.diagonal[j.low]["near_optimal"]
    missed = [f"{part} not at {_settings([k[:2] for k in diagonal if k not in keys])}"
              for part, keys in j.parts.items() if len(keys) < len(diagonal)]
    beyond = [v["beyond"] for v in diagonal.values()]
    here = (f"smallest J(k) over Ganguli's optimum αᵏ(α−1)/(α^(k+1)−1) for k < N: {near[0]:.3g} ({_abd(j.low)}, "
            f"k = {near[1]}; almost optimal: at least {rule('NOT_DEGRADED'):g}); sum of J(k) over k ≥ N: "
            f"{min(beyond):.3g} to {max(beyond):.3g} (0 at d = 0); J_tot against d = 0: "
            + "; ".join(f"{_abd(key)}: {v['total']:.2f} against {v['total_d0']:.2f}" for key, v in diagonal.items())
            + (f"; {'; '.join(missed)}" if missed else ""))
    return Claim("Fig. 1c, Table 3: \"the addition of diagonal terms (d>0) helps to maintain almost optimal values of "
                 "the FMC for t<N, while extending the memory beyond t=N, and thus outperforming the delay line with "
                 "regards to the area under the FMC\"", f"{setting}; supplement Table 3", here, j.verdict)


# how close Table 3's float64 values must come to the 80-digit computation to be said to agree with it: far above
# any BLAS's rounding (1e-9 to 1e-7 seen), far below the 3 significant figures the paper prints
MPMATH_TOLERANCE = 1e-6


@family.rests_on
def table3_claim(rows: list[dict]) -> Claim:
    """Supplementary Table 3 (:func:`.theory_verdicts.table3`) in words."""
    j = theory.table3(rows)
    per_d = []
    for d in sorted({r["d"] for r in rows}):
        group = [r for r in rows if r["d"] == d]
        worst = max(group, key=lambda r: abs(r["j_tot"] / r["paper"] - 1))
        per_d.append(f"{sum(r in j.same for r in group)} of {len(group)} at d = {d:g} (largest difference "
                     f"{abs(worst['j_tot'] / worst['paper'] - 1):.2%}, {_ab(worst['alpha'], worst['beta'])}: "
                     f"{worst['j_tot']:.4g} against {worst['paper']:#.3g})")
    # the agreement stated against a fixed tolerance, not as its digits: those move with the host's BLAS (3.6e-9 on
    # a Zen 4, about 1e-8 on a Zen 5, 1e-7 on another host), and a report regenerated from its data must read the
    # same on any host
    agrees = j.agreement is not None and j.agreement <= MPMATH_TOLERANCE
    here = (f"{len(j.same)} of {len(rows)} J_tot equal the paper's to its 3 printed significant figures: "
            + ", ".join(per_d) + f"; {len(j.within)} of {len(rows)} within {rule('TABLE3_TOLERANCE'):.1%}"
            + ("" if j.agreement is None else
               f"; these values agree with an 80-digit (mpmath) computation to within {MPMATH_TOLERANCE:g} relative"
               if agrees else f"; these values differ from an 80-digit (mpmath) computation by more than "
               f"{MPMATH_TOLERANCE:g} relative ({j.agreement:.1g})"))
    return Claim("supplementary Table 3: J_tot = Σ_t J(t) of Θ(α, β, d), N = 100",
                 ", ".join(f"{r['paper']:#.3g}" for r in rows), here, j.verdict)


@family.rests_on
def proposition1_claim(numbers: dict) -> Claim:
    """Proposition 1 (:func:`.theory_verdicts.proposition1`) in words."""
    j = theory.proposition1(numbers)
    cases, delay, low = numbers["cases"], numbers["delay"], j.low
    figure, alphas = cases[0], ", ".join(f"{c['alpha']:g}" for c in delay)
    here = (f"N = {numbers['n']}, k < N: smallest J(k)/bound over {len(cases)} Θ (the figure's and "
            f"{len(cases) - 1} random ones): {low['min_ratio']:.4g} ({low['theta']}, α = {low['alpha']:g}, k = "
            f"{low['k']}, σ_max = {low['sigma_max']:.4g}; at least 1 needed, up to {rule('ROUNDING'):g}); the "
            "figure's Θ "
            f"({figure['theta']}, α = {figure['alpha']:g}): {figure['min_ratio']:.4g} (σ_max = "
            f"{figure['sigma_max']:.4g}); delay lines at α = {alphas}: "
            f"largest abs(J/bound − 1) = {j.deviation:.2g} (equality: at most {rule('ROUNDING'):g})")
    return Claim("Proposition 1: J(k) ≥ αᵏ/σ_max^(2(N−1)) · (α−1)/(α^(k+1)−1) for every strictly lower-triangular "
                 "Θ with √α on the lower diagonal, k ≤ N − 1, with equality for the delay line (σ_max = 1)",
                 "proof in the supplement; Fig. 1c", here, j.verdict)


@family.rests_on
def proposition2_claim(numbers: dict) -> Claim:
    """Proposition 2 (:func:`.theory_verdicts.proposition2`) in words."""
    j = theory.proposition2(numbers)
    fits, checks = numbers["fits"], j.checks
    yes = lambda ok: "yes" if ok else "no"  # noqa: E731
    here = (f"exact integer coefficients of (Aᵗ)_ij, n = {numbers['n']}, t ≤ {numbers['t']}: degree at most j − i: "
            f"{yes(checks[0])}; no x⁰ term above the diagonal: {yes(checks[1])}; the xˡ coefficient over C(t, l) at "
            f"most {numbers['max_ratio']:.4g}, its largest maximum over t in ({numbers['t'] // 2}, {numbers['t']}] "
            f"over that for t ≤ {numbers['t'] // 2}: {numbers['ratio_growth']:.6g} (O(C(t, l)): at most 1). "
            f"Hence max_ij abs((Aᵗ)_ij) at x = {numbers['x']:g}, t ≤ {numbers['t_max']}, grows as t^p with "
            + ", ".join(f"p = {f['degree']:.3f} at n = {f['n']}" for f in fits)
            + f" (at most n − 1; log-log R² at least {min(f['loglog_r2'] for f in fits):.6f}, semi-log R² at most "
            f"{max(f['semilog_r2'] for f in fits):.3f}): polynomial "
            + ("at every n" if checks[3] else "not at every n"))
    return Claim("Proposition 2: for A_ii = 1, A_ij = x (i < j), (Aᵗ)_ij is a polynomial in x of degree at most j − i "
                 "with no x⁰ term, whose xˡ coefficient is O(C(t, l)): polynomial, not exponential, growth",
                 "proof in the supplement (induction on t)", here, j.verdict)


THEORY = "the theory's comparisons"  # their family (:mod:`.family`)
OWN_MODEL = ("; this is the paper's own deterministic model, computed: a verdict short of \"holds\" says the paper's "
             "words go further than its model shows, not that a reproduction failed")


def _own_model(claims: list[Claim]) -> list[Claim]:
    """The theory's figure claims compare the paper's wording with its own model: a row short of "holds" says so."""
    return [c if c.verdict == HOLDS else Claim(c.claim, c.paper, c.here + OWN_MODEL, c.verdict) for c in claims]


def theory_claims(transients: dict, memory: dict, table: list[dict], prop1: dict, prop2: dict) -> list[Claim]:
    """Every theory claim, in the paper's order: Fig. 1b (3 rows), Fig. 1c (3), Table 3, Propositions 1 and 2; their
    comparisons (means over a deterministic model's initial conditions) are a family of their own."""
    with family.group(THEORY):
        return (_own_model(transient_claims(transients) + fisher_memory_claims(memory)) + [table3_claim(table)]
                + [proposition1_claim(prop1), proposition2_claim(prop2)])
