"""The paper's claims on its experiments, each judged from a grid's numbers in the claim's own words: every function
returns :class:`Claim` rows (the claim, the paper's numbers, this grid's, the verdict).

The comparison rule and its treatment of single seeds and failed seeds are in :mod:`.statistics`; the thresholds
and the words of a verdict in :mod:`.rules`; the paper's published numbers in :mod:`.paper`; the theory's claims
in :mod:`.theory_verdicts`.

  counts as worse, and the sentence says so.

A claim is judged only when every model it names has finished runs; otherwise its verdict says the runs are
missing.  Each claim's ``here`` can end with this scale's size (``scope``), beside the paper's N = 512 / 1024.

The functions here take numbers, not run folders (:mod:`.collect` collects them), so that each verdict
can be tested on made-up numbers.
"""
from __future__ import annotations

import math

from scipy.stats import linregress

from .paper import (GAMMA_HELD, GAMMA_ONE, NON_GATED, ORTHOGONAL, PAPER_GAMMA, PAPER_LSTM_BPC, PAPER_PTB_ACCURACY,
                    PAPER_PTB_BPC)
from .rules import NOT_JUDGED, UNEQUAL, Claim, FAILS, HOLDS, PARTLY, UNJUDGED, UNTESTED, rule
from .statistics import (Stat, above_value, all_failed, below, below_value, differ, margin, missing,  # noqa: F401
                         relation)
from .theory_verdicts import (fisher_memory_claims, proposition1_claim, proposition2_claim,  # noqa: F401
                              table3_claim, theory_claims, transient_claims)
from .words import NAMES, _join, _paper, _ratio, _said, _scoped, _show_speed, column_words, name  # noqa: F401


def _capped(verdict: str, good: Stat) -> str:
    """At most "partly" when some seed of the model the claim calls good failed."""
    return PARTLY if verdict == HOLDS and good.failed else verdict


def _worse(bad: Stat, good: Stat, lower: bool) -> bool:
    """``bad`` worse than ``good`` by the rule (lower is better when ``lower``), or every seed of ``bad`` failed
    while ``good`` has values."""
    if all_failed(bad):
        return not good.empty
    return below(good, bad) if lower else below(bad, good)


def _needs(a: Stat, b: Stat, form: str, unit: str = "") -> str:
    return f"(the rule needs a gap above {margin(a, b):{form}}{unit} with these seeds)"



# --------------------------------------------------------------------------------------------- copy
def copy_claims(loss: dict, speed: dict, baseline: float, column: str, scope: str = "") -> list[Claim]:
    """Main text §4.1 on the copy task, judged in one column: ``loss`` and ``speed`` map a model to its final
    validation loss and to the updates until its loss stays below 10% of the baseline (a seed that never gets
    there counts as failed)."""
    where = "N = 128, Fig. 2" if column == "hidden" else "18.9K parameters, supplement"
    threshold = rule('SOLVED_SHARE') * baseline
    title = f"copy ({column_words(column)}): "
    orth = _copy_orthogonal(loss, speed, threshold, baseline)
    matched = _copy_matched(loss, speed, threshold)
    lstm_rnn = _copy_lstm_rnn(loss, threshold, baseline)
    return [Claim(title + "\"all orthogonal RNNs [...] learn to solve [it] at very high performance very quickly\"",
                  f"expRNN, EURNN and RNN-orth reach a loss near 0 ({where})", _scoped(orth[0], scope), orth[1]),
            Claim(title + "\"nnRNN matched the performance of orthogonal RNNs, as well as best training "
                  "timescales\" (judged on the final losses and the updates to solve, not on the whole learning "
                  "curves the paper's figure compares)",
                  f"nnRNN's curve lies with expRNN's ({where})", _scoped(matched[0], scope), matched[1]),
            Claim(title + "\"the LSTM struggled to solve the task and RNN failed completely\"",
                  f"LSTM and RNN stay near the baseline 0.095 (T = 200; {where})", _scoped(lstm_rnn[0], scope),
                  lstm_rnn[1])]


def _copy_orthogonal(loss: dict, speed: dict, threshold: float, baseline: float) -> tuple[str, str]:
    """Every orthogonal RNN solves copy: its loss clearly below 10% of the baseline, no seed diverged."""
    orth = {m: loss.get(m) for m in ORTHOGONAL}
    here = ("; ".join(f"{name(m)} {_said(orth[m], 4)}, {_show_speed(speed.get(m))}" for m in ORTHOGONAL)
            + f" (solved: clearly below {threshold:.4f}, 10% of the baseline {baseline:.4f}, with no seed "
            "diverged)")
    if missing(*orth.values()):
        return here, UNTESTED
    done = [m for m in ORTHOGONAL if below_value(orth[m], threshold) and not orth[m].failed]
    here += "; solved: " + (_join(done) if done else "none of them")
    if len(done) < len(ORTHOGONAL):
        here += "; not solved: " + _join([m for m in ORTHOGONAL if m not in done])
    return here, HOLDS if len(done) == len(ORTHOGONAL) else PARTLY if done else FAILS


def _copy_matched(loss: dict, speed: dict, threshold: float) -> tuple[str, str]:
    """nnRNN's loss solved and not clearly above the lowest orthogonal loss; its time to solve as fast as the
    fastest orthogonal RNN's."""
    nn, nn_speed = loss.get("nnrnn"), speed.get("nnrnn")
    if missing(nn, nn_speed, *(loss.get(m) for m in ORTHOGONAL), *(speed.get(m) for m in ORTHOGONAL)):
        return f"nnRNN {_said(nn, 4)}, {_show_speed(nn_speed)}", UNTESTED
    if nn.empty:
        return f"nnRNN {_said(nn, 4)}", FAILS
    matches, loss_text = _copy_loss_match(nn, loss, threshold)
    as_fast, speed_text = _copy_as_fast(nn_speed, speed)
    verdict = HOLDS if matches and as_fast else PARTLY if matches or as_fast else FAILS
    return loss_text + "; " + speed_text, _capped(verdict, nn)


def _copy_loss_match(nn: Stat, loss: dict, threshold: float) -> tuple[bool, str]:
    """One-sided: nnRNN matches when it solves the task and its loss is not clearly above the lowest
    orthogonal loss (clearly below it is better, and counts as matching)."""
    solved = below_value(nn, threshold)
    text = f"nnRNN {_said(nn, 4)}, " + ("solved" if solved else f"not solved (not clearly below {threshold:.4f})")
    finite = [m for m in ORTHOGONAL if not loss[m].empty]
    if not finite:  # nothing to match: not evidence that nnRNN matches them
        return False, text + "; every seed of every orthogonal RNN diverged, so there is nothing to match"
    best = min(finite, key=lambda m: loss[m].mean)
    b = loss[best]
    text += f"; lowest orthogonal loss: {name(best)} {_said(b, 4)}; nnRNN's loss is "
    if below(nn, b):
        text += f"clearly below (better than) {name(best)}'s"
    elif below(b, nn):
        text += f"clearly above {name(best)}'s"
    else:
        text += f"not clearly different from {name(best)}'s {_needs(nn, b, '.2g')}"
    return solved and not below(b, nn), text


