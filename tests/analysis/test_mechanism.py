"""nnrnn.analysis.mechanism: the trained recurrent matrix's non-normality, basis drift, spectral radius and Fisher
memory, measured when a run ends and kept in its folder (mechanism.json).  References are worked out by hand in the
tests (float64), or computed by another route (an SVD for the input direction, the matrix composed by the layer)."""
import copy
import json
import math

import numpy as np
import pytest
import torch

import nnrnn
from nnrnn.analysis import mechanism
from nnrnn.analysis.fisher import fisher_memory_curve, fisher_memory_from_rest
from nnrnn.training import checkpoint
from nnrnn.training.train import train
from nnrnn_cli import command as nnrnn_cli
from tests.helpers import TINY, copy_config

COPY = {"task": "copy", "T": 4}  # sequences of T + 20 = 24 steps
LENGTH = 24


def rotation(angle: float) -> np.ndarray:
    return np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])


# ---------------------------------------------------------------------------------------------- the quantities
def test_a_normal_matrix_has_no_departure():
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))
    lam = np.zeros((4, 4))
    lam[:2, :2], lam[2:, 2:] = 0.9 * rotation(0.4), 0.5 * rotation(2.0)
    v = q @ lam @ q.T
    dep, normalized = mechanism.departure(float(np.sum(v ** 2)), np.linalg.eigvals(v))
    assert dep < 1e-7 and normalized < 1e-7  # rounding of ‖V‖² − Σ|λ|² ≈ 1e-16, under the square root
    assert mechanism.departure(float(np.sum(lam ** 2)), mechanism.block_eigenvalues(lam)) == (0.0, 0.0)


def test_the_departure_of_a_triangular_matrix_is_the_norm_of_its_strict_part():
    v = np.array([[0.5, 1.0, 2.0], [0.0, 0.3, 2.0], [0.0, 0.0, 0.1]])
    eigenvalues = mechanism.block_eigenvalues(v)  # upper triangular: the diagonal
    np.testing.assert_array_equal(eigenvalues, [0.5, 0.3, 0.1])
    dep, normalized = mechanism.departure(float(np.sum(v ** 2)), eigenvalues)
    assert dep == pytest.approx(3.0, rel=1e-14)  # sqrt(1 + 4 + 4)
    assert normalized == pytest.approx(3.0 / math.sqrt(0.25 + 0.09 + 0.01 + 9), rel=1e-14)
    assert mechanism.departure(float(np.sum(v.T ** 2)), mechanism.block_eigenvalues(v.T))[0] == pytest.approx(3.0)


def test_an_entry_inside_a_rotation_block_adds_its_square_to_the_departure():
    """Θ's block [[γc, −γs], [γs + t, γc]] (the strict T's in-block entry t) has eigenvalues γc ± i sqrt(γs(γs + t))
    while γs(γs + t) > 0: Σ|λ|² = 2γ²c² + 2γs(γs + t) and ‖block‖² − Σ|λ|² = t².  With T's 3 and 4 below the
    blocks: d² = t² + 25."""
    gamma, angle, t = 0.5, 1.0, 0.3
    theta = np.zeros((4, 4))
    theta[:2, :2] = gamma * rotation(angle)
    theta[2:, 2:] = 0.8 * rotation(2.5)
    theta[1, 0] += t
    theta[2, 0], theta[3, 1] = 3.0, 4.0
    eigenvalues = mechanism.block_eigenvalues(theta)
    np.testing.assert_allclose(np.sort_complex(eigenvalues), np.sort_complex(np.linalg.eigvals(theta)), atol=1e-12)
    c, s = gamma * math.cos(angle), gamma * math.sin(angle)
    np.testing.assert_allclose(sorted(eigenvalues[:2].imag), [-math.sqrt(s * (s + t)), math.sqrt(s * (s + t))])
    assert mechanism.departure(float(np.sum(theta ** 2)), eigenvalues)[0] == pytest.approx(math.sqrt(t * t + 25))
    assert c == pytest.approx(eigenvalues[0].real)
    with pytest.raises(ValueError, match="quasi-triangular"):
        mechanism.block_eigenvalues(np.ones((3, 3)))


def test_the_t_over_lambda_on_a_constructed_schur_form():
    lam = np.zeros((5, 5))
    lam[:2, :2], lam[2:4, 2:4], lam[4, 4] = 0.5 * rotation(1.0), 0.8 * rotation(2.0), 0.9
    t = np.zeros((5, 5))
    t[2, 0], t[4, 1] = 3.0, 4.0
    assert mechanism.t_over_lambda(lam, t) == pytest.approx(5.0 / math.sqrt(2 * 0.25 + 2 * 0.64 + 0.81))
    assert mechanism.t_over_lambda(lam, np.zeros((5, 5))) == 0.0
    assert mechanism.t_over_lambda(np.zeros((5, 5)), t) is None


