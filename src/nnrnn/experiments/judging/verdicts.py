"""The paper's claims on its experiments, each judged from a grid's numbers: every function returns a judgement (the
verdict and the comparisons behind it, as numbers and model names); :mod:`.task_sentences`,
:mod:`.gamma_sentences` and :mod:`.structure_sentences` say them in the claim's own words as :class:`~.rules.Claim`
rows.

The comparison rule and its treatment of single seeds and failed seeds are in :mod:`.statistics`; the thresholds
and the words of a verdict in :mod:`.rules`; the paper's published numbers in :mod:`.paper`; the theory's claims
in :mod:`.theory_verdicts`.

A claim is judged only when every model it names has finished runs; otherwise its verdict says the runs are
missing.

The functions here take numbers, not run folders (:mod:`.collect` collects them), so that each verdict
can be tested on made-up numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from scipy.stats import linregress

from .paper import GAMMA_HELD, GAMMA_ONE, NON_GATED, ORTHOGONAL, PAPER_GAMMA, PAPER_PTB_BPC
from .rules import FAILS, HOLDS, NOT_JUDGED, PARTLY, UNEQUAL, UNJUDGED, UNTESTED, rule
from .statistics import Stat, above_value, all_failed, below, below_value, differ, margin, missing, order


@dataclass(frozen=True)
class Judgement:
    """A claim's verdict; each subclass adds the comparisons behind it."""
    verdict: str


def _grade(count: int, total: int) -> str:
    """Holds when all ``total`` parts pass, partly when some do, does not hold when none does."""
    return HOLDS if count == total else PARTLY if count else FAILS


def _capped(verdict: str, good: Stat) -> str:
    """At most "partly" when some seed of the model the claim calls good failed."""
    return PARTLY if verdict == HOLDS and good.failed else verdict


def _worse(bad: Stat, good: Stat, lower: bool) -> bool:
    """``bad`` worse than ``good`` by the rule (lower is better when ``lower``), or every seed of ``bad`` failed
    while ``good`` has values."""
    if all_failed(bad):
        return not good.empty
    return below(good, bad) if lower else below(bad, good)


# --------------------------------------------------------------------------------------------- copy
@dataclass(frozen=True)
class CopyOrthogonal(Judgement):
    """Every orthogonal RNN solves copy; ``solved``: those that did (empty when not judged)."""
    loss: dict
    speed: dict
    threshold: float
    baseline: float
    solved: tuple = ()


@dataclass(frozen=True)
class CopyMatched(Judgement):
    """nnRNN matches the orthogonal RNNs: its loss against the lowest orthogonal loss (``best``, None when every
    orthogonal seed diverged; ``loss_order`` nnRNN's :func:`~.statistics.order` against it), its time to solve
    against the fastest's (``fastest``, ``speed_order``)."""
    loss: dict
    speed: dict
    threshold: float
    solved: bool = False
    best: str | None = None
    loss_order: int = 0
    fastest: str | None = None
    speed_order: int = 0


@dataclass(frozen=True)
class CopyLstmRnn(Judgement):
    """The LSTM struggles (``struggles``), the RNN fails completely (``fails``)."""
    lstm: Stat | None
    rnn: Stat | None
    threshold: float
    baseline: float
    struggles: bool = False
    fails: bool = False


def copy_judgements(loss: dict, speed: dict, baseline: float) -> tuple[CopyOrthogonal, CopyMatched, CopyLstmRnn]:
    """Main text §4.1 on the copy task, judged in one column: ``loss`` and ``speed`` map a model to its final
    validation loss and to the updates until its loss stays below 10% of the baseline (a seed that never gets
    there counts as failed)."""
    threshold = rule('SOLVED_SHARE') * baseline
    return (copy_orthogonal(loss, speed, threshold, baseline), copy_matched(loss, speed, threshold),
            copy_lstm_rnn(loss, threshold, baseline))


def copy_orthogonal(loss: dict, speed: dict, threshold: float, baseline: float) -> CopyOrthogonal:
    """Every orthogonal RNN solves copy: its loss clearly below 10% of the baseline, no seed diverged."""
    orth = {m: loss.get(m) for m in ORTHOGONAL}
    if missing(*orth.values()):
        return CopyOrthogonal(UNTESTED, orth, speed, threshold, baseline)
    done = tuple(m for m in ORTHOGONAL if below_value(orth[m], threshold) and not orth[m].failed)
    return CopyOrthogonal(_grade(len(done), len(ORTHOGONAL)), orth, speed, threshold, baseline, done)