def _copy_as_fast(nn: Stat, speed: dict) -> tuple[bool, str]:
    """The fastest orthogonal RNN has the fewest seeds that never solved, then the fewest mean updates; nnRNN
    is as fast when it has no more seeds that never solved and its mean is not clearly above the fastest's."""
    fastest = min(ORTHOGONAL, key=lambda m: (speed[m].failed, speed[m].mean if not speed[m].empty else math.inf))
    f, who = speed[fastest], name(fastest)
    as_fast = not nn.empty and nn.failed <= f.failed and not below(f, nn)
    text = (f"nnRNN {_show_speed(nn)}; fastest orthogonal RNN (fewest seeds that never solved, then fewest "
            f"updates): {who} {_show_speed(f)}; never solved: nnRNN {nn.failed} of {nn.n + nn.failed} seeds, "
            f"{who} {f.failed} of {f.n + f.failed}; nnRNN's time to solve ")
    if nn.empty:
        text += "never reached"
    elif f.empty:
        text += f"reached, {who}'s never"
    elif below(nn, f):
        text += f"clearly shorter than (better than) {who}'s"
    elif below(f, nn):
        text += f"clearly longer than {who}'s"
    else:
        text += f"not clearly different from {who}'s {_needs(nn, f, '.0f', ' updates')}"
    if nn.failed > f.failed:
        text += f"; nnRNN never solved it in more seeds than {who}"
    return as_fast, text


def _copy_lstm_rnn(loss: dict, threshold: float, baseline: float) -> tuple[str, str]:
    """The LSTM struggles: a seed diverged, or its loss is not clearly below 10% of the baseline; the RNN
    fails completely: its loss is not clearly below the baseline (or every seed diverged)."""
    lstm, rnn = loss.get("lstm"), loss.get("rnn")
    if missing(lstm, rnn):
        return f"LSTM {_said(lstm, 4)}; RNN {_said(rnn, 4)}", UNTESTED
    struggles = lstm.failed > 0 or not below_value(lstm, threshold)
    fails = not below_value(rnn, baseline)
    if lstm.empty:
        lstm_text = "counted as struggling"
    elif lstm.failed:
        lstm_text = f"struggled: {lstm.failed} of {lstm.n + lstm.failed} seeds diverged"
    else:
        lstm_text = (f"struggled: not clearly below the solved threshold {threshold:.4f}" if struggles
                     else f"solved it: clearly below {threshold:.4f}")
    rnn_text = ("counted as failing completely" if rnn.empty else
                f"failed completely: not clearly below the baseline {baseline:.4f}" if fails else
                f"did not fail completely: clearly below the baseline {baseline:.4f}")
    verdict = HOLDS if struggles and fails else PARTLY if struggles or fails else FAILS
    return f"LSTM {_said(lstm, 4)}, {lstm_text}; RNN {_said(rnn, 4)}, {rnn_text}", verdict



def copy_columns_claim(hidden: dict, params: dict, scope: str = "") -> Claim:
    """§4.1: "We see little difference if we match the number of parameters" (copy): each model's final loss at the
    fixed parameter count against fixed hidden units, by the rule.  Holds when no model's two results clearly
    differ; partly when some do; does not hold when most do.  A model whose every seed diverged in one column only
    differs."""
    models = [m for m in hidden if m in params and hidden[m] is not None and params[m] is not None]
    if not models or missing(*(hidden[m] for m in models), *(params[m] for m in models)):
        return Claim(_COPY_COLUMNS, "Fig. 2 against the supplement's Fig. at 18.9K parameters",
                     _scoped("runs missing", scope), UNTESTED)
    moved = [m for m in models if differ(hidden[m], params[m]) or hidden[m].empty != params[m].empty]
    here = ("final loss, fixed hidden units → fixed parameter count: "
            + "; ".join(f"{name(m)} {_said(hidden[m], 4)} → {_said(params[m], 4)}" for m in models)
            + ("; clearly different: " + _join(moved) if moved else "; no model clearly different"))
    verdict = HOLDS if not moved else FAILS if 2 * len(moved) > len(models) else PARTLY
    return Claim(_COPY_COLUMNS, "Fig. 2 against the supplement's Fig. at 18.9K parameters", _scoped(here, scope),
                 verdict)


_COPY_COLUMNS = "copy: \"We see little difference if we match the number of parameters\" (with ∼18.9K)"


# --------------------------------------------------------------------------------------------- psMNIST
def psmnist_claim(accuracy: dict, column: str, scope: str = "") -> Claim:
    """§4.1: "the nnRNN matches orthogonal RNNs in performance, whereas RNN and LSTM show lesser
    performances" (test accuracy).  One-sided: nnRNN matches when it is not clearly below the best orthogonal
    RNN (clearly above it is better, and counts as matching)."""
    models = (*ORTHOGONAL, "nnrnn", "rnn", "lstm")
    where = "N = 512, Fig. 2" if column == "hidden" else "269K parameters, supplement"
    if missing(*(accuracy.get(m) for m in models)):
        verdict, here = UNTESTED, "; ".join(f"{name(m)} {_show_acc(accuracy.get(m))}" for m in models)
    elif accuracy["nnrnn"].empty:
        verdict = FAILS
        here = "; ".join(f"{name(m)} {_show_acc(accuracy[m])}" for m in ("nnrnn", *ORTHOGONAL, "rnn", "lstm"))
    else:
        verdict, here = _psmnist_judged(accuracy)
    return Claim(f"psMNIST ({column_words(column)}): \"the nnRNN matches orthogonal RNNs in performance, whereas "
                 "RNN and LSTM show lesser performances\"",
                 f"nnRNN with expRNN and EURNN, RNN and LSTM lower ({where})", _scoped(here, scope), verdict)


