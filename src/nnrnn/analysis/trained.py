"""Looking inside recurrent models: Schur form Θ = Λ + T, spectra, non-normality, gradient propagation.

Conventions (the paper's §2): V = P Θ Pᵀ with P orthogonal and Θ = Λ + T lower
quasi-triangular: Λ holds the 1×1 and 2×2 diagonal blocks (eigenvalues
γ e^{±iθ}), T the strictly lower part outside them.

* nnRNN (or any module with a :class:`~nnrnn.parametrizations.SchurForm`
  parametrization): P, Λ and T are the trained factors themselves.
* every other model (vanilla RNN, expRNN, EURNN, LSTM gates, torch.nn.RNN):
  the real Schur form of scipy.linalg.schur(V, output='real'), V = Z S Zᵀ with
  S upper quasi-triangular, is reversed, P = Z J and Θ = J S J with J the
  exchange (anti-identity) matrix, so Θ is lower quasi-triangular like nnRNN's.
  The real Schur form is unique only up to the ordering of the eigenvalues and
  signs of P's columns, and it is numerically sensitive for strongly
  non-normal V (the paper's SM, "Numerical instabilities of the Schur
  decomposition"); the reconstruction error ‖PΘPᵀ − V‖/‖V‖ is reported.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sl
import torch
from torch import nn
from torch.nn.utils import parametrize

from ..parametrizations import SchurForm
from . import plots
from ._blas import single_threaded_blas

__all__ = [
    "SchurView", "analyze_model", "eigen_angles_moduli", "find_schur_form", "gradient_propagation",
    "henrici_departure", "matrix_summary", "model_name", "real_schur_lower", "recurrent_layer",
    "recurrent_matrices", "schur_links", "schur_view",
    "split_theta", "subdiagonal_profile",
]

LSTM_GATES = ("input", "forget", "cell", "output")
GRU_GATES = ("reset", "update", "new")


# ------------------------------------------------------------------------------------------------
# Getting at the recurrent matrices
# ------------------------------------------------------------------------------------------------
def _np(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().to("cpu", torch.float64).numpy()
    return np.asarray(t, dtype=np.float64)


def _cells(model: nn.Module) -> list[str]:
    """The layer/direction suffixes of a recurrent layer: '_l0', '_l0_reverse', '_l1', …"""
    directions = 2 if getattr(model, "bidirectional", False) else 1
    return [f"_l{k}" + ("_reverse" if d else "") for k in range(getattr(model, "num_layers", 1))
            for d in range(directions)]


def _key(name: str, suffix: str) -> str:
    """'V' (or a gate's name) for the first layer's forward direction, 'V_l1', 'cell_l0_reverse', … else."""
    return name if suffix == "_l0" else name + suffix


def tensor_for(key: str) -> str:
    """The recurrent weight a matrix key of :func:`recurrent_matrices` comes from: 'V' → 'weight_hh_l0',
    'V_l1_reverse' → 'weight_hh_l1_reverse'."""
    suffix = key.split("_", 1)[1] if "_" in key else "l0"
    return "weight_hh_" + suffix


def recurrent_matrices(model: nn.Module) -> dict[str, np.ndarray]:
    """Every hidden-to-hidden matrix of ``model`` as float64 arrays, by name.

    'V' for the first layer of a model with ``recurrent_matrix()`` or of a torch.nn.RNN; one
    entry per gate for an LSTM (input, forget, cell, output) or a GRU (reset, update, new).
    Further layers and reverse directions add the same names with the suffix '_l1',
    '_l0_reverse', ….
    """
    out = {}
    with torch.no_grad():
        for i, suffix in enumerate(_cells(model)):
            layer, direction = i // (2 if getattr(model, "bidirectional", False) else 1), int("reverse" in suffix)
            weight = getattr(model, "weight_hh" + suffix, None)
            if isinstance(model, nn.LSTM):
                out.update({_key(g, suffix): _np(block) for g, block in zip(LSTM_GATES, weight.chunk(4, 0))})
            elif isinstance(model, nn.GRU):  # nnrnn's gru and nngru too: every gate, not only recurrent_matrix()'s
                out.update({_key(g, suffix): _np(block) for g, block in zip(GRU_GATES, weight.chunk(3, 0))})
            elif hasattr(model, "recurrent_matrix"):
                out[_key("V", suffix)] = _np(model.recurrent_matrix(layer, direction))
            elif isinstance(model, nn.RNN):
                out[_key("V", suffix)] = _np(weight)
            else:
                raise TypeError(f"cannot find a recurrent matrix in {type(model).__name__}: it needs a "
                                "recurrent_matrix() method or to be a torch.nn.RNN/LSTM/GRU")
    return out


def find_schur_form(model: nn.Module, tensor: str | None = None):
    """(SchurForm, owning module, tensor name) of the Schur-form parametrization of ``tensor`` (the first
    one found when None) in ``model``, or None."""
    for module in model.modules():
        if not parametrize.is_parametrized(module):
            continue
        for name, plist in module.parametrizations.items():
            if isinstance(plist[0], SchurForm) and (tensor is None or name == tensor):
                return plist[0], module, name
    return None


# ------------------------------------------------------------------------------------------------
# Schur form
# ------------------------------------------------------------------------------------------------
@single_threaded_blas()
def real_schur_lower(matrix) -> tuple[np.ndarray, np.ndarray]:
    """(P, Θ) with V = P Θ Pᵀ, P orthogonal and Θ lower quasi-triangular (real Schur form of
    scipy.linalg.schur, output='real', with rows and columns reversed)."""
    v = _np(matrix)
    if v.ndim != 2 or v.shape[0] != v.shape[1]:
        raise ValueError(f"need a square matrix; got shape {v.shape}")
    s, z = sl.schur(v, output="real")
    return z[:, ::-1].copy(), s[::-1, ::-1].copy()


def _blocks_from_structure(theta: np.ndarray) -> list[tuple[int, ...]]:
    """Diagonal blocks of a lower quasi-triangular Θ: (i, i+1) wherever Θ[i, i+1] ≠ 0."""
    n, blocks, i = theta.shape[0], [], 0
    while i < n:
        if i + 1 < n and theta[i, i + 1] != 0:
            blocks.append((i, i + 1))
            i += 2
        else:
            blocks.append((i,))
            i += 1
    return blocks


def split_theta(theta: np.ndarray, blocks: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """(Λ, T): Λ the entries inside the diagonal ``blocks``, T = the rest of the lower triangle."""
    lam = np.zeros_like(theta)
    for b in blocks:
        idx = np.array(b)
        lam[np.ix_(idx, idx)] = theta[np.ix_(idx, idx)]
    t = np.tril(theta - lam, -1)
    return lam, t


@dataclass
class SchurView:
    """V = P Θ Pᵀ, Θ = Λ + T (all float64 arrays).

    source: 'parametrized' (trained nnRNN factors) or 'scipy.linalg.schur' (computed);
    angles θ_i ∈ [0, π] and moduli γ_i: one per 2×2 block or 1×1 block (λ = γ e^{±iθ});
    gamma_parameters: nnRNN's trained γ (None otherwise); reconstruction_error: ‖PΘPᵀ − V‖_F/‖V‖_F.
    """
    matrix: np.ndarray
    P: np.ndarray
    theta: np.ndarray
    Lambda: np.ndarray
    T: np.ndarray
    blocks: list
    angles: np.ndarray
    moduli: np.ndarray
    source: str
    reconstruction_error: float
    gamma_parameters: np.ndarray | None = None


def _block_eigs(theta: np.ndarray, blocks) -> tuple[np.ndarray, np.ndarray]:
    angles, moduli = [], []
    for b in blocks:
        ev = np.linalg.eigvals(theta[np.ix_(b, b)])
        lam = ev[np.argmax(ev.imag)] if len(b) == 2 else ev[0]
        angles.append(abs(math.atan2(lam.imag, lam.real)))
        if len(b) == 2 and abs(ev[0].imag) < 1e-12 * max(1.0, abs(ev[0])):  # a 2×2 block with real eigenvalues
            angles.append(abs(math.atan2(ev[1].imag, ev[1].real)))
            moduli.extend(np.abs(ev))
        else:
            moduli.append(abs(lam))
    return np.array(angles), np.array(moduli)


@single_threaded_blas()
def schur_view(model_or_matrix, gate: str | None = None, tensor: str | None = None) -> SchurView:
    """The Schur form Θ = Λ + T of a model's recurrent matrix (or of a given matrix).

    For a model with a Schur-form parametrization (nnRNN) the trained factors are used (of the
    weight named ``tensor``, e.g. 'weight_hh_l1'; the first one by default); otherwise the real
    Schur form is computed (see the module docstring).  ``gate`` picks one matrix of a gated model
    (default: 'cell' for an LSTM, 'new' for a GRU).
    """
    if isinstance(model_or_matrix, nn.Module):
        model = model_or_matrix
        found = find_schur_form(model, tensor)
        if found is not None and gate is None:
            form, module, name = found
            with torch.no_grad():
                p, lam, t = form.factors(getattr(module.parametrizations, name).original)
                gamma = _np(form.gamma)
                theta_param = _np(form.theta)
            p, lam, t = _np(p), _np(lam), _np(t)
            theta = lam + t
            n = theta.shape[0]
            v = p @ theta @ p.T
            blocks = [(2 * i, 2 * i + 1) for i in range(n // 2)] + ([(n - 1,)] if n % 2 else [])
            angles = np.arccos(np.cos(theta_param))  # eigenvalue angle in [0, π]
            if n % 2:
                angles = np.concatenate([angles, [0.0]])
            stored = _np(getattr(module, name))
            err = float(np.linalg.norm(v - stored) / max(np.linalg.norm(stored), 1e-300))
            return SchurView(matrix=stored, P=p, theta=theta, Lambda=lam, T=t, blocks=blocks, angles=angles,
                             moduli=np.abs(gamma), source="parametrized", reconstruction_error=err,
                             gamma_parameters=gamma)
        mats = recurrent_matrices(model)
        if gate is None:
            gate = "cell" if "cell" in mats else "new" if "new" in mats else next(iter(mats))
        if gate not in mats:
            raise ValueError(f"gate must be one of {', '.join(mats)}; got {gate!r}")
        matrix = mats[gate]
    else:
        matrix = _np(model_or_matrix)
    p, theta = real_schur_lower(matrix)
    blocks = _blocks_from_structure(theta)
    lam, t = split_theta(theta, blocks)
    angles, moduli = _block_eigs(theta, blocks)
    err = float(np.linalg.norm(p @ theta @ p.T - matrix) / max(np.linalg.norm(matrix), 1e-300))
    return SchurView(matrix=matrix, P=p, theta=theta, Lambda=lam, T=t, blocks=blocks, angles=angles,
                     moduli=moduli, source="scipy.linalg.schur", reconstruction_error=err)


# ------------------------------------------------------------------------------------------------
# Scalar diagnostics
# ------------------------------------------------------------------------------------------------
@single_threaded_blas()
def henrici_departure(matrix) -> tuple[float, float]:
    """Henrici's departure from normality sqrt(‖V‖_F² − Σ|λ_i|²) and the same divided by ‖V‖_F.

    Zero iff V is normal (e.g. orthogonal); equal to ‖T‖_F of the complex Schur form.  A complex numpy array (the
    complex nnRNN's V) is taken as it is."""
    v = matrix if isinstance(matrix, np.ndarray) and np.iscomplexobj(matrix) else _np(matrix)
    fro2 = float(np.sum(np.abs(v) ** 2))
    eig2 = float(np.sum(np.abs(np.linalg.eigvals(v)) ** 2))
    dep = math.sqrt(max(fro2 - eig2, 0.0))
    return dep, dep / math.sqrt(fro2) if fro2 > 0 else 0.0


@single_threaded_blas()
def eigen_angles_moduli(matrix) -> tuple[np.ndarray, np.ndarray]:
    """(θ_i ∈ [0, π], |λ_i|) over eigenvalues with Im λ ≥ 0 (one per conjugate pair)."""
    ev = np.linalg.eigvals(_np(matrix))
    ev = ev[ev.imag >= 0]
    return np.abs(np.angle(ev)), np.abs(ev)


def subdiagonal_profile(theta: np.ndarray, t: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Mean |entry| along the k-th sub-diagonal (k = 1..n−1) of Θ and of T (paper's Fig. 3c)."""
    theta = np.asarray(theta, dtype=np.float64)
    n = theta.shape[0]
    k = np.arange(1, n)
    prof_theta = np.array([np.abs(np.diagonal(theta, -j)).mean() for j in k]) if n > 1 else np.zeros(0)
    prof_t = (np.array([np.abs(np.diagonal(t, -j)).mean() for j in k]) if t is not None and n > 1
              else np.zeros_like(prof_theta))
    return {"k": k, "theta": prof_theta, "T": prof_t}


@single_threaded_blas()
def matrix_summary(view: SchurView) -> dict:
    """Scalar diagnostics of one recurrent matrix (see :func:`analyze_model`); ``delay_line``,
    ``in_block_mean`` and ``in_block_to_link`` are :func:`schur_links`' of T over the view's blocks."""
    v = view.matrix
    eig = np.linalg.eigvals(v)
    sv = np.linalg.svd(v, compute_uv=False)
    dep, dep_norm = henrici_departure(v)
    fro_theta = float(np.linalg.norm(view.theta))
    n = v.shape[0]
    out = {
        "size": int(n),
        "spectral_radius": float(np.abs(eig).max()),
        "mean_eigenvalue_modulus": float(np.abs(eig).mean()),
        "min_eigenvalue_modulus": float(np.abs(eig).min()),
        "fraction_eigenvalues_outside_unit_circle": float(np.mean(np.abs(eig) > 1 + 1e-9)),
        "max_singular_value": float(sv[0]),
        "min_singular_value": float(sv[-1]),
        "condition_number": float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf,
        "frobenius_norm": float(np.linalg.norm(v)),
        "departure_from_normality": dep,
        "departure_from_normality_normalized": dep_norm,
        "triangular_norm": float(np.linalg.norm(view.T)),
        "triangular_fraction": float(np.linalg.norm(view.T) / fro_theta) if fro_theta > 0 else 0.0,
        "orthogonality_error": float(np.linalg.norm(v.T @ v - np.eye(n))),
        "schur_source": view.source,
        "schur_reconstruction_error": view.reconstruction_error,
        "mean_gamma": float(np.mean(view.moduli)),
    }
    out["angle_concentration"] = angle_concentration(view.angles)
    links = schur_links(view.T, view.blocks)  # between modes, apart from T's entries inside Λ's 2×2 blocks
    out.update({key: links[key] for key in ("delay_line", "in_block_mean", "in_block_to_link")})
    if view.gamma_parameters is not None:
        out["mean_gamma_parameter"] = float(np.mean(view.gamma_parameters))
    return out


def angle_concentration(angles) -> float:
    """How aligned the rotation angles θ_i ∈ [0, π] are: 1 − sd(θ)/sd(uniform on [0, π]) (sd = π/√12), so 0 for
    angles spread evenly over [0, π], 1 when all are equal, below 0 when they crowd at both ends."""
    angles = np.asarray(angles, dtype=np.float64)
    return float(1 - np.std(angles) / (math.pi / math.sqrt(12))) if angles.size > 1 else math.nan


def _block_owner(n: int, blocks) -> np.ndarray:
    """owner[i] = the number of the diagonal block that holds index i; every index its own block when ``blocks``
    is None.  ValueError unless ``blocks`` are consecutive runs covering 0..n−1 in order."""
    if blocks is None:
        return np.arange(n)
    flat = [i for b in blocks for i in b]
    if flat != list(range(n)) or any(list(b) != list(range(b[0], b[0] + len(b))) for b in blocks):
        raise ValueError(f"blocks must be consecutive runs of indices covering 0..{n - 1} in order; got {blocks!r}")
    return np.repeat(np.arange(len(blocks)), [len(b) for b in blocks])


def schur_links(t, blocks=None) -> dict:
    """Where T's weight lies relative to the Schur modes, the diagonal blocks B_0, …, B_{m−1} of Θ = Λ + T (1×1,
    or 2×2 for a complex-conjugate pair; ``blocks`` as :class:`SchurView` has them, or None: every index its own
    1×1 block, as for the complex nnRNN, whose first sub-diagonal is then all links).

    * link from mode b to mode b+1: the sub-block T[B_{b+1}, B_b], mode b feeding the next one (the delay line
      of the paper's §3 and Fig. 3c);  L = mean |T_ij| over ∪_b B_{b+1} × B_b  (``link_mean``);
    * the rest of the triangle: R = mean |T_ij| over ∪_{c ≥ b+2} B_c × B_b, block distance ≥ 2 (``rest_mean``);
    * ``delay_line`` = L / R: NaN with fewer than 3 blocks or R = 0;
    * in-block entries: T[i+1, i] inside a 2×2 block {i, i+1} (the paper's strict T has them).  They link no
      two modes: they turn the block [[γc, −γs], [γs, γc]] into [[γc, −γs], [γs + t, γc]] and move its
      eigenvalues off γ e^{±iθ}.  ``in_block_mean`` = mean |T_{i+1,i}| over the 2×2 blocks (NaN without one),
      ``in_block_to_link`` = in_block_mean / L (NaN when either is undefined or L = 0).
    """
    t = np.abs(np.asarray(t, dtype=np.float64))
    n = t.shape[0]
    owner = _block_owner(n, blocks)
    distance = owner[:, None] - owner[None, :]
    below = np.tri(n, n, -1, dtype=bool)
    links, rest, inside = t[distance == 1], t[distance >= 2], t[(distance == 0) & below]
    link = float(links.mean()) if links.size else math.nan
    others = float(rest.mean()) if rest.size else math.nan
    in_block = float(inside.mean()) if inside.size else math.nan
    return {"delay_line": link / others if n and owner[-1] >= 2 and others > 0 else math.nan,
            "link_mean": link, "rest_mean": others, "in_block_mean": in_block,
            "in_block_to_link": in_block / link if link > 0 and not math.isnan(in_block) else math.nan}


def delay_line_ratio(t, blocks=None) -> float:
    """The delay line of the paper's §3 between Schur modes: mean |T| over the links T[B_{b+1}, B_b] between
    consecutive diagonal blocks over the mean |T| over the sub-blocks further below (block distance ≥ 2); NaN with
    fewer than 3 blocks or when the rest is zero.  ``blocks`` None: every index its own 1×1 block, so the links are
    T's first sub-diagonal.  See :func:`schur_links`, which also gives the entries inside the 2×2 blocks."""
    return schur_links(t, blocks)["delay_line"]


# ------------------------------------------------------------------------------------------------
# Gradient propagation
# ------------------------------------------------------------------------------------------------
def _default_loss(outputs, targets):
    if targets is None:  # probe: L = ½ mean_b ‖h_T‖²
        return 0.5 * outputs[-1].pow(2).sum(-1).mean()
    return nn.functional.mse_loss(outputs, targets)


def gradient_propagation(model: nn.Module, inputs: torch.Tensor, targets=None, readout=None, loss_fn=None
                         ) -> np.ndarray:
    """‖∂L/∂h_t‖₂ (over the batch and units), t = 1..T, for one batch.

    The model is stepped one time step at a time so that each h_t is a node of
    the graph through which both the readout and all later steps depend on it;
    ``torch.autograd.grad(L, [h_1..h_T])`` then gives the *total* derivative
    (the gradient of the stacked output sequence would only hold the direct,
    readout part).

    ``inputs``: (T, B, input_size), or (B, T, input_size) for a batch_first model.
    ``readout(outputs)`` maps the time-major hidden sequence (T, B, N) to
    predictions (default: identity); ``loss_fn(predictions, targets)`` gives a
    scalar (default: MSE against ``targets``, or the probe L = ½ mean_b ‖h_T‖²
    when ``targets`` is None).  For an LSTM the state passed on is (h_t, c_t) and
    the gradient reported is the one with respect to h_t.
    """
    batch_first = bool(getattr(model, "batch_first", False))
    x = inputs.transpose(0, 1) if batch_first else inputs
    if x.dim() != 3:
        raise ValueError(f"inputs must be 3-d (batched); got shape {tuple(inputs.shape)}")
    if getattr(model, "bidirectional", False):
        raise ValueError("gradient propagation through time is defined for unidirectional models; this one is "
                         "bidirectional")
    readout = readout if readout is not None else (lambda o: o)
    loss_fn = loss_fn if loss_fn is not None else _default_loss
    hs, hx = [], None
    with torch.enable_grad(), parametrize.cached():
        for t in range(x.shape[0]):
            xt = x[t:t + 1]
            _, state = model(xt.transpose(0, 1) if batch_first else xt, hx)
            h = state[0] if isinstance(state, tuple) else state  # (layers, B, N): every layer's state
            hs.append(h)
            hx = state
        outputs = torch.cat([h[-1:] for h in hs], 0)  # the top layer's states are the outputs
        loss = loss_fn(readout(outputs), targets)
        grads = torch.autograd.grad(loss, hs, allow_unused=True)
    return np.array([0.0 if g is None else float(g.detach().double().norm()) for g in grads])


def _unpack_batch(model, batch, seq_len: int = 100, batch_size: int = 8):
    """(inputs, targets, readout, loss_fn, description) from analyze_model's ``batch`` argument."""
    if batch is None:
        g = torch.Generator().manual_seed(0)
        param = next(model.parameters())
        shape = (batch_size, seq_len, model.input_size) if getattr(model, "batch_first", False) else \
            (seq_len, batch_size, model.input_size)
        x = torch.randn(shape, generator=g, dtype=torch.float64).to(param.dtype)
        return x, None, None, None, (f"probe loss L = ½ mean_b ‖h_T‖², Gaussian N(0, 1) inputs, "
                                     f"T = {seq_len}, B = {batch_size}")
    if isinstance(batch, torch.Tensor):
        return batch, None, None, None, "given inputs, probe loss L = ½ mean_b ‖h_T‖²"
    if isinstance(batch, dict):
        return (batch["inputs"], batch.get("targets"), batch.get("readout"), batch.get("loss_fn"),
                batch.get("description", "given batch"))
    if isinstance(batch, (tuple, list)):
        items = list(batch) + [None] * (4 - len(batch))
        return items[0], items[1], items[2], items[3], "given batch"
    raise TypeError("batch must be None, False, an input tensor, a (inputs, targets[, readout[, loss_fn]]) "
                    f"tuple or a dict; got {type(batch).__name__}")


# ------------------------------------------------------------------------------------------------
# Everything at once
# ------------------------------------------------------------------------------------------------
def model_name(model: nn.Module) -> str:
    """The model's class name (without torch.nn.utils.parametrize's 'Parametrized' prefix)."""
    cls = type(model)
    if parametrize.is_parametrized(model) and cls.__name__.startswith("Parametrized") and cls.__bases__:
        cls = cls.__bases__[0]
    return cls.__name__


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else str(f)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    return obj


def recurrent_layer(model: nn.Module) -> nn.Module:
    """The recurrent layer of ``model``: itself if it has ``recurrent_matrix()`` or is a torch RNN, else its
    ``rnn`` attribute (nnrnn.training.network.SequenceModel), else the first such submodule."""
    def is_recurrent(m):
        return hasattr(m, "recurrent_matrix") or isinstance(m, nn.RNNBase)
    if is_recurrent(model):
        return model
    inner = getattr(model, "rnn", None)
    if isinstance(inner, nn.Module) and is_recurrent(inner):
        return inner
    for m in model.modules():
        if is_recurrent(m):
            return m
    raise TypeError(f"no recurrent layer found in {type(model).__name__}")


@single_threaded_blas()
def _matrix_figures(model: nn.Module, mats: dict, out_dir, title: str) -> tuple[dict, list[str]]:
    """Each recurrent matrix's summary, and its spectrum and Schur-form figures (see :func:`analyze_model`)."""
    files, details = [], {}
    for key, matrix in mats.items():
        if not np.isfinite(matrix).all():  # numpy's eigvals and schur would stop at it with a LinAlgError
            raise ValueError(f"the recurrent matrix {key} holds {int(np.sum(~np.isfinite(matrix)))} NaN or inf "
                             f"entries: its Schur form and spectrum are not defined")
        tensor = tensor_for(key)
        view = schur_view(model, tensor=tensor) if find_schur_form(model, tensor) else schur_view(matrix)
        details[key] = matrix_summary(view)
        suffix = "" if key == "V" else f"_{key}"
        label = title if key == "V" else f"{title}, {key} gate"
        files.append(plots.plot_spectrum(view.matrix, os.path.join(out_dir, f"spectrum{suffix}.png"),
                                         title=f"{label}: spectrum of the recurrent matrix"))
        profile = subdiagonal_profile(view.theta, view.T)
        # the trained γ_i and, beside them, V's |λ_i| (from Θ's diagonal blocks, exact): strict T moves the latter
        eigen = _block_eigs(view.theta, view.blocks)[1] if view.source == "parametrized" else None
        files.append(plots.plot_schur(view.theta, view.angles, view.moduli, profile,
                                      os.path.join(out_dir, f"schur{suffix}.png"),
                                      title=rf"{label}: Schur form $V=P\Theta P^\top$", source=view.source,
                                      eigen_moduli=eigen))
    return details, files


def _probe(model: nn.Module, inputs, targets, readout, loss_fn) -> np.ndarray:
    """:func:`gradient_propagation` with the model in eval mode (its mode restored after)."""
    was_training = model.training
    model.eval()
    try:
        return gradient_propagation(model, inputs, targets, readout, loss_fn)
    finally:
        model.train(was_training)


def _gradient_figure(model: nn.Module, batch, out_dir, title: str, reference: nn.Module | None = None
                     ) -> tuple[dict, str]:
    """The gradient probe's summary and its figure (see :func:`analyze_model`), with ``reference`` (the same
    architecture untrained) probed on the same batch beside it."""
    inputs, targets, readout, loss_fn, desc = _unpack_batch(model, batch)
    norms = _probe(model, inputs, targets, readout, loss_fn)
    beside = None if reference is None else _probe(recurrent_layer(reference), inputs, targets, readout, loss_fn)
    figure = plots.plot_gradients(norms, os.path.join(out_dir, "gradients.png"),
                                  title=f"{title}: gradient propagation", subtitle=desc, reference=beside,
                                  reference_label="untrained (the run's initial network)")
    pos = norms[norms > 0]
    return {
        "description": desc,
        "norms": norms.tolist(),
        "first": float(norms[0]), "last": float(norms[-1]),
        "log10_ratio_first_last": float(np.log10(norms[0] / norms[-1])) if norms[0] > 0 and norms[-1] > 0
        else None,
        "max": float(pos.max()) if pos.size else 0.0,
    }, figure


def analyze_model(model: nn.Module, out_dir, batch=None, title: str | None = None, extra: dict | None = None,
                  reference: nn.Module | None = None) -> dict:
    """Write the inspection figures and ``summary.json`` of ``model`` to ``out_dir``; return the summary.

    Per recurrent matrix (suffix ``_<gate>`` for gated models, none for 'V', and a layer and
    direction suffix such as ``_V_l1`` or ``_cell_l0_reverse`` beyond the first layer):
    ``spectrum.png`` (eigenvalues with the unit circle; singular values vs |λ|) and
    ``schur.png`` (Θ = Λ + T heatmap, angle histogram, mean |Θ_{i+k,i}| per
    sub-diagonal, γ histogram).  ``gradients.png``: ‖∂L/∂h_t‖ against t (not for
    bidirectional models), beside ``reference``'s (the same architecture untrained) when given.  ``title``
    (default: the model's class name) heads every figure: the command line gives the run's name.

    ``batch``: None → a synthetic probe (Gaussian inputs, T = 100, L = ½‖h_T‖²);
    False → no gradient analysis; a tensor of inputs; (inputs, targets[, readout[,
    loss_fn]]) or a dict with those keys (see :func:`gradient_propagation`).

    Summary: model, hidden_size, primary (the matrix the top-level numbers describe:
    'V', or the LSTM's 'cell' gate), spectral_radius, max_singular_value,
    departure_from_normality (Henrici) and its normalised form, mean_gamma (nnRNN:
    mean trained γ; otherwise mean |λ| per Schur block), triangular_fraction
    ‖T‖_F/‖Θ‖_F, per-matrix details under ``matrices``, ``gradient`` and ``files``,
    plus the entries of ``extra``.  A wrapper (nnrnn.training.network.SequenceModel) is unwrapped to
    its recurrent layer (:func:`recurrent_layer`); the gradient probe runs on that layer.
    """
    os.makedirs(out_dir, exist_ok=True)
    model = recurrent_layer(model)
    name = model_name(model)
    title = title or name
    mats = recurrent_matrices(model)
    primary = "cell" if "cell" in mats else "new" if "new" in mats else "V"
    details, files = _matrix_figures(model, mats, out_dir, title)
    top = details[primary]
    summary = {
        "model": name,
        "hidden_size": int(next(iter(mats.values())).shape[0]),
        "primary": primary,
        "spectral_radius": top["spectral_radius"],
        "max_singular_value": top["max_singular_value"],
        "departure_from_normality": top["departure_from_normality"],
        "departure_from_normality_normalized": top["departure_from_normality_normalized"],
        "mean_gamma": top.get("mean_gamma_parameter", top["mean_gamma"]),
        "triangular_fraction": top["triangular_fraction"],
        "matrices": details,
    }
    if batch is not False and not getattr(model, "bidirectional", False):
        summary["gradient"], figure = _gradient_figure(model, batch, out_dir, title, reference)
        files.append(figure)
    summary["files"] = [os.path.basename(f) for f in files] + ["summary.json"]
    if extra:
        summary.update({k: v for k, v in extra.items() if k not in summary})
    summary = _jsonable(summary)
    with open(os.path.join(out_dir, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2)
    return summary