def test_the_basis_drift():
    p0 = rotation(0.3)
    assert mechanism.basis_drift(p0, p0) == 0.0
    assert mechanism.basis_drift(-p0, p0) == pytest.approx(2.0)  # the farthest an orthogonal P can go
    # ‖R(φ) − I‖_F² = 2(1 − cos φ)² + 2 sin² φ = 4(1 − cos φ), over N = 2
    assert mechanism.basis_drift(rotation(0.3 + 0.7), p0) == pytest.approx(math.sqrt(2 * (1 - math.cos(0.7))))
    with pytest.raises(ValueError, match="p and p0"):
        mechanism.basis_drift(np.eye(2), np.eye(3))


def test_the_memory_of_one_unit_by_hand():
    """Θ = a, u = b: stationary C = ε / (1 − a²), J(k) = b² a^(2k) (1 − a²) / ε, J_tot = b²/ε; from rest
    C_L = ε (1 − a^(2L)) / (1 − a²), so J_L(k) = b² a^(2k) (1 − a²) / (ε (1 − a^(2L))) and Σ_{k<L} J_L(k) = b²/ε."""
    a, b, eps = 0.9, 2.0, 0.25
    summary = mechanism.memory_summary([[a]], [b], eps, LENGTH)
    stationary, rest = summary["stationary"], summary["from_rest"]
    assert stationary["lags"] == rest["lags"] == [0, 1, 2, 4, 8, 16, 23]
    np.testing.assert_allclose(stationary["curve"], [b * b * a ** (2 * k) * (1 - a * a) / eps for k in rest["lags"]],
                               rtol=1e-12)
    np.testing.assert_allclose(rest["curve"], [b * b * a ** (2 * k) * (1 - a * a) / (eps * (1 - a ** (2 * LENGTH)))
                                               for k in rest["lags"]], rtol=1e-12)
    assert stationary["total"] == pytest.approx(b * b / eps, rel=1e-10)
    assert rest["total"] == pytest.approx(b * b / eps, rel=1e-12)
    assert stationary["total_normalized"] == pytest.approx(1.0, rel=1e-10)
    assert rest["total_normalized"] == pytest.approx(1.0, rel=1e-12)
    assert "warnings" not in summary


def test_a_normal_network_holds_one_unit_of_memory_and_a_chain_more():
    """Ganguli et al. (2008): J_tot ε / ‖u‖² = 1 for every normal Θ, and so is Σ_{k<L} J_L(k) ε / ‖u‖² from rest;
    a non-normal Θ (a chain of gain 1.5 on a 0.5 diagonal, fed at its start) holds more."""
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((6, 6)))
    normal = q @ np.diag([0.9, 0.8, -0.7, 0.5, 0.3, 0.1]) @ q.T
    u = np.random.default_rng(2).standard_normal(6)
    summary = mechanism.memory_summary(normal, u, 1.0, LENGTH)
    assert summary["stationary"]["total_normalized"] == pytest.approx(1.0, rel=1e-9)
    assert summary["from_rest"]["total_normalized"] == pytest.approx(1.0, rel=1e-9)
    chain = 0.5 * np.eye(6) + np.diag(np.full(5, 1.5), -1)
    summary = mechanism.memory_summary(chain, np.eye(6)[0], 1.0, LENGTH)
    assert summary["stationary"]["total_normalized"] > 1.5 and summary["from_rest"]["total_normalized"] > 1.5


def test_an_orthogonal_network_has_no_stationary_memory_and_says_why_but_one_from_rest():
    """ρ = 1: no stationary state.  From rest C_L = εL I, so J_L(k) = ‖u‖² / (εL) at every lag."""
    summary = mechanism.memory_summary(rotation(0.5), [1.0, 0.0], 0.5, LENGTH)
    assert set(summary["stationary"]) == {"why"} and "spectral radius" in summary["stationary"]["why"]
    np.testing.assert_allclose(summary["from_rest"]["curve"], [1 / (0.5 * LENGTH)] * 7, rtol=1e-12)
    assert summary["from_rest"]["total_normalized"] == pytest.approx(1.0, rel=1e-12)
    overflowing = mechanism.memory_summary([[1e200]], [1.0], 1.0, LENGTH)
    assert "overflows" in overflowing["from_rest"]["why"] and "why" in overflowing["stationary"]


def test_the_noise_is_the_runs_state_noise_else_the_theorys_and_the_record_says_which():
    assert mechanism.noise_of({"state_noise": 0.5}) == {"state_noise": 0.5, "epsilon": 0.25,
                                                        "source": "the run's state_noise"}
    for config in ({}, {"state_noise": 0.0}, {"state_noise": None}):
        noise = mechanism.noise_of(config)
        assert noise["epsilon"] == 1.0 and "default" in noise["source"]