def copy_matched(loss: dict, speed: dict, threshold: float) -> CopyMatched:
    """nnRNN's loss solved and not clearly above the lowest orthogonal loss (one-sided: clearly below it is better,
    and counts as matching); its time to solve as fast as the fastest orthogonal RNN's: the fastest has the fewest
    seeds that never solved, then the fewest mean updates, and nnRNN is as fast when it has no more seeds that never
    solved and its mean is not clearly above the fastest's."""
    nn, nn_speed = loss.get("nnrnn"), speed.get("nnrnn")
    if missing(nn, nn_speed, *(loss.get(m) for m in ORTHOGONAL), *(speed.get(m) for m in ORTHOGONAL)):
        return CopyMatched(UNTESTED, loss, speed, threshold)
    if nn.empty:
        return CopyMatched(FAILS, loss, speed, threshold)
    solved = below_value(nn, threshold)
    finite = [m for m in ORTHOGONAL if not loss[m].empty]
    best = min(finite, key=lambda m: loss[m].mean) if finite else None  # none: nothing to match, not a match
    loss_order = order(nn, loss[best]) if best else 0
    matches = best is not None and solved and loss_order <= 0
    fastest = min(ORTHOGONAL, key=lambda m: (speed[m].failed, speed[m].mean if not speed[m].empty else math.inf))
    f = speed[fastest]
    as_fast = not nn_speed.empty and nn_speed.failed <= f.failed and not below(f, nn_speed)
    verdict = HOLDS if matches and as_fast else PARTLY if matches or as_fast else FAILS
    return CopyMatched(_capped(verdict, nn), loss, speed, threshold, solved, best, loss_order, fastest,
                       order(nn_speed, f))


def copy_lstm_rnn(loss: dict, threshold: float, baseline: float) -> CopyLstmRnn:
    """The LSTM struggles: a seed diverged, or its loss is not clearly below 10% of the baseline; the RNN
    fails completely: its loss is not clearly below the baseline (or every seed diverged)."""
    lstm, rnn = loss.get("lstm"), loss.get("rnn")
    if missing(lstm, rnn):
        return CopyLstmRnn(UNTESTED, lstm, rnn, threshold, baseline)
    struggles = lstm.failed > 0 or not below_value(lstm, threshold)
    fails = not below_value(rnn, baseline)
    verdict = HOLDS if struggles and fails else PARTLY if struggles or fails else FAILS
    return CopyLstmRnn(verdict, lstm, rnn, threshold, baseline, struggles, fails)


@dataclass(frozen=True)
class CopyColumns(Judgement):
    """Each model's final loss at fixed hidden units against the fixed parameter count; ``moved``: the models whose
    two results clearly differ."""
    hidden: dict
    params: dict
    models: tuple = ()
    moved: tuple = ()


def copy_columns(hidden: dict, params: dict) -> CopyColumns:
    """§4.1: "We see little difference if we match the number of parameters" (copy).  Holds when no model's two
    results clearly differ; partly when some do; does not hold when most do.  A model whose every seed diverged in
    one column only differs."""
    models = tuple(m for m in hidden if m in params and hidden[m] is not None and params[m] is not None)
    if not models or missing(*(hidden[m] for m in models), *(params[m] for m in models)):
        return CopyColumns(UNTESTED, hidden, params)
    moved = tuple(m for m in models if differ(hidden[m], params[m]) or hidden[m].empty != params[m].empty)
    verdict = HOLDS if not moved else FAILS if 2 * len(moved) > len(models) else PARTLY
    return CopyColumns(verdict, hidden, params, models, moved)


# --------------------------------------------------------------------------------------------- psMNIST
@dataclass(frozen=True)
class Psmnist(Judgement):
    """nnRNN against the best orthogonal RNN (``best``, None when every orthogonal seed diverged; ``best_order``
    nnRNN's order against it; ``lower_orth`` the other orthogonal RNNs clearly below nnRNN) and the RNN and LSTM
    (``lesser``: those worse than nnRNN)."""
    accuracy: dict
    judged: bool = False
    best: str | None = None
    best_order: int = 0
    lower_orth: tuple = ()
    lesser: tuple = ()


PSMNIST_MODELS = (*ORTHOGONAL, "nnrnn", "rnn", "lstm")