def _psmnist_judged(accuracy: dict) -> tuple[str, str]:
    nn = accuracy["nnrnn"]
    finite = [m for m in ORTHOGONAL if not accuracy[m].empty]
    best = max(finite, key=lambda m: accuracy[m].mean) if finite else None
    here = f"nnRNN {_show_acc(nn)}; "
    if best is None:  # nothing to match: not evidence that nnRNN matches them
        matches, here = False, here + "every seed of every orthogonal RNN diverged, so there is nothing to match"
    else:
        b = accuracy[best]
        matches = not below(nn, b)
        here += (f"best orthogonal {name(best)} {_show_acc(b)} (nnRNN "
                 + ("clearly above (better than)" if below(b, nn) else "clearly below" if below(nn, b)
                    else "not clearly different from") + f" {name(best)}"
                 + ("" if differ(nn, b) else " " + _needs(nn, b, '.3f')) + ")")
        lower_orth = [m for m in finite if m != best and below(accuracy[m], nn)]
        here += (f"; nnRNN clearly above {_join(lower_orth)}" if lower_orth else "") + "; " + "; ".join(
            f"{name(m)} {_show_acc(accuracy[m])}" for m in ORTHOGONAL if m != best)
    lesser = [m for m in ("rnn", "lstm") if _worse(accuracy[m], nn, lower=False)]
    here += f"; RNN {_show_acc(accuracy['rnn'])}, LSTM {_show_acc(accuracy['lstm'])}"
    by_rule = [m for m in lesser if not accuracy[m].empty]
    here += (f"; clearly below nnRNN: {_join(by_rule)}" if by_rule else "") + "".join(
        f"; every seed of {name(m)} diverged (counted as lesser)" for m in lesser if accuracy[m].empty)
    if not lesser:
        here += "; neither RNN nor LSTM clearly below nnRNN"
    verdict = HOLDS if matches and len(lesser) == 2 else PARTLY if matches or lesser else FAILS
    return _capped(verdict, nn), here


def _show_acc(stat) -> str:
    return _said(stat, 3)


# --------------------------------------------------------------------------------------------- PTB

def ptb_claim(bpc: dict, bptt: int, column: str, scope: str = "") -> Claim:
    """Table 1: nnRNN has the lowest test bpc of the non-gated models."""
    paper, here, verdict = _nnrnn_best(bpc, PAPER_PTB_BPC[(bptt, column)], lower=True)
    return Claim(f"PTB (T_PTB = {bptt}, {column_words(column)}): nnRNN has the lowest test bpc of the non-gated "
                 "models (Table 1)", paper, _scoped(here, scope), verdict)


def ptb_accuracy_claim(accuracy: dict, bptt: int, column: str, scope: str = "") -> Claim:
    """Supplementary Table 2: nnRNN has the highest test accuracy of the non-gated models; ``accuracy`` maps a
    model to its test accuracy as a fraction, shown here in percent as the paper gives it."""
    percent = {m: None if v is None else Stat(100 * v.mean, 100 * v.se, v.n, v.failed) for m, v in accuracy.items()}
    paper, here, verdict = _nnrnn_best(percent, PAPER_PTB_ACCURACY[(bptt, column)], lower=False)
    return Claim(f"PTB (T_PTB = {bptt}, {column_words(column)}): nnRNN has the highest test accuracy of the "
                 "non-gated models (supplementary Table 2)", "test accuracy (%): " + paper,
                 _scoped("test accuracy (%): " + here, scope), verdict)


def gated_claim(bpc: dict, bptt: int, scope: str = "") -> Claim:
    """§4.2: "Gated networks are well-suited for such tasks, and we could get an LSTM with N = 1024 hidden units to
    achieve 1.37 ± 0.003 BPC", against Table 1's non-gated models at N = 1024: the LSTM clearly below every
    non-gated model (fixed hidden units).  The N = 1024 figure itself is the paper's size, which ``scope`` says."""
    paper = PAPER_PTB_BPC[(bptt, "hidden")] if (bptt, "hidden") in PAPER_PTB_BPC else {}
    paper_text = f"LSTM {_paper(PAPER_LSTM_BPC)} (N = 1024); " + ", ".join(
        f"{name(m)} {_paper(paper[m])}" for m in NON_GATED if m in paper)
    here = ", ".join(f"{name(m)} {_said(bpc.get(m), 3)}" for m in ("lstm", *NON_GATED))
    claim = (f"PTB (T_PTB = {bptt}, {column_words('hidden')}): \"Gated networks are well-suited for such tasks, and "
             "we could get an LSTM with N = 1024 hidden units to achieve 1.37 ± 0.003 BPC\" (the LSTM clearly below "
             "every non-gated model)")
    if missing(*(bpc.get(m) for m in ("lstm", *NON_GATED))):
        return Claim(claim, paper_text, _scoped(here, scope), UNTESTED)
    lstm = bpc["lstm"]
    beaten = [m for m in NON_GATED if _worse(bpc[m], lstm, True)]
    if beaten:
        here += "; the LSTM clearly below " + _join(beaten)
    if len(beaten) < len(NON_GATED):
        here += "; not clearly below " + _join([m for m in NON_GATED if m not in beaten])
    verdict = HOLDS if len(beaten) == len(NON_GATED) else PARTLY if beaten else FAILS
    return Claim(claim, paper_text, _scoped(here, scope), _capped(verdict, lstm))


def _nnrnn_best(values: dict, paper: dict, lower: bool) -> tuple[str, str, str]:
    """nnRNN clearly better than every other non-gated model (lower is better when ``lower``): the paper's
    numbers, this grid's and the verdict."""
    others = [m for m in NON_GATED if m != "nnrnn"]
    paper_text = ", ".join(f"{name(m)} {_paper(paper[m])}" for m in ("nnrnn", *others))
    here = ", ".join(f"{name(m)} {_said(values.get(m), 3 if lower else 2)}" for m in ("nnrnn", *others))
    if missing(*(values.get(m) for m in NON_GATED)):
        return paper_text, here, UNTESTED
    nn = values["nnrnn"]
    if nn.empty:
        return paper_text, here, FAILS
    word = "below" if lower else "above"
    beaten = [m for m in others if _worse(values[m], nn, lower)]
    by_rule = [m for m in beaten if not values[m].empty]
    if by_rule:
        here += f"; nnRNN clearly {word} " + _join(by_rule)
    here += "".join(f"; every seed of {name(m)} diverged (counted as worse)" for m in beaten if values[m].empty)
    if len(beaten) < len(others):
        here += f"; nnRNN not clearly {word} " + ("any of " if not beaten else "") + _join(
            [m for m in others if m not in beaten])
    verdict = HOLDS if len(beaten) == len(others) else PARTLY if beaten else FAILS
    return paper_text, here, _capped(verdict, nn)


def _show_bpc(stat) -> str:
    return _said(stat, 3)


