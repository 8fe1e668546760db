"""The paper's claims on its tasks, each judged from a grid's numbers: copy (§4.1, Fig. 2), psMNIST (§4.1),
PTB (Table 1, supplementary Table 2, §4.2 on gated networks) and the gap to expRNN (§4.2).  Every function
returns a judgement (the verdict and the comparisons behind it, as numbers and model names); :mod:`.task_sentences`
says them in the claim's own words as :class:`~.rules.Claim` rows.

The comparison rule and its treatment of single seeds and failed seeds are in :mod:`.statistics`; the thresholds
and the words of a verdict in :mod:`.rules`; the paper's published numbers in :mod:`.paper`; what every judgement
shares in :mod:`.judgement`; the other claim families in :mod:`.gamma_verdicts`, :mod:`.structure_verdicts` and
:mod:`.theory_verdicts`.

A claim is judged only when every model it names has finished runs; otherwise its verdict says the runs are
missing.

The functions here take numbers, not run folders (:mod:`.collect` collects them), so that each verdict
can be tested on made-up numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .judgement import Judgement, _capped, _grade, _worse
from .paper import NON_GATED, ORTHOGONAL, PAPER_PTB_BPC
from .rules import FAILS, HOLDS, PARTLY, UNTESTED, rule
from .statistics import Stat, below, below_value, differ, missing, order


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
    return {m: None if v is None else v.scaled(100) for m, v in accuracy.items()}


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
    published = exp.published and nn.published
    if exp.empty:
        return Stat(math.inf, 0.0, 1, published=published)
    se = math.nan if math.isnan(exp.se) and math.isnan(nn.se) else math.hypot(exp.err(), nn.err())
    return Stat(exp.mean - nn.mean, se, min(exp.n, nn.n), label="expRNN − nnRNN", published=published)


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
    """The gap "appreciatively improves" at T_PTB = 300: gap300 − gap150 above the rule's margin
    (:func:`.statistics.margin`)."""
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
