"""The ``thesis`` grid (issue 68): the paper's claim as a controlled experiment, the nnRNN with and without its
non-normal part at equal options, on copy at fixed delays, with and without noise in the state.

The claim, in the paper's words (its abstract and §3): "non-normal dynamics ... allow for information propagation
through the network via transient dynamics"; a non-normal connectivity matrix "can exhibit superior memory
properties" than a normal or orthogonal one, after Ganguli et al. (2008), whose measure is the Fisher memory of a
linear network with noise in its state.  So each arm differs from the nnRNN with its non-normal part T trained
(V = P(Λ + T)Pᵀ) in one declared factor (:data:`ARMS`; what a factor brings with it is said with it):

* ``nnrnn normal``: T ≡ 0 (V = PΛPᵀ, normal) at the same N;
* ``nnrnn normal, equal params``: T ≡ 0 at the nnRNN's parameter count, so also a wider N (85 against 64), the
  factor the paper's "params" columns control;
* ``nnrnn delay``: T started as the delay line of the paper's §3 (α = 0.02 on its first sub-diagonal) and trained;
* ``exprnn``: expRNN, the normal (orthogonal) reference with a trainable basis, at the nnRNN's parameter count
  (so another model, N = 86 and no Schur form).  Its whole recurrent matrix is its orthogonal factor, trained at
  lr_orth: under the ``published`` set (1e-6) it hardly moves from Henaff's start in 2,000 updates, and under
  ``moving basis`` (5e-5) it trains 10× slower than the nnRNN's Λ and T.  H4 is therefore a test against expRNN at
  the nnRNN's rates, not at expRNN's own published ones (lr_orth 1e-4).

Every arm trains under each of the shared option sets of :data:`OPTION_SETS`, the same for every arm, read from the
presets and the scale alone:

* ``published``: the paper's own copy settings for the nnRNN (``paper-params``: RMSprop, lr 5e-4, α 0.99, lr_orth
  1e-6, δ 1e-4, L2 on T 1e-6, Henaff's initialisation), under which the basis P hardly moves;
* ``moving basis``: the same with lr_orth = 0.1 × lr (the equal-terms tie of :mod:`..planning.searching`, 5e-5),
  so that P moves.  The issue asks for a joint pick searched once for all arms together as well; that is the
  ``thesis-joint`` scale (:mod:`.thesis_joint`), which trains these settings under it.  This fixed second regime
  keeps the grid covering a nearly fixed and a moving basis, the factor the memory grid's one T comparison left
  uncontrolled.

Copy at T = :data:`DELAYS`, with noise of standard deviation σ in :data:`NOISE` added to the hidden state after every
step (``--state-noise``, in training and evaluation), :data:`SEEDS` seeds per arm, each run :data:`UPDATES` updates
of :data:`BATCH` sequences, validated every :data:`EVAL_EVERY`, never stopped early (so that every run's last
validation is at the same update).

**Hypotheses and rules, declared before the grid runs** (recorded in OUT/plan.json when it starts, as every grid's
rules are):

* H1: at every delay, noise level and option set, the nnRNN with T reaches a lower last validation loss than the
  nnRNN without T at the same N;
* H2: the same against the nnRNN without T at equal parameters;
* H3: started as a delay line, the nnRNN reaches a lower last validation loss than started at T = 0;
* H4: the nnRNN with T reaches a lower last validation loss than expRNN;
* the theory's own prediction: the differences of H1 and H2 grow with the noise (stated, not tested, since the
  family is already large).

The primary measure is per seed the last validation loss over copy's memoryless baseline 10 log 8 / (T + 20),
compared as its log10 by a two-sided Welch test with a bootstrap interval of the difference of means
(:mod:`..judging.significance`); every pre-declared comparison of the grid (4 pairs × delays × noise levels × option
sets) is one family, controlled by Benjamini–Hochberg.  The secondary measure is the updates to solve (validation
loss below :data:`SOLVED_SHARE` × the baseline at two validations in a row), the unsolved seeds censored at the
budget, by the log-rank test, in the same family's second half.  Beside the outcome, every run's mechanism measured
when it ended (:mod:`nnrnn.analysis.mechanism`: ‖T‖_F/‖Λ‖_F, Henrici's departure from normality, ‖P − P₀‖_F/√N, the
spectral radius, the Fisher memory of the trained linear part under the run's noise), summarised per arm.

Why these sizes (2 cores, ``--jobs 2``): N = 64 as the memory grid (at N = 32 no model solved T = 50 within 3,000
updates), batch 16, 2,000 updates per run; :data:`SEEDS` = 10 seeds so that no side is exploratory.  The delays and
the noise level come from a pilot of the nnRNN with the published set, seed 0, 2,000 updates (2026-12-02, ``nnrnn
train copy --model nnrnn --preset paper-params --hidden 64 --batch-size 16 --steps 2000 --eval-every 50 --T T
--state-noise σ``), last validation loss over the baseline: at T = 100, 0.13 at σ = 0, 0.14 at 0.03, 0.27 at 0.05,
0.91 at 0.1, 1.01 at 0.3 (so the published set does not solve T = 100 within the budget; with lr_orth 5e-5, 0.089);
at T = 50, 0.037 at σ = 0 and 0.074 at 0.03; T = 200 was not piloted.  So the delays start at T = 50, where the
noiseless nnRNN solves and the secondary measure has solves to count; at T = 100 and 200 the primary measure, a
continuous one, still compares arms that do not solve.  σ = 0.03 is the level at which the nnRNN still solves T = 50;
at 0.05 it is at 0.27 of the baseline at T = 100 and from 0.1 on it learns nothing at this budget, so no arm could be
told apart there.  The cost is ``nnrnn reproduce --scale thesis --plan``'s."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ... import presets
from ...tasks.copy import baseline_loss
from ..judging import significance
from ..judging.labels import variant
from ..judging.rules import rule
from ..judging.statistics import Stat
from ..judging.words import name
from ..planning.declaration import Scale, Setting, Variant
from ..planning.searching import LR_ORTH_RATIO
from ..planning.grid import Grid, PlannedRun, finished, metrics
from ...analysis.mechanism import flat, read_record
from ..reporting import collect
from ..reporting.figures import line_style, save_whole
from ..reporting.sections import Report
from .beyond import DELAY
from .memory import NORMAL, solved_at

HIDDEN = 64
DELAYS = (50, 100, 200)
NOISE = (0.0, 0.03)  # σ: the pilot (the module's docstring) found 0.03 the level at which the nnRNN still solves T = 50
SEEDS = tuple(range(10))
UPDATES, BATCH, EVAL_EVERY = 2000, 16, 50
SOLVED_SHARE = 0.1
MARKERS = "o^s"  # one per delay, beside each arm's colour

NORMAL_PARAMS = variant("nnrnn normal, equal params", "nnRNN without T, equal params", ("#0072b2", (0, (1, 1))))
ARMS = {
    NORMAL: Variant(model="nnrnn", options={"triangular": "none"}),
    NORMAL_PARAMS: Variant(model="nnrnn", options={"triangular": "none"}, equal_params=True),
    DELAY: Variant(model="nnrnn", options={"t_init": "delay:0.02"}),
}
REFERENCE = "nnrnn"
PAIRS = ((REFERENCE, NORMAL, "H1"), (REFERENCE, NORMAL_PARAMS, "H2"), (DELAY, REFERENCE, "H3"),
         (REFERENCE, "exprnn", "H4"))
_SIZES = ("hidden", "T", "batch_size")  # what the grid sets itself; the read-out and input inits are shared


def published() -> dict:
    """The paper's copy settings for the nnRNN (``paper-params``), less what sizes the network and the task."""
    entry = presets.load("paper-params")["copy"]["nnrnn"]
    return {k: v for k, v in entry.items() if k not in _SIZES}


