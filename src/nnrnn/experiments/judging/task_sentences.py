"""The paper's claims on its tasks in their own words: copy (§4.1, Fig. 2), psMNIST (§4.1), PTB (Table 1,
supplementary Table 2, §4.2 on gated networks) and the gap to expRNN (§4.2); each ``*_claim(s)`` function takes
the numbers a claim is judged on, asks :mod:`.task_verdicts` for its judgement and returns :class:`~.rules.Claim` rows
(the claim, the paper's numbers, this grid's, the verdict).

Each row's ``here`` can end with this scale's size (``scope``), beside the paper's N = 512 / 1024.  The names of the
models and the way a result is shown are in :mod:`.words`."""
from __future__ import annotations

import math

from . import family
from . import task_verdicts as judge
from .comparisons import _needs, _versus
from .paper import NON_GATED, ORTHOGONAL, PAPER_LSTM_BPC, PAPER_PTB_ACCURACY, PAPER_PTB_BPC
from .rules import UNTESTED, Claim
from .statistics import Stat, margin
from .words import _join, _paper, _said, _scoped, _show_bpc, _show_speed, column_words, name


# --------------------------------------------------------------------------------------------- copy
@family.rests_on
def copy_claims(loss: dict, speed: dict, baseline: float, column: str, scope: str = "") -> list[Claim]:
    """Main text §4.1 on the copy task in one column (:func:`.task_verdicts.copy_judgements`)."""
    where = "N = 128, Fig. 2" if column == "hidden" else "18.9K parameters, supplement"
    title = f"copy ({column_words(column)}): "
    orth, matched, lstm_rnn = judge.copy_judgements(loss, speed, baseline)
    return [Claim(title + "\"all orthogonal RNNs [...] learn to solve [it] at very high performance very quickly\"",
                  f"expRNN, EURNN and RNN-orth reach a loss near 0 ({where})", _scoped(_copy_orthogonal(orth), scope),
                  orth.verdict),
            Claim(title + "\"nnRNN matched the performance of orthogonal RNNs, as well as best training "
                  "timescales\" (judged on the final losses and the updates to solve, not on the whole learning "
                  "curves the paper's figure compares)",
                  f"nnRNN's curve lies with expRNN's ({where})", _scoped(_copy_matched(matched), scope),
                  matched.verdict),
            Claim(title + "\"the LSTM struggled to solve the task and RNN failed completely\"",
                  f"LSTM and RNN stay near the baseline 0.095 (T = 200; {where})",
                  _scoped(_copy_lstm_rnn(lstm_rnn), scope), lstm_rnn.verdict)]


def _copy_orthogonal(j: judge.CopyOrthogonal) -> str:
    here = ("; ".join(f"{name(m)} {_said(j.loss[m], 4)}, {_show_speed(j.speed.get(m))}" for m in ORTHOGONAL)
            + f" (solved: clearly below {j.threshold:.4f}, 10% of the baseline {j.baseline:.4f}, with no seed "
            "diverged)")
    if j.verdict == UNTESTED:
        return here
    here += "; solved: " + (_join(j.solved) if j.solved else "none of them")
    if len(j.solved) < len(ORTHOGONAL):
        here += "; not solved: " + _join([m for m in ORTHOGONAL if m not in j.solved])
    return here


def _copy_matched(j: judge.CopyMatched) -> str:
    nn, nn_speed = j.loss.get("nnrnn"), j.speed.get("nnrnn")
    if j.verdict == UNTESTED:
        return f"nnRNN {_said(nn, 4)}, {_show_speed(nn_speed)}"
    if nn.empty:
        return f"nnRNN {_said(nn, 4)}"
    return _copy_loss_match(j) + "; " + _copy_as_fast(j)


