"""Constraints on square weights, as ``torch.nn.utils.parametrize`` parametrizations."""
from .expm import expm_skew
from .orthogonal import INITS, check_init, MatrixExpOrthogonal, OrthogonalFactor, init_skew_, orthogonal, rebase_, skew
from .schur import (TRIANGULAR, SchurForm, check_fixed_gamma, free_triangular_entries, initial_triangular,
                    parse_t_init, rotation_blocks, schur, triangular_mask)

__all__ = ["INITS", "MatrixExpOrthogonal", "OrthogonalFactor", "SchurForm", "TRIANGULAR", "check_fixed_gamma",
           "check_init", "expm_skew", "free_triangular_entries", "init_skew_", "initial_triangular", "orthogonal",
           "parse_t_init", "rebase_", "rotation_blocks", "schur", "skew", "triangular_mask"]
from .stacked import StackedSchurForm, stacked_schur  # noqa: E402  (after schur, which it builds on)

__all__ += ["StackedSchurForm", "stacked_schur"]