def psmnist(accuracy: dict) -> Psmnist:
    """§4.1: "the nnRNN matches orthogonal RNNs in performance, whereas RNN and LSTM show lesser performances" (test
    accuracy).  One-sided: nnRNN matches when it is not clearly below the best orthogonal RNN (clearly above it is
    better, and counts as matching)."""
    if missing(*(accuracy.get(m) for m in PSMNIST_MODELS)):
        return Psmnist(UNTESTED, accuracy)
    nn = accuracy["nnrnn"]
    if nn.empty:
        return Psmnist(FAILS, accuracy)
    finite = [m for m in ORTHOGONAL if not accuracy[m].empty]
    best = max(finite, key=lambda m: accuracy[m].mean) if finite else None
    best_order = order(nn, accuracy[best]) if best else 0
    matches = best is not None and best_order >= 0  # nothing to match is not evidence that nnRNN matches them
    lower_orth = tuple(m for m in finite if m != best and below(accuracy[m], nn))
    lesser = tuple(m for m in ("rnn", "lstm") if _worse(accuracy[m], nn, lower=False))
    verdict = HOLDS if matches and len(lesser) == 2 else PARTLY if matches or lesser else FAILS
    return Psmnist(_capped(verdict, nn), accuracy, True, best, best_order, lower_orth, lesser)


# --------------------------------------------------------------------------------------------- PTB
@dataclass(frozen=True)
class NnrnnBest(Judgement):
    """nnRNN against the other non-gated models (lower is better when ``lower``); ``beaten``: those worse."""
    values: dict
    lower: bool
    beaten: tuple = ()


def nnrnn_best(values: dict, lower: bool) -> NnrnnBest:
    """Table 1 (test bpc, ``lower``) and supplementary Table 2 (test accuracy): nnRNN clearly better than every
    other non-gated model."""
    if missing(*(values.get(m) for m in NON_GATED)):
        return NnrnnBest(UNTESTED, values, lower)
    nn = values["nnrnn"]
    if nn.empty:
        return NnrnnBest(FAILS, values, lower)
    others = [m for m in NON_GATED if m != "nnrnn"]
    beaten = tuple(m for m in others if _worse(values[m], nn, lower))
    return NnrnnBest(_capped(_grade(len(beaten), len(others)), nn), values, lower, beaten)


def in_percent(accuracy: dict) -> dict:
    """Test accuracies as fractions, in percent as the paper gives them."""
    return {m: None if v is None else Stat(100 * v.mean, 100 * v.se, v.n, v.failed) for m, v in accuracy.items()}


@dataclass(frozen=True)
class Gated(Judgement):
    """The LSTM against every non-gated model; ``beaten``: those it is clearly below."""
    bpc: dict
    beaten: tuple = ()


def gated(bpc: dict) -> Gated:
    """§4.2: the LSTM (N = 1024 in the paper) clearly below every non-gated model (fixed hidden units)."""
    if missing(*(bpc.get(m) for m in ("lstm", *NON_GATED))):
        return Gated(UNTESTED, bpc)
    lstm = bpc["lstm"]
    beaten = tuple(m for m in NON_GATED if _worse(bpc[m], lstm, True))
    return Gated(_capped(_grade(len(beaten), len(NON_GATED)), lstm), bpc, beaten)


# --------------------------------------------------------------------------------------------- the gap to expRNN
def gap(exp: Stat, nn: Stat) -> Stat:
    """expRNN − nnRNN ± sqrt(se_e² + se_n²); +∞ when every expRNN seed diverged (the worse of the two)."""
    if exp.empty:
        return Stat(math.inf, 0.0, 1)
    se = math.nan if math.isnan(exp.se) and math.isnan(nn.se) else math.hypot(exp.err(), nn.err())
    return Stat(exp.mean - nn.mean, se, min(exp.n, nn.n))


def gap_order(small: Stat, large: Stat) -> int | None:
    """1 when ``large`` is clearly above ``small``, −1 when clearly below, 0 when neither; None when both are
    unbounded (every expRNN seed diverged in both)."""
    if math.isinf(small.mean) and math.isinf(large.mean):
        return None
    return order(large, small)


@dataclass(frozen=True)
class GapChange(Judgement):
    """The gap expRNN − nnRNN at T_PTB = 150 and 300 (``g150``, ``g300``) and the second against the first
    (``change``: :func:`gap_order`)."""
    b150: dict
    b300: dict
    g150: Stat | None = None
    g300: Stat | None = None
    change: int | None = None


