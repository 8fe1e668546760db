"""Hyperparameter presets: JSON files beside this module, keyed by preset, task and model.

A preset maps (task, model) to training options.  The PTB tables differ by
truncation length, so their keys are ``ptb-150`` and ``ptb-300``.
"""
from __future__ import annotations

import json
from functools import cache
from importlib import resources

from ..errors import OptionError


def preset_names() -> list[str]:
    """The presets' names, the paper's first."""
    names = (p.name[:-5] for p in resources.files(__package__).iterdir() if p.name.endswith(".json"))
    return sorted(names, key=lambda name: (not name.startswith("paper"), name))


@cache
def load(name: str) -> dict:
    if name not in preset_names():
        raise OptionError(f"unknown preset {name!r}; choose one of {', '.join(preset_names())}")
    return json.loads(resources.files(__package__).joinpath(f"{name}.json").read_text())


def table_key(task: str, bptt: int | None = None) -> str:
    return f"ptb-{bptt or 150}" if task == "ptb" else task


def covers(name: str, task: str, model: str, bptt: int | None = None) -> bool:
    """Whether preset ``name`` has settings for (task, model)."""
    return model in load(name).get(table_key(task, bptt), {})


def procedure(name: str, task: str, bptt: int | None = None) -> dict:
    """The options every model of preset ``name``'s table for ``task`` shares (batch size, length, read-out
    initialisation, PTB's embedding and plateau schedule, ...): the task's procedure, for a model the preset
    has no entry for."""
    entries = list(load(name).get(table_key(task, bptt), {}).values())
    if not entries:
        return {}
    shared = dict(entries[0])
    for entry in entries[1:]:
        shared = {k: v for k, v in shared.items() if k in entry and entry[k] == v}
    shared.pop("hidden", None)
    return shared


def lookup(name: str, task: str, model: str, bptt: int | None = None) -> dict:
    """The options preset ``name`` gives for (task, model); ValueError if it has none."""
    preset = load(name)
    key = table_key(task, bptt)
    if key not in preset:
        tables = ", ".join(k for k in preset if not k.startswith("_"))
        raise OptionError(f"preset {name!r} has no settings for task {key!r}; it covers {tables}")
    if model not in preset[key]:
        raise OptionError(f"preset {name!r} has no settings for model {model!r} on {key}; "
                         f"it covers {', '.join(preset[key])}")
    return dict(preset[key][model])
