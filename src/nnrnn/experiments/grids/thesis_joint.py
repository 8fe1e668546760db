"""The ``thesis-joint`` grid (issue 68, item 2): the thesis grid's settings under one joint pick, an option set
searched once for all its arms together.

The thesis grid (:mod:`.thesis`) trains every arm under two shared option sets read from the presets, the paper's
published settings and a fixed moving basis (lr_orth = 0.1 × lr).  The issue asks for a second set searched once for
all arms together, with lr_orth a dimension of its own, so that the search can choose a nearly fixed basis (the
published 1e-6) or a moving one (5e-5 to 1e-4) for itself.  This grid is that search, and the thesis grid's
settings (the same delays :data:`.thesis.DELAYS`, noise levels :data:`.thesis.NOISE`, seeds, updates, arms and
hypotheses H1–H4) trained under its pick as their one option set, ``joint``.

**The search, declared before it runs** (:data:`SEARCH`, a :class:`~..planning.declaration.JointSearch`, recorded
in OUT/plan.json when the grid starts): one Optuna study (:mod:`..planning.joint`) at copy T = 100, σ = 0.03 (the
middle delay, with noise), on seed :data:`~..planning.grid.TUNE_SEED` (none of the grid's seeds), each trial as long
as a grid run.  Every trial trains all five arms with the same drawn options, each on the arms whose model has it:
lr, lr_orth and RMSprop's α on every arm, δ and the L2 decay on T on the nnRNN's arms alone (expRNN has no Schur
form), as in the thesis grid's option sets.  With r_a the last validation loss of arm a over copy's memoryless
baseline 10 log 8 / (T + 20), the thesis grid's primary measure, a trial's value, minimized, is

    value = (1/5) Σ_a log10 r_a,

so every arm weighs alike and a pick cannot favour the nnRNN with T alone.  Its dimensions (:data:`SPACE`): lr over
the equal-terms range of the grid's other searches (:data:`..planning.searching.EQUAL_LR_RANGE`, 1e-5 to 3e-2);
lr_orth log-uniform over 1e-7 to 1e-3, so that the published 1e-6 and the moving 5e-5 to 1e-4 both lie a decade or
more inside it; α, δ and the L2 decay on T over the supplement's sets.  Its first trial is the published set
(:data:`FIRST`, a point of the space, which the declaration checks), so that a pick is a pick against it; the report
says whether the pick left it, and if the search found nothing better, says so.

Its budget (:data:`TRIALS`, :data:`STARTUP`), sized so that search and grid fit about an hour on 2 slots: a thesis
run is about 15 s on one slot of the 2-core host, so a trial of five arms on 2 slots is about 45 s (3 rounds), 20
trials about 15 min, and the grid's 300 runs about 44 min (the thesis grid's 600 read 88 min).  ``nnrnn reproduce
--scale thesis-joint --plan --jobs 2``, which counts the search's trials at 5 runs each, read 52 min for both
(2026-12-02, beside another grid; it places a trial's arms as if they never waited for each other, 2.5 rounds a
trial where they take 3, and leaves out each trial's start of 2 worker processes).  The search's trials were cut to
fit, not the grid."""
from __future__ import annotations

import json
import math

from ..judging.words import name
from ..planning.declaration import CHOICES, LOG, TUNED, JointSearch, Scale
from ..planning.grid import TUNE_SEED, Grid
from ..planning.searching import ALPHAS, DELTAS, EQUAL_LR_RANGE, T_DECAYS
from ..reporting.sections import Report
from . import thesis
from .thesis import (ARMS, DELAYS, NOISE, SEEDS, Budget, arm_setting, comparisons_section, hypotheses_section,
                     last_ratio, outcome_section, published, setting_name)

NAME = "thesis-joint"
JOINT = "joint"  # the one option set's name
SEARCH_AT = (0.03, 100)  # (σ, T) of the setting the search trains at: the middle delay, with noise
SPACE = {"lr": (LOG, *EQUAL_LR_RANGE), "lr_orth": (LOG, 1e-7, 1e-3), "alpha": (CHOICES, ALPHAS),
         "delta": (CHOICES, DELTAS), "t_decay": (CHOICES, T_DECAYS)}
