"""Analysis: the theory of §3 of Kerg, Goyette et al. (2019) and a look inside trained models.

* The theory: :mod:`.fisher` — the stationary covariance, Fisher memory curves and J_tot; :mod:`.theta_example` —
  Θ(α, β, d) of Eq. (simpletheta) and its J_tot in Table 3; :mod:`.transient_growth` — linear transients (Fig. 1b);
  :mod:`.proposition1` — the delay line and the Fisher memory's lower bound; :mod:`.polynomial_growth` —
  Proposition 2 (polynomial growth); :mod:`.claim_numbers` — the numbers the report's theory claims are judged on.
* :mod:`.plots` — the figures (Agg, PNG).
* :mod:`.trained` — trained models' recurrent matrices: Schur form Θ = Λ + T, spectra, Henrici departure from
  normality, gradient propagation, and :func:`analyze_model` (figures + summary.json).
* :mod:`.linear` — the non-normal LRU's linear part: its A = Λ + T, real form and exact Fisher memory curve, and
  ``nnrnn analyze``'s figure for it.
* :mod:`.capacity` — Jaeger's linear memory capacity of a trained recurrent layer (the memory report's column).
* :mod:`.mechanism` — what training made of a run's recurrent matrix (non-normal share, departure from normality,
  basis drift, spectral radius, Fisher memory), measured when the run ends: its ``mechanism.json``.
* :mod:`.cli` — argparse glue for ``nnrnn theory …`` and ``nnrnn analyze …``.

See docs/theory.md.  The names below are imported on first use (PEP 562), so that the command line's parser,
which imports :mod:`.cli`, does not import torch.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_FROM_TRAINED = ("SchurView", "analyze_model", "eigen_angles_moduli", "find_schur_form", "gradient_propagation",
                 "henrici_departure", "matrix_summary", "model_name", "real_schur_lower", "recurrent_layer",
                 "recurrent_matrices", "schur_links", "schur_view", "split_theta", "subdiagonal_profile")
_FROM_THEORY = {  # module: the names it exports here
    "claim_numbers": ("figure1b_transients", "figure1c_memory", "fisher_memory_numbers", "proposition1_numbers",
                     "proposition2_coefficients", "proposition2_numbers", "transient_numbers"),
    "fisher": ("FisherMemory", "covariance_factor", "fisher_memory", "fisher_memory_curve", "fisher_memory_from_rest",
              "fisher_memory_total", "spectral_radius", "stationary_covariance"),
    "polynomial_growth": ("Prop2Result", "proposition2", "proposition2_matrix"),
    "proposition1": ("delay_line_fmc", "fisher_memory_lower_bound", "gram_schmidt_triangle"),
    "theta_example": ("EXACT_TABLE3", "PAPER_TABLE3", "TABLE3_GRID", "schur_example", "table3"),
    "transient_growth": ("transients",),
}
_MODULE = {name: f".{module}" for module, names in _FROM_THEORY.items() for name in names}
_MODULE.update((name, ".trained") for name in _FROM_TRAINED)

if TYPE_CHECKING:  # for type checkers and editors; at run time, __getattr__ below
    from .claim_numbers import (figure1b_transients, figure1c_memory, fisher_memory_numbers, proposition1_numbers,
                                proposition2_coefficients, proposition2_numbers, transient_numbers)
    from .fisher import (FisherMemory, covariance_factor, fisher_memory, fisher_memory_curve, fisher_memory_from_rest,
                         fisher_memory_total, spectral_radius, stationary_covariance)
    from .polynomial_growth import Prop2Result, proposition2, proposition2_matrix
    from .proposition1 import delay_line_fmc, fisher_memory_lower_bound, gram_schmidt_triangle
    from .theta_example import EXACT_TABLE3, PAPER_TABLE3, TABLE3_GRID, schur_example, table3
    from .transient_growth import transients
    from .trained import (SchurView, analyze_model, eigen_angles_moduli, find_schur_form, gradient_propagation,
                          henrici_departure, matrix_summary, model_name, real_schur_lower, recurrent_layer,
                          recurrent_matrices, schur_links, schur_view, split_theta, subdiagonal_profile)


def __getattr__(name: str):
    if name in _MODULE:
        module = importlib.import_module(_MODULE[name], __name__)
        value = globals()[name] = getattr(module, name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "EXACT_TABLE3", "FisherMemory", "PAPER_TABLE3", "Prop2Result", "SchurView", "TABLE3_GRID", "analyze_model",
    "covariance_factor", "delay_line_fmc", "eigen_angles_moduli", "figure1b_transients", "figure1c_memory",
    "find_schur_form", "fisher_memory", "fisher_memory_curve", "fisher_memory_from_rest", "fisher_memory_lower_bound",
    "fisher_memory_numbers",
    "fisher_memory_total", "gradient_propagation", "gram_schmidt_triangle", "henrici_departure", "matrix_summary",
    "model_name", "proposition1_numbers", "proposition2", "proposition2_coefficients", "proposition2_matrix",
    "proposition2_numbers", "real_schur_lower", "recurrent_layer", "recurrent_matrices", "schur_example",
    "schur_links", "schur_view", "spectral_radius", "split_theta", "stationary_covariance", "subdiagonal_profile",
    "table3", "transient_numbers", "transients",
]