# ---------------------------------------------------------------------------------------------- a layer's record
def nnrnn_layer(in_block: float = 0.0) -> torch.nn.Module:
    """A float64 nnRNN of 4 units with γ = (0.5, 0.8), T's 3 and 4 below the blocks and ``in_block`` inside the
    first."""
    layer = nnrnn.NonNormalRNN(3, 4, dtype=torch.float64)
    form = layer.schur_form
    with torch.no_grad():
        form.theta.copy_(torch.tensor([1.0, 2.5], dtype=torch.float64))
        form.gamma.copy_(torch.tensor([0.5, 0.8], dtype=torch.float64))
        form.lower.zero_()
        form.lower[2, 0], form.lower[3, 1], form.lower[1, 0] = 3.0, 4.0, in_block
    return layer


def test_the_record_of_an_nnrnn_layer():
    layer = nnrnn_layer(in_block=0.3)
    record = mechanism.measure(layer, layer, {**COPY, "state_noise": 0.5})
    assert record["measured"] and record["length"] == LENGTH and record["noise"]["epsilon"] == 0.25
    cell = record["cells"]["l0"]
    assert cell["t_over_lambda"] == pytest.approx(math.sqrt(25 + 0.09) / math.sqrt(2 * 0.25 + 2 * 0.64))
    assert cell["departure"] == pytest.approx(math.sqrt(25 + 0.09))
    # ‖V‖² = ‖Λ + T‖² = ‖Λ‖² + ‖T‖² + 2 γ₁ sin θ₁ t: the in-block entry t adds to Λ's γ₁ sin θ₁
    frobenius = 2 * 0.25 + 2 * 0.64 + 25.09 + 2 * 0.5 * math.sin(1.0) * 0.3
    assert cell["departure_normalized"] == pytest.approx(math.sqrt(25.09 / frobenius))
    assert cell["basis_drift"] == 0.0  # beside itself: P = P₀
    assert cell["spectral_radius"] == pytest.approx(0.8)  # the in-block entry keeps block 1's moduli below 0.8
    # the Fisher memory of the matrix the layer composes, fed along W_ih's first singular direction (by an SVD)
    v = layer.weight_hh_l0.detach().numpy()
    left, values, _ = np.linalg.svd(layer.weight_ih_l0.detach().numpy())
    u = values[0] * left[:, 0]
    for kind, curve in (("stationary", fisher_memory_curve(v, LENGTH, u, 0.25)),
                        ("from_rest", fisher_memory_from_rest(v, LENGTH, u, 0.25))):
        np.testing.assert_allclose(cell["fisher"][kind]["curve"], curve[cell["fisher"][kind]["lags"]], rtol=1e-9)
    assert cell["fisher"]["from_rest"]["total"] == pytest.approx(curve.sum(), rel=1e-9)


def test_the_basis_drift_of_a_layer_is_against_the_initial_layer():
    initial = nnrnn_layer()
    layer = copy.deepcopy(initial)
    with torch.no_grad():
        layer.parametrizations.weight_hh_l0.original.add_(0.1)
        p, p0 = layer.schur_factors()[0].numpy(), initial.schur_factors()[0].numpy()
    drift = mechanism.measure(layer, initial, COPY)["cells"]["l0"]["basis_drift"]
    assert drift == pytest.approx(np.linalg.norm(p - p0) / 2.0) and drift > 0.01


def test_a_plain_matrix_gives_what_applies_to_it():
    layer = nnrnn.VanillaRNN(2, 3, dtype=torch.float64)
    with torch.no_grad():
        layer.weight_hh_l0.copy_(torch.tensor([[0.5, 1.0, 2.0], [0.0, 0.3, 2.0], [0.0, 0.0, 0.1]]))
    cell = mechanism.measure(layer, layer, COPY)["cells"]["l0"]
    assert cell["departure"] == pytest.approx(3.0) and cell["spectral_radius"] == pytest.approx(0.5)
    assert cell["t_over_lambda"] is None and cell["basis_drift"] is None
    assert cell["fisher"]["stationary"]["total"] > 0 and cell["fisher"]["from_rest"]["total"] > 0


def test_every_layer_and_direction_is_measured():
    layer = nnrnn.NonNormalRNN(3, 4, num_layers=2, bidirectional=True)
    assert set(mechanism.measure(layer, layer, COPY)["cells"]) == {"l0", "l0_reverse", "l1", "l1_reverse"}