# the options of a set every arm takes (expRNN too); the Schur form's own (δ, the L2 decay on T) go to the nnRNN arms
# alone, at the set's values, as :func:`arms` gives them
SCHUR_OPTIONS = ("delta", "t_decay", "triangular")
OPTION_SETS = {"published": published(),
               "moving basis": {**published(), "lr_orth": LR_ORTH_RATIO * published()["lr"]}}


def arms(option_set: str) -> dict:
    """The variants of :data:`ARMS` with the set's Schur-form options (the L2 decay on T is idle where T ≡ 0)."""
    own = {k: v for k, v in OPTION_SETS[option_set].items() if k in SCHUR_OPTIONS and k != "triangular"}
    return {label: dataclasses.replace(arm, options={**own, **arm.options}) for label, arm in ARMS.items()}


def setting_name(option_set: str, sigma: float, T: int) -> str:
    return f"copy-{T}-noise-{sigma:g}-{option_set.replace(' ', '-')}"


# {setting: (option set, σ, T)}, in the order the grid trains and the report shows them
SETTINGS = {setting_name(o, s, T): (o, s, T) for o in OPTION_SETS for s in NOISE for T in DELAYS}


@dataclass(frozen=True)
class Budget:
    """What sizes a setting's runs: N, updates, batch and the validation interval (the thesis grid's, or a toy's in
    the tests)."""
    hidden: int = HIDDEN
    updates: int = UPDATES
    batch: int = BATCH
    eval_every: int = EVAL_EVERY


