"""A run's outcome: whether it learned, judged against its task's baseline and chance; the one definition the
trainer, ``nnrnn runs``, ``nnrnn reproduce`` and the reports share.

* **learned**: the best validation loss is clearly below the task's baseline (the loss of the best prediction
  that uses no memory of the inputs: copy's 10 log 8 / (T + 20), adding's 1/6, psMNIST's class frequencies,
  PTB's character frequencies): at least :data:`MARGIN` (10%) below it, the reports' rule for "learned";
* **did not learn**: it trained to its end, finite, but not clearly below the baseline;
* **solved** (a learned run's ``solved_at``): ``--stop-when-solved F`` stopped it at that update, its validation loss
  below F × the baseline at two validations in a row; a solved run has finished, like any other with an outcome;
* **diverged**: a last validation loss that is not finite, or a loss (training or validation) more than
  ``divergence_factor`` (:data:`DIVERGENCE_FACTOR`, 10) times the largest of the baseline, chance (a uniform
  guess: ln 9 on copy, 7/6 (predicting 0) on adding, ln 10 on psMNIST, ln V on PTB) and the untrained model's
  loss (its first update's: some models start above chance, e.g. EURNN's 21 on adding) at :data:`PATIENCE` (3)
  logged points in a row (training points, every ``--log-every`` updates, and validations): one point above it
  can be a transient spike of RMSprop's first updates (the paper's psMNIST preset at 512 units reaches 155 after
  2 updates, then trains).  Training stops there, and ``nnrnn train`` exits with :data:`DIVERGED_EXIT_CODE`.

The outcome is written into the run folder as ``outcome.json``.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import TrainingDiverged
from . import checkpoint, runfolder

LEARNED, NOT_LEARNED, DIVERGED = "learned", "did not learn", "diverged"
MARGIN = 0.1               # "clearly below": at least 10% below the reference (the reports' rule for learning)
DIVERGENCE_FACTOR = 10.0   # a loss above 10 × max(baseline, chance, untrained) is divergence
PATIENCE = 3               # ... at this many logged points in a row
DIVERGED_EXIT_CODE = TrainingDiverged.exit_code
FILE = runfolder.OUTCOME
LEGACY_MARKER = runfolder.DIVERGED_MARKER  # a grid run that diverged before outcome.json


@dataclass
class Outcome:
    """What became of a run: ``name`` (learned, did not learn, diverged) and the sentence that says why."""

    name: str
    reason: str
    best: float | None = None      # the best finite validation loss
    baseline: float | None = None
    chance: float | None = None
    solved_at: int | None = None   # the update at which --stop-when-solved stopped it (None: it did not)

    def lines(self, preset: str | None = None) -> list[str]:
        """The run's last lines: the outcome in capitals where it failed, and what to try (the paper's preset only
        to a run that did not start from it)."""
        head = {LEARNED: "learned", NOT_LEARNED: "DID NOT LEARN", DIVERGED: "DIVERGED"}[self.name]
        lines = [f"[nnrnn] outcome: {head}: {self.reason}"]
        if self.name == NOT_LEARNED:
            tries = "train longer (--steps, --epochs) or try another --lr" if preset == "paper" else \
                "train longer (--steps, --epochs), try another --lr, or start from --preset paper"
            lines.append(f"[nnrnn] the model did not learn: {tries}")
        return lines


def clearly_below(value: float, reference: float, margin: float = MARGIN) -> bool:
    """Whether ``value`` is at least ``margin`` (a share) below a positive ``reference``."""
    return math.isfinite(value) and value < (1 - margin) * reference


def divergence_limit(baseline: float | None, chance: float | None, factor: float | None,
                     initial: float | None = None) -> float | None:
    """The loss above which a run has diverged: ``factor`` × the largest of baseline, chance and the untrained
    model's loss ``initial``; None (only a non-finite loss diverges) when ``factor`` is 0 or None or nothing is
    known to scale it by."""
    scale = max((v for v in (baseline, chance, initial) if v is not None and math.isfinite(v)), default=None)
    return factor * scale if factor and scale is not None else None


def too_large(loss: float, limit: float | None) -> bool:
    """Whether a loss means divergence: not finite, or above ``limit``."""
    return not math.isfinite(loss) or (limit is not None and loss > limit)


def points_above(count: int, loss: float, limit: float | None) -> int:
    """The logged points in a row above ``limit`` (or not finite), ``count`` before this ``loss``."""
    return count + 1 if too_large(loss, limit) else 0


def divergence(what: str, loss: float, limit: float | None, factor: float | None) -> str:
    """The sentence saying that ``what`` (e.g. "the training loss at update 50") diverged."""
    if not math.isfinite(loss):
        return f"{what} is {loss}"
    return (f"{what} is {loss:.4g}, the last of {PATIENCE} logged losses in a row above {limit:.4g} ({factor:g} "
            f"times the largest of the task's baseline and chance losses and the untrained model's; "
            f"--divergence-factor sets the factor)")


def from_records(records: list[dict], baseline: float | None, chance: float | None, limit: float | None,
                 factor: float | None = DIVERGENCE_FACTOR) -> Outcome:
    """The outcome of a run that trained to its end, from its metrics records (see the module docstring), with
    ``limit`` from :func:`divergence_limit` (``factor`` is what it was made with, for the sentence)."""
    valid = [r for r in records if r.get("split") == "valid" and isinstance(r.get("loss"), (int, float))]
    above = 0
    for record in records:
        if record.get("split") in ("train", "valid") and isinstance(record.get("loss"), (int, float)):
            above = points_above(above, record["loss"], limit)
    if valid and not math.isfinite(valid[-1]["loss"]) or above >= PATIENCE:
        last = valid[-1] if valid and not math.isfinite(valid[-1]["loss"]) else records[-1]
        what = f"the {'validation' if last['split'] == 'valid' else 'training'} loss at update {last['step']}"
        return Outcome(DIVERGED, divergence(what, last["loss"], limit, factor), None, baseline, chance)
    finite = [r["loss"] for r in valid if math.isfinite(r["loss"])]
    best = min(finite, default=None)
    if best is None:
        return Outcome(NOT_LEARNED, "no finite validation loss was logged", None, baseline, chance)
    if baseline is None:
        return Outcome(NOT_LEARNED, f"best validation loss {best:.4g}; the task has no baseline to judge it by",
                       best, baseline, chance)
    share = 1 - best / baseline
    if clearly_below(best, baseline):
        return Outcome(LEARNED, f"best validation loss {best:.4g}, {share:.0%} below the baseline {baseline:.4g} "
                                f"(learned: at least {MARGIN:.0%} below it)", best, baseline, chance)
    compared = f"{share:.0%} below" if share > 0 else f"{-share:.0%} above"
    return Outcome(NOT_LEARNED, f"best validation loss {best:.4g} is {compared} the baseline {baseline:.4g}, not at "
                                f"least {MARGIN:.0%} below it", best, baseline, chance)


def write(folder: Path, outcome: Outcome) -> None:
    """Record ``outcome`` in the run folder (``outcome.json``)."""
    checkpoint.atomic_write(Path(folder) / FILE, lambda f: f.write(json.dumps(asdict(outcome), indent=1).encode()))


def read(folder: Path) -> Outcome | None:
    """The outcome recorded in a run folder; a grid run marked DIVERGED by an older nnrnn is diverged; None when
    none is recorded (a run still training, stopped, or made before outcomes were recorded)."""
    folder = Path(folder)
    try:
        saved = json.loads((folder / FILE).read_text())
        if isinstance(saved, dict) and isinstance(saved.get("name"), str):  # another structure: none recorded
            return Outcome(**{k: saved.get(k) for k in ("name", "reason", "best", "baseline", "chance", "solved_at")})
    except (OSError, ValueError, TypeError):
        pass
    if (folder / LEGACY_MARKER).is_file():
        return Outcome(DIVERGED, (folder / LEGACY_MARKER).read_text().strip())
    return None


def finished(ended: Outcome | None, records: list[dict]) -> bool:
    """Whether a run has finished (the one definition, shared by ``nnrnn runs`` and the grids): it has an outcome
    (:func:`read`), or, for a run made before outcomes were recorded, its last logged record is its test score
    (written once training stopped; a run resumed for more updates logs training records after it)."""
    return ended is not None or bool(records) and records[-1].get("split") == "test"


def clear(folder: Path) -> None:
    """Forget a recorded outcome: the run is training again (a resume, or --overwrite)."""
    (Path(folder) / FILE).unlink(missing_ok=True)
