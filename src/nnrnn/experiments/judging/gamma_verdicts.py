"""The paper's claims on nnRNN's γ and its gradients on PTB, each judged from a grid's numbers: supplementary
Table 7 (γ held at 1 and at 0.958), §3 on regularizing γ, and the supplement's gradient claims (all-or-nothing
explosions, norms through training and through backpropagation).  Every function returns a judgement, which
:mod:`.gamma_sentences` says in the claim's own words; numbers in, no run folders (:mod:`.task_verdicts` says
how)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from scipy.stats import linregress

from .judgement import Judgement, _capped, _worse
from .paper import GAMMA_HELD, GAMMA_ONE, NON_GATED, PAPER_GAMMA
from .rules import FAILS, HOLDS, NOT_JUDGED, PARTLY, UNJUDGED, UNTESTED, rule
from .statistics import Stat, below, differ, margin, missing


# --------------------------------------------------------------------------------------------- γ
@dataclass(frozen=True)
class GammaOne(Judgement):
    """γ held at 1: its runs that did not converge, and against ``rivals`` on those that did (``beaten``: the
    rivals it is clearly below); ``paper_below``: the paper's γ = 1 clearly below its nnRNN by the rule."""
    bpc: dict
    rivals: tuple
    paper_below: bool
    beaten: tuple = ()

    @property
    def best(self) -> bool:
        return len(self.beaten) == len(self.rivals)


def gamma_one(bpc: dict, bptt: int) -> GammaOne:
    """(a) "some run did not converge": at least one γ = 1 run failed; (b) "best performance out of all
    methods" on the runs that converged: γ = 1 clearly below nnRNN and every other non-gated model."""
    one = bpc.get(GAMMA_ONE)
    # "all methods (including regularized γ nnRNN)": γ = 0.958 too where the grid has it
    rivals = ("nnrnn", *(m for m in NON_GATED if m != "nnrnn"), *([GAMMA_HELD] if bpc.get(GAMMA_HELD) else []))
    paper_below = below(PAPER_GAMMA[bptt][GAMMA_ONE], PAPER_GAMMA[bptt]["nnrnn"])
    if missing(one, *(bpc.get(m) for m in rivals)):
        return GammaOne(UNTESTED, bpc, rivals, paper_below)
    beaten = () if one.empty else tuple(m for m in rivals if _worse(bpc[m], one, lower=True))
    best, some = len(beaten) == len(rivals) and not one.empty, one.failed >= 1
    # no run converged: the claimed-good model has no result, so the claim does not hold (statistics' docstring)
    verdict = FAILS if one.empty else HOLDS if some and best else PARTLY if some or best else FAILS
    return GammaOne(verdict, bpc, rivals, paper_below, beaten)


@dataclass(frozen=True)
class GammaHeld(Judgement):
    """γ held at 0.958 against nnRNN; ``paper_differ``: the paper's two clearly differ by the rule."""
    held: Stat | None
    nn: Stat | None
    paper_differ: bool


def gamma_held(bpc: dict, bptt: int) -> GammaHeld:
    """"Virtually identical": γ = 0.958 not clearly different from nnRNN."""
    held, nn = bpc.get(GAMMA_HELD), bpc.get("nnrnn")
    paper_differ = differ(PAPER_GAMMA[bptt][GAMMA_HELD], PAPER_GAMMA[bptt]["nnrnn"])
    if missing(nn, held):
        verdict = UNTESTED
    elif held.empty or nn.empty or differ(nn, held):
        verdict = FAILS
    elif math.isnan(margin(held, nn)):
        verdict = UNJUDGED
    else:
        verdict = _capped(_capped(HOLDS, held), nn)
    return GammaHeld(verdict, held, nn, paper_differ)


