"""The paper's claims on nnRNN's γ and its gradients on PTB in their own words: supplementary Table 7 (γ held
at 1 and at 0.958), §3 on regularizing γ, and the supplement's gradient claims, as :class:`~.rules.Claim` rows
from the judgements of :mod:`.gamma_verdicts`."""
from __future__ import annotations

import math

from . import family
from . import gamma_verdicts as judge
from .comparisons import _needs, relation
from .paper import GAMMA_HELD, GAMMA_ONE, PAPER_GAMMA
from .rules import FAILS, HOLDS, NOT_JUDGED, UNJUDGED, UNTESTED, Claim
from .statistics import Stat, margin
from .words import _join, _paper, _ratio, _scoped, _show_bpc, name


# --------------------------------------------------------------------------------------------- γ
@family.rests_on
def gamma_claims(bpc: dict, bptt: int, criterion: str = "diverged", scope: str = "") -> list[Claim]:
    """Supplementary Table 7 at one T_PTB: nnRNN with γ held at 1 and at 0.958 against nnRNN (fixed hidden
    units).  ``bpc[GAMMA_ONE]`` is γ = 1's Stat over the runs that converged, with ``failed`` the runs that did
    not; ``criterion`` says what "did not converge" means (quoted in the sentence)."""
    return [_gamma_one_claim(bpc, bptt, criterion, scope), _gamma_held_claim(bpc, bptt, scope)]


@family.rests_on
def _gamma_one_claim(bpc: dict, bptt: int, criterion: str, scope: str) -> Claim:
    j = judge.gamma_one(bpc, bptt)
    one, nn = bpc.get(GAMMA_ONE), bpc.get("nnrnn")
    p, pn = PAPER_GAMMA[bptt][GAMMA_ONE], PAPER_GAMMA[bptt]["nnrnn"]
    paper = (f"{_paper(p)} ({p.failed} of {p.n + p.failed} runs failed) against nnRNN {_paper(pn)}: "
             + ("clearly below" if j.paper_below else "not clearly below")
             + f" by this rule (gap {pn.mean - p.mean:.2f}; the rule needs above {margin(p, pn):.4f})")
    claim = (f"PTB (T_PTB = {bptt}): with γ clamped at 1 \"some run did not converge [...] on runs that did "
             "converge we found the best performance out of all methods (including regularized γ nnRNN)\"")
    if j.verdict == UNTESTED:
        return Claim(claim, paper, _scoped(f"γ = 1: {_show_bpc(one)}; nnRNN {_show_bpc(nn)}", scope), UNTESTED)
    here = f"{one.failed} of {one.n + one.failed} γ = 1 runs did not converge ({criterion}); "
    if one.empty:
        here += f"no γ = 1 run converged, so none can be best; nnRNN {_show_bpc(nn)}"
    else:
        runs_word = "run" if one.n == 1 else "runs"
        here += (f"γ = 1 over the {one.n} {runs_word} that converged: {Stat(one.mean, one.se, one.n).show(3)}; "
                 f"nnRNN {_show_bpc(nn)}; γ = 1 clearly below " + (_join(j.beaten) if j.beaten else "none of the "
                                                                   "other methods")
                 + "".join(f" ({name(m)}: every seed diverged, counted as worse)" for m in j.beaten if bpc[m].empty)
                 + ("" if j.best else "; not clearly below " + _join([m for m in j.rivals if m not in j.beaten])))
    return Claim(claim, paper, _scoped(here, scope), j.verdict)