# the same grid at a GPU's scale (:mod:`.thesis_gpu` declares it; here, so that these reports name it): the paper's
# nnRNN on copy (N = 128), up to the long-memory protocol's delay, 10,000 updates of 128, validated every 100
GPU_NAME = "thesis-gpu"
GPU_DELAYS = (200, 500, 1000)
GPU_BUDGET = Budget(hidden=128, updates=10_000, batch=128, eval_every=100)


def arm_setting(variants: dict, options: dict, sigma: float, T: int, columns=("params",),
                budget: Budget = Budget()) -> Setting:
    """Copy at delay ``T`` with noise ``sigma``: the reference nnRNN and expRNN beside ``variants``, every arm over
    ``options`` less the Schur form's own (a variant carries those), in ``columns``, sized by ``budget``."""
    return Setting(task="copy", hidden=budget.hidden, columns=columns, models=(REFERENCE, "exprnn"),
                   variants=variants,
                   options={**{k: v for k, v in options.items() if k not in SCHUR_OPTIONS}, "T": T,
                            "batch_size": budget.batch, "steps": budget.updates, "eval_every": budget.eval_every,
                            "log_every": budget.eval_every, "state_noise": sigma})


def _setting(option_set: str, sigma: float, T: int) -> Setting:
    return arm_setting(arms(option_set), OPTION_SETS[option_set], sigma, T)


# ------------------------------------------------------------------------------------------- measures

def ratio(grid: Grid, run: PlannedRun) -> float | None:
    """The primary measure: the run's last validation loss over copy's memoryless baseline (None: not finished)."""
    if not finished(grid.run_folder(run)):
        return None
    return last_ratio(metrics(grid.run_folder(run)), run.options["T"])


def last_ratio(records: list[dict], T: int) -> float | None:
    """The last validation loss of a run's ``records`` over copy's memoryless baseline 10 log 8 / (T + 20) (None:
    no validation)."""
    valid = [r for r in records if r.get("split") == "valid"]
    return valid[-1]["loss"] / baseline_loss(T) if valid else None


def solve_time(grid: Grid, run: PlannedRun) -> float | None:
    return solved_at(metrics(grid.run_folder(run)), {**run.options, "stop_when_solved": SOLVED_SHARE})


def cells(grid: Grid) -> dict[tuple[str, str], list[PlannedRun]]:
    """{(setting, label): its runs}, in plan order."""
    found: dict[tuple[str, str], list[PlannedRun]] = {}
    for run in grid.planned:
        found.setdefault((run.setting, run.label), []).append(run)
    return found


def _log10(values) -> list[float]:
    return [math.log10(v) for v in values if v is not None and v > 0 and math.isfinite(v)]


def comparisons(grid: Grid) -> list[dict]:
    """Every pre-declared comparison (:data:`PAIRS` at each setting), primary (Welch on log10 ratio) and secondary
    (log-rank on the censored updates to solve), each adjusted with the whole family (Benjamini–Hochberg)."""
    by = cells(grid)
    found = []
    for setting in grid.settings:
        for a, b, hypothesis in PAIRS:
            if (setting, a) not in by or (setting, b) not in by:
                continue
            ra, rb = by[setting, a], by[setting, b]
            primary = significance.welch(_log10(ratio(grid, r) for r in ra), _log10(ratio(grid, r) for r in rb))
            budget = ra[0].options["steps"]
            secondary = significance.log_rank([solve_time(grid, r) for r in ra if finished(grid.run_folder(r))],
                                              budget, [solve_time(grid, r) for r in rb
                                                       if finished(grid.run_folder(r))], budget)
            found.append({"setting": setting, "a": a, "b": b, "hypothesis": hypothesis, "primary": primary,
                          "secondary": secondary})
    adjusted = significance.controlled([c["primary"].p for c in found] + [c["secondary"].p for c in found])
    for i, c in enumerate(found):
        c["q_primary"], c["q_secondary"] = adjusted[i], adjusted[len(found) + i]
    return found


