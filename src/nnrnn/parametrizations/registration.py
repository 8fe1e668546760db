"""Registering a constraint on a weight: once only, and picklable afterwards.

``torch.nn.utils.parametrize.register_parametrization`` swaps the module's class
for a generated ``Parametrized<Class>`` whose ``__getstate__`` raises, so
``pickle`` and whole-model ``torch.save`` fail on any constrained module
and its ``__deepcopy__`` fails on a torch RNN after a forward pass (its
``_flat_weights`` then hold a composed, non-leaf weight).  :func:`register`
gives that generated class a ``__reduce_ex__`` and a ``__deepcopy__``: the
module is reduced to (its original class, that class's ``__getstate__``, the
names of its constrained tensors), and rebuilt through the class's own
``__setstate__`` and torch's helpers for generating the class, so the restored
module is parametrized exactly as before, its parametrizations' state included.  Applying a second constraint
to an already-constrained weight raises instead of silently composing the two.
"""
from __future__ import annotations

from copy import deepcopy

import torch
from torch import nn
from torch.nn.utils import parametrize


def _check_rebuild(base, state, names) -> None:
    """TypeError/ValueError unless (base, state, names) is what :func:`_reduce` writes: this function is on
    torch's weights_only allow-list (nnrnn/serialization.py), so a file may call it with anything."""
    if not (isinstance(base, type) and issubclass(base, nn.Module)) or base.__reduce_ex__ is _reduce:
        raise TypeError(f"a constrained module's base must be a torch.nn.Module class (not a generated "
                        f"parametrized one); got {base!r}")
    if not (isinstance(state, dict) and all(isinstance(key, str) for key in state)):
        raise TypeError(f"a constrained module's state must be a dict with str keys; got {type(state).__name__}")
    modules = state.get("_modules")
    plists = modules.get("parametrizations") if isinstance(modules, dict) else None
    if not isinstance(plists, nn.ModuleDict):
        raise ValueError("a constrained module's state must hold its parametrizations in a ModuleDict")
    if not (isinstance(names, list) and all(isinstance(name, str) and name.isidentifier() for name in names)
            and set(names) == set(plists.keys())
            and all(isinstance(plist, parametrize.ParametrizationList) for plist in plists.values())):
        raise ValueError(f"a constrained module's names must be the names of its parametrized tensors "
                         f"{sorted(plists.keys())}; got {names!r}")


def _rebuild(base: type, state: dict, names: list[str]) -> nn.Module:
    _check_rebuild(base, state, names)
    module = base.__new__(base)
    module.__setstate__(state)  # the base class's: e.g. torch's RNNs rebuild their flat-weight references here
    parametrize._inject_new_class(module)
    for name in names:
        parametrize._inject_property(module, name)
    _make_picklable(module)
    return module


PARAMETRIZATIONS: list[type[nn.Module]] = []  # every Parametrization subclass, in definition order


class Parametrization(nn.Module):
    """The base of nnrnn's parametrizations.  Defining a subclass registers it in :data:`PARAMETRIZATIONS`
    and on torch's weights_only allow-list (why that is safe: :mod:`nnrnn.serialization`), so a model that
    carries it, saved whole, loads with a plain ``torch.load``; :meth:`generators` says which of its
    original tensors ``param_groups`` puts under ``lr_orth``, and :meth:`regularization` what it adds to
    the loss."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        PARAMETRIZATIONS.append(cls)
        if hasattr(torch.serialization, "add_safe_globals"):  # torch >= 2.4
            torch.serialization.add_safe_globals([cls])

    def generators(self, plist: parametrize.ParametrizationList) -> list[nn.Parameter]:
        """The originals of ``plist`` (the ParametrizationList this is first in) that generate an orthogonal
        or unitary factor; by default its one original.  A constraint that generates none returns []."""
        return [plist.original]

    def regularization(self, delta: float, t_decay: float) -> torch.Tensor | None:
        """The penalty this constraint adds to the loss (``nnrnn.regularization(model, ...)`` sums them over a
        model), or None for a constraint that has none, the default."""
        return None


def _reduce(self, protocol):
    base = type(self).__bases__[0]
    state = dict(super(type(self), self).__getstate__())  # the base class's state (the generated class's raises)
    if "_flat_weights" in state:  # a torch RNN's cache of its weights holds composed (non-leaf) ones: detached
        state["_flat_weights"] = [w.detach() if isinstance(w, torch.Tensor) else w for w in state["_flat_weights"]]
    return _rebuild, (base, state, list(self.parametrizations.keys()))


def _deepcopy(self, memo):
    """A deep copy through the same state as pickling: torch's own ``__deepcopy__`` for parametrized modules
    copies every attribute, which fails on a torch RNN whose ``_flat_weights`` hold a composed weight."""
    rebuild, (base, state, names) = _reduce(self, 4)
    return rebuild(base, deepcopy(state, memo), names)  # copy.deepcopy records the result in memo itself


def _make_picklable(module: nn.Module) -> None:
    cls = type(module)  # the generated class is the module's own, so this touches no other
    cls.__reduce_ex__ = _reduce
    cls.__deepcopy__ = _deepcopy


def check_unconstrained(module: nn.Module, name: str, who: str) -> None:
    """ValueError if ``module.<name>`` already carries a constraint."""
    if parametrize.is_parametrized(module, name):
        existing = type(module.parametrizations[name][0]).__name__
        raise ValueError(f"{who}: {name!r} already has a {existing} constraint; applying a second would compose "
                         f"the two; remove the first with torch.nn.utils.parametrize.remove_parametrizations "
                         f"or constrain another weight")


def register(module: nn.Module, name: str, parametrization: nn.Module, who: str) -> nn.Module:
    """``parametrize.register_parametrization(module, name, parametrization)``, refusing a weight that
    already carries a constraint, and leaving ``module`` picklable."""
    check_unconstrained(module, name, who)
    parametrize.register_parametrization(module, name, parametrization)
    _make_picklable(module)
    return module