@family.rests_on
def _gamma_held_claim(bpc: dict, bptt: int, scope: str) -> Claim:
    """"Virtually identical", with the smallest gap the rule can see given beside it."""
    j = judge.gamma_held(bpc, bptt)
    held, nn = j.held, j.nn
    p, pn = PAPER_GAMMA[bptt][GAMMA_HELD], PAPER_GAMMA[bptt]["nnrnn"]
    paper = (f"{_paper(p)} against nnRNN {_paper(pn)}: " + ("clearly different" if j.paper_differ else
                                                            "not clearly different") + " by this rule")
    here = f"γ = 0.958: {_show_bpc(held)}; nnRNN {_show_bpc(nn)}"
    if j.verdict == UNTESTED:
        pass
    elif held.empty or nn.empty:
        here += ": not comparable, every seed of " + ("both" if held.empty and nn.empty else "γ = 0.958" if held.empty
                                                       else "nnRNN") + " diverged"
    elif j.verdict == UNJUDGED:
        here += ": a single seed each, which the rule cannot compare"
    elif j.verdict == FAILS:
        here += f": γ = 0.958 {relation(held, nn)} nnRNN"
    else:
        here += f": not clearly different {_needs(held, nn, '.3f')}"
    return Claim(f"PTB (T_PTB = {bptt}): with γ clamped at 0.958 \"the performance was virtually identical to that "
                 "of nnRNN with regularized γ\"", paper, _scoped(here, scope), j.verdict)


@family.rests_on
def regularization_claim(bpc: dict, spikes: dict, bptt: int, scope: str = "") -> Claim:
    """§3: regularization on γ "yields the best results with most stable training", against γ held at 1 and at
    0.958 (:func:`.gamma_verdicts.regularization`).  ``bpc``: test bpc per label, γ = 1 over the runs that converged
    (its ``failed`` the runs that did not); ``spikes``: each run's largest training gradient norm over its median."""
    j = judge.regularization(bpc, spikes)
    labels = judge.REGULARIZED
    claim = (f"PTB (T_PTB = {bptt}): \"allowing eigenvalues to deviate slightly from the unit circle throughout "
             "training (regularization on γ) [...] yields the best results with most stable training\" (against γ "
             "held at 1 and at 0.958)")
    if j.verdict == UNTESTED:
        return Claim(claim, "§3; supplementary Table 7", _scoped("runs missing", scope), UNTESTED)
    here = ("test bpc (γ = 1 over the runs that converged): " + "; ".join(f"{name(m)} {_show_bpc(bpc[m])}"
                                                                        for m in labels)
            + ("; nnRNN not clearly above either" if j.best else "; nnRNN clearly above " + _join(j.above))
            + "; largest gradient norm over its median: " + "; ".join(f"{name(m)} {_ratio(j.worst[m])}"
                                                                      for m in labels)
            + "; runs that failed or did not converge: " + ", ".join(f"{name(m)} {bpc[m].failed}" for m in labels)
            + ("; nnRNN the most stable" if j.stable else "; nnRNN not the most stable"))
    return Claim(claim, "§3; supplementary Table 7", _scoped(here, scope), j.verdict)


# --------------------------------------------------------------------------------------------- gradients
@family.rests_on
def all_or_nothing_claim(runs: list[tuple], bptt: int, scope: str = "") -> Claim:
    """Supplement: "gradient explosion leading to diverging training runs appears to be an all-or-nothing event"
    (:func:`.gamma_verdicts.all_or_nothing`)."""
    j = judge.all_or_nothing(runs)
    claim = (f"PTB (T_PTB = {bptt}): \"gradient explosion leading to diverging training runs appears to be an "
             "all-or-nothing event\" (nnRNN with γ regularized and held)")
    paper = "supplement's gradient figure (no exploded run shown)"
    if not j.exploded or j.calm.empty:
        return Claim(claim, paper, _scoped(f"no run's gradient norm reached {_ratio(j.spike)} its median"
                                           if not j.exploded else "every run exploded", scope), j.verdict)
    words = []
    for run in j.exploded:
        kind = ("did not converge (all)" if not run.converged else
                f"converged to {run.bpc:.3f}, clearly above the runs that did not explode (in between)"
                if run.above_calm else
                f"converged to {run.bpc:.3f}, not clearly above the runs that did not explode (nothing)")
        words.append(f"{name(run.label)} seed {run.seed} ({_ratio(run.ratio) if run.ratio else 'no finite norm'}): "
                     f"{kind}")
    here = (f"runs whose gradient norm reached {_ratio(j.spike)} its median: " + "; ".join(words)
            + f"; the runs that did not explode: {j.calm.show(3)}")
    return Claim(claim, paper, _scoped(here, scope), j.verdict)