def _copy_loss_match(j: judge.CopyMatched) -> str:
    nn = j.loss["nnrnn"]
    text = f"nnRNN {_said(nn, 4)}, " + ("solved" if j.solved else f"not solved (not clearly below {j.threshold:.4f})")
    if j.best is None:
        return text + "; every seed of every orthogonal RNN diverged, so there is nothing to match"
    b, who = j.loss[j.best], name(j.best)
    text += f"; lowest orthogonal loss: {who} {_said(b, 4)}; nnRNN's loss is "
    return text + _versus(j.loss_order, f"clearly below (better than) {who}'s", f"clearly above {who}'s",
                          f"not clearly different from {who}'s {_needs(nn, b, '.2g')}")


def _copy_as_fast(j: judge.CopyMatched) -> str:
    nn, f, who = j.speed["nnrnn"], j.speed[j.fastest], name(j.fastest)
    text = (f"nnRNN {_show_speed(nn)}; fastest orthogonal RNN (fewest seeds that never solved, then fewest "
            f"updates): {who} {_show_speed(f)}; never solved: nnRNN {nn.failed} of {nn.n + nn.failed} seeds, "
            f"{who} {f.failed} of {f.n + f.failed}; nnRNN's time to solve ")
    if nn.empty:
        text += "never reached"
    elif f.empty:
        text += f"reached, {who}'s never"
    else:
        text += _versus(j.speed_order, f"clearly shorter than (better than) {who}'s", f"clearly longer than {who}'s",
                        f"not clearly different from {who}'s {_needs(nn, f, '.0f', ' updates')}")
    if nn.failed > f.failed:
        text += f"; nnRNN never solved it in more seeds than {who}"
    return text


def _copy_lstm_rnn(j: judge.CopyLstmRnn) -> str:
    lstm, rnn = j.lstm, j.rnn
    if j.verdict == UNTESTED:
        return f"LSTM {_said(lstm, 4)}; RNN {_said(rnn, 4)}"
    if lstm.empty:
        lstm_text = "counted as struggling"
    elif lstm.failed:
        lstm_text = f"struggled: {lstm.failed} of {lstm.n + lstm.failed} seeds diverged"
    else:
        lstm_text = (f"struggled: not clearly below the solved threshold {j.threshold:.4f}" if j.struggles
                     else f"solved it: clearly below {j.threshold:.4f}")
    rnn_text = ("counted as failing completely" if rnn.empty else
                f"failed completely: not clearly below the baseline {j.baseline:.4f}" if j.fails else
                f"did not fail completely: clearly below the baseline {j.baseline:.4f}")
    return f"LSTM {_said(lstm, 4)}, {lstm_text}; RNN {_said(rnn, 4)}, {rnn_text}"


_COPY_COLUMNS = "copy: \"We see little difference if we match the number of parameters\" (with ∼18.9K)"


@family.rests_on
def copy_columns_claim(hidden: dict, params: dict, scope: str = "") -> Claim:
    """§4.1: "We see little difference if we match the number of parameters" (:func:`.task_verdicts.copy_columns`)."""
    j = judge.copy_columns(hidden, params)
    paper = "Fig. 2 against the supplement's Fig. at 18.9K parameters"
    if j.verdict == UNTESTED:
        return Claim(_COPY_COLUMNS, paper, _scoped("runs missing", scope), UNTESTED)
    here = ("final loss, fixed hidden units → fixed parameter count: "
            + "; ".join(f"{name(m)} {_said(hidden[m], 4)} → {_said(params[m], 4)}" for m in j.models)
            + ("; clearly different: " + _join(j.moved) if j.moved else "; no model clearly different"))
    return Claim(_COPY_COLUMNS, paper, _scoped(here, scope), j.verdict)


# --------------------------------------------------------------------------------------------- psMNIST
def _show_acc(stat) -> str:
    return _said(stat, 3)


