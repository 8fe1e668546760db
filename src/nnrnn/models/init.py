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

import inspect
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


# Orhan & Pitkow (ICLR 2020), "Improved memory in recurrent neural networks with sequential non-normal dynamics":
# a recurrent matrix started as a chain, unit i feeding unit i + 1 (their code's initialisers, read, not copied)
CHAINS = ("chain", "fbchain")
FBCHAIN_FORWARD = 0.99  # fbchain's forward weight, fixed in the authors' code; its argument is the feedback β


def parse_chain(spec) -> tuple[str, float] | None:
    """("chain", α) for ``"chain:α"``, ("fbchain", β) for ``"fbchain:β"`` (α, β finite numbers); None for a value
    that names no chain; a ValueError for a chain without a number after the colon."""
    if not isinstance(spec, str) or spec.split(":", 1)[0] not in CHAINS:
        return None
    kind, _, number = spec.partition(":")
    try:
        gain = float(number)
    except ValueError:
        gain = math.nan
    if not math.isfinite(gain):
        raise ValueError(f"init {spec!r}: a chain takes its gain after a colon, e.g. 'chain:1.02' or 'fbchain:0.04'")
    return kind, gain


def accepts_init(inits: tuple[str, ...], spec) -> bool:
    """Whether a model whose ``INITS`` are ``inits`` takes ``init=spec``: one of them by name, or a chain of the form
    ``"chain:α"`` / ``"fbchain:β"`` where ``inits`` name that chain (a bare ``"chain"`` takes no gain: refused)."""
    try:
        chain = parse_chain(spec)
    except ValueError:
        return False
    if chain is not None:
        return chain[0] in inits
    return spec in inits and spec not in CHAINS


def chain_matrix(n: int, spec: str, like: torch.Tensor) -> torch.Tensor:
    """The n × n chain of ``spec`` in ``like``'s dtype and device: ``chain:α``, V_{i+1,i} = α (a feed-forward
    chain, zero elsewhere); ``fbchain:β``, V_{i+1,i} = 0.99 and V_{i,i+1} = β (the chain with feedback)."""
    kind, gain = parse_chain(spec)
    shift = torch.diag(torch.ones(n - 1, dtype=like.dtype, device=like.device), -1)  # S_{i+1,i} = 1
    if kind == "chain":
        return gain * shift
    return FBCHAIN_FORWARD * shift + gain * shift.t()


# Tallec & Ollivier (ICLR 2018), "Can recurrent neural networks warp time?": the chrono initialisation of a gated
# model's gate biases, b ~ log(U(1, T_max − 1)), so that the gates start with time constants spread up to the longest
# dependency T_max (the LSTM's forget gate takes b, its input gate −b; the GRU's update gate the sign that keeps
# the state; nnrnn/models/lstm.py, gru.py)
CHRONO = "chrono"


def check_chrono(init: str, chrono_tmax, bias: bool):
    """``chrono_tmax`` as a float T_max > 2 for ``init='chrono'`` (which needs ``bias``), None for any other init
    (which takes none): a TypeError for what is not a real number, a ValueError naming the argument otherwise."""
    if init != CHRONO:
        if chrono_tmax is not None:
            raise ValueError(f"chrono_tmax is T_max of init='chrono'; got chrono_tmax={chrono_tmax!r} with "
                             f"init={init!r} (leave it out, or use init='chrono')")
        return None
    if chrono_tmax is None:
        raise ValueError("init='chrono' needs chrono_tmax, T_max: the longest dependency the gates should span (e.g. "
                         "the sequence length); got None")
    if isinstance(chrono_tmax, bool) or not isinstance(chrono_tmax, (int, float)):
        raise TypeError(f"chrono_tmax must be a number above 2; got {chrono_tmax!r}")
    if not (math.isfinite(chrono_tmax) and chrono_tmax > 2):
        raise ValueError(f"chrono_tmax must be a finite number above 2 (the biases are log U(1, T_max − 1)); "
                         f"got {chrono_tmax!r}")
    if not bias:
        raise ValueError("init='chrono' sets gate biases, so it needs bias=True; got bias=False")
    return float(chrono_tmax)


@torch.no_grad()
def chrono_(bias: torch.Tensor, t_max: float) -> torch.Tensor:
    """Fill ``bias`` in place with log(u), u ~ U(1, T_max − 1) (torch's global generator), and return it."""
    return bias.uniform_(1.0, t_max - 1.0).log_()


def init_repr(module) -> list[str]:
    """A gated layer's repr's mention of its ``init`` (and ``chrono_tmax``): nothing at its class's default, as torch
    shows only the options a user changed."""
    default = inspect.signature(type(module).__init__).parameters["init"].default
    shown = [f"init={module.init!r}"] if module.init != default else []
    if getattr(module, "chrono_tmax", None) is not None:
        shown.append(f"chrono_tmax={module.chrono_tmax:g}")
    return shown
