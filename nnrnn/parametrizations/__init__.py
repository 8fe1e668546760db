"""Constraints on square weights, as ``torch.nn.utils.parametrize`` parametrizations."""
from .orthogonal import INITS, MatrixExpOrthogonal, init_skew_, orthogonal, skew
from .schur import SchurForm, block_triangular_mask, rotation_blocks, schur

__all__ = ["INITS", "MatrixExpOrthogonal", "SchurForm", "block_triangular_mask", "init_skew_",
           "orthogonal", "rotation_blocks", "schur", "skew"]