@family.rests_on
def psmnist_claim(accuracy: dict, column: str, scope: str = "") -> Claim:
    """§4.1: "the nnRNN matches orthogonal RNNs in performance, whereas RNN and LSTM show lesser performances"
    (:func:`.task_verdicts.psmnist`)."""
    j = judge.psmnist(accuracy)
    where = "N = 512, Fig. 2" if column == "hidden" else "269K parameters, supplement"
    if j.verdict == UNTESTED:
        here = "; ".join(f"{name(m)} {_show_acc(accuracy.get(m))}" for m in judge.PSMNIST_MODELS)
    elif not j.judged:
        here = "; ".join(f"{name(m)} {_show_acc(accuracy[m])}" for m in ("nnrnn", *ORTHOGONAL, "rnn", "lstm"))
    else:
        here = _psmnist_judged(j)
    return Claim(f"psMNIST ({column_words(column)}): \"the nnRNN matches orthogonal RNNs in performance, whereas "
                 "RNN and LSTM show lesser performances\"",
                 f"nnRNN with expRNN and EURNN, RNN and LSTM lower ({where})", _scoped(here, scope), j.verdict)


def _psmnist_judged(j: judge.Psmnist) -> str:
    accuracy = j.accuracy
    nn = accuracy["nnrnn"]
    here = f"nnRNN {_show_acc(nn)}; "
    if j.best is None:
        here += "every seed of every orthogonal RNN diverged, so there is nothing to match"
    else:
        b = accuracy[j.best]
        here += (f"best orthogonal {name(j.best)} {_show_acc(b)} (nnRNN "
                 + _versus(j.best_order, "clearly below", "clearly above (better than)") + f" {name(j.best)}"
                 + ("" if j.best_order else " " + _needs(nn, b, '.3f')) + ")")
        here += (f"; nnRNN clearly above {_join(j.lower_orth)}" if j.lower_orth else "") + "; " + "; ".join(
            f"{name(m)} {_show_acc(accuracy[m])}" for m in ORTHOGONAL if m != j.best)
    here += f"; RNN {_show_acc(accuracy['rnn'])}, LSTM {_show_acc(accuracy['lstm'])}"
    by_rule = [m for m in j.lesser if not accuracy[m].empty]
    here += (f"; clearly below nnRNN: {_join(by_rule)}" if by_rule else "") + "".join(
        f"; every seed of {name(m)} diverged (counted as lesser)" for m in j.lesser if accuracy[m].empty)
    if not j.lesser:
        here += "; neither RNN nor LSTM clearly below nnRNN"
    return here


# --------------------------------------------------------------------------------------------- PTB
@family.rests_on
def ptb_claim(bpc: dict, bptt: int, column: str, scope: str = "") -> Claim:
    """Table 1: nnRNN has the lowest test bpc of the non-gated models."""
    paper, here, verdict = _nnrnn_best(judge.nnrnn_best(bpc, lower=True), PAPER_PTB_BPC[(bptt, column)])
    return Claim(f"PTB (T_PTB = {bptt}, {column_words(column)}): nnRNN has the lowest test bpc of the non-gated "
                 "models (Table 1)", paper, _scoped(here, scope), verdict)


@family.rests_on
def ptb_accuracy_claim(accuracy: dict, bptt: int, column: str, scope: str = "") -> Claim:
    """Supplementary Table 2: nnRNN has the highest test accuracy of the non-gated models; ``accuracy`` maps a
    model to its test accuracy as a fraction, shown here in percent as the paper gives it."""
    j = judge.nnrnn_best(judge.in_percent(accuracy), lower=False)
    paper, here, verdict = _nnrnn_best(j, PAPER_PTB_ACCURACY[(bptt, column)])
    return Claim(f"PTB (T_PTB = {bptt}, {column_words(column)}): nnRNN has the highest test accuracy of the "
                 "non-gated models (supplementary Table 2)", "test accuracy (%): " + paper,
                 _scoped("test accuracy (%): " + here, scope), verdict)


