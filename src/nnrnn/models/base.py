"""The non-gated recurrent models' shared layer: ``torch.nn.RNN``'s interface, nnrnn's recurrences.

Every non-gated model takes ``torch.nn.RNN``'s arguments in its order,

    Model(input_size, hidden_size, num_layers=1, nonlinearity="modrelu", bias=True, batch_first=False,
          dropout=0.0, bidirectional=False, device=None, dtype=None, *, <the model's own keywords>)

and follows its contract (D = 2 if bidirectional else 1):

* ``input``: (T, B, input_size), or (B, T, input_size) with ``batch_first``, or
  unbatched (T, input_size), or a ``PackedSequence``;
* ``hx``: (num_layers·D, B, hidden_size), or (num_layers·D, hidden_size) for
  unbatched input; zeros when omitted;
* returns ``output`` (T, B, D·hidden_size) (batch_first: (B, T, D·hidden_size);
  unbatched: (T, D·hidden_size); packed in, packed out) and ``h_n`` shaped like
  ``hx``; for packed input h_n holds each sequence's state after its last real step.

Layer l, direction d (0 forward, 1 reverse) computes

    h_t = φ(V h_{t-1} + W_ih x_t + b),    t = 1..T (reverse: T..1)

with its own parameters, named as torch names them: ``weight_ih_l{l}`` (H × input
of the layer, ``input_init``, Glorot normal by default), ``bias_ih_l{l}`` (H,
``bias_init``, zeros by default; absent with ``bias=False``), for modReLU
``modrelu_bias_l{l}`` (H, U(-0.01, 0.01) as in expRNN, so that modReLU starts
close to the identity), and the recurrent matrix V that each model constrains in
its own way (``weight_hh_l{l}`` for most); the reverse direction's names end in
``_reverse``.  Layer l > 0 reads the previous layer's output (D·H wide), with
dropout ``dropout`` between layers in training.  nonlinearity defaults to the
paper's modReLU, φ(z) = sign(z)·relu(|z| + b_mod); 'tanh', 'relu' and None (the
identity) are the others.  torch.nn.RNN has two biases, b_ih and b_hh, whose sum
is all that matters; these models have the one, ``bias_ih``.  ``state_noise`` σ (keyword, default 0) adds
Gaussian noise of standard deviation σ to every layer's state after every step, in training and evaluation alike:
h_t = φ(V h_{t-1} + W_ih x_t + b) + σ ε_t, ε_t drawn from torch's global generator (:mod:`nnrnn.models.noise`).

How the recurrence is computed is chosen by the attribute ``implementation``
(the class default, ``"fused"``, may be overridden per instance):

* ``"fused"``: :func:`~nnrnn.models.fused.fused_recurrence`, one autograd node
  with a hand-written backward-through-time (see :mod:`nnrnn.models.fused`);
  first-order gradients only.
* ``"reference"``: :func:`~nnrnn.models.recurrence.reference_recurrence`, the
  plain autograd loop (supports double backward).

V is composed once per forward pass and layer, in autograd.  With autograd off
(``torch.no_grad()``, ``torch.inference_mode()``) it is composed once and reused
until one of its parameters changes (their version counters tell), so stepping a
model one token at a time does not recompose V at every call.
"""
from __future__ import annotations

import numbers
import operator
import os
import sys
import warnings

import torch
from torch import nn
from torch.nn.utils import parametrize
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from ..kernels import loops
from ..kernels.autograd import autocast_enabled, autocast_off
from ..parametrizations.schur import check_penalty_weights
from . import noise
from .fused import fused_recurrence
from .init import check_scheme, init_
from .recurrence import NONLINEARITIES, reference_recurrence
from .traits import Traits

IMPLEMENTATIONS = {"fused": fused_recurrence, "reference": reference_recurrence}


