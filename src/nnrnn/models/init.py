"""Initialisation schemes for the unconstrained weights: input weights, biases, read-outs.

A scheme is named by a string:

* ``"xavier"``:  Glorot normal, N(0, 2 / (fan_in + fan_out))      (torch.nn.init.xavier_normal_)
* ``"kaiming"``: He normal, N(0, 2 / fan_in)                      (torch.nn.init.kaiming_normal_'s defaults)
* ``"uniform"``: U(-1/√fan_in, 1/√fan_in), what ``torch.nn.Linear`` draws for its weight and bias
* ``"uniform:a"``: U(-a, a), e.g. ``"uniform:0.1"``
* ``"zeros"``

The authors' released code uses all of these, per task and model (the presets
name them; docs/design.md has the table).
"""
from __future__ import annotations

import math

import torch
from torch import nn

def check_scheme(name: str, spec) -> str:
    """``spec`` if it names a scheme, else a ValueError naming the option ``name``."""
    if isinstance(spec, str):
        if spec in ("xavier", "kaiming", "uniform", "zeros"):
            return spec
        if spec.startswith("uniform:"):
            try:
                bound = float(spec.split(":", 1)[1])
            except ValueError:
                bound = math.nan
            if math.isfinite(bound) and bound >= 0:
                return spec
    raise ValueError(f"{name} must be one of xavier, kaiming, uniform, uniform:A (A ≥ 0) or zeros; got {spec!r}")


@torch.no_grad()
def init_(tensor: torch.Tensor, spec: str, fan_in: int | None = None) -> torch.Tensor:
    """Fill ``tensor`` in place by scheme ``spec``; ``fan_in`` defaults to ``tensor.shape[1]`` (a bias
    needs it given: the fan-in of the layer it belongs to)."""
    if spec == "zeros":
        return tensor.zero_()
    if spec == "xavier":
        return nn.init.xavier_normal_(tensor)
    if spec == "kaiming":
        return nn.init.kaiming_normal_(tensor)
    if spec.startswith("uniform:"):
        bound = float(spec.split(":", 1)[1])
    elif spec == "uniform":
        fan_in = tensor.shape[1] if fan_in is None else fan_in
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    else:
        raise ValueError(f"unknown initialisation scheme {spec!r}")
    return tensor.uniform_(-bound, bound)
