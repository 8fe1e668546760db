"""Mechanism beside outcome: what training made of a run's recurrent matrix, measured when the run ends and kept in
its folder (``mechanism.json``, :data:`nnrnn.training.runfolder.MECHANISM`) beside its outcome.

What is measured, per layer and direction, is decided by the traits of the layer's class
(:mod:`nnrnn.models.traits`), never by its name:

* ``SCHUR_FORM`` (the nnRNN, the nnGRU's Schur-form gate, the complex nnRNN with ``COMPLEX_RECURRENCE``): the
  trained factors of V = P (Λ + T) Pᵀ (Pᴴ for a complex V) from ``schur_factors(layer, direction)``, P orthogonal
  (unitary), Λ the block-diagonal rotation-scaling part (2×2 blocks γ R(θ) and a 1×1 block for odd N; diagonal for
  the complex nnRNN), T strictly lower triangular.  Then

  - ``t_over_lambda``  r = ‖T‖_F / ‖Λ‖_F  (None when Λ = 0);
  - Henrici's departure from normality ``departure``  d(V) = sqrt(‖V‖_F² − Σ_i |λ_i|²)  and
    ``departure_normalized``  d(V) / ‖V‖_F.  Θ = Λ + T is block
    lower triangular, so its eigenvalues are those of its 1×1 and 2×2 diagonal blocks, and ‖V‖_F = ‖Θ‖_F (P
    orthogonal): both come from Θ exactly, never from an eigendecomposition of a (possibly strongly non-normal) V.
    d = 0 iff V is normal; where T has no entry inside Λ's blocks (``triangular="block"``, the complex form),
    d = ‖T‖_F;
  - ``basis_drift``  ‖P − P₀‖_F / √N,  P₀ the basis at initialisation: the run's network rebuilt from its seed
    (:func:`nnrnn.training.network.initial_of`, the way the trainer builds it), a function of the run's
    configuration alone and so the same after any kill and resume.  0 for an unmoved basis, at most 2;
  - ``spectral_radius``  ρ(V) = max_i |λ_i|.
* ``LINEAR_ANALYSIS`` (the nnLRU): its A = Λ + T is triangular already (Λ diagonal, T strictly upper): r, d (= ‖T‖_F)
  and ρ as above; it has no basis (None).
* any other layer with one real recurrent matrix (``GATES == 1``: the vanilla RNN, expRNN, EURNN): ρ(V) and d(V)
  from a computed eigendecomposition; r and the drift do not apply (None).
* the rest (gated and elementwise recurrences without a Schur form: LSTM, GRU, coRNN, LEM, LRU, minGRU): nothing;
  the record says why.

Fisher memory of the linear part (``GATES == 1``, or the nnLRU's exact linear recurrence).  The linear part of
h_t = φ(V h_{t−1} + W x_t + b) + σ ξ_t is h_t = V h_{t−1} + u s_t + σ ξ_t, a scalar signal s_t entering along
u = W w, w the unit input direction of largest ‖W w‖ (W's first right singular vector, so ‖u‖ = σ₁(W); for the
nnLRU, G = γ ⊙ B in W's place, as :func:`nnrnn.analysis.linear.fisher_memory_of` takes it; a complex V acts on
[Re h, Im h] by :func:`nnrnn.analysis.linear.real_form`).  With ε = σ² the variance of the run's state noise
(option ``state_noise`` σ), the paper's Fisher memory curve (Eq. explicit_FMC, :mod:`nnrnn.analysis.fisher`) is

    J(k) = uᵀ (Vᵏ)ᵀ C⁻¹ Vᵏ u,     C = ε Σ_{j≥0} Vʲ (Vʲ)ᵀ                          (``stationary``)

defined only for ρ(V) < 1 (else the record says why: an orthogonal V has none), and the same formula for the state
after the L steps of one of the run's sequences, started at rest as the tasks start them,

    J_L(k) = uᵀ (Vᵏ)ᵀ C_L⁻¹ Vᵏ u  (k < L),     C_L = ε Σ_{j<L} Vʲ (Vʲ)ᵀ     (``from_rest``)

defined for every V.  A run without state noise (none, or σ = 0) is measured at the theory's ε = 1 and the record
says so (J ∝ 1/ε).  Kept of each: J at the lags 0, 1, 2, 4, … below L and at L − 1 (the copy task recalls at lag
T + 10), the total (Σ_{k<L} J_L(k); J_tot = Σ_{k≥0} J(k)) and the total × ε / ‖u‖², which is 1 for every normal V
(Ganguli, Huh & Sompolinsky 2008; at every L from rest) and at most N, so that runs with inputs of other sizes
compare: above 1 is memory that only non-normal dynamics give.

The record (:func:`write_record`, JSON): ``checkpoint`` and ``step`` (what was measured: the last update's
parameters), ``measured`` (false: ``why``), ``noise`` (``state_noise``, ``epsilon``, ``source``), ``length`` (L) and
``cells``, per layer and direction (``l0``, ``l0_reverse``, ``l1``, …) the quantities above and ``fisher``
(``from_rest``, ``stationary``).  :func:`flat` gives a record's first cell as flat numbers, for a report's table.
"""
from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import torch