def _nnrnn_best(j: judge.NnrnnBest, paper: dict) -> tuple[str, str, str]:
    """The paper's numbers, this grid's and the verdict."""
    values, others = j.values, [m for m in NON_GATED if m != "nnrnn"]
    paper_text = ", ".join(f"{name(m)} {_paper(paper[m])}" for m in ("nnrnn", *others))
    here = ", ".join(f"{name(m)} {_said(values.get(m), 3 if j.lower else 2)}" for m in ("nnrnn", *others))
    if j.verdict == UNTESTED or values["nnrnn"].empty:
        return paper_text, here, j.verdict
    word = "below" if j.lower else "above"
    by_rule = [m for m in j.beaten if not values[m].empty]
    if by_rule:
        here += f"; nnRNN clearly {word} " + _join(by_rule)
    here += "".join(f"; every seed of {name(m)} diverged (counted as worse)" for m in j.beaten if values[m].empty)
    if len(j.beaten) < len(others):
        here += f"; nnRNN not clearly {word} " + ("any of " if not j.beaten else "") + _join(
            [m for m in others if m not in j.beaten])
    return paper_text, here, j.verdict


@family.rests_on
def gated_claim(bpc: dict, bptt: int, scope: str = "") -> Claim:
    """§4.2: "Gated networks are well-suited for such tasks, and we could get an LSTM with N = 1024 hidden units to
    achieve 1.37 ± 0.003 BPC", against Table 1's non-gated models at N = 1024 (:func:`.task_verdicts.gated`).  The
    N = 1024 figure itself is the paper's size, which ``scope`` says."""
    j = judge.gated(bpc)
    paper = PAPER_PTB_BPC[(bptt, "hidden")] if (bptt, "hidden") in PAPER_PTB_BPC else {}
    paper_text = f"LSTM {_paper(PAPER_LSTM_BPC)} (N = 1024); " + ", ".join(
        f"{name(m)} {_paper(paper[m])}" for m in NON_GATED if m in paper)
    here = ", ".join(f"{name(m)} {_said(bpc.get(m), 3)}" for m in ("lstm", *NON_GATED))
    claim = (f"PTB (T_PTB = {bptt}, {column_words('hidden')}): \"Gated networks are well-suited for such tasks, and "
             "we could get an LSTM with N = 1024 hidden units to achieve 1.37 ± 0.003 BPC\" (the LSTM clearly below "
             "every non-gated model)")
    if j.verdict != UNTESTED:
        if j.beaten:
            here += "; the LSTM clearly below " + _join(j.beaten)
        if len(j.beaten) < len(NON_GATED):
            here += "; not clearly below " + _join([m for m in NON_GATED if m not in j.beaten])
    return Claim(claim, paper_text, _scoped(here, scope), j.verdict)


# --------------------------------------------------------------------------------------------- the gap to expRNN
@family.rests_on
def gap_claims(bpc150: dict, bpc300: dict, scope: str = "") -> list[Claim]:
    """§4.2 on the gap to expRNN.  ``bpc150`` and ``bpc300`` map a column ("params", "hidden") to {model: Stat
    of test bpc} at T_PTB = 150 and 300 (the shape :func:`nnrnn.experiments.reporting.collect.results` gives).  The
    gap is
    expRNN − nnRNN (positive: nnRNN better), its s.e. sqrt(se_e² + se_n²).  One claim per column given: the
    gap "appreciatively improves" at T_PTB = 300 (:func:`.task_verdicts.gap_change`); and, when both columns are given,
    one claim that at each T_PTB the gap at fixed hidden units is clearly larger than at the fixed parameter count
    (:func:`.task_verdicts.hidden_gap`)."""
    columns = [c for c in ("params", "hidden") if bpc150.get(c) or bpc300.get(c)]
    claims = [_gap_change_claim(bpc150.get(c, {}), bpc300.get(c, {}), c, scope) for c in columns]
    if len(columns) == 2:
        claims.append(_hidden_gap_claim(bpc150, bpc300, scope))
    return claims


def _show_gap(gap: Stat) -> str:
    if math.isinf(gap.mean):
        return "unbounded (every expRNN seed diverged)"
    return f"{gap.mean:.3f}" + ("" if math.isnan(gap.se) else f" ± {gap.se:.3f}")