def stacked_repr(module: nn.Module, *extra: str) -> str:
    """torch.nn.RNN's repr of a stacked layer's sizes and options (those at their defaults left out), with ``extra``
    after ``num_layers``."""
    parts = [str(module.input_size), str(module.hidden_size)]
    parts += [f"num_layers={module.num_layers}"] if module.num_layers != 1 else []
    parts += list(extra)
    parts += ["bias=False"] if not module.bias else []
    parts += ["batch_first=True"] if module.batch_first else []
    parts += [f"dropout={module.dropout}"] if module.dropout else []
    parts += ["bidirectional=True"] if module.bidirectional else []
    return ", ".join(parts)


def cell_suffix(layer: int, direction: int) -> str:
    """The parameter-name suffix torch gives one layer and direction: '_l0', '_l1_reverse', …"""
    return f"_l{layer}" + ("_reverse" if direction else "")


class ShapeError(ValueError, RuntimeError):
    """A tensor's shape does not fit the model (input width, hx shape, an empty sequence): a ValueError naming the
    argument and the shape expected, and a RuntimeError, which is what torch.nn.RNN raises for these."""


class InputDtypeError(TypeError, ValueError):
    """``input``'s dtype is not the model's: a TypeError, and a ValueError as torch.nn.RNN raises."""


class StateDtypeError(TypeError, RuntimeError):
    """``hx``'s dtype is not the model's: a TypeError, and a RuntimeError as torch.nn.RNN raises."""


class ParameterDtypeError(TypeError, RuntimeError):
    """``dtype`` is not a floating-point dtype: a TypeError, and a RuntimeError as torch.nn.RNN raises."""


class DeviceMismatchError(ValueError, RuntimeError):
    """A tensor given to a model is on another device than its parameters: a ValueError naming the argument and
    both devices, and a RuntimeError too, which is what torch.nn.RNN raises for the same mistake ("Input and
    parameter tensors are not at the same device"), so code written against torch's layer still catches it."""


def check_size(name: str, value) -> int:
    # torch takes True as 1 (a bool is an int); a flag given for a size is a slip, so it is refused here
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a positive int; got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int; got {value}")
    return value


def check_num_layers(value) -> int:
    """``num_layers`` as an int: torch.nn.RNN takes any integer (numpy's too, through ``range``); like torch, a
    number at most zero is a ValueError, another non-integer a TypeError."""
    if not isinstance(value, bool):
        try:
            value = operator.index(value)
        except TypeError:
            if isinstance(value, numbers.Real) and value <= 0:
                raise ValueError(f"num_layers must be a positive int; got {value!r}") from None
    return check_size("num_layers", value)


def check_nonlinearity(value):
    if value == "none":
        value = None
    if value not in NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of 'modrelu', 'tanh', 'relu', 'elu' or None; got {value!r}")
    return value


def check_dropout(value, num_layers=2, warn: bool = True) -> float:
    """``dropout`` as a float in [0, 1]; warns (where ``warn``), as torch.nn.RNN does, when there is one layer:
    dropout acts between layers, so it then drops nothing.  As in torch, a value ``float()`` cannot take at all
    (None, a list) is a TypeError, any other that is not a number in [0, 1] a ValueError."""
    message = f"dropout must be a number in [0, 1]; got {value!r}"
    try:
        float(value)
    except TypeError:
        raise TypeError(message) from None
    except ValueError:
        pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(message)
    if warn and value > 0 and num_layers == 1:
        warnings.warn(f"dropout acts between recurrent layers, so a non-zero dropout expects num_layers greater "
                      f"than 1; got dropout={value} and num_layers=1 (nothing is dropped)", UserWarning,
                      stacklevel=_caller_level())
    return float(value)


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside nnrnn/models/, so that a warning points at the user's call
    however many of the models' constructors lie between."""
    here, frame, level = os.path.dirname(__file__), sys._getframe(1), 1
    while frame is not None and os.path.dirname(frame.f_code.co_filename) == here:
        frame, level = frame.f_back, level + 1
    return level