def gap_claims(bpc150: dict, bpc300: dict, scope: str = "") -> list[Claim]:
    """§4.2 on the gap to expRNN.  ``bpc150`` and ``bpc300`` map a column ("params", "hidden") to {model: Stat
    of test bpc} at T_PTB = 150 and 300 (the shape :func:`nnrnn.experiments.report.results` gives).  The gap is
    expRNN − nnRNN (positive: nnRNN better), its s.e. sqrt(se_e² + se_n²).  One claim per column given: the
    gap "appreciatively improves" at T_PTB = 300, i.e. gap300 − gap150 > 2·sqrt(se_150² + se_300²); and, when
    both columns are given, one claim that at each T_PTB the gap at fixed hidden units is clearly larger than
    at the fixed parameter count."""
    columns = [c for c in ("params", "hidden") if bpc150.get(c) or bpc300.get(c)]
    claims = [_gap_change_claim(bpc150.get(c, {}), bpc300.get(c, {}), c, scope) for c in columns]
    if len(columns) == 2:
        claims.append(_hidden_gap_claim(bpc150, bpc300, scope))
    return claims


def _gap(exp: Stat, nn: Stat) -> Stat:
    """expRNN − nnRNN ± sqrt(se_e² + se_n²); +∞ when every expRNN seed diverged (the worse of the two)."""
    if exp.empty:
        return Stat(math.inf, 0.0, 1)
    se = math.nan if math.isnan(exp.se) and math.isnan(nn.se) else math.hypot(exp.err(), nn.err())
    return Stat(exp.mean - nn.mean, se, min(exp.n, nn.n))


def _show_gap(gap: Stat) -> str:
    if math.isinf(gap.mean):
        return "unbounded (every expRNN seed diverged)"
    return f"{gap.mean:.3f}" + ("" if math.isnan(gap.se) else f" ± {gap.se:.3f}")


def _gap_larger(small: Stat, large: Stat) -> tuple[bool, str]:
    """Whether ``large`` is clearly above ``small``, in words ("clearly larger", with the rule's margin when
    not)."""
    if math.isinf(small.mean) and math.isinf(large.mean):
        return False, "not comparable (every expRNN seed diverged in both)"
    if below(small, large):
        return True, "clearly larger"
    if below(large, small):
        return False, "clearly smaller"
    return False, f"not clearly different (the rule needs a change above {margin(small, large):.3f})"


def _paper_gap(column: str) -> str:
    p150, p300 = PAPER_PTB_BPC[(150, column)], PAPER_PTB_BPC[(300, column)]
    g150, g300 = _gap(p150["exprnn"], p150["nnrnn"]), _gap(p300["exprnn"], p300["nnrnn"])
    larger, words = _gap_larger(g150, g300)
    return (f"expRNN − nnRNN (Table 1): {g150.mean:.2f} ± {g150.se:.2g} at T_PTB = 150, {g300.mean:.2f} ± "
            f"{g300.se:.2g} at 300; by this rule: {words}")


def _gap_change_claim(b150: dict, b300: dict, column: str, scope: str) -> Claim:
    claim = (f"PTB ({column_words(column)}): the gap to expRNN \"is modest for equal number of parameters and "
             "shorter time scale (T_PTB=150), it appreciatively improves for T_PTB=300\" (test bpc, expRNN − nnRNN)"
             + ("" if column == "params" else "; the sentence is about the fixed parameter count, and this row asks "
                "the same at fixed hidden units"))
    stats = [b.get(m) for b in (b150, b300) for m in ("exprnn", "nnrnn")]
    here = "; ".join(f"T_PTB = {t}: expRNN {_show_bpc(b.get('exprnn'))}, nnRNN {_show_bpc(b.get('nnrnn'))}"
                     for t, b in ((150, b150), (300, b300)))
    if missing(*stats):
        return Claim(claim, _paper_gap(column), _scoped(here, scope), UNTESTED)
    nn150, nn300 = b150["nnrnn"], b300["nnrnn"]
    if nn150.empty or nn300.empty:
        return Claim(claim, _paper_gap(column), _scoped(here + "; no gap where every nnRNN seed diverged", scope),
                     FAILS)
    g150, g300 = _gap(b150["exprnn"], nn150), _gap(b300["exprnn"], nn300)
    larger, words = _gap_larger(g150, g300)
    here += f"; gap {_show_gap(g150)} at T_PTB = 150, {_show_gap(g300)} at 300; at 300 the gap is {words}"
    verdict = HOLDS if larger else FAILS
    if verdict == HOLDS and (nn150.failed or nn300.failed):
        verdict = PARTLY
    return Claim(claim, _paper_gap(column), _scoped(here, scope), verdict)


def _column_gaps(params: tuple, hidden: tuple) -> tuple[bool, str]:
    """Whether the gap expRNN − nnRNN at fixed hidden units is clearly above the gap at the fixed parameter count, in
    words; ``params`` and ``hidden`` are each column's (expRNN, nnRNN).  When nnRNN's result is the same in both
    columns (the same runs; the paper's nnRNN rows are too) the difference of the gaps is expRNN(hidden) −
    expRNN(params), and nnRNN's variance is not counted at all (the rule GAP_SHARED); otherwise the two gaps are
    compared as independent results."""
    gp, gh = _gap(*params), _gap(*hidden)
    head = f"gap {_show_gap(gh)} at fixed hidden units against {_show_gap(gp)} at the fixed parameter count"
    if rule('GAP_SHARED') == "cancel" and params[1] == hidden[1] and not (params[0].empty or hidden[0].empty):
        exp_p, exp_h = params[0], hidden[0]
        larger = below(exp_p, exp_h)
        return larger, (f"{head}; nnRNN's runs are the same in both, so the difference is expRNN's "
                        f"{exp_h.mean:.3f} − {exp_p.mean:.3f} = {exp_h.mean - exp_p.mean:.3f}, "
                        + ("clearly larger" if larger else "clearly smaller" if below(exp_h, exp_p) else
                           f"not clearly different (the rule needs a difference above {margin(exp_p, exp_h):.3f})"))
    larger, words = _gap_larger(gp, gh)
    return larger, f"{head}, {words}"