from ..tasks import task_class
from ..training import checkpoint, runfolder
from ..training.network import initial_of, load_saved
from . import fisher
from ._blas import single_threaded_blas
from .linear import linear_part, real_form

__all__ = ["RECORD", "basis_drift", "block_eigenvalues", "departure", "flat", "measure", "memory_summary",
           "read_record", "t_over_lambda", "write_record"]

RECORD = runfolder.MECHANISM  # the record's file in a run folder

DEFAULT_NOISE = 1.0  # ε of a run without state noise: the theory's (fisher.py, Table 3)
TOTAL_MAX_STEPS = 100_000  # J_tot's terms at most: ρ(V) within ~1e-4 of 1 needs more; the record then says so


def _np(tensor) -> np.ndarray:
    """A tensor as a float64 (complex128 for a complex one) NumPy array on the CPU."""
    tensor = tensor.detach().cpu()
    return tensor.to(torch.complex128 if tensor.is_complex() else torch.float64).numpy()


def block_eigenvalues(theta) -> np.ndarray:
    """The eigenvalues of a quasi-triangular Θ, read off its diagonal blocks: those of each 2×2 block (i, i+1) with
    Θ[i, i+1] ≠ 0 of a lower quasi-triangular Θ, else the diagonal (an upper or lower triangular Θ).  ValueError
    when Θ is neither (its eigenvalues are not on its diagonal blocks)."""
    theta = np.asarray(theta)
    n = theta.shape[0]
    if not np.tril(theta, -1).any():  # upper triangular (the nnLRU's A): the diagonal
        return np.diagonal(theta).astype(np.complex128)
    if np.triu(theta, 2).any():
        raise ValueError("theta must be triangular or lower quasi-triangular (nothing above its first "
                         "super-diagonal)")
    values, i = [], 0
    while i < n:
        if i + 1 < n and theta[i, i + 1] != 0:
            if i + 2 < n and theta[i + 1, i + 2] != 0:
                raise ValueError(f"theta's diagonal blocks overlap at {i + 1}: not quasi-triangular")
            values.extend(np.linalg.eigvals(theta[i:i + 2, i:i + 2]))
            i += 2
        else:
            values.append(theta[i, i])
            i += 1
    return np.asarray(values, dtype=np.complex128)


def departure(frobenius_squared: float, eigenvalues) -> tuple[float, float]:
    """(d, d / ‖V‖_F), Henrici's departure from normality d = sqrt(‖V‖_F² − Σ|λ_i|²) of a matrix with
    ``frobenius_squared`` = ‖V‖_F² and ``eigenvalues`` λ_i (rounding that makes the difference negative gives 0)."""
    dep = math.sqrt(max(frobenius_squared - float(np.sum(np.abs(eigenvalues) ** 2)), 0.0))
    return dep, (dep / math.sqrt(frobenius_squared) if frobenius_squared > 0 else 0.0)


def t_over_lambda(lam, t) -> float | None:
    """‖T‖_F / ‖Λ‖_F; None when Λ = 0."""
    lam_norm = float(np.linalg.norm(lam))
    return float(np.linalg.norm(t)) / lam_norm if lam_norm > 0 else None


def basis_drift(p, p0) -> float:
    """‖P − P₀‖_F / √N of two N × N bases."""
    p, p0 = np.asarray(p), np.asarray(p0)
    if p.shape != p0.shape or p.ndim != 2 or p.shape[0] != p.shape[1]:
        raise ValueError(f"p and p0 must be square matrices of one shape; got {p.shape} and {p0.shape}")
    return float(np.linalg.norm(p - p0) / math.sqrt(p.shape[0]))


def _lags(length: int) -> list[int]:
    """0, 1, 2, 4, … below ``length``, and ``length`` − 1."""
    lags, k = [0], 1
    while k < length:
        lags.append(k)
        k *= 2
    return sorted(set(lags) | {max(length - 1, 0)})


def _summary(curve: np.ndarray, lags: list[int], total: float, noise: float, u: np.ndarray) -> dict:
    return {"lags": lags, "curve": [float(curve[k]) for k in lags], "total": float(total),
            "total_normalized": float(total) * noise / float(u @ u) if u.any() else None}