def mechanism_of(grid: Grid, run: PlannedRun) -> dict:
    """The run's mechanism record as flat numbers (:func:`nnrnn.analysis.mechanism.flat`; None where one does not
    apply)."""
    return flat(read_record(grid.run_folder(run)))


# ------------------------------------------------------------------------------------------- sections

def hypotheses_section(grid: Grid) -> list[str]:
    return ["## What this grid tests, declared before it ran", "",
            "The paper's claim: a trainable non-normal part T of V = P(Λ + T)Pᵀ lets transient dynamics carry "
            "information longer than a normal or orthogonal matrix can (its §3, after Ganguli et al. 2008: the "
            "Fisher memory of noisy linear networks). Each arm differs from the nnRNN with T in one declared factor "
            "(at equal parameters, with the width it implies; expRNN, being another model):", "",
            *[f"- {name(label)}: {what}" for label, what in (
                (NORMAL, "T ≡ 0 at the same N"), (NORMAL_PARAMS, "T ≡ 0 at the nnRNN's parameter count"),
                (DELAY, "T started as a delay line (α = 0.02) and trained"),
                ("exprnn", "expRNN, orthogonal with a trainable basis, at the nnRNN's parameter count; its whole "
                 "recurrence trains at lr_orth, so under the published set (1e-6) it hardly trains"))], "",
            "Hypotheses: H1, the nnRNN with T reaches a lower last validation loss than without T at the same N; "
            "H2, than without T at equal parameters; H3, started as a delay line it does better than started at "
            "T = 0; H4, it does better than expRNN. Primary measure: per seed the last validation loss over copy's "
            "memoryless baseline, compared as log10 by a two-sided Welch test; secondary: updates to solve (loss "
            f"below {SOLVED_SHARE:g} × baseline at two validations in a row), unsolved seeds censored at the "
            "budget, by the log-rank test. All comparisons of the grid are one family, adjusted by "
            "Benjamini–Hochberg (q below). Every hypothesis predicts a lower loss for its first arm: a comparison "
            "*supports* it when q is below the level in that direction, *contradicts* it when below the level the "
            "other way, and is *not clear* otherwise.", ""]


def protocol_section(grid: Grid, settings: dict = SETTINGS) -> list[str]:
    """What ran, read from the planned runs: sizes, option sets, delays, noise, seeds, budget; ``settings``:
    {setting: (option set, σ, T)} of the grid's settings (:data:`SETTINGS`, or another grid's of these arms)."""
    by = cells(grid)
    lines = ["## What ran", "", "| arm | N | parameters |", "|---|---|---|"]
    first = grid.settings[0] if grid.settings else None
    for (setting, label), runs in by.items():
        if setting == first:
            lines.append(f"| {name(label)} | {runs[0].hidden} | {runs[0].budget if label == REFERENCE else '—'} |")
    keys = ("optimizer", "lr", "alpha", "lr_orth", "delta", "t_decay", "init", "input_init", "readout_init")
    ways: dict[tuple, set] = {}
    for run in grid.planned:  # every run, so that a set whose runs differed shows each way they ran
        config = collect.ran_config(grid, run)
        ways.setdefault((settings[run.setting][0], run.label), set()).add(
            tuple(config.get(k) for k in keys if run.model == REFERENCE or k not in SCHUR_OPTIONS))
    lines += ["", "Option sets as every run resolved them (δ and the L2 decay on T: the nnRNN's arms only):", "",
              "| option set | arm | " + " | ".join(("optimizer", "lr", "α", "lr_orth", "δ", "L2 on T", "init",
                                                     "input init", "read-out init")) + " |",
              "|---|---|" + "---|" * len(keys)]
    for (option_set, label), found in ways.items():
        for values in sorted(found, key=str):
            shown = [f"{v:g}" if isinstance(v, float) else str(v) for v in values]
            if len(values) < len(keys):  # no Schur form: no δ, no decay on T
                shown[4:4] = ["—", "—"]
            lines.append(f"| {option_set} | {name(label)} | " + " | ".join(shown) + " |")
    sample = grid.planned[0].options if grid.planned else {}
    lines += ["", f"Copy at T = {', '.join(str(t) for t in sorted({r.options['T'] for r in grid.planned}))}, noise "
              f"σ = {', '.join(f'{s:g}' for s in sorted({r.options.get('state_noise', 0.0) for r in grid.planned}))} "
              f"in the state, {len({r.seed for r in grid.planned})} seeds per arm, {sample.get('steps', 0):,} "
              f"updates of {sample.get('batch_size', 0)} sequences per run, validated every "
              f"{sample.get('eval_every', 0)}. The data is synthetic and unlimited: every update draws new "
              "sequences.", ""]
    return lines


