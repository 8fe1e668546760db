"""The recurrence shared by every non-gated model, as a plain autograd loop.

    h_t = φ(V h_{t-1} + W_ih x_t + b),    t = 1..T

with φ one of :data:`NONLINEARITIES`.  modReLU (Arjovsky et al. 2016) is
φ(z) = sign(z) · relu(|z| + b_mod), with its own per-unit bias b_mod; ELU is z for z > 0 and e^z − 1 otherwise
(Orhan & Pitkow's chain-initialised RNN uses it).

This is the reference implementation: readable, differentiated by autograd,
and what the fused kernel is tested against.
"""
from __future__ import annotations

import torch

NONLINEARITIES = ("modrelu", "tanh", "relu", "elu", None)


def modrelu(z: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.sign(z) * torch.relu(z.abs() + bias)


def activation(z: torch.Tensor, nonlinearity: str | None, modrelu_bias: torch.Tensor | None) -> torch.Tensor:
    if nonlinearity == "modrelu":
        return modrelu(z, modrelu_bias)
    if nonlinearity == "tanh":
        return torch.tanh(z)
    if nonlinearity == "relu":
        return torch.relu(z)
    if nonlinearity == "elu":
        return torch.nn.functional.elu(z)
    return z


def reference_recurrence(inputs: torch.Tensor, h0: torch.Tensor, weight_ih: torch.Tensor,
                         bias: torch.Tensor | None, weight_hh: torch.Tensor,
                         nonlinearity: str | None, modrelu_bias: torch.Tensor | None,
                         noise: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """inputs (T, B, I), h0 (B, N) -> outputs (T, B, N), h_T (B, N); ``noise`` (T, B, N), if given, is added to
    the state after every step: h_t = φ(V h_{t-1} + W_ih x_t + b) + noise_t (:mod:`nnrnn.models.noise`)."""
    projected = torch.nn.functional.linear(inputs, weight_ih, bias)  # every step's input at once
    v_t = weight_hh.t()
    h = h0
    outputs = []
    for t, z_in in enumerate(projected.unbind(0)):
        h = activation(torch.addmm(z_in, h, v_t), nonlinearity, modrelu_bias)
        if noise is not None:
            h = h + noise[t]
        outputs.append(h)
    if not outputs:
        return projected.new_zeros(0, *h0.shape), h0
    return torch.stack(outputs), h