def check_dtype(dtype, complex_ok: bool = False):
    """``dtype``: None or a floating-point torch.dtype (a complex one only where ``complex_ok``: nnrnn's own
    models are real-valued; nnrnn-complex takes the real dtype of its parts)."""
    if dtype is None:
        return dtype
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype such as torch.float32, or None; got {dtype!r}")
    if dtype.is_complex and not complex_ok:
        raise TypeError(f"dtype must be a real floating-point dtype (torch.float32, torch.float64, …) for this "
                        f"model; got {dtype}")
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ParameterDtypeError(f"dtype must be a floating-point dtype such as torch.float32; got {dtype}")
    return dtype


def kept(cache: dict, name, tensors, compose):
    """``compose()``, kept in ``cache[name]`` and given again while autograd is off (inference, generation) and
    none of ``tensors`` (what it is composed from) changed: a tensor changed in place (an optimizer step,
    ``load_state_dict``, ``copy_``) has a new version, one replaced or moved a new address or dtype.  Writes through
    ``.data`` move neither, so the models empty their caches in ``train()``.  With autograd on, or while
    torch.compile traces, it is composed anew."""
    if torch.is_grad_enabled() or torch.compiler.is_compiling():
        return compose()
    key = tuple((t.data_ptr(), t._version, t.dtype) for t in tensors)
    hit = cache.get(name)
    if hit is None or hit[0] != key:
        hit = cache[name] = (key, compose())
    return hit[1]