def outcome_section(grid: Grid) -> list[str]:
    by = cells(grid)
    lines = ["## Outcome", "", "Per setting and arm: last validation loss / baseline (mean ± s.e. over seeds), its "
             "geometric mean with a percentile bootstrap interval (the mean of log10 ratio that the comparisons "
             f"test, at {1 - rule('LEVEL'):.0%}, shown as a ratio), seeds solved, Kaplan–Meier median updates to "
             "solve (∞: half the seeds never solved).", "",
             "| setting | arm | loss / baseline | geometric mean (interval) | solved | median updates to solve |",
             "|---|---|---|---|---|---|"]
    for (setting, label), runs in by.items():
        done = [r for r in runs if finished(grid.run_folder(r))]
        times = [solve_time(grid, r) for r in done]
        solved = sum(t is not None for t in times)
        median = significance.median_time(times, runs[0].options["steps"]) if done else math.nan
        logs = _log10(ratio(grid, r) for r in done)
        low, high = significance.mean_interval(logs)
        geometric = (f"{10 ** (sum(logs) / len(logs)):.3f} ({10 ** low:.3f} to {10 ** high:.3f})"
                     if logs and math.isfinite(low) else "—")
        lines.append(f"| {setting} | {name(label)} | {Stat.of([ratio(grid, r) for r in done]).show(3)} | "
                     f"{geometric} | {solved} of {len(done)} | {median:,.0f} |")
    return lines + [""]


def verdict(effect: float, q: float, level: float) -> str:
    """Every hypothesis predicts a − b < 0 (a lower log10 ratio for its first arm): "supports" when the adjusted
    test passes in that direction, "contradicts" when it passes the other way, "not clear" otherwise."""
    if not (math.isfinite(q) and q < level):
        return "not clear"
    return "supports" if effect < 0 else "contradicts"


def comparisons_section(grid: Grid) -> list[str]:
    lines = ["## The pre-declared comparisons", "",
             "| setting | hypothesis | a − b | log10 ratio: Welch p, q, difference (interval) | updates to solve: "
             "log-rank p, q | verdict on the hypothesis |", "|---|---|---|---|---|---|"]
    level = rule("LEVEL")
    for c in comparisons(grid):
        p, s = c["primary"], c["secondary"]
        clear = verdict(p.effect, c["q_primary"], level)
        lines.append(f"| {c['setting']} | {c['hypothesis']} | {name(c['a'])} − {name(c['b'])} | "
                     f"{significance._p(p.p)}, {significance._p(c['q_primary'])}, {p.effect:.3g} "
                     f"({p.low:.3g} to {p.high:.3g}) | {significance._p(s.p)}, {significance._p(c['q_secondary'])} "
                     f"| {clear} |")
    return lines + [""]


# the claim's own words (the paper's §3 and §5.3), which the summary below answers
CLAIM = ("non-normal dynamics can lead to extensive memory traces, as measured by the Fisher information of the "
         "distribution of hidden state trajectories parametrized by the input signal")
COPY_FINDING = ("when tasks are well-suited for isometric transformations (e.g. storing things in memory for later "
                "recall) the nnRNN easily learns to eliminate non-normal dynamics and restricts itself to the set of "
                "orthogonal matrices. Moreover, it does so without any penalty on learning speed")


def summary(verdicts: list[str]) -> str:
    """One option set and noise level's reading of a hypothesis from its per-delay verdicts (:func:`verdict`):
    "holds" where every delay supports it, "holds at some delays" where some do and none contradicts, "is
    contradicted" where some delay contradicts and none supports, "mixed" where delays do both, and "not shown"
    where none is clear.  (This reading was written after the grid had started and before any of its runs was
    read; the per-comparison verdicts it reads were declared before the grid started.)"""
    supports, contradicts = verdicts.count("supports"), verdicts.count("contradicts")
    if supports and contradicts:
        return "mixed"
    if supports:
        return "holds" if supports == len(verdicts) else "holds at some delays"
    return "is contradicted" if contradicts else "not shown"