@family.rests_on
def gradient_claim(spikes: dict, bptt: int, threshold: float | None = None, scope: str = "") -> Claim:
    """Supplement, gradient propagation: "gradient norms behave nicely during backpropagation and throughout
    training" (:func:`.gamma_verdicts.gradient`)."""
    j = judge.gradient(spikes, threshold)
    claim = (f"PTB (T_PTB = {bptt}): \"gradient norms behave nicely during backpropagation and throughout "
             "training\" (nnRNN with γ regularized and held at 0.958; judged on each run's largest training gradient "
             + (f"norm after its first {j.window:.0%} of updates" if j.window else "norm over the whole run")
             + " over its median, not on the norms across time steps)")
    paper = "supplement's gradient figure: \"all runs converged\", no spike shown"
    if j.absent:
        return Claim(claim, paper, _scoped("no runs: " + _join(j.absent), scope), UNTESTED)
    parts = []
    for m in j.labels:
        bad, runs = j.bad[m], len(spikes[m])
        if bad:
            parts.append(f"{name(m)}, {len(bad)} of {runs} seeds: " + ", ".join(
                f"largest norm {_ratio(r)} its median" if r is not None and math.isfinite(r)
                else "no finite gradient norm" for r in bad))
        else:
            parts.append(f"{name(m)}: every one of {runs} seeds below {_ratio(j.threshold)} its median (largest "
                         f"{_ratio(max(spikes[m]))})")
    if GAMMA_ONE in j.labels:
        parts[-1] += " (γ = 1 shown, not judged: whether its runs converged is the γ = 1 row's question)"
    return Claim(claim, paper, _scoped("; ".join(parts), scope), j.verdict)


@family.rests_on
def backprop_claim(norms: list[float] | None, bptt: int, scope: str = "") -> Claim:
    """Supplement, gradient propagation: "gradient norms behave nicely during backpropagation", its figure's
    "growing polynomially", and §3's "gradients explode polynomially in time rather than exponentially"
    (:func:`.gamma_verdicts.backprop`)."""
    j = judge.backprop(norms)
    claim = (f"PTB (T_PTB = {bptt}): \"gradient norms behave nicely during backpropagation\" (the supplement's figure: "
             "\"growing polynomially\"; §3: \"gradients explode polynomially in time rather than exponentially\")")
    paper = "supplement's gradient figure (one example run): growing polynomially while backpropagating"
    if j.verdict == NOT_JUDGED:
        return Claim(claim, paper, "not judged", NOT_JUDGED)
    if j.verdict == UNTESTED:
        return Claim(claim, paper, _scoped("no gradient probe of a trained nnRNN", scope), UNTESTED)
    if not j.finite:
        return Claim(claim, paper, _scoped("the probe's gradient norms are not all finite and positive", scope), FAILS)
    here = (f"the first seed's trained nnRNN, one run (the probe L = ½ mean‖h_T‖², Gaussian inputs, T = {j.steps}): "
            f"‖∂L/∂h‖ grows {_ratio(j.growth)} over the {j.peak} steps back to its largest")
    if j.peak < 2:
        return Claim(claim, paper, _scoped(here + ": it does not grow (polynomial of degree 0)", scope), HOLDS)
    here += (f", {'then falls to' if j.end < 1 else 'and is'} {_ratio(j.end)} of it at step {j.steps - 1}; a power "
             f"law (s + 1)^{j.degree:.2f} "
             f"fits with R² {j.power:.3f}, an exponential e^({j.rate:.3f}·s) with R² {j.exponential:.3f}")
    return Claim(claim, paper, _scoped(here, scope), j.verdict)
