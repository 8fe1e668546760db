"""nnrnn.experiments.verdicts: each claim judged in its own words by the two-standard-error rule."""
import math

from nnrnn.experiments import verdicts
from nnrnn.experiments.verdicts import FAILS, HOLDS, PARTLY, UNTESTED, Stat

BASELINE = 10 * math.log(8) / 220


def s(mean, se=0.001, n=3, failed=0):
    return Stat(mean, se, n, failed)


def test_stat_of_counts_failed_seeds_and_uses_the_sample_standard_error():
    stat = Stat.of([1.0, 2.0, 3.0, None, float("nan")])
    assert (stat.mean, stat.n, stat.failed) == (2.0, 3, 2)
    assert math.isclose(stat.se, 1 / math.sqrt(3))
    assert Stat.of([None]).show(3) == "diverged" and Stat.of([0.5]).show(2) == "0.50"


def test_the_two_standard_error_rule():
    assert verdicts.below(s(1.0, 0.1), s(1.3, 0.1))       # 0.3 > 2·0.141
    assert not verdicts.below(s(1.0, 0.1), s(1.25, 0.1))  # 0.25 < 0.283
    assert not verdicts.differ(s(1.0, 0.1), s(1.25, 0.1))
    assert verdicts.below(s(1.0), Stat.of([None]))        # a model that diverged is beaten by every other
    assert verdicts.below_value(s(0.5, 0.1), 0.71) and not verdicts.below_value(s(0.5, 0.1), 0.69)


def ptb_numbers(nn):
    return {"exprnn": s(2.28, 0.01), "eurnn": s(2.55, 0.03), "rnn-orth": s(2.64, 0.003), "rnn": s(3.76, 0.2),
            **({"nnrnn": nn} if nn else {})}


def test_ptb_claim_tells_missing_runs_from_diverged_ones():
    assert verdicts.ptb_claim(ptb_numbers(None), 150, "hidden").verdict == UNTESTED
    claim = verdicts.ptb_claim(ptb_numbers(Stat.of([None, None, None])), 150, "hidden")
    assert claim.verdict == FAILS and claim.here.startswith("nnRNN diverged")
    claim = verdicts.ptb_claim(ptb_numbers(s(2.10, 0.01)), 300, "params")
    assert claim.verdict == HOLDS and "nnRNN clearly below RNN, RNN-orth, EURNN and expRNN" in claim.here
    assert "1.49" in claim.paper  # Table 1's T_PTB = 300, fixed-parameter column
    claim = verdicts.ptb_claim(ptb_numbers(s(2.29, 0.01)), 150, "hidden")  # within 2 s.e. of expRNN
    assert claim.verdict == PARTLY and "not clearly below expRNN" in claim.here


def copy_numbers(**changes):
    loss = {"exprnn": s(1e-4, 1e-5), "eurnn": s(2e-4, 1e-5), "rnn-orth": s(3e-4, 1e-5), "nnrnn": s(9e-4, 5e-4),
            "lstm": s(0.0946, 1e-4), "rnn": s(0.0949, 2e-4)}
    speed = {m: s(500, 50) for m in ("exprnn", "eurnn", "rnn-orth", "nnrnn")}
    speed.update({m: Stat.of([None] * 3) for m in ("lstm", "rnn")})
    for key, value in changes.items():
        model, what = key.rsplit("_", 1)
        (loss if what == "loss" else speed)[model.replace("_", "-")] = value
    return loss, speed


def test_copy_claims_name_every_orthogonal_rnn_and_the_training_speed():
    all_orth, matched, lstm_rnn = verdicts.copy_claims(*copy_numbers(), BASELINE, "hidden")
    assert (all_orth.verdict, matched.verdict, lstm_rnn.verdict) == (HOLDS, HOLDS, HOLDS)
    # EURNN and RNN-orth above 10% of the baseline: the "all orthogonal RNNs" claim holds only partly
    all_orth, *_ = verdicts.copy_claims(*copy_numbers(eurnn_loss=s(0.0457, 0.0067), rnn_orth_loss=s(0.06, 0.04)),
                                        BASELINE, "hidden")
    assert all_orth.verdict == PARTLY and "EURNN 0.0457 ± 0.0067" in all_orth.here
    # nnRNN as good but clearly slower than the fastest orthogonal RNN: matches the performance only
    _, matched, _ = verdicts.copy_claims(*copy_numbers(nnrnn_speed=s(2000, 100)), BASELINE, "params")
    assert matched.verdict == PARTLY and "clearly longer than" in matched.here
    # an nnRNN seed that never solves it: no time to solve, and its loss is above 10% of the baseline
    _, matched, _ = verdicts.copy_claims(*copy_numbers(nnrnn_loss=s(0.03, 0.02), nnrnn_speed=Stat.of([None] * 3)),
                                         BASELINE, "hidden")
    assert matched.verdict == FAILS
    *_, lstm_rnn = verdicts.copy_claims(*copy_numbers(lstm_loss=s(1e-3, 1e-4)), BASELINE, "hidden")
    assert lstm_rnn.verdict == PARTLY  # the LSTM solved it: only "RNN failed completely" holds