def claim_section(grid: Grid, settings: dict = SETTINGS) -> list[str]:
    """The verdict on the paper's claim per option set and noise level, read from the pre-declared comparisons, with
    the noise's effect on the gaps (the theory's prediction, stated, not tested) and what the grid cannot show."""
    level = rule("LEVEL")
    by: dict[tuple, dict[str, list]] = {}
    for c in comparisons(grid):
        option_set, sigma, T = settings[c["setting"]]
        by.setdefault((option_set, sigma), {}).setdefault(c["hypothesis"], []).append(
            (T, verdict(c["primary"].effect, c["q_primary"], level), c["primary"].effect))
    if not by:
        return []
    words = {"H1": "lower than without T at the same N", "H2": "lower than without T at equal parameters",
             "H3": "lower started as a delay line than at T = 0", "H4": "lower than expRNN's"}
    lines = ["## The paper's claim at this scale", "",
             f"The claim (§3, after Ganguli et al. 2008): \"{CLAIM}\". On copy itself the paper found (§5.3): "
             f"\"{COPY_FINDING}\". Per option set and noise level, each hypothesis over the delays (its verdict at "
             "each delay in the comparisons above; the last validation loss is the nnRNN with T's in H1, H2 and H4):",
             "", "| option set | σ | " + " | ".join(f"{h}: {w}" for h, w in words.items()) + " |",
             "|---|---|" + "---|" * len(words)]
    for (option_set, sigma), found in by.items():
        cells_ = []
        for h in words:
            rows = sorted(found.get(h, []))
            cells_.append(f"{summary([v for _, v, _ in rows])} ("
                          + ", ".join(f"T = {T}: {v}" for T, v, _ in rows) + ")" if rows else "—")
        lines.append(f"| {option_set} | {sigma:g} | " + " | ".join(cells_) + " |")
    # the theory's own prediction: the gap of H1 and H2 grows with the noise (stated, not tested)
    sigmas = sorted({s for _, s in by})
    if len(sigmas) > 1:
        lines += ["", "The theory predicts that the gaps of H1 and H2 grow with the noise. The mean difference of "
                  "log10 loss / baseline (nnRNN with T minus the arm; negative: the nnRNN with T lower), "
                  f"at σ = {sigmas[0]:g} → σ = {sigmas[-1]:g} (stated, not tested):", ""]
        for option_set in dict.fromkeys(o for o, _ in by):
            for h in ("H1", "H2"):
                low = dict((T, e) for T, _, e in by.get((option_set, sigmas[0]), {}).get(h, []))
                high = dict((T, e) for T, _, e in by.get((option_set, sigmas[-1]), {}).get(h, []))
                shown = [f"T = {T}: {low[T]:+.3f} → {high[T]:+.3f}" for T in sorted(set(low) & set(high))]
                if shown:
                    lines.append(f"- {option_set}, {h}: " + "; ".join(shown))
    delays = sorted({T for _, _, T in settings.values()})
    sets = list(dict.fromkeys(o for o, _, _ in settings.values()))
    options = ("one option set searched once for all arms at one setting (the search above), so what a longer search "
               "or one at each setting would pick is not tested" if grid.joint is not None else
               f"{len(sets)} option sets fixed in advance (no search), so tuned options are not tested")
    sizes = sorted({r.hidden for r in grid.planned if r.label == REFERENCE})
    steps = sorted({r.options["steps"] for r in grid.planned})
    lines += ["", "What this grid cannot show: it is one task (copy), one size (N = "
              f"{', '.join(map(str, sizes))}), delays {', '.join(map(str, delays))} and "
              f"{', '.join(f'{u:,}' for u in steps)} updates per run, and "
              f"{options}; a claim about longer delays, larger networks or other tasks (the paper's psMNIST and "
              "PTB, where it reports T carrying structure) is not tested here. Copy's data is synthetic and "
              "unlimited, so no run is limited by data." + _at_gpu_scale(grid), ""]
    return lines