def _hidden_gap_claim(bpc150: dict, bpc300: dict, scope: str) -> Claim:
    """At each T_PTB the gap at fixed hidden units clearly above the gap at the fixed parameter count
    (:func:`_column_gaps`)."""
    claim = ("PTB: \"Where the nnRNN shines is for equal numbers of hidden units, where the performance gap to "
             "expRNN is much greater\" (at each T_PTB, the gap at fixed hidden units against the fixed parameter "
             "count)")
    papers, heres, wins, judged = [], [], 0, True
    for bptt, table in ((150, bpc150), (300, bpc300)):
        p = {c: PAPER_PTB_BPC[(bptt, c)] for c in ("params", "hidden")}
        papers.append(f"T_PTB = {bptt}: " + _column_gaps((p["params"]["exprnn"], p["params"]["nnrnn"]),
                                                         (p["hidden"]["exprnn"], p["hidden"]["nnrnn"]))[1])
        stats = {c: (table.get(c, {}).get("exprnn"), table.get(c, {}).get("nnrnn")) for c in ("params", "hidden")}
        if missing(*stats["params"], *stats["hidden"]):
            judged = False
            heres.append(f"T_PTB = {bptt}: runs missing")
            continue
        if any(nn.empty for _, nn in stats.values()):
            heres.append(f"T_PTB = {bptt}: no gap where every nnRNN seed diverged")
            continue
        larger, words = _column_gaps(stats["params"], stats["hidden"])
        wins += larger
        heres.append(f"T_PTB = {bptt}: {words}")
    failed = any(t.get(c, {}).get("nnrnn") is not None and t[c]["nnrnn"].failed
                 for t in (bpc150, bpc300) for c in ("params", "hidden"))
    verdict = UNTESTED if not judged else HOLDS if wins == 2 else PARTLY if wins else FAILS
    verdict = PARTLY if verdict == HOLDS and failed else verdict
    return Claim(claim, "; ".join(papers), _scoped("; ".join(heres), scope), verdict)


def gamma_claims(bpc: dict, bptt: int, criterion: str = "diverged", scope: str = "") -> list[Claim]:
    """Supplementary Table 7 at one T_PTB: nnRNN with γ held at 1 and at 0.958 against nnRNN (fixed hidden
    units).  ``bpc[GAMMA_ONE]`` is γ = 1's Stat over the runs that converged, with ``failed`` the runs that did
    not; ``criterion`` says what "did not converge" means (quoted in the sentence)."""
    return [_gamma_one_claim(bpc, bptt, criterion, scope), _gamma_held_claim(bpc, bptt, scope)]


def _gamma_one_claim(bpc: dict, bptt: int, criterion: str, scope: str) -> Claim:
    """(a) "some run did not converge": at least one γ = 1 run failed; (b) "best performance out of all
    methods" on the runs that converged: γ = 1 clearly below nnRNN and every other non-gated model."""
    one, nn = bpc.get(GAMMA_ONE), bpc.get("nnrnn")
    # "all methods (including regularized γ nnRNN)": γ = 0.958 too where the grid has it
    rivals = ["nnrnn", *(m for m in NON_GATED if m != "nnrnn"), *([GAMMA_HELD] if bpc.get(GAMMA_HELD) else [])]
    p, pn = PAPER_GAMMA[bptt][GAMMA_ONE], PAPER_GAMMA[bptt]["nnrnn"]
    paper = (f"{_paper(p)} ({p.failed} of {p.n + p.failed} runs failed) against nnRNN {_paper(pn)}: "
             + ("clearly below" if below(p, pn) else "not clearly below")
             + f" by this rule (gap {pn.mean - p.mean:.2f}; the rule needs above {margin(p, pn):.4f})")
    claim = (f"PTB (T_PTB = {bptt}): with γ clamped at 1 \"some run did not converge [...] on runs that did "
             "converge we found the best performance out of all methods (including regularized γ nnRNN)\"")
    if missing(one, *(bpc.get(m) for m in rivals)):
        return Claim(claim, paper, _scoped(f"γ = 1: {_show_bpc(one)}; nnRNN {_show_bpc(nn)}", scope), UNTESTED)
    runs = one.n + one.failed
    here = f"{one.failed} of {runs} γ = 1 runs did not converge ({criterion}); "
    if one.empty:
        best = False
        here += f"no γ = 1 run converged, so none can be best; nnRNN {_show_bpc(nn)}"
    else:
        beaten = [m for m in rivals if _worse(bpc[m], one, lower=True)]
        best = len(beaten) == len(rivals)
        runs_word = "run" if one.n == 1 else "runs"
        here += (f"γ = 1 over the {one.n} {runs_word} that converged: {Stat(one.mean, one.se, one.n).show(3)}; "
                 f"nnRNN {_show_bpc(nn)}; γ = 1 clearly below " + (_join(beaten) if beaten else "none of the "
                                                                   "other methods")
                 + "".join(f" ({name(m)}: every seed diverged, counted as worse)" for m in beaten if bpc[m].empty)
                 + ("" if best else "; not clearly below " + _join([m for m in rivals if m not in beaten])))
    some = one.failed >= 1
    # no run converged: the claimed-good model has no result, so the claim does not hold (module docstring)
    verdict = FAILS if one.empty else HOLDS if some and best else PARTLY if some or best else FAILS
    return Claim(claim, paper, _scoped(here, scope), verdict)


def _gamma_held_claim(bpc: dict, bptt: int, scope: str) -> Claim:
    """"Virtually identical": γ = 0.958 not clearly different from nnRNN, with the smallest gap the rule can
    see given beside it."""
    held, nn = bpc.get(GAMMA_HELD), bpc.get("nnrnn")
    p, pn = PAPER_GAMMA[bptt][GAMMA_HELD], PAPER_GAMMA[bptt]["nnrnn"]
    paper = (f"{_paper(p)} against nnRNN {_paper(pn)}: " + ("clearly different" if differ(p, pn) else
                                                            "not clearly different") + " by this rule")
    here = f"γ = 0.958: {_show_bpc(held)}; nnRNN {_show_bpc(nn)}"
    if missing(nn, held):
        verdict = UNTESTED
    elif held.empty or nn.empty:
        verdict = FAILS
        here += ": not comparable, every seed of " + ("both" if held.empty and nn.empty else "γ = 0.958" if held.empty
                                                       else "nnRNN") + " diverged"
    elif math.isnan(margin(held, nn)):
        verdict = UNJUDGED
        here += ": a single seed each, which the rule cannot compare"
    elif differ(nn, held):
        verdict = FAILS
        here += f": γ = 0.958 {relation(held, nn)} nnRNN"
    else:
        verdict = _capped(_capped(HOLDS, held), nn)
        here += f": not clearly different {_needs(held, nn, '.3f')}"
    return Claim(f"PTB (T_PTB = {bptt}): with γ clamped at 0.958 \"the performance was virtually identical to that "
                 "of nnRNN with regularized γ\"", paper, _scoped(here, scope), verdict)