def check_flag(name: str, value) -> bool:
    """``value`` if it is a bool, else a TypeError: a flag given as a string ("False") or a number would otherwise be
    read by its truth value."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False; got {value!r}")
    return value


def check_constructor(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype,
                      complex_ok: bool = False, dropout_warning: bool = True) -> tuple[int, float]:
    """torch.nn.RNN's constructor checks, in its order, shared by every model; returns (num_layers, dropout) as
    int and float.  A model built on torch's own layer passes ``dropout_warning=False``: torch's constructor
    warns for it.  Then what nnrnn refuses beyond torch (docs/layers.md), checked last so that whatever torch
    refuses is refused with torch's type: a bool for a size (torch reads True as 1); a ``bidirectional`` that is
    not a bool (torch takes any object's truth value, so ``bidirectional="no"`` would mean True); a complex
    dtype for a real-valued model."""
    dropout = check_dropout(dropout, num_layers, dropout_warning)
    for name, flag in (("bias", bias), ("batch_first", batch_first)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False; got {flag!r}")
    for name, size in (("input_size", input_size), ("hidden_size", hidden_size)):
        check_size(name, int(size) if isinstance(size, bool) else size)
    layers = check_num_layers(int(num_layers) if isinstance(num_layers, bool) else num_layers)
    check_dtype(dtype, complex_ok=True)
    for name, size in (("input_size", input_size), ("hidden_size", hidden_size), ("num_layers", num_layers)):
        if isinstance(size, bool):
            raise TypeError(f"{name} must be a positive int; got {size!r}")
    if not isinstance(bidirectional, bool):
        raise TypeError(f"bidirectional must be True or False; got {bidirectional!r}")
    check_dtype(dtype, complex_ok)
    return layers, dropout


def check_device(module: nn.Module, name: str, tensor: torch.Tensor, where: torch.device | None = None) -> None:
    """DeviceMismatchError unless ``tensor`` is on ``where`` (default: the device of ``module``'s parameters)."""
    if where is None:
        weight = getattr(module, "weight_ih_l0", None)
        if weight is None:
            return
        where, what, other = weight.device, "the model's parameters", "model"
    else:
        what, other = "input", "input"
    if tensor.device != where:
        raise DeviceMismatchError(f"{name} is on device {tensor.device} but {what} on {where}; move one of them, "
                                  f"e.g. {name}.to({str(where)!r}) or {other}.to({str(tensor.device)!r})")


def refuse_jit_trace(module: nn.Module) -> None:
    """RuntimeError while ``torch.jit.trace`` traces, saying what works instead.  PyTorch deprecates jit.trace
    (since 2.10 it warns "Please switch to torch.compile or torch.export"), and nnrnn's layers do not trace under it:
    the kernel policy reads shapes that jit.trace makes tensors, the custom autograd functions become Python calls a
    saved trace cannot hold, and a cached parametrization refuses tracing; what failed was an AttributeError from
    deep inside a parametrization, naming none of this.  torch.export, torch.compile and torch.onnx.export trace every
    model (docs/layers.md)."""
    if torch.jit.is_tracing():
        raise RuntimeError(f"torch.jit.trace is not supported by nnrnn's {type(module).__name__} (PyTorch deprecates "
                           f"it): use torch.export.export, torch.compile or torch.onnx.export instead "
                           f"(docs/layers.md, torch.compile and torch.export)")


def check_input(module: nn.Module, input, batch_first: bool | None = None, states=()) -> None:
    """TypeError / ValueError naming what is wrong with ``input`` for a layer like torch.nn.RNN, in torch's order
    and each also of the type torch raises (:class:`ShapeError`, :class:`InputDtypeError`,
    :class:`DeviceMismatchError`); ``states``: (name, tensor) pairs of the initial state given with it, whose
    rank torch checks before the input's dtype; ``batch_first`` (default: the module's) says where the time axis
    of a 3-d input is."""
    refuse_jit_trace(module)
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"input must be a torch.Tensor or a PackedSequence; got {type(input).__name__}")
    if input.dim() not in (2, 3):
        raise ValueError(f"input must be 2-d (T, input_size) or 3-d (T, B, input_size); got shape {tuple(input.shape)}")
    for name, h in states:
        if isinstance(h, torch.Tensor) and h.dim() != input.dim():
            kind = "batched 3-d" if input.dim() == 3 else "unbatched 2-d"
            raise ShapeError(f"{name} must be {input.dim()}-d for {kind} input; got shape {tuple(h.shape)}")
    if not input.is_floating_point():
        raise InputDtypeError(f"input must be a floating-point tensor; got dtype {input.dtype}")
    weight = getattr(module, "weight_ih_l0", None)
    if weight is not None and input.dtype != weight.dtype and not autocast_enabled(input.device.type):
        raise InputDtypeError(f"input must have the model's dtype {weight.dtype}; got {input.dtype} (convert one "
                              f"of them, e.g. input.to({weight.dtype}) or model.to({input.dtype}))")
    if input.shape[-1] != module.input_size:
        raise ShapeError(f"input.size(-1) must be equal to input_size: expected {module.input_size}, "
                         f"got {input.shape[-1]}")
    time_axis = 1 if input.dim() == 3 and (module.batch_first if batch_first is None else batch_first) else 0
    if input.shape[time_axis] == 0:
        raise ShapeError(f"input must have at least one time step, as torch.nn.RNN requires; got shape "
                         f"{tuple(input.shape)} (sequence length 0)")
    check_device(module, "input", input)


def check_state(module: nn.Module, name: str, h, expected: tuple[int, ...], layout: str, x: torch.Tensor,
                dtype: torch.dtype) -> None:
    """TypeError / ValueError naming what is wrong with the initial state ``h`` (named ``name``) given with input
    ``x``: its type, dtype (:class:`StateDtypeError`), shape against ``expected`` described by ``layout``
    (:class:`ShapeError`), device; each also of the type torch.nn.RNN raises for it."""
    if not isinstance(h, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None; got {type(h).__name__}")
    if not h.is_floating_point():
        raise StateDtypeError(f"{name} must be a floating-point tensor (the model's dtype {dtype}); got dtype "
                              f"{h.dtype}")
    if tuple(h.shape) != expected:
        raise ShapeError(f"{name} must have shape {expected} ({layout}); got {tuple(h.shape)}")
    if h.dtype != dtype and not autocast_enabled(x.device.type):
        raise StateDtypeError(f"{name} must have the model's dtype {dtype}; got {h.dtype}")
    check_device(module, name, h, x.device)


def assign_constrained(module: nn.Module, name: str, value) -> bool:
    """Assign ``value``, an ``nn.Parameter``, to the constrained weight ``name`` as a plain tensor is assigned:
    through its parametrization's ``right_inverse``, which sets the factors (expRNN's generator from a rotation)
    or refuses with a ValueError saying which factors to set.  False (nothing done) when ``name`` is not a
    constrained weight; torch's own ``setattr`` would answer "attribute already exists" (a KeyError)."""
    if not (isinstance(value, nn.Parameter) and parametrize.is_parametrized(module, name)):
        return False
    with torch.no_grad():
        module.parametrizations[name].right_inverse(value.detach())
    return True


def reverse_within(x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """x (T, B, ...) with each sequence's first lengths[b] steps reversed (all T when lengths is None)."""
    if lengths is None:
        return x.flip(0)
    steps = torch.arange(x.shape[0], device=x.device)[:, None]
    last = lengths.to(x.device)[None, :] - 1
    index = torch.where(steps <= last, last - steps, steps)
    return x.gather(0, index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x))


def time_major(module: nn.Module, input, hx=None) -> tuple[torch.Tensor, torch.Tensor | None, bool]:
    """(x (T, B, I), lengths or None, unbatched) of ``input`` as torch.nn.RNN takes it: (T, B, I), batch-first,
    unbatched (T, I) or a ``PackedSequence``; checked (:func:`check_input`) against ``module`` and ``hx``'s rank."""
    if isinstance(input, PackedSequence):
        sequences, lengths = pad_packed_sequence(input)  # (T, B, I), original batch order
        check_input(module, sequences, batch_first=False, states=[("hx", hx)])
        return sequences, lengths, False
    check_input(module, input, states=[("hx", hx)])
    unbatched = input.dim() == 2
    return (input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if module.batch_first else input)), None, \
        unbatched


def check_hx(module: nn.Module, hx, batch: int, unbatched: bool, x: torch.Tensor, dtype: torch.dtype, width: int,
             width_name: str) -> torch.Tensor:
    """``hx`` as (num_layers·D, B, width) in ``dtype``, zeros when None; checked by :func:`check_state`."""
    layers = module.num_layers * module.num_directions
    if hx is None:
        return x.new_zeros(layers, batch, width)
    expected = (layers, width) if unbatched else (layers, batch, width)
    check_state(module, "hx", hx, expected, f"num_layers * num_directions, {'' if unbatched else 'batch, '}"
                f"{width_name}", x, dtype)
    return (hx.unsqueeze(1) if unbatched else hx).to(dtype)


def stack_layers(module: nn.Module, x: torch.Tensor, lengths: torch.Tensor | None, hx: torch.Tensor, run_cell):
    """The layers and directions of ``module`` over x (T, B, I): ``run_cell(layer, direction, xs, h0)`` gives one
    cell's (outputs (T, B, ·), h_T); the reverse direction reads each sequence's first ``lengths`` steps
    backwards; dropout between layers in training.  Returns (outputs of the last layer, h_n stacked)."""
    directions, batch = module.num_directions, x.shape[1]
    last = None if lengths is None else (lengths - 1).to(x.device)
    states = []
    for layer in range(module.num_layers):
        outputs = []
        for direction in range(directions):
            xs = reverse_within(x, lengths) if direction else x
            out, h_n = run_cell(layer, direction, xs, hx[layer * directions + direction])
            if last is not None:  # each sequence's state after its last real step
                h_n = out[last, torch.arange(batch, device=out.device)]
            outputs.append(reverse_within(out, lengths) if direction else out)
            states.append(h_n)
        x = outputs[0] if directions == 1 else torch.cat(outputs, -1)
        if module.dropout and module.training and layer < module.num_layers - 1:
            x = nn.functional.dropout(x, module.dropout, training=True)
    return x, torch.stack(states)


def as_given(module: nn.Module, output: torch.Tensor, h_n: torch.Tensor, input, lengths, unbatched: bool):
    """(output, h_n) in the layout ``input`` came in: packed, unbatched or batch-first as torch.nn.RNN returns."""
    if isinstance(input, PackedSequence):
        return RecurrentModel._repack(output, lengths, input), h_n
    if unbatched:
        return output.squeeze(1), h_n.squeeze(1)
    return (output.transpose(0, 1) if module.batch_first else output), h_n


class RecurrentModel(nn.Module, Traits):
    """Multi-layer, optionally bidirectional h_t = φ(V h_{t-1} + W_ih x_t + b); see the module docstring.

    Subclasses create each cell's recurrent parameters in :meth:`_make_recurrent` and compose its V in
    :meth:`_compose`.
    """

    implementation = "fused"
    CONFIG_OPTIONS: tuple[str, ...] = ("nonlinearity", "input_init", "bias_init", "bias", "state_noise")  # the other
    # traits: Traits'
    state_noise = 0.0  # σ of the noise added to the state after every step; here for models saved whole before it

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity="modrelu",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None, *, input_init: str = "xavier", bias_init: str = "zeros",
                 state_noise: float = 0.0):
        super().__init__()
        num_layers, dropout = check_constructor(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                                                bidirectional, dtype)
        self.state_noise = noise.check_state_noise(state_noise)
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.nonlinearity = check_nonlinearity(nonlinearity)
        self.batch_first = batch_first
        self.dropout = dropout
        self.bidirectional = bidirectional
        self.input_init = check_scheme("input_init", input_init)
        self.bias_init = check_scheme("bias_init", bias_init)
        self.bias = bias
        factory = {"device": device, "dtype": dtype}
        directions = 2 if bidirectional else 1
        self.cells = [cell_suffix(layer, d) for layer in range(num_layers) for d in range(directions)]
        self._v_cache: dict = {}
        for index, suffix in enumerate(self.cells):
            layer_input = input_size if index < directions else hidden_size * directions
            self.register_parameter("weight_ih" + suffix,
                                    nn.Parameter(torch.empty(hidden_size, layer_input, **factory)))
            if bias:
                self.register_parameter("bias_ih" + suffix, nn.Parameter(torch.empty(hidden_size, **factory)))
            if self.nonlinearity == "modrelu":
                self.register_parameter("modrelu_bias" + suffix, nn.Parameter(torch.empty(hidden_size, **factory)))
            self._make_recurrent(suffix, factory)
        self._reset_shared()

    @property
    def num_directions(self) -> int:
        """D: 2 if bidirectional else 1."""
        return 2 if self.bidirectional else 1

    # ------------------------------------------------------------------ subclass hooks
    def _make_recurrent(self, suffix: str, factory: dict) -> None:
        """Create and initialise the recurrent parameters of the cell named by ``suffix``."""
        raise NotImplementedError

    def _compose(self, suffix: str) -> torch.Tensor:
        """V of the cell named by ``suffix`` (hidden_size × hidden_size), from its current parameters: by
        default the weight ``weight_hh{suffix}`` (composed by its parametrization, if it has one)."""
        return getattr(self, "weight_hh" + suffix)

    def _reset_recurrent(self, suffix: str) -> None:
        """Re-draw the recurrent parameters of one cell by the model's initialisation."""
        raise NotImplementedError

    def _recurrent_parameters(self, suffix: str) -> list[torch.Tensor]:
        """Every parameter the V of this cell is composed from (for the inference cache's version check)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ parameters
    def _reset_shared(self) -> None:
        with torch.no_grad():
            for suffix in self.cells:
                init_(getattr(self, "weight_ih" + suffix), self.input_init)
                if self.bias:
                    fan_in = getattr(self, "weight_ih" + suffix).shape[1]
                    init_(getattr(self, "bias_ih" + suffix), self.bias_init, fan_in=fan_in)
                if self.nonlinearity == "modrelu":
                    getattr(self, "modrelu_bias" + suffix).uniform_(-0.01, 0.01)

    def reset_parameters(self) -> None:
        """Re-draw every parameter by the model's initialisation (the paper's), as torch.nn.RNN's
        ``reset_parameters`` does for its own.  Use this, not a loop of ``nn.init`` calls over
        ``named_parameters()``: a constrained V's free parameters (a skew generator, rotation angles,
        T) are not the weight, and ``nn.init.orthogonal_(model.weight_hh_l0)`` would write into a
        freshly composed copy."""
        self._reset_shared()
        for suffix in self.cells:
            self._reset_recurrent(suffix)
        self._v_cache.clear()

    def cell(self, layer: int = 0, direction: int = 0) -> str:
        """The parameter-name suffix of one layer and direction: '_l0', '_l1_reverse', …"""
        directions = self.num_directions
        if not (0 <= layer < self.num_layers and 0 <= direction < directions):
            raise ValueError(f"layer must be in [0, {self.num_layers}) and direction in [0, {directions}); "
                             f"got layer={layer}, direction={direction}")
        return self.cells[layer * directions + direction]

    def recurrent_matrix(self, layer: int = 0, direction: int = 0) -> torch.Tensor:
        """V (hidden_size × hidden_size) of one layer and direction, composed from the current parameters
        (reused while autograd is off and none of them changed)."""
        suffix = self.cell(layer, direction)
        return kept(self._v_cache, suffix, self._recurrent_parameters(suffix), lambda: self._compose(suffix))

    def __setattr__(self, name: str, value) -> None:
        if not assign_constrained(self, name, value):
            super().__setattr__(name, value)

    def train(self, mode: bool = True):
        # Training loops that update parameters through ``p.data`` (pytorch/examples' word language model
        # does) move no version counter, so the inference cache would go stale; such loops switch modes
        # between training and evaluating, and dropping the cache there costs one composition of V.
        self._v_cache.clear()
        loops.forget_transposed()
        return super().train(mode)

    def __getstate__(self):
        state = super().__getstate__()
        state["_v_cache"] = {}  # composed matrices are not part of the model
        return state

    def regularization(self, delta: float = 0.0, t_decay: float = 0.0) -> torch.Tensor:
        """The model's penalty to add to the loss (zero unless overridden); ``delta`` and ``t_decay`` are checked
        as nnRNN's are (:func:`~nnrnn.parametrizations.schur.check_penalty_weights`)."""
        check_penalty_weights(delta, t_decay)
        return next(self.parameters()).new_zeros(())

    def flatten_parameters(self) -> None:
        """As torch.nn.RNN's, for code that calls it (e.g. under DataParallel): these models keep no flat
        weight buffer, so there is nothing to do."""

    @property
    def all_weights(self) -> list[list[torch.Tensor]]:
        """Per layer and direction, [weight_ih, V, bias_ih] (V composed), as torch.nn.RNN lists its own."""
        d = self.num_directions
        return [[getattr(self, "weight_ih" + s), self.recurrent_matrix(i // d, i % d)]
                + ([getattr(self, "bias_ih" + s)] if self.bias else []) for i, s in enumerate(self.cells)]

    # ------------------------------------------------------------------ forward
    def forward(self, input, hx: torch.Tensor | None = None):
        x, lengths, unbatched = time_major(self, input, hx)
        dtype = self._compute_dtype()
        if x.dtype != dtype:
            x = x.to(dtype)
        hx = self._check_hx(hx, x.shape[1], unbatched, x, dtype)
        if len(self.cells) == 1 and lengths is None:  # one layer, one direction: nothing to stack (one step at a
            output, h_last = self._run_cell(0, 0, x, hx[0], dtype)  # time pays for every call it saves)
            return as_given(self, output, h_last.unsqueeze(0), input, lengths, unbatched)
        output, h_n = stack_layers(self, x, lengths, hx,
                                   lambda layer, direction, xs, h0: self._run_cell(layer, direction, xs, h0, dtype))
        return as_given(self, output, h_n, input, lengths, unbatched)

    def _run_cell(self, layer: int, direction: int, x: torch.Tensor, h0: torch.Tensor, dtype: torch.dtype):
        if self.implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}; "
                             f"got {self.implementation!r}")
        suffix = self.cell(layer, direction)
        v = self.recurrent_matrix(layer, direction)
        weight_ih = getattr(self, "weight_ih" + suffix)
        bias = getattr(self, "bias_ih" + suffix) if self.bias else None
        modrelu_bias = getattr(self, "modrelu_bias" + suffix) if self.nonlinearity == "modrelu" else None
        if weight_ih.dtype != dtype:  # under autocast: the recurrence runs in the autocast dtype
            weight_ih, v = weight_ih.to(dtype), v.to(dtype)
            bias = bias.to(dtype) if bias is not None else None
            modrelu_bias = modrelu_bias.to(dtype) if modrelu_bias is not None else None
        with autocast_off(x.device.type):
            return IMPLEMENTATIONS[self.implementation](x, h0, weight_ih, bias, v, self.nonlinearity, modrelu_bias,
                                                        noise.draw(self.state_noise, *x.shape[:2], v.shape[0], x))

    def _compute_dtype(self) -> torch.dtype:
        """The parameters' dtype, or the autocast dtype while autocast is on for their device."""
        weight = self.weight_ih_l0
        if autocast_enabled(weight.device.type):
            return torch.get_autocast_dtype(weight.device.type)
        return weight.dtype

    def _check_hx(self, hx, batch: int, unbatched: bool, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return check_hx(self, hx, batch, unbatched, x, dtype, self.hidden_size, "hidden_size")

    @staticmethod
    def _repack(output: torch.Tensor, lengths: torch.Tensor, like: PackedSequence) -> PackedSequence:
        """``output`` (T, B, ·), in the original batch order, packed like the input ``like``."""
        if like.sorted_indices is not None:
            output, lengths = output[:, like.sorted_indices], lengths[like.sorted_indices.cpu()]
        data = pack_padded_sequence(output, lengths, enforce_sorted=True).data
        return PackedSequence(data, like.batch_sizes, like.sorted_indices, like.unsorted_indices)

    # ------------------------------------------------------------------ description
    @classmethod
    def parameter_count(cls, input_size: int, hidden_size: int, bias: bool = True, nonlinearity="modrelu",
                        num_layers: int = 1, bidirectional: bool = False, **options) -> int:
        """Free parameters: input weights, biases and modReLU biases of every layer and direction, plus
        each cell's :meth:`recurrent_parameter_count`."""
        d = 2 if bidirectional else 1
        per_cell = hidden_size * bool(bias) + hidden_size * (check_nonlinearity(nonlinearity) == "modrelu")
        inputs = hidden_size * input_size + (num_layers - 1) * hidden_size * d * hidden_size
        cells = num_layers * d
        return d * (inputs + num_layers * per_cell) + cells * cls.recurrent_parameter_count(hidden_size, **options)

    @classmethod
    def recurrent_parameter_count(cls, hidden_size: int, **options) -> int:
        """Free parameters of one cell's V (its degrees of freedom: a constrained V counts its factors')."""
        raise NotImplementedError

    def extra_repr(self) -> str:
        return stacked_repr(self, f"nonlinearity={self.nonlinearity!r}", *noise.repr_part(self.state_noise))