FIRST = {k: published()[k] for k in SPACE}  # the published set, the first trial
TRIALS, STARTUP = 20, 8
# how the search section names each dimension, as the thesis report's tables do
OPTION_NAMES = {"lr": "lr", "lr_orth": "lr_orth", "alpha": "α", "delta": "δ", "t_decay": "L2 on T"}


def measure(config: dict, records: list[dict]) -> float:
    """One arm's share of a trial's value: log10 of its last validation loss over copy's memoryless baseline (the
    thesis grid's primary measure, :func:`.thesis.last_ratio`); +∞ where it has none (the trial is pruned)."""
    value = last_ratio(records, config["T"])
    return math.log10(value) if value is not None and value > 0 else math.inf


def joint_scale(name: str, *, delays=DELAYS, noise=NOISE, seeds=SEEDS, budget: Budget = Budget(),
                search_at=SEARCH_AT, trials: int = TRIALS, share: float = 1.0, startup: int = STARTUP,
                about: str = "") -> Scale:
    """The thesis grid's settings at ``delays`` × ``noise`` in the ``tuned`` column, its arms over the published
    options until the joint search (at ``search_at``, (σ, T)) picks theirs; the grid itself, or a toy of it."""
    settings = {setting_name(JOINT, s, T): arm_setting(ARMS, published(), s, T, columns=(TUNED,), budget=budget)
                for s in noise for T in delays}
    return Scale(name=name, seeds=tuple(seeds), report=REPORT, about=about, settings=settings,
                 joint=JointSearch(setting=setting_name(JOINT, *search_at), space=SPACE, first=FIRST,
                                   measure=measure, trials=trials, share=share, seed=TUNE_SEED, startup=startup))


# ------------------------------------------------------------------------------------------- sections

def option_sets(grid: Grid) -> dict:
    """{setting: (option set, σ, T)} of the grid's settings, as the thesis report's sections read them."""
    return {setting: (JOINT, spec.options.get("state_noise", 0.0), spec.options["T"])
            for setting, spec in grid.spec.settings.items()}


def protocol_section(grid: Grid) -> list[str]:
    """What ran (:func:`.thesis.protocol_section`), the joint pick as every run resolved it."""
    return thesis.protocol_section(grid, option_sets(grid))


def mechanism_section(grid: Grid) -> list[str]:
    """Mechanism beside outcome (:func:`.thesis.mechanism_section`), one panel per noise level."""
    return thesis.mechanism_section(grid, option_sets(grid))


def claim_section(grid: Grid) -> list[str]:
    """The paper's claim at this scale (:func:`.thesis.claim_section`), under the joint pick."""
    return thesis.claim_section(grid, option_sets(grid))


def trials_of(grid: Grid) -> list[dict]:
    """The joint search's trials in order (``OUT/trials.json``, :func:`nnrnn.experiments.reproduce.joint_tune`)."""
    return json.loads(grid.trials.read_text()).get(grid.joint_search.name, []) if grid.trials.is_file() else []


def picked(grid: Grid) -> dict | None:
    """The pick the grid trained under, its searched options (from ``OUT/tuned.json``: every arm's share of it);
    None when the search picked nothing."""
    tuned = json.loads(grid.tuned.read_text()) if grid.tuned.is_file() else {}
    found = {k: v for entries in tuned.values() for entry in entries.values() for k, v in entry.items()
             if k in grid.joint.space}
    return found or None