@single_threaded_blas()
def memory_summary(theta, u, noise: float, length: int) -> dict:
    """The Fisher memory of h_t = Θ h_{t−1} + u s_t + ξ_t, ξ ~ N(0, ``noise`` I) (module docstring): ``from_rest``
    (after ``length`` steps from h = 0) and ``stationary``, each with ``lags``, ``curve`` (J at those lags),
    ``total`` and ``total_normalized`` (total × ε / ‖u‖²), or ``why`` it is undefined; ``warnings`` where a
    covariance is too ill-conditioned for ~3 digits (:func:`nnrnn.analysis.fisher.covariance_factor`)."""
    theta, u = np.asarray(theta, dtype=np.float64), np.asarray(u, dtype=np.float64)
    lags = _lags(length)
    out = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            curve = fisher.fisher_memory_from_rest(theta, length, u, noise)
            out["from_rest"] = _summary(curve, lags, curve.sum(), noise, u)
        except ValueError as error:  # C_L overflows float64 (ρ(Θ) far above 1)
            out["from_rest"] = {"why": str(error)}
        try:  # ρ(Θ) ≥ 1, or too close to 1 for float64: no stationary covariance
            curve = fisher.fisher_memory_curve(theta, length, u, noise)
            total = fisher.fisher_memory(theta, 0, u, noise, max_steps=TOTAL_MAX_STEPS).total
            out["stationary"] = _summary(curve, lags, total, noise, u)
        except ValueError as error:
            out["stationary"] = {"why": str(error)}
    messages = sorted({str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)})
    if messages:
        out["warnings"] = messages
    return out


def _signal(w_in: np.ndarray) -> np.ndarray:
    """u = W w, w the unit direction of largest ‖W w‖ (real w: a real input), as
    :func:`nnrnn.analysis.linear.fisher_memory_of` takes its default signal."""
    gram = (w_in.conj().T @ w_in).real
    return w_in @ np.linalg.eigh(gram)[1][:, -1]


def _schur_cell(layer, index: int, initial, complex_v: bool) -> tuple[dict, np.ndarray]:
    """The Schur-form quantities of one cell, and V (complex for a complex V)."""
    position = divmod(index, layer.num_directions)
    with torch.no_grad():
        p, lam, t = (_np(x) for x in layer.schur_factors(*position))
        p0 = _np(initial.schur_factors(*position)[0])
    theta = lam + t
    eigenvalues = block_eigenvalues(theta)
    dep, dep_normalized = departure(float(np.sum(np.abs(theta) ** 2)), eigenvalues)
    v = p @ theta @ (p.conj().T if complex_v else p.T)
    return {"t_over_lambda": t_over_lambda(lam, t), "departure": dep, "departure_normalized": dep_normalized,
            "basis_drift": basis_drift(p, p0), "spectral_radius": float(np.abs(eigenvalues).max())}, v


def _matrix_cell(v: np.ndarray) -> dict:
    """What applies to a recurrent matrix without a Schur form: ρ and Henrici's departure from its eigenvalues."""
    eigenvalues = np.linalg.eigvals(v)
    dep, dep_normalized = departure(float(np.sum(np.abs(v) ** 2)), eigenvalues)
    return {"t_over_lambda": None, "departure": dep, "departure_normalized": dep_normalized, "basis_drift": None,
            "spectral_radius": float(np.abs(eigenvalues).max())}


def _linear_cell(layer, index: int, noise: float, length: int) -> dict:
    """The nnLRU's exact linear recurrence: A = Λ + T upper triangular, its Fisher memory on [Re s, Im s]."""
    a, g = linear_part(layer, *divmod(index, layer.num_directions))
    lam, t = np.diag(np.diagonal(a)), np.triu(a, 1)
    dep, dep_normalized = departure(float(np.sum(np.abs(a) ** 2)), np.diagonal(a))
    u = _signal(g)
    return {"t_over_lambda": t_over_lambda(lam, t), "departure": dep, "departure_normalized": dep_normalized,
            "basis_drift": None, "spectral_radius": float(np.abs(np.diagonal(a)).max()),
            "fisher": memory_summary(real_form(a), np.concatenate([u.real, u.imag]), noise, length)}