def test_psmnist_claim():
    acc = {"exprnn": s(0.807, 0.014), "eurnn": s(0.743, 0.015), "rnn-orth": s(0.675, 0.025),
           "nnrnn": s(0.811, 0.006), "rnn": Stat.of([0.571, None, None]), "lstm": s(0.401, 0.019)}
    claim = verdicts.psmnist_claim(acc, "hidden")
    assert claim.verdict == HOLDS and "(2 of 3 seeds diverged)" in claim.here
    acc["nnrnn"] = s(0.70, 0.01)
    assert verdicts.psmnist_claim(acc, "hidden").verdict == PARTLY  # still above RNN and LSTM


def test_gamma_claims():
    bpc = {**ptb_numbers(s(2.16, 0.01)), "nnrnn γ=1": Stat(2.10, 0.01, 2, 1), "nnrnn γ=0.958": s(2.17, 0.01)}
    one, held = verdicts.gamma_claims(bpc, 150)
    assert one.verdict == HOLDS and "1 of 3 γ = 1 runs diverged" in one.here
    assert held.verdict == HOLDS and "not clearly different" in held.here
    bpc["nnrnn γ=0.958"] = s(2.30, 0.01)
    assert verdicts.gamma_claims(bpc, 300)[1].verdict == FAILS
    bpc["nnrnn γ=1"] = s(2.16, 0.01)  # none diverged, better than some models but not than nnRNN
    one, _ = verdicts.gamma_claims(bpc, 300)
    assert one.verdict == FAILS and "not clearly below nnRNN" in one.here  # beating weak models is not the claim
    bpc["nnrnn γ=1"] = s(4.0, 0.01)
    assert verdicts.gamma_claims(bpc, 300)[0].verdict == FAILS


def learned(tri, conc=(0.1, 0.1, 0.6), delay=2.0, modulus=(1.0, 0.99, 0.9), gamma=(1.0, 0.99, 0.96)):
    keys = ("copy", "psmnist", "ptb")
    return {task: {"triangular_fraction": s(tri[i], 0.01), "departure": s(tri[i], 0.01),
                   "angle_concentration": s(conc[i], 0.02), "delay_line": s(delay, 0.1),
                   "mean_modulus": s(modulus[i], 0.005), "mean_gamma": s(gamma[i], 0.001)}
            for i, task in enumerate(keys)}


def test_structure_claims_over_seeds():
    claims = verdicts.structure_claims(learned((0.02, 0.2, 0.7)))
    assert [c.verdict for c in claims] == [HOLDS] * 5
    claims = verdicts.structure_claims(learned((0.26, 0.15, 0.72), conc=(0.1, 0.1, 0.12), delay=0.9,
                                               modulus=(1.0, 1.0, 1.0), gamma=(1.0, 1.0, 1.0)))
    # copy's T is not near 0 (26% of Θ), psMNIST below copy, PTB's angles not aligned, no delay line, |λ| at 1
    assert [c.verdict for c in claims] == [PARTLY, PARTLY, FAILS, FAILS, FAILS]
    assert "copy clearly above psMNIST" in claims[1].here  # the order reversed, said so
    # |λ| lower on PTB while the trained γ stays at 1 (the cpu-long grid): the γ̄ claim holds only partly
    claims = verdicts.structure_claims(learned((0.02, 0.2, 0.7), gamma=(0.988, 0.998, 0.999)))
    assert claims[4].verdict == PARTLY
    assert all(c.verdict == UNTESTED for c in verdicts.structure_claims({}))


def test_compare_counts_a_model_that_diverged_as_the_worse():
    diverged = Stat.of([None, None])
    text, sign = verdicts.compare("nngru", diverged, "gru", s(0.8, 0.01), lower_is_better=False)
    assert sign == -1 and "worse than" in text
    assert verdicts.compare("nngru", s(2.1, 0.01), "lstm", diverged)[1] == 1
    assert verdicts.compare("nngru", s(2.10, 0.01), "lstm", s(2.12, 0.01))[1] == 0  # 0.02 < 2·0.0141
    assert "3e+26" in Stat(3e26, math.nan, 1, 1).show(3)


def test_compare_says_what_a_seed_without_a_value_did():
    never = Stat.of([None, None, None])
    text, sign = verdicts.compare("nnrnn delay", never, "nnrnn", never, 0, failed="never solved")
    assert sign == 0 and text == "nnRNN (delay init) and nnRNN: every seed never solved"
    text, sign = verdicts.compare("nnrnn delay", Stat.of([400.0, None]), "nnrnn", never, 0, failed="never solved")
    assert sign == 1 and "1 of 2 seeds never solved" in text and "diverged" not in text