@dataclass(frozen=True)
class Regularization(Judgement):
    """nnRNN against γ held at 1 and 0.958: ``above`` the variants nnRNN is clearly above; ``worst`` each label's
    largest gradient norm over its median; ``best`` and ``stable`` the two halves."""
    bpc: dict
    worst: dict = field(default_factory=dict)
    above: tuple = ()
    best: bool = False
    stable: bool = False


REGULARIZED = ("nnrnn", GAMMA_ONE, GAMMA_HELD)


def regularization(bpc: dict, spikes: dict) -> Regularization:
    """§3: regularization on γ "yields the best results with most stable training".  Best results: nnRNN not clearly
    above either variant; most stable: no more failed runs than either, and a largest gradient-norm ratio no larger
    than either's."""
    if missing(*(bpc.get(m) for m in REGULARIZED)) or not all(spikes.get(m) for m in REGULARIZED):
        return Regularization(UNTESTED, bpc)
    nn = bpc["nnrnn"]
    above = tuple(m for m in REGULARIZED[1:] if below(bpc[m], nn))
    best = not nn.empty and not above
    worst = {m: max((r for r in spikes[m] if r is not None), default=math.inf) for m in REGULARIZED}
    stable = all(nn.failed <= bpc[m].failed and worst["nnrnn"] <= worst[m] for m in REGULARIZED[1:])
    verdict = HOLDS if best and stable else PARTLY if best or stable else FAILS
    return Regularization(verdict, bpc, worst, above, best, stable)


# --------------------------------------------------------------------------------------------- gradients
@dataclass(frozen=True)
class Exploded:
    """A run whose gradient norm exploded: did it converge, and was its test bpc clearly above the calm runs'."""
    label: str
    seed: int
    bpc: float | None
    converged: bool
    ratio: float | None
    above_calm: bool


@dataclass(frozen=True)
class AllOrNothing(Judgement):
    """The runs that exploded (at least ``spike``), and ``calm``: the test bpc of those that did not and converged."""
    spike: float
    exploded: tuple = ()
    calm: Stat | None = None


def all_or_nothing(runs: list[tuple]) -> AllOrNothing:
    """Supplement: "gradient explosion leading to diverging training runs appears to be an all-or-nothing event".
    ``runs``: (label, seed, test bpc or None, converged, largest gradient norm over its median).  A run whose norm
    exploded (at least SPIKE) is "all" when it did not converge, "nothing" when its test bpc is not clearly above
    the runs that did not explode (a single run takes their seed-to-seed spread), and in between otherwise.  Holds
    when no exploded run is in between; partly when some are; does not hold when most are (or no run exploded while
    some did not converge: nothing to judge)."""
    spike = rule('SPIKE')
    hit = [r for r in runs if r[4] is None or not math.isfinite(r[4]) or r[4] >= spike]
    calm = Stat.of(r[2] for r in runs if r not in hit and r[3])
    exploded = tuple(Exploded(label, seed, bpc, converged, ratio,
                              converged and not calm.empty and below(calm, Stat(bpc, math.nan, 1)))
                     for label, seed, bpc, converged, ratio in hit)
    between = sum(run.above_calm for run in exploded)
    if not hit or calm.empty:
        verdict = UNTESTED if not runs else HOLDS if not hit else UNJUDGED
    else:
        verdict = HOLDS if not between else FAILS if 2 * between > len(exploded) else PARTLY
    return AllOrNothing(verdict, spike, exploded, calm)


@dataclass(frozen=True)
class Gradient(Judgement):
    """Each label's largest training gradient norms over their median (``spikes``) and those not below
    ``threshold`` (``bad``); ``absent``: the labels the sentence names without runs."""
    spikes: dict
    threshold: float
    window: float
    labels: tuple = ()
    bad: dict = field(default_factory=dict)
    absent: tuple = ()