def regularization_claim(bpc: dict, spikes: dict, bptt: int, scope: str = "") -> Claim:
    """§3: regularization on γ "yields the best results with most stable training", against γ held at 1 and at
    0.958 (supplementary Table 7's variants).  ``bpc``: test bpc per label, γ = 1 over the runs that converged
    (its ``failed`` the runs that did not); ``spikes``: each run's largest training gradient norm over its median.
    Best results: nnRNN not clearly above either variant; most stable: no more failed runs than either, and a
    largest gradient-norm ratio no larger than either's."""
    labels = ("nnrnn", GAMMA_ONE, GAMMA_HELD)
    claim = (f"PTB (T_PTB = {bptt}): \"allowing eigenvalues to deviate slightly from the unit circle throughout "
             "training (regularization on γ) [...] yields the best results with most stable training\" (against γ "
             "held at 1 and at 0.958)")
    if missing(*(bpc.get(m) for m in labels)) or not all(spikes.get(m) for m in labels):
        return Claim(claim, "§3; supplementary Table 7", _scoped("runs missing", scope), UNTESTED)
    nn = bpc["nnrnn"]
    best = not nn.empty and not any(below(bpc[m], nn) for m in labels[1:])
    worst = {m: max((r for r in spikes[m] if r is not None), default=math.inf) for m in labels}
    stable = all(nn.failed <= bpc[m].failed and worst["nnrnn"] <= worst[m] for m in labels[1:])
    here = ("test bpc (γ = 1 over the runs that converged): " + "; ".join(f"{name(m)} {_show_bpc(bpc[m])}"
                                                                        for m in labels)
            + ("; nnRNN not clearly above either" if best else "; nnRNN clearly above "
               + _join([m for m in labels[1:] if below(bpc[m], nn)]))
            + "; largest gradient norm over its median: " + "; ".join(f"{name(m)} {_ratio(worst[m])}" for m in labels)
            + "; runs that failed or did not converge: " + ", ".join(f"{name(m)} {bpc[m].failed}" for m in labels)
            + ("; nnRNN the most stable" if stable else "; nnRNN not the most stable"))
    verdict = HOLDS if best and stable else PARTLY if best or stable else FAILS
    return Claim(claim, "§3; supplementary Table 7", _scoped(here, scope), verdict)


def all_or_nothing_claim(runs: list[tuple], bptt: int, scope: str = "") -> Claim:
    """Supplement: "gradient explosion leading to diverging training runs appears to be an all-or-nothing event".
    ``runs``: (label, seed, test bpc or None, converged, largest gradient norm over its median) of every run of
    nnRNN and its γ-held variants.  A run whose norm exploded (at least SPIKE) is "all" when it did not converge,
    "nothing" when its test bpc is not clearly above the runs that did not explode (a single run takes their
    seed-to-seed spread), and in between otherwise.  Holds when no exploded run is in between; partly when some
    are; does not hold when most are (or no run exploded while some did not converge: nothing to judge)."""
    claim = (f"PTB (T_PTB = {bptt}): \"gradient explosion leading to diverging training runs appears to be an "
             "all-or-nothing event\" (nnRNN with γ regularized and held)")
    paper = "supplement's gradient figure (no exploded run shown)"
    spike = rule('SPIKE')
    exploded = [r for r in runs if r[4] is None or not math.isfinite(r[4]) or r[4] >= spike]
    calm = Stat.of(r[2] for r in runs if r not in exploded and r[3])
    if not exploded or calm.empty:
        verdict = UNTESTED if not runs else HOLDS if not exploded else UNJUDGED
        return Claim(claim, paper, _scoped(f"no run's gradient norm reached {_ratio(spike)} its median"
                                           if not exploded else "every run exploded", scope), verdict)
    words = []
    between = 0
    for label, seed, bpc, converged, ratio in exploded:
        if not converged:
            kind = "did not converge (all)"
        elif below(calm, Stat(bpc, math.nan, 1)):
            kind, between = f"converged to {bpc:.3f}, clearly above the runs that did not explode (in between)", \
                between + 1
        else:
            kind = f"converged to {bpc:.3f}, not clearly above the runs that did not explode (nothing)"
        words.append(f"{name(label)} seed {seed} ({_ratio(ratio) if ratio else 'no finite norm'}): {kind}")
    here = (f"runs whose gradient norm reached {_ratio(spike)} its median: " + "; ".join(words)
            + f"; the runs that did not explode: {calm.show(3)}")
    verdict = HOLDS if not between else FAILS if 2 * between > len(exploded) else PARTLY
    return Claim(claim, paper, _scoped(here, scope), verdict)


def gradient_claim(spikes: dict, bptt: int, threshold: float | None = None, scope: str = "") -> Claim:
    """Supplement, gradient propagation: "gradient norms behave nicely during backpropagation and throughout
    training" (nnRNN on PTB, γ regularized or clamped).  ``spikes`` maps a label (``nnrnn``, GAMMA_ONE,
    GAMMA_HELD) to each seed's largest training gradient norm over its median (after the rule WARM_UP's share of
    its updates); behaving nicely is every ratio below ``threshold`` (default: the rule SPIKE; a run without a
    finite ratio does not).  Judged only when nnRNN and γ = 0.958 both have runs (the sentence names both): holds
    when every run of both does; partly when nnRNN's do and γ = 0.958's do not; does not hold when nnRNN's own
    spike."""
    threshold = rule('SPIKE') if threshold is None else threshold
    window = rule('WARM_UP')
    claim = (f"PTB (T_PTB = {bptt}): \"gradient norms behave nicely during backpropagation and throughout "
             "training\" (nnRNN with γ regularized and held at 0.958; judged on each run's largest training gradient "
             + (f"norm after its first {window:.0%} of updates" if window else "norm over the whole run")
             + " over its median, not on the norms across time steps)")
    paper = "supplement's gradient figure: \"all runs converged\", no spike shown"
    # whether γ = 1's runs converged is the γ = 1 claim's question; the paper's example has "all runs converged",
    # so γ = 1 is shown here but not judged
    labels = [m for m in ("nnrnn", GAMMA_HELD, GAMMA_ONE) if spikes.get(m)]
    absent = [m for m in ("nnrnn", GAMMA_HELD) if m not in labels]
    if absent:
        return Claim(claim, paper, _scoped("no runs: " + _join(absent), scope), UNTESTED)
    nice = lambda r: r is not None and math.isfinite(r) and r < threshold
    parts, spiked = [], []
    for m in labels:
        bad = [r for r in spikes[m] if not nice(r)]
        runs = len(spikes[m])
        if bad:
            spiked.append(m)
            parts.append(f"{name(m)}, {len(bad)} of {runs} seeds: " + ", ".join(
                f"largest norm {_ratio(r)} its median" if r is not None and math.isfinite(r)
                else "no finite gradient norm" for r in bad))
        else:
            parts.append(f"{name(m)}: every one of {runs} seeds below {_ratio(threshold)} its median (largest "
                         f"{_ratio(max(spikes[m]))})")
    if GAMMA_ONE in labels:
        parts[-1] += " (γ = 1 shown, not judged: whether its runs converged is the γ = 1 row's question)"
    judged = [m for m in spiked if m != GAMMA_ONE]
    verdict = FAILS if "nnrnn" in judged else PARTLY if judged else HOLDS
    return Claim(claim, paper, _scoped("; ".join(parts), scope), verdict)