def _cell(layer, index: int, initial, noise: float, length: int) -> dict:
    """Every quantity that applies to one layer and direction (module docstring), chosen by the class's traits."""
    cls = type(layer)
    if cls.LINEAR_ANALYSIS:
        return _linear_cell(layer, index, noise, length)
    complex_v = cls.COMPLEX_RECURRENCE
    if cls.SCHUR_FORM:
        entry, v = _schur_cell(layer, index, initial, complex_v)
    else:
        with torch.no_grad():
            v = _np(layer.recurrent_matrix(*divmod(index, layer.num_directions)))
        entry = _matrix_cell(v)
    if cls.GATES == 1:  # one matrix in h_t = φ(V h + W x + b): its linear part is V's
        w_in = _np(getattr(layer, "weight_ih" + layer.cells[index]))
        theta = real_form(v) if complex_v else v  # the complex nnRNN's W_ih rows are already [Re; Im]
        entry["fisher"] = memory_summary(theta, _signal(w_in), noise, length)
    return entry


def measurable(cls) -> str:
    """"" when :func:`measure` has something to measure for a layer of class ``cls``, else why not."""
    if cls.LINEAR_ANALYSIS or cls.SCHUR_FORM or cls.GATES == 1:
        return ""
    return ("its recurrence is elementwise (no recurrent matrix)" if cls.GATES == 0 else
            f"its recurrence is {cls.GATES} gated blocks without a Schur form: no one matrix to measure")


def noise_of(config: dict) -> dict:
    """The noise the Fisher memory is measured under: the run's ``state_noise`` σ (ε = σ²) where it has some, else
    the theory's ε = 1, saying so."""
    sigma = config.get("state_noise")
    if isinstance(sigma, (int, float)) and not isinstance(sigma, bool) and math.isfinite(sigma) and sigma > 0:
        return {"state_noise": float(sigma), "epsilon": float(sigma) ** 2, "source": "the run's state_noise"}
    return {"state_noise": sigma, "epsilon": DEFAULT_NOISE,
            "source": f"the analysis' default ε = {DEFAULT_NOISE:g}: the run adds no noise to its state"}


@single_threaded_blas()
def measure(layer, initial, config: dict) -> dict:
    """The mechanism record of a trained recurrent ``layer`` (module docstring), beside ``initial``, the same
    layer at initialisation (for P₀), for a run of ``config`` (its task's sequence length, its state noise):
    ``measured``, ``noise``, ``length`` and per layer and direction (``l0``, ``l0_reverse``, ``l1``, …) under
    ``cells``; ``why`` instead of them where nothing applies."""
    why = measurable(type(layer))
    if why:
        return {"measured": False, "why": why}
    noise = noise_of(config)
    length = int(task_class(config["task"]).sequence_length(config))
    cells = {suffix.removeprefix("_"): _cell(layer, index, initial, noise["epsilon"], length)
             for index, suffix in enumerate(layer.cells)}
    return {"measured": True, "noise": noise, "length": length, "cells": cells}


def _finite(net) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in net.parameters())


def write_record(folder) -> dict:
    """The run-end hook (:func:`nnrnn.training.train.train`'s ``on_end``): measure the parameters of the run's last
    checkpoint (its last update) against its initial network and write ``mechanism.json`` into ``folder``
    atomically; return the record.  A pure function of the checkpoint and the configuration, so a run killed
    and resumed writes what the uninterrupted run writes."""
    folder = Path(folder)
    last = runfolder.last_checkpoint(folder)
    if not last.is_file():  # it ended (diverged) before its first checkpoint
        record = {"measured": False, "why": "the run ended before its first checkpoint"}
    else:
        saved = load_saved(last)
        record = {"checkpoint": runfolder.LAST, "step": saved.checkpoint.get("step")}
        if _finite(saved.net):
            record.update(measure(saved.net.rnn, initial_of(saved).rnn, saved.config))
        else:
            record.update(measured=False, why="its last checkpoint holds NaN or inf parameters")
    checkpoint.atomic_write(folder / RECORD, lambda f: f.write(json.dumps(record, indent=1).encode()))
    return record


FLAT = ("t_over_lambda", "departure", "departure_normalized", "basis_drift", "spectral_radius")


def flat(record: dict | None) -> dict:
    """A record's first cell (``l0``) as flat numbers, None where a quantity does not apply or the run has no
    record: :data:`FLAT`'s, and ``fisher_from_rest`` and ``fisher_stationary``, each Fisher memory's total × ε / ‖u‖²
    (1 for a normal V)."""
    cell = (record or {}).get("cells", {}).get("l0", {})
    memory = cell.get("fisher", {})
    return {**{key: cell.get(key) for key in FLAT},
            **{f"fisher_{kind}": memory.get(kind, {}).get("total_normalized") for kind in ("from_rest", "stationary")}}


def read_record(folder) -> dict | None:
    """The mechanism record of a run folder; None where it has none (a run still training, or from before records
    were written) or it cannot be read."""
    try:
        record = json.loads((Path(folder) / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None