def gradient(spikes: dict, threshold: float | None = None) -> Gradient:
    """Supplement, gradient propagation: "gradient norms behave nicely during backpropagation and throughout
    training" (nnRNN on PTB, γ regularized or clamped).  ``spikes`` maps a label (``nnrnn``, GAMMA_ONE,
    GAMMA_HELD) to each seed's largest training gradient norm over its median (after the rule WARM_UP's share of
    its updates); behaving nicely is every ratio below ``threshold`` (default: the rule SPIKE; a run without a
    finite ratio does not).  Judged only when nnRNN and γ = 0.958 both have runs (the sentence names both): holds
    when every run of both does; partly when nnRNN's do and γ = 0.958's do not; does not hold when nnRNN's own
    spike.  Whether γ = 1's runs converged is the γ = 1 claim's question, so γ = 1 is shown but not judged."""
    threshold = rule('SPIKE') if threshold is None else threshold
    window = rule('WARM_UP')
    labels = tuple(m for m in ("nnrnn", GAMMA_HELD, GAMMA_ONE) if spikes.get(m))
    absent = tuple(m for m in ("nnrnn", GAMMA_HELD) if m not in labels)
    if absent:
        return Gradient(UNTESTED, spikes, threshold, window, labels, absent=absent)
    nice = lambda r: r is not None and math.isfinite(r) and r < threshold
    bad = {m: [r for r in spikes[m] if not nice(r)] for m in labels}
    judged = [m for m in labels if bad[m] and m != GAMMA_ONE]
    verdict = FAILS if "nnrnn" in judged else PARTLY if judged else HOLDS
    return Gradient(verdict, spikes, threshold, window, labels, bad)


@dataclass(frozen=True)
class Backprop(Judgement):
    """The probe's ‖∂L/∂h‖ over the steps back s from the loss: ``steps`` of them, growing ``growth``× to its
    largest at ``peak``, then ``end`` of it at the last; a power law (s + 1)^``degree`` with R² ``power`` against an
    exponential e^(``rate``·s) with R² ``exponential``.  ``finite``: every norm finite and positive."""
    steps: int = 0
    finite: bool = True
    peak: int = 0
    growth: float = math.nan
    end: float = math.nan
    degree: float = math.nan
    power: float = math.nan
    rate: float = math.nan
    exponential: float = math.nan


def backprop(norms: list[float] | None) -> Backprop:
    """Supplement, gradient propagation, and §3's "gradients explode polynomially in time rather than
    exponentially".  ``norms``: ‖∂L/∂h_t‖, t = 1..T, of the first seed's trained nnRNN under the analysis probe
    (L = ½ mean_b ‖h_T‖², Gaussian inputs).  Over the steps back s from the loss (s = 0 at h_T) to the largest norm,
    log‖∂L/∂h‖ is fitted against log(s + 1) (a power law) and against s (an exponential): polynomial when the power
    law fits at least as well (the rule BACKPROP_GROWTH).  A norm that does not grow at all is polynomial of degree
    0."""
    if rule('BACKPROP_GROWTH') != "power law":
        return Backprop(NOT_JUDGED)
    if not norms or len(norms) < 3:
        return Backprop(UNTESTED)
    back = list(reversed(norms))  # s = 0: the step of the loss
    if not all(math.isfinite(v) and v > 0 for v in back):
        return Backprop(FAILS, len(back), finite=False)
    peak = max(range(len(back)), key=back.__getitem__)
    growth = back[peak] / back[0]
    if peak < 2:
        return Backprop(HOLDS, len(back), True, peak, growth)
    logs = [math.log(v) for v in back[:peak + 1]]
    power_fit = linregress([math.log(s + 1) for s in range(peak + 1)], logs)
    exponential_fit = linregress([float(s) for s in range(peak + 1)], logs)
    (power, degree), (exponential, rate) = ((f.rvalue ** 2, f.slope) for f in (power_fit, exponential_fit))
    return Backprop(HOLDS if power >= exponential else FAILS, len(back), True, peak, growth, back[-1] / back[peak],
                    degree, power, rate, exponential)