def backprop_claim(norms: list[float] | None, bptt: int, scope: str = "") -> Claim:
    """Supplement, gradient propagation: "gradient norms behave nicely during backpropagation", its figure's
    "growing polynomially", and §3's "gradients explode polynomially in time rather than exponentially".  ``norms``:
    ‖∂L/∂h_t‖, t = 1..T, of the first seed's trained nnRNN under the analysis probe (L = ½ mean_b ‖h_T‖², Gaussian
    inputs).  Over the steps back s from the loss (s = 0 at h_T) to the largest norm, log‖∂L/∂h‖ is fitted against
    log(s + 1) (a power law) and against s (an exponential): polynomial when the power law fits at least as well
    (the rule BACKPROP_GROWTH).  A norm that does not grow at all is polynomial of degree 0."""
    claim = (f"PTB (T_PTB = {bptt}): \"gradient norms behave nicely during backpropagation\" (the supplement's figure: "
             "\"growing polynomially\"; §3: \"gradients explode polynomially in time rather than exponentially\")")
    paper = "supplement's gradient figure (one example run): growing polynomially while backpropagating"
    if rule('BACKPROP_GROWTH') != "power law":
        return Claim(claim, paper, "not judged", NOT_JUDGED)
    if not norms or len(norms) < 3:
        return Claim(claim, paper, _scoped("no gradient probe of a trained nnRNN", scope), UNTESTED)
    back = list(reversed(norms))  # s = 0: the step of the loss
    if not all(math.isfinite(v) and v > 0 for v in back):
        return Claim(claim, paper, _scoped("the probe's gradient norms are not all finite and positive", scope), FAILS)
    peak = max(range(len(back)), key=back.__getitem__)
    growth = back[peak] / back[0]
    here = (f"the first seed's trained nnRNN, one run (the probe L = ½ mean‖h_T‖², Gaussian inputs, T = {len(back)}): "
            f"‖∂L/∂h‖ grows {_ratio(growth)} over the {peak} steps back to its largest")
    if peak < 2:
        return Claim(claim, paper, _scoped(here + ": it does not grow (polynomial of degree 0)", scope), HOLDS)
    logs = [math.log(v) for v in back[:peak + 1]]
    power_fit = linregress([math.log(s + 1) for s in range(peak + 1)], logs)
    exponential_fit = linregress([float(s) for s in range(peak + 1)], logs)
    (power, degree), (exponential, rate) = ((f.rvalue ** 2, f.slope) for f in (power_fit, exponential_fit))
    end = back[-1] / back[peak]
    here += (f", {'then falls to' if end < 1 else 'and is'} {_ratio(end)} of it at step {len(back) - 1}; a power law "
             f"(s + 1)^{degree:.2f} "
             f"fits with R² {power:.3f}, an exponential e^({rate:.3f}·s) with R² {exponential:.3f}")
    return Claim(claim, paper, _scoped(here, scope), HOLDS if power >= exponential else FAILS)


# --------------------------------------------------------------------------------------------- learned structure
def structure_claims(learned: dict, sizes: dict | None = None) -> list[Claim]:
    """§4.3 and the supplement on what nnRNN learned; ``learned[task][quantity]`` is a Stat over every seed's
    trained nnRNN (fixed hidden units).  Quantities: ``triangular_fraction`` ‖T‖_F/‖Θ‖_F,
    ``departure`` (Henrici, normalised), ``mean_modulus`` (mean |λ| of V), ``angle_concentration`` (1 −
    sd(θ_i)/sd of the uniform law on [0, π]: 0 for evenly spread angles, 1 when all are equal) and ``delay_line``
    (mean |T_{i+1,i}| over the mean |T_{i+k,i}|, k ≥ 2).  ``sizes`` ({task: N}) lets the order of the tasks be
    judged like with like: ‖T‖/‖Θ‖ grows with N, so two tasks at unequal N are not ordered by it."""
    copy, ps, ptb = (learned.get(t) for t in ("copy", "psmnist", "ptb"))
    return (_triangle_claims(copy, ps, ptb, sizes or {}) + _shape_claims(copy, ps, ptb)
            + _modulus_claims(copy, ps, ptb))


def _unmeasured(stats, quantity) -> bool:
    """A structure statistic no seed gave a finite value of (NaN, e.g. an older cache or a model without the
    quantity): its claim is not tested, which is not a failure."""
    return quantity not in stats or stats[quantity].empty


def _show(stats, quantity) -> str:
    return "no runs" if stats is None else stats[quantity].show(3)


def _triangle_claims(copy, ps, ptb, sizes: dict) -> list[Claim]:
    """How large T is after each task (Fig. 3 and the supplement)."""
    show, claims = _show, []
    if copy is None or ptb is None or any(_unmeasured(st, "triangular_fraction") for st in (copy, ptb)):
        verdict = UNTESTED
    else:
        near_zero = below_value(copy["triangular_fraction"], rule('NEAR_ZERO'))
        grows = below(copy["triangular_fraction"], ptb["triangular_fraction"])
        verdict = HOLDS if near_zero and grows else PARTLY if near_zero or grows else FAILS
    claims.append(Claim(
        "\"For the copy task, Θ is practically composed of 2×2 rotation blocks along its diagonal (i.e. T = 0) [...] "
        "for the PTB task [...] T shows a lot of structure\"",
        "Fig. 3a, b", f"‖T‖/‖Θ‖: copy {show(copy, 'triangular_fraction')}, PTB {show(ptb, 'triangular_fraction')} "
        f"(T ≈ 0 read as below {rule('NEAR_ZERO'):.0%})", verdict))

    claims.append(_order_claim(copy, ps, ptb, sizes))
    return claims


