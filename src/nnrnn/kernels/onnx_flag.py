"""Whether ``torch.onnx.export`` is tracing, as one flag torch.compile reads once (imported only while tracing:
see :func:`nnrnn.kernels.autograd.exporting_to_onnx`)."""
from __future__ import annotations

import torch


@torch.compiler.assume_constant_result  # read once while tracing: no graph break for the flag's lookup
def in_onnx_export() -> bool:
    return torch.onnx.is_in_onnx_export()
