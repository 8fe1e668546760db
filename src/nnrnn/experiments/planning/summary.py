"""A study's best trials as a table (``nnrnn sweep --summary``)."""
from __future__ import annotations

import math
import os
import sys

from ...errors import OptionError
from .objective import format_params
from .storage import _existing_study, _shown, default_storage


def _trial_value(trial, minimize: bool):
    """A COMPLETE trial's value; a PRUNED trial's best reported value (None if it reported none)."""
    if trial.state.name == "COMPLETE":
        return trial.value
    values = [v for v in trial.intermediate_values.values() if v is not None and math.isfinite(v)]
    if not values:
        return None
    return min(values) if minimize else max(values)


def _where(path: str | None) -> str:
    if not path:
        return "-"
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def summary(out=None, storage: str | None = None, study: str | None = None, top: int = 10, file=None,
            searches: dict | None = None) -> list:
    """Print the ``top`` best trials of a study and return them (FrozenTrials, best first).

    The study is found in ``storage``, or in ``sqlite:///OUT/study.db``; with
    no ``study`` name, the storage must hold exactly one study.  Completed
    trials rank first by value, then pruned ones by their best reported value.
    ``searches`` ({"task": …, "model": …}, what the command named): a UserError
    if the study searches another task or model.
    """
    import optuna
    if isinstance(top, bool) or not isinstance(top, int) or top <= 0:
        raise OptionError(f"top must be a positive integer; got {top!r}")
    if storage is None and out is None:
        raise OptionError("summary needs the sweep folder (out) or a storage URL")
    file = file or sys.stdout
    url = storage or default_storage(out)
    the_study = _existing_study(url, study, searches)
    study = the_study.study_name
    minimize = the_study.direction == optuna.study.StudyDirection.MINIMIZE
    trials = the_study.get_trials(deepcopy=False)
    counts = {}
    for t in trials:
        counts[t.state.name.lower()] = counts.get(t.state.name.lower(), 0) + 1
    ranked = []
    for rank_state in ("COMPLETE", "PRUNED"):
        group = [(t, _trial_value(t, minimize)) for t in trials if t.state.name == rank_state]
        scored = sorted([g for g in group if g[1] is not None], key=lambda g: g[1] if minimize else -g[1])
        ranked += scored + [g for g in group if g[1] is None]
    shown = ranked[:top]
    attrs = the_study.user_attrs
    metric = f"valid {attrs['monitor']}" if "monitor" in attrs else "value"
    what = f" ({attrs['task']}, {attrs['model']})" if "task" in attrs else ""
    tally = f" ({', '.join(f'{n} {s}' for s, n in counts.items())})" if counts else ""
    print(f"study {study!r}{what} in {_shown(url)}: {'minimize' if minimize else 'maximize'} {metric}; "
          f"{len(trials)} trial{'s' if len(trials) != 1 else ''}{tally}", file=file)
    if not shown:
        print("no completed or pruned trials yet", file=file)
        return []
    hosts = {t.user_attrs.get("host") for t, _ in shown}
    rows = [("rank", "trial", "state", metric, "params", "run")]
    for rank, (t, value) in enumerate(shown, 1):
        state = t.state.name
        if t.user_attrs.get("stopped") in ("diverged", "interrupted"):
            state += f" ({t.user_attrs['stopped']})"
        run = _where(t.user_attrs.get("run"))
        if len(hosts) > 1:
            run = f"{t.user_attrs.get('host', '?')}:{run}"
        rows.append((str(rank), str(t.number), state, "-" if value is None else f"{value:.6g}",
                     format_params(t.params), run))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1], file=file)
    return [t for t, _ in shown]