def _order_claim(copy, ps, ptb, sizes: dict) -> Claim:
    """The supplement's order of T's strength, copy < psMNIST < PTB: on T's root-mean-square entry over Λ's (the
    rule ORDER_ON "per-entry", like with like at any N), or on ‖T‖/‖Θ‖ at equal N only ("fraction")."""
    show = _show
    per_entry = rule('ORDER_ON') == "per-entry"
    quantity = "triangle_per_entry" if per_entry else "triangular_fraction"
    here = (f"‖T‖/‖Θ‖: copy {show(copy, 'triangular_fraction')}, psMNIST {show(ps, 'triangular_fraction')}, "
            f"PTB {show(ptb, 'triangular_fraction')}")
    if sizes and all(t in sizes for t in ("copy", "psmnist", "ptb")):
        here += " at N = " + ", ".join(f"{sizes[t]}" for t in ("copy", "psmnist", "ptb"))
    unequal = len({sizes.get(t) for t in ("copy", "psmnist", "ptb")}) > 1
    if None in (copy, ps, ptb) or any(_unmeasured(st, quantity) for st in (copy, ps, ptb)):
        verdict = UNTESTED
    elif unequal and not per_entry:
        verdict = UNEQUAL
        here += "; not ordered here: ‖T‖/‖Θ‖ grows with N, and the tasks ran at unequal N"
    else:
        if per_entry:
            here += (f"; T's rms entry over Λ's (like with like at any N): copy {show(copy, quantity)}, psMNIST "
                     f"{show(ps, quantity)}, PTB {show(ptb, quantity)}")
        first, second = below(copy[quantity], ps[quantity]), below(ps[quantity], ptb[quantity])
        verdict = HOLDS if first and second else PARTLY if first or second else FAILS
        here += (f"; copy {relation(copy[quantity], ps[quantity])} psMNIST, psMNIST "
                 f"{relation(ps[quantity], ptb[quantity])} PTB")
    return Claim("supplement: the structure in the lower triangle is \"significantly weaker in the psMNIST task than "
                 "in the PTB task, while not being completely absent as in the copy task\" (copy < psMNIST < PTB)",
                 "Fig. 3 and the supplement's psMNIST Θ", here, verdict)


def _shape_claims(copy, ps, ptb) -> list[Claim]:
    """How the angles and T's delay line look after each task (Fig. 3's insets and 3c)."""
    show, claims = _show, []
    uniform, aligned = rule('ROUGHLY_UNIFORM'), rule('STRONGLY_ALIGNED')
    spread = [(t, st) for t, st in (("copy", copy), ("psMNIST", ps)) if st is not None]
    if len(spread) < 2 or any(_unmeasured(st, "angle_concentration") for _, st in spread):
        verdict = UNTESTED
    else:
        even = [t for t, st in spread if below_value(st["angle_concentration"], uniform)]
        verdict = HOLDS if len(even) == 2 else PARTLY if even else FAILS
    claims.append(Claim(
        "angles: \"roughly uniformly\" distributed after copy (and psMNIST)", "Fig. 3a insets",
        "concentration of the angles θ_i (0 uniform on [0, π], 1 all equal): copy "
        f"{show(copy, 'angle_concentration')}, "
        f"psMNIST {show(ps, 'angle_concentration')} (roughly uniform: clearly below {uniform:g})", verdict))
    verdict = (UNTESTED if ptb is None or _unmeasured(ptb, "angle_concentration") else
               HOLDS if above_value(ptb["angle_concentration"], aligned) else FAILS)
    claims.append(Claim(
        "angles: \"strongly align\" after PTB", "Fig. 3b inset",
        f"concentration of the angles θ_i: PTB {show(ptb, 'angle_concentration')} (strongly aligned: clearly above "
        f"{aligned:g}, half way from uniform to all equal)", verdict))

    if ptb is None or _unmeasured(ptb, "delay_line"):
        verdict = UNTESTED
    else:
        verdict = HOLDS if above_value(ptb["delay_line"], 1.0) else FAILS
    # T's entries inside Λ's 2×2 blocks link no two modes (they move the block's eigenvalues): shown beside it
    inside = lambda stats: "no runs" if stats is None else "not measured" if "in_block" not in stats else (
        f"{stats['in_block'].show(3, failed='n/a')} ({stats['in_block_to_link'].show(3, failed='n/a')} × the mean "
        "abs(T) of a link entry)")
    claims.append(Claim(
        "PTB: the links of T between consecutive Schur modes (the delay line: each mode feeding the next) stand out "
        "against the rest of the triangle, which \"also shows structure\"", "Fig. 3c",
        f"mean abs(T) over the links from each diagonal block of Θ to the next over the mean abs(T) over the blocks "
        f"further below: PTB {show(ptb, 'delay_line')}, copy {show(copy, 'delay_line')}, psMNIST "
        f"{show(ps, 'delay_line')} (above 1 needed); beside it, T inside the 2×2 blocks (no links), mean abs: PTB "
        f"{inside(ptb)}, copy {inside(copy)}, psMNIST {inside(ps)}", verdict))
    return claims


def _modulus_claims(copy, ps, ptb) -> list[Claim]:
    """The mean eigenvalue norm after PTB and after copy (§4.3)."""
    show, claims = _show, []
    if copy is None or ptb is None or any(_unmeasured(st, q) for st in (copy, ptb)
                                          for q in ("mean_modulus", "mean_gamma")):
        verdict = UNTESTED
    else:  # the paper's γ̄ is its eigenvalue norm; with strict T the trained γ and |λ| differ, so both are judged
        by = [q for q in ("mean_modulus", "mean_gamma")
              if below(ptb[q], copy[q]) and below_value(ptb[q], 1.0)]
        verdict = HOLDS if len(by) == 2 else PARTLY if by else FAILS
    claims.append(Claim(
        "\"For the PTB task [...] the mean eigenvalue norm is balanced at γ̄ ∼ 0.958. In contrast for the copy "
        "task, matrices remain normal and γ̄ ∼ 1\"", "PTB 0.958, copy about 1",
        f"mean abs(λ) of V: PTB {show(ptb, 'mean_modulus')}, copy {show(copy, 'mean_modulus')}, psMNIST "
        f"{show(ps, 'mean_modulus')}; mean trained γ: PTB {show(ptb, 'mean_gamma')}, copy {show(copy, 'mean_gamma')} "
        "(each: PTB clearly below copy and below 1 needed)", verdict))
    return claims


# --------------------------------------------------------------------------------------------- beyond the paper
def compare(a_label: str, a, b_label: str, b, digits: int = 3, lower_is_better: bool = True,
            failed: str = "diverged") -> tuple[str, int]:
    """One sentence comparing two results by the rule, and its sign: 1 when a is better than b by more than two
    combined standard errors, −1 when worse, 0 when neither (or a result is missing).  ``failed`` says what a seed
    without a value did ("diverged", or "never solved" for a time to solve)."""
    if missing(a, b):
        return f"{name(a_label)} against {name(b_label)}: runs missing", 0
    if a.empty and b.empty:
        return f"{name(a_label)} and {name(b_label)}: every seed {failed}", 0
    if a.empty or b.empty:  # every seed of one failed: that one is the worse
        sign = -1 if a.empty else 1
        verb = "worse than" if a.empty else "better than"
        return f"{name(a_label)} {a.show(digits, failed)} is {verb} {name(b_label)} {b.show(digits, failed)}", sign
    better = below(a, b) if lower_is_better else below(b, a)
    worse = below(b, a) if lower_is_better else below(a, b)
    verb = "clearly better than" if better else "clearly worse than" if worse else "not clearly different from"
    return (f"{name(a_label)} {a.show(digits, failed)} is {verb} {name(b_label)} {b.show(digits, failed)}",
            1 if better else -1 if worse else 0)
