"""What the environment asks of the kernels (docs/training.md's table), read once per process, and the kernels'
names: the recurrence's loops are COMPILED (csrc/recurrence_loops.cpp), ONEDNN (Python issuing oneDNN products)
or ATEN (Python issuing torch.addmm); a product is ONEDNN or TORCH."""
from __future__ import annotations

import dataclasses

from .. import environment

COMPILED, ONEDNN, ATEN, TORCH = "compiled", "onednn", "aten", "torch"


@dataclasses.dataclass(frozen=True)
class Settings:
    """What the environment asks of the policy, read once (docs/training.md's table)."""
    tune: bool
    onednn: bool | None
    cpp: bool
    loops: str | None
    expm_plan: str | None
    givens_chunks: int | None

    @classmethod
    def read(cls) -> Settings:
        return cls(tune=bool(environment.flag("NNRNN_TUNE", default=True)),
                   onednn=environment.flag("NNRNN_ONEDNN", default=None),
                   cpp=bool(environment.flag("NNRNN_CPP", default=True)),
                   loops=environment.choice("NNRNN_LOOPS", (COMPILED, ONEDNN, ATEN)),
                   expm_plan=environment.choice("NNRNN_EXPM_PLAN", ("fixed", "read")),
                   givens_chunks=environment.positive_integer("NNRNN_GIVENS_CHUNKS"))


_settings: list[Settings] = []


def current() -> Settings:
    """The environment's settings, read on first use."""
    if not _settings:
        _settings.append(Settings.read())
    return _settings[0]


def reset() -> None:
    """Read the environment again on next use."""
    _settings.clear()