def _gap_words(small: Stat, large: Stat, change: int | None) -> str:
    """``large`` against ``small`` (:func:`.task_verdicts.gap_order`), with the rule's margin when not clearly
    different."""
    if change is None:
        return "not comparable (every expRNN seed diverged in both)"
    return _versus(change, "clearly smaller", "clearly larger",
                   f"not clearly different (the rule needs a change above {margin(small, large):.3f})")


def _paper_gap(column: str) -> str:
    p150, p300 = PAPER_PTB_BPC[(150, column)], PAPER_PTB_BPC[(300, column)]
    g150, g300 = judge.gap(p150["exprnn"], p150["nnrnn"]), judge.gap(p300["exprnn"], p300["nnrnn"])
    return (f"expRNN − nnRNN (Table 1): {g150.mean:.2f} ± {g150.se:.2g} at T_PTB = 150, {g300.mean:.2f} ± "
            f"{g300.se:.2g} at 300; by this rule: {_gap_words(g150, g300, judge.gap_order(g150, g300))}")


@family.rests_on
def _gap_change_claim(b150: dict, b300: dict, column: str, scope: str) -> Claim:
    j = judge.gap_change(b150, b300)
    claim = (f"PTB ({column_words(column)}): the gap to expRNN \"is modest for equal number of parameters and "
             "shorter time scale (T_PTB=150), it appreciatively improves for T_PTB=300\" (test bpc, expRNN − nnRNN)"
             + ("" if column == "params" else "; the sentence is about the fixed parameter count, and this row asks "
                "the same at fixed hidden units"))
    here = "; ".join(f"T_PTB = {t}: expRNN {_show_bpc(b.get('exprnn'))}, nnRNN {_show_bpc(b.get('nnrnn'))}"
                     for t, b in ((150, b150), (300, b300)))
    if j.verdict == UNTESTED:
        pass
    elif j.g150 is None:
        here += "; no gap where every nnRNN seed diverged"
    else:
        here += (f"; gap {_show_gap(j.g150)} at T_PTB = 150, {_show_gap(j.g300)} at 300; at 300 the gap is "
                 + _gap_words(j.g150, j.g300, j.change))
    return Claim(claim, _paper_gap(column), _scoped(here, scope), j.verdict)


def _column_gaps(g: judge.ColumnGaps) -> str:
    """The gap at fixed hidden units against the gap at the fixed parameter count, in words."""
    head = f"gap {_show_gap(g.hidden)} at fixed hidden units against {_show_gap(g.params)} at the fixed parameter count"
    if not g.shared:
        return f"{head}, {_gap_words(g.params, g.hidden, g.change)}"
    exp_p, exp_h = g.exp_params, g.exp_hidden
    return (f"{head}; nnRNN's runs are the same in both, so the difference is expRNN's "
            f"{exp_h.mean:.3f} − {exp_p.mean:.3f} = {exp_h.mean - exp_p.mean:.3f}, "
            + _versus(g.change, "clearly smaller", "clearly larger",
                      f"not clearly different (the rule needs a difference above {margin(exp_p, exp_h):.3f})"))


@family.rests_on
def _hidden_gap_claim(bpc150: dict, bpc300: dict, scope: str) -> Claim:
    j = judge.hidden_gap(bpc150, bpc300)
    claim = ("PTB: \"Where the nnRNN shines is for equal numbers of hidden units, where the performance gap to "
             "expRNN is much greater\" (at each T_PTB, the gap at fixed hidden units against the fixed parameter "
             "count)")
    papers = [f"T_PTB = {bptt}: " + _column_gaps(g) for bptt, g in j.paper.items()]
    heres = [f"T_PTB = {bptt}: " + ("runs missing" if bptt in j.missing else
                                    "no gap where every nnRNN seed diverged" if g is None else _column_gaps(g))
             for bptt, g in j.here.items()]
    return Claim(claim, "; ".join(papers), _scoped("; ".join(heres), scope), j.verdict)