@pytest.mark.parametrize("model", ["nngru", "nnrnn-complex", "nnlru", "lstm", "lru"])
def test_what_is_measured_follows_the_class_traits(model):
    layer = nnrnn.create(model, 3, 4)
    record = mechanism.measure(layer, layer, COPY)
    cls = type(layer)
    assert record["measured"] == (cls.SCHUR_FORM or cls.LINEAR_ANALYSIS or cls.GATES == 1)
    if not record["measured"]:
        assert record["why"]
        return
    cell = record["cells"]["l0"]
    assert (cell["basis_drift"] == 0.0) == cls.SCHUR_FORM  # P = P₀ beside itself; no basis otherwise
    assert ("fisher" in cell) == (cls.GATES == 1 or cls.LINEAR_ANALYSIS)
    assert cell["departure"] >= 0 and cell["t_over_lambda"] is not None


# ---------------------------------------------------------------------------------------------- the run's record
def test_a_run_writes_its_record_and_a_killed_and_resumed_run_writes_the_same(tmp_path):
    whole = copy_config(tmp_path, "whole", steps=12, checkpoint_every=2, eval_every=2)
    train(whole, on_end=mechanism.write_record)
    part = copy_config(tmp_path, "part", steps=12, checkpoint_every=2, eval_every=2)

    def stop_at_eight(step, record):
        if step == 8:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(part, on_eval=stop_at_eight, on_end=mechanism.write_record)
    assert checkpoint.load(tmp_path / "part" / "checkpoints" / "last.pt")["step"] == 8
    assert mechanism.read_record(tmp_path / "part") is None  # stopped, not ended
    train(part, resume=True, on_end=mechanism.write_record)
    written = (tmp_path / "whole" / "mechanism.json").read_bytes()
    assert (tmp_path / "part" / "mechanism.json").read_bytes() == written
    record = json.loads(written)
    assert record["measured"] and record["step"] == 12 and record["checkpoint"] == "checkpoints/last.pt"
    cell = record["cells"]["l0"]
    assert cell["basis_drift"] > 0 and cell["t_over_lambda"] > 0  # P and T trained
    assert "default" in record["noise"]["source"]
    shown = mechanism.flat(record)  # what a report's table reads
    assert shown["basis_drift"] == cell["basis_drift"] and shown["t_over_lambda"] == cell["t_over_lambda"]
    assert shown["fisher_from_rest"] == cell["fisher"]["from_rest"]["total_normalized"] > 0
    assert set(mechanism.flat(None).values()) == {None}


def test_the_record_is_of_the_last_update_against_the_seeded_start(tmp_path):
    """Computed here from the checkpoint's own tensors: T = lower ⊙ mask, Λ from θ and γ."""
    config = copy_config(tmp_path, steps=4)
    train(config, on_end=mechanism.write_record)
    record = mechanism.read_record(tmp_path / "run")
    state = checkpoint.load(tmp_path / "run" / "checkpoints" / "last.pt")["model"]
    key = "rnn.parametrizations.weight_hh_l0.0."
    t = (state[key + "lower"] * state[key + "mask"]).double()
    theta, gamma = state[key + "theta"].double(), state[key + "gamma"].double()
    lam_squared = float((gamma ** 2).sum() * 2) - (float(gamma[-1] ** 2) if len(gamma) > len(theta) else 0.0)
    assert record["cells"]["l0"]["t_over_lambda"] == pytest.approx(float(t.norm()) / math.sqrt(lam_squared),
                                                                      rel=1e-6)


def test_a_diverged_run_records_its_last_good_checkpoint_or_that_it_had_none(tmp_path):
    from nnrnn.errors import TrainingDiverged
    from nnrnn.training.config import resolve_config
    diverging = resolve_config({"task": "copy", "model": "rnn", "nonlinearity": "relu", "hidden": 8, "T": 4,
                                "batch_size": 4, "steps": 50, "lr": 1e30, "max_bad_steps": 3, "checkpoint_every": 1,
                                "eval_every": 1, "log_every": 1, "progress": False, "out": str(tmp_path / "run")})
    with pytest.raises(TrainingDiverged):
        train(diverging, on_end=mechanism.write_record)
    record = mechanism.read_record(tmp_path / "run")
    assert record["step"] == checkpoint.load(tmp_path / "run" / "checkpoints" / "last.pt")["step"]
    assert record["measured"] and record["cells"]["l0"]["spectral_radius"] > 0
    (tmp_path / "run" / "checkpoints" / "last.pt").unlink()
    assert mechanism.write_record(tmp_path / "run") == {"measured": False,
                                                        "why": "the run ended before its first checkpoint"}


def test_nnrnn_train_writes_the_record(tmp_path, undrawn_figures):
    assert nnrnn_cli.main(["train", "copy", *TINY, "--steps", "2", "--out", str(tmp_path / "run")]) == 0
    record = mechanism.read_record(tmp_path / "run")
    assert record["measured"] and record["step"] == 2 and set(record["cells"]) == {"l0"}