def gap_change(b150: dict, b300: dict) -> GapChange:
    """The gap "appreciatively improves" at T_PTB = 300: gap300 − gap150 > 2·sqrt(se_150² + se_300²)."""
    if missing(*(b.get(m) for b in (b150, b300) for m in ("exprnn", "nnrnn"))):
        return GapChange(UNTESTED, b150, b300)
    nn150, nn300 = b150["nnrnn"], b300["nnrnn"]
    if nn150.empty or nn300.empty:  # no gap where every nnRNN seed diverged
        return GapChange(FAILS, b150, b300)
    g150, g300 = gap(b150["exprnn"], nn150), gap(b300["exprnn"], nn300)
    change = gap_order(g150, g300)
    verdict = HOLDS if change == 1 else FAILS
    if verdict == HOLDS and (nn150.failed or nn300.failed):
        verdict = PARTLY
    return GapChange(verdict, b150, b300, g150, g300, change)


@dataclass(frozen=True)
class ColumnGaps:
    """The gap at the fixed parameter count (``params``) and at fixed hidden units (``hidden``), and the second
    against the first (``change``: :func:`gap_order`).  ``shared``: nnRNN's runs are the same in both columns, so
    the change is expRNN's ``exp_hidden`` − ``exp_params``."""
    params: Stat
    hidden: Stat
    change: int | None
    shared: bool = False
    exp_params: Stat | None = None
    exp_hidden: Stat | None = None

    @property
    def larger(self) -> bool:
        return self.change == 1


def column_gaps(params: tuple, hidden: tuple) -> ColumnGaps:
    """The gap expRNN − nnRNN at fixed hidden units against the gap at the fixed parameter count; ``params`` and
    ``hidden`` are each column's (expRNN, nnRNN).  When nnRNN's result is the same in both columns (the same runs;
    the paper's nnRNN rows are too) the difference of the gaps is expRNN(hidden) − expRNN(params), and nnRNN's
    variance is not counted at all (the rule GAP_SHARED); otherwise the two gaps are compared as independent
    results."""
    gp, gh = gap(*params), gap(*hidden)
    if rule('GAP_SHARED') == "cancel" and params[1] == hidden[1] and not (params[0].empty or hidden[0].empty):
        return ColumnGaps(gp, gh, order(hidden[0], params[0]), True, params[0], hidden[0])
    return ColumnGaps(gp, gh, gap_order(gp, gh))


@dataclass(frozen=True)
class HiddenGap(Judgement):
    """At each T_PTB (``bptts``): the paper's :class:`ColumnGaps` and this grid's (None where runs are missing,
    ``missing`` lists those T_PTB, or where every nnRNN seed diverged)."""
    paper: dict = field(default_factory=dict)
    here: dict = field(default_factory=dict)
    missing: tuple = ()


def hidden_gap(bpc150: dict, bpc300: dict) -> HiddenGap:
    """"Where the nnRNN shines is for equal numbers of hidden units, where the performance gap to expRNN is much
    greater": at each T_PTB the gap at fixed hidden units clearly above the gap at the fixed parameter count
    (:func:`column_gaps`)."""
    paper, here, absent = {}, {}, []
    for bptt, table in ((150, bpc150), (300, bpc300)):
        p = {c: PAPER_PTB_BPC[(bptt, c)] for c in ("params", "hidden")}
        paper[bptt] = column_gaps((p["params"]["exprnn"], p["params"]["nnrnn"]),
                                  (p["hidden"]["exprnn"], p["hidden"]["nnrnn"]))
        stats = {c: (table.get(c, {}).get("exprnn"), table.get(c, {}).get("nnrnn")) for c in ("params", "hidden")}
        if missing(*stats["params"], *stats["hidden"]):
            absent.append(bptt)
            here[bptt] = None
        else:
            here[bptt] = None if any(nn.empty for _, nn in stats.values()) else column_gaps(stats["params"],
                                                                                             stats["hidden"])
    wins = sum(g is not None and g.larger for g in here.values())
    failed = any(t.get(c, {}).get("nnrnn") is not None and t[c]["nnrnn"].failed
                 for t in (bpc150, bpc300) for c in ("params", "hidden"))
    verdict = UNTESTED if absent else _grade(wins, 2)
    verdict = PARTLY if verdict == HOLDS and failed else verdict
    return HiddenGap(verdict, paper, here, tuple(absent))


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
    tasks = tuple(learned.get(t) for t in ("copy", "psmnist", "ptb"))
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
