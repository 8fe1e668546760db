"""The theory of §3, exact on a trained non-normal LRU (:class:`~nnrnn.models.nnlru.NonNormalLRU`): its state
recurrence s_t = A s_{t−1} + G v_t (A = Λ + T, G = γ ⊙ B, v_t the LayerNorm of the encoded input) is linear, so
its Fisher memory curve is :func:`nnrnn.analysis.fisher.fisher_memory` of A's real form with the input vector
G w, w the signal's direction and size in v's space.

* :func:`linear_part` — A and G of one layer and direction, as complex arrays;
* :func:`real_form` — [[Re A, −Im A], [Im A, Re A]], A acting on [Re s, Im s];
* :func:`fisher_memory_of` — J(k) of a signal along w, with isotropic noise ε on the state's 2N_s real features
  (the theory's model: a scalar signal u_t w enters with the noise, J(k) the Fisher information the state at t
  holds about u_{t−k});
* :func:`analyze_nnlru` — ``nnrnn analyze``'s figure and summary for an nnlru: eigenvalues, |T|, J(k).
"""
from __future__ import annotations

import json
import os

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from . import fisher, plots
from ._blas import single_threaded_blas

__all__ = ["analyze_nnlru", "fisher_memory_of", "linear_part", "real_form"]


def linear_part(model: nn.Module, layer: int = 0, direction: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(A, G): A = Λ + T (N_s × N_s) and G = γ ⊙ B (N_s × N), complex128, of one layer and direction of an nnlru."""
    suffix = model.cells[layer * model.num_directions + direction]
    with torch.no_grad():
        a = model.transition_matrix(layer, direction).to(torch.complex128).cpu().numpy()
        gamma = torch.exp(getattr(model, "gamma_log" + suffix)).to(torch.float64).cpu().numpy()
        b = torch.complex(getattr(model, "b_real" + suffix), getattr(model, "b_imag" + suffix))
        b = b.to(torch.complex128).cpu().numpy()
    return a, gamma[:, None] * b


def real_form(a) -> np.ndarray:
    """[[Re A, −Im A], [Im A, Re A]] (2N × 2N, float64): A acting on [Re s, Im s]."""
    a = np.asarray(a, dtype=np.complex128)
    return np.block([[a.real, -a.imag], [a.imag, a.real]])


def _principal_signal(model: nn.Module, inputs: torch.Tensor) -> np.ndarray:
    """√(largest eigenvalue) × its eigenvector of the covariance of v_t = LayerNorm(W_ih x_t + b) over ``inputs``
    (L, B, N_in) or (L, N_in): the direction and size of the input's strongest component, as layer 0 sees it."""
    with torch.no_grad():
        x = inputs.to(model.weight_ih_l0.dtype).reshape(-1, inputs.shape[-1])
        u = F.linear(x, model.weight_ih_l0, getattr(model, "bias_ih_l0", None))
        v = F.layer_norm(u, (model.hidden_size,), model.norm_weight_l0, model.norm_bias_l0)
        v = v.to(torch.float64).cpu().numpy()
    values, vectors = np.linalg.eigh(np.cov(v, rowvar=False).reshape(v.shape[1], v.shape[1]))
    return np.sqrt(max(values[-1], 0.0)) * vectors[:, -1]


@single_threaded_blas()
def fisher_memory_of(model: nn.Module, steps: int | None = None, signal=None, inputs: torch.Tensor | None = None,
                     noise: float = 1.0, layer: int = 0, direction: int = 0) -> fisher.FisherMemory:
    """The Fisher memory curve J(k) and J_tot (:func:`nnrnn.analysis.fisher.fisher_memory`) of an nnlru's linear
    part: Θ = :func:`real_form` (A), input vector [Re G w, Im G w], noise ε (``noise``) on every real feature.

    ``signal``: w (N), the signal's direction and size in v's space.  Else, with ``inputs`` (layer 0's inputs,
    (L, B, N_in)): the principal component of v over them, scaled by its standard deviation.  Else: the real unit w
    of largest ‖G w‖, the direction the recurrence takes in most strongly.  ``steps``: as
    :func:`~nnrnn.analysis.fisher.fisher_memory` (None: until J_tot has converged).  ValueError for a ``signal``
    of the wrong size, ``inputs`` for a layer above 0, or ρ(A) ≥ 1."""
    a, g = linear_part(model, layer, direction)
    if signal is not None:
        w = np.asarray(signal, dtype=np.float64).reshape(-1)
        if w.shape != (g.shape[1],):
            raise ValueError(f"signal must have {g.shape[1]} entries (the model's hidden_size); got shape "
                             f"{np.shape(signal)}")
    elif inputs is not None:
        if layer != 0:
            raise ValueError(f"inputs give the statistics of layer 0's input only; got layer {layer}: pass signal")
        w = _principal_signal(model, inputs)
    else:
        w = np.linalg.eigh((g.conj().T @ g).real)[1][:, -1]  # the real unit w of largest ‖G w‖ (v is real)
    u = g @ w
    return fisher.fisher_memory(real_form(a), steps, np.concatenate([u.real, u.imag]), noise)


def analyze_nnlru(model: nn.Module, out_dir, title: str, extra: dict | None = None, inputs=None) -> dict:
    """Write ``nnlru.png`` (per layer and direction beyond the first: ``nnlru_l1.png``, ``nnlru_l0_reverse.png``,
    …: A's eigenvalues with the unit circle, |T|, and J(k) of :func:`fisher_memory_of`) and ``summary.json``
    to ``out_dir``; return the summary: per cell the spectral radius, ‖T‖_F / ‖A‖_F, Henrici's departure from
    normality (‖T‖_F: A is already in Schur form) and J_tot (or why it has none: ρ(A) ≥ 1 in floating point)."""
    os.makedirs(out_dir, exist_ok=True)
    cells, files = {}, []
    for index, suffix in enumerate(model.cells):
        layer, direction = divmod(index, model.num_directions)
        a, _ = linear_part(model, layer, direction)
        t = np.triu(a, 1)
        entry = {"spectral_radius": float(np.abs(np.diag(a)).max()),
                 "departure_from_normality": float(np.linalg.norm(t)),
                 "triangular_fraction": float(np.linalg.norm(t) / (np.linalg.norm(a) or 1.0))}
        try:
            memory = fisher_memory_of(model, inputs=inputs if layer == 0 else None, layer=layer,
                                      direction=direction)
            curve, entry["fisher_memory_total"] = memory.curve, memory.total
        except ValueError as error:  # ρ(A) = 1 in floating point: no stationary state, no finite J
            curve, entry["fisher_memory_total"] = None, f"none: {error}"
        name = "nnlru.png" if suffix == "_l0" else f"nnlru{suffix}.png"
        files.append(plots.plot_linear_recurrence(np.diag(a), np.abs(t), curve, os.path.join(out_dir, name),
                                                  title=title if suffix == "_l0" else f"{title}, {suffix[1:]}"))
        cells[suffix[1:]] = entry
    summary = {"model": type(model).__name__, "hidden_size": model.hidden_size, "state_size": model.state_size,
               **cells["l0"], "cells": cells, "files": [os.path.basename(f) for f in files] + ["summary.json"]}
    summary.update({k: v for k, v in (extra or {}).items() if k not in summary})
    with open(os.path.join(out_dir, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2, default=str)
    return summary