def _at_gpu_scale(grid: Grid) -> str:
    """The sentence naming the same grid at a GPU's scale (:data:`GPU_SCALE`, which :mod:`.thesis_gpu` declares), in
    every report of these arms but its own."""
    if grid.spec.name == GPU_NAME:
        return ""
    runs = len(OPTION_SETS) * len(NOISE) * len(GPU_DELAYS) * (len(ARMS) + 2) * len(SEEDS)  # + nnRNN and expRNN
    return (f" The same grid at a GPU's scale is `nnrnn reproduce --scale {GPU_NAME}`: N = {GPU_BUDGET.hidden}, "
            f"copy at T = {', '.join(map(str, GPU_DELAYS))}, {GPU_BUDGET.updates:,} updates of "
            f"{GPU_BUDGET.batch} per run, {len(SEEDS)} seeds per arm, {runs} runs; its cost on one GPU or on "
            "eight is what its `--plan` measures with `--devices` on them.")


MECHANISM_COLUMNS = (("t_over_lambda", "‖T‖/‖Λ‖"), ("departure_normalized", "Henrici / ‖V‖"),
                     ("basis_drift", "‖P − P₀‖/√N"), ("spectral_radius", "ρ(V)"),
                     ("fisher_from_rest", "Fisher memory from rest × ε/‖u‖²"))


def mechanism_section(grid: Grid, settings: dict = SETTINGS) -> list[str]:
    by = cells(grid)
    lines = ["## Mechanism beside outcome", "", "Per setting and arm, measured on each trained V when the run ended "
             "(mean ± s.e. over seeds):", "",
             "| setting | arm | " + " | ".join(title for _, title in MECHANISM_COLUMNS) + " |",
             "|---|---|" + "---|" * len(MECHANISM_COLUMNS)]
    for (setting, label), runs in by.items():
        measured = collect.mechanism(grid, runs)
        lines.append(f"| {setting} | {name(label)} | " + " | ".join(
            measured[key].show(3, "—") for key, _ in MECHANISM_COLUMNS) + " |")
    return lines + [""] + outcome_figure(grid, settings)


def outcome_figure(grid: Grid, settings: dict = SETTINGS) -> list[str]:
    """Outcome against non-normality across runs: log10 last validation loss / baseline against Henrici / ‖V‖, one
    panel per option set and noise level (``settings``, as :func:`protocol_section` reads it), each arm in its
    colour, each delay a marker of its own."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels: dict[tuple, dict] = {}
    for run in grid.planned:
        x, y = mechanism_of(grid, run)["departure_normalized"], ratio(grid, run)
        if x is not None and y:
            option_set, sigma, T = settings[run.setting]
            panels.setdefault((option_set, sigma), {}).setdefault((run.label, T), []).append((x, math.log10(y)))
    if not panels:
        return []
    delays = sorted({T for _, _, T in settings.values()})
    columns = min(2, len(panels))  # two panels a row, so that four stay readable on a page
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.6 * rows), sharex=True, sharey=True,
                             squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, ((option_set, sigma), points) in zip(axes.flat, panels.items()):
        for (label, T), xy in points.items():
            colour, _ = line_style(label, grid.planned)
            ax.scatter(*zip(*xy), s=14, color=colour, marker=MARKERS[delays.index(T) % len(MARKERS)], alpha=0.75,
                       label=f"{name(label)}, T = {T}")
        ax.set_title(f"{option_set}, σ = {sigma:g}", fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("Henrici departure / ‖V‖_F of the trained V", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("log10 last valid loss / baseline", fontsize=8)
    axes[0][-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    grid.figures.mkdir(parents=True, exist_ok=True)
    save_whole(fig, grid.figures / "outcome_vs_nonnormality.png")  # whole or not at all, as every report's figure
    return ["![outcome against non-normality across runs, per option set and noise level]"
            "(figures/outcome_vs_nonnormality.png)", ""]


REPORT = Report("The paper's thesis at equal options: the nnRNN with and without its non-normal part",
                (hypotheses_section, protocol_section, outcome_section, comparisons_section, claim_section,
                 mechanism_section),
                )

NAME = "thesis"
SCALE = Scale(
    name=NAME,
    about="thesis: the nnRNN with and without its non-normal part T at equal options, copy at T = 50, 100, 200 "
          "with and without noise in the state, 10 seeds per arm (600 runs: --plan read 88 min with --jobs 2 on a "
          "nearly quiet 2-core AMD EPYC, and it ran at about half that pace with other work beside it; it resumes "
          "across sittings)",
    seeds=SEEDS,
    report=REPORT,
    settings={setting: _setting(*of) for setting, of in SETTINGS.items()},
)