def _shown(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _span(dimension: tuple) -> str:
    if dimension[0] == LOG:
        return f"{dimension[1]:g} to {dimension[2]:g} (log-uniform)"
    return "{" + ", ".join(_shown(v) for v in dimension[1]) + "}"


def search_section(grid: Grid) -> list[str]:
    """The joint search: its setting, objective and space, every trial's options and value (each arm's share beside
    the mean), and the pick, with whether it left the published set."""
    search = grid.joint
    setting = grid.spec.settings[search.setting]
    labels = grid.searched_labels(search.setting)
    steps = max(1, round(setting.options["steps"] * search.share))
    lines = ["## The joint search: one option set for every arm", "",
             f"One search picked the options every arm trains with below, at copy T = {setting.options['T']}, "
             f"σ = {setting.options.get('state_noise', 0.0):g}, on seed {search.seed} (none of the grid's), each "
             f"trial {steps:,} updates. Every trial trains all {len(labels)} arms ("
             + ", ".join(name(label) for label in labels) + ") with the same drawn options, δ and the L2 decay on T "
             "on the nnRNN's arms alone (expRNN has no Schur form); its value is the mean over the arms of log10(last "
             "validation loss / copy's memoryless baseline), lower better. Its first trial is the published set; "
             f"then random draws until {search.startup} trials have finished, then Optuna's TPE sampler; "
             f"{search.trials} trials in all. The trial of lowest value is the pick, the one option set (`{JOINT}`) of "
             "every setting below.", "",
             "| option | searched over | published set |", "|---|---|---|",
             *[f"| {OPTION_NAMES.get(k, k)} | {_span(d)} | {_shown(search.first[k])} |"
               for k, d in search.space.items()], ""]
    return lines + trials_table(grid, labels) + pick_lines(grid) + [""]


def trials_table(grid: Grid, labels: list[str]) -> list[str]:
    """Every trial: its state, drawn options, each arm's log10 ratio and the mean (its value)."""
    search, chosen = grid.joint, picked(grid)
    space = list(search.space)
    lines = ["| trial | state | " + " | ".join(OPTION_NAMES.get(k, k) for k in space) + " | "
             + " | ".join(name(label) for label in labels) + " | mean (value) |",
             "|---|---|" + "---|" * (len(space) + len(labels) + 1)]
    for t in trials_of(grid):
        tags = [tag for tag, yes in (("published", "published" in t),
                                     ("pick", t["state"] == "COMPLETE" and t["params"] == chosen)) if yes]
        number = f"{t['number']} ({', '.join(tags)})" if tags else str(t["number"])
        state = t["state"].lower() + (f" ({t['stopped']})" if t.get("stopped") else "")
        arms = t.get("arms", {})
        cells = [_shown(t["params"].get(k, "—")) for k in space]
        cells += [f"{arms[label]:.3f}" if label in arms else "—" for label in labels]
        cells.append(f"{t['value']:.3f}" if t["value"] is not None else "—")
        lines.append(f"| {number} | {state} | " + " | ".join(cells) + " |")
    return lines + [""]


def pick_lines(grid: Grid) -> list[str]:
    """What the search picked, and whether that left the published set; where it found nothing better, that."""
    search, chosen, trials = grid.joint, picked(grid), trials_of(grid)
    if chosen is None:
        return ["No trial finished, so the search picked nothing and no run trained under a pick."]
    first = next((t for t in trials if "published" in t), None)
    scored = first is not None and first["value"] is not None
    left = [k for k in search.space if chosen[k] != search.first[k]]
    if not left:
        return ["**The search found nothing better than the published set**: its best trial is the published set "
                "itself" + (f" (value {first['value']:.3f})" if scored else "") + ", so the grid trains under the "
                "published options, and its runs are the thesis grid's published ones."]
    best = next((t for t in trials if t["state"] == "COMPLETE" and t["params"] == chosen), None)
    against = f"the published set's {first['value']:.3f}" if scored else "the published set, which did not finish"
    trial = f"trial {best['number']} (value {best['value']:.3f}, against {against})" if best else "its best trial"
    moved = "; ".join(f"{OPTION_NAMES.get(k, k)} {_shown(search.first[k])} → {_shown(chosen[k])}" for k in left)
    kept = [OPTION_NAMES.get(k, k) for k in search.space if k not in left]
    return [f"**The pick**, {trial}, left the published set in {moved}"
            + (f"; it kept {', '.join(kept)}." if kept else ".")]


REPORT = Report("The paper's thesis under one joint pick: the nnRNN with and without its non-normal part",
                (hypotheses_section, search_section, protocol_section, outcome_section, comparisons_section,
                 claim_section, mechanism_section))

SCALE = joint_scale(
    NAME,
    about="thesis-joint: the thesis grid's settings under one option set searched once for all five arms together "
          "(a search of 20 trials of 5 runs each, then 300 runs: --plan read 52 min with --jobs 2 on the 2-core AMD "
          "EPYC beside another grid; it resumes across sittings)",
)
