"""One trial of a search (:class:`_Objective`, what Optuna calls), and how many updates a run will make.

Each trial is an ordinary training run in ``OUT/trial-NNNN`` (config.json,
metrics.jsonl, checkpoints), made by :func:`nnrnn.training.train.train`.  Its value is
the best validation value of the task's monitored metric (``task.monitor``);
the validation points are reported to Optuna as they come, and a median
pruner stops trials that do worse than the median of earlier trials at the
same update.  A run that diverges is recorded as PRUNED with the reason in
its ``stopped``/``reason`` user attributes, and the search goes on.
"""
from __future__ import annotations

import contextlib
import math
import socket
from pathlib import Path

from ...errors import Interrupted, TrainingDiverged, UserError
from ...tasks import task_class
from ...training import runfolder
from ...training.config import resolve_config, total_steps
from ...training.network import build
from ...training.train import train
from .searching import SUPPLEMENT, Searching, held_to, suggest


# --------------------------------------------------------------------------- the search

def planned_steps(config: dict) -> int:
    """The number of updates a run of ``config`` will make (builds the task if it must)."""
    if config.get("steps"):
        return config["steps"]
    cls = task_class(config["task"])
    if config.get("epochs") is None and not cls.has_data_files:  # no epochs: no data to read to count them
        return cls.default_steps
    task, _ = build(config)
    return total_steps(config, task)


class _Objective:
    def __init__(self, task, model, out, options, preset, space, monitor, mode, searching: Searching = SUPPLEMENT):
        self.task, self.model, self.out, self.options, self.preset = task, model, Path(out), options, preset
        self.space, self.monitor, self.mode, self.searching = space, monitor, mode, searching
        self.host = socket.gethostname()
        self.interrupted = None

    def _options(self, trial) -> tuple[dict, dict]:
        """(the drawn options, every option the trial sets beyond the fixed ones): the drawn ones (a queued first
        trial's too: :func:`~nnrnn.experiments.planning.searching.published`) and what is derived from them, which
        the trial records as ``options`` (a pick is that whole set, not only the drawn ones)."""
        params = suggest(trial, self.space)
        options = {**self.searching.derive(self.model, params, list(self.options)), **params}
        trial.set_user_attr("options", options)
        return params, options

    def __call__(self, trial):
        import optuna

        params, chosen = self._options(trial)
        folder = self.out / f"trial-{trial.number:04d}"
        trial.set_user_attr("run", str(folder.resolve()))
        trial.set_user_attr("host", self.host)
        if runfolder.config_file(folder).exists() or (folder / runfolder.CHECKPOINTS).exists():
            raise UserError(f"{folder} already holds a run that is not trial {trial.number} of study "
                            f"{trial.study.study_name!r}; choose another --out or --study")
        config = resolve_config({**self.options, "task": self.task, "model": self.model, "out": str(folder),
                                 "progress": False, **chosen}, self.preset)
        # what the run prints goes to its log, so that the sweep's own output stays a line or two per trial
        log = self.out / "logs" / f"{folder.name}.log"
        print(f"[sweep] trial {trial.number}: {format_params(params)} -> {folder} (its output: logs/{log.name})",
              flush=True)
        better = (lambda a, b: a < b) if self.mode == "min" else (lambda a, b: a > b)
        best = {"value": None, "step": None}
        curve = []

        def on_eval(step, record):
            value = record.get(self.monitor)
            if value is None or not math.isfinite(value):
                trial.set_user_attr("stopped", "diverged")
                trial.set_user_attr("reason", f"validation {self.monitor} is {value} at update {step}")
                raise optuna.TrialPruned(f"validation {self.monitor} is {value} at update {step}")
            if best["value"] is None or better(value, best["value"]):
                best["value"], best["step"] = value, step
            curve.append((step, value))
            trial.report(self.searching.value(curve, self.mode == "min"), step)
            if trial.should_prune():
                trial.set_user_attr("stopped", "pruned")
                trial.set_user_attr("reason", f"below the median of earlier trials at update {step}")
                raise optuna.TrialPruned(f"pruned at update {step}")

        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a") as written, contextlib.redirect_stdout(written):
                result = train(config, on_eval=on_eval)
        except TrainingDiverged as exc:
            trial.set_user_attr("stopped", "diverged")
            trial.set_user_attr("reason", str(exc))
            raise optuna.TrialPruned(str(exc)) from None
        except (Interrupted, UserError) as exc:  # a signal, or what ends any run (a full disk): the sweep ends too
            return self._interrupted(trial, exc)
        finally:
            if best["step"] is not None:
                trial.set_user_attr("best_step", best["step"])
        if best["value"] is None:
            trial.set_user_attr("stopped", "no validation")
            raise optuna.TrialPruned("the run made no validation point")
        if result.get("test"):
            trial.set_user_attr("test", {k: v for k, v in result["test"].items()
                                         if isinstance(v, (int, float))})
        return self.searching.value(held_to(curve, planned_steps(config)), self.mode == "min")

    def _interrupted(self, trial, exc: Interrupted | UserError) -> float:
        """The run is checkpointed (interrupted) or could not go on (a UserError: a full disk, a folder in use): the
        trial is marked FAIL (a NaN value does, without a traceback in the log: Optuna logs a trial's exception
        with its traceback, which was the sweep's last words), no other trial starts, and run_sweep re-raises
        ``exc``, one line.  Optuna would warn twice that NaN "is not acceptable", which reads as a diverged run:
        its warnings are off until run_sweep puts its verbosity back."""
        self.interrupted = exc
        return stopped_by(trial, exc)


def stopped_by(trial, exc: Interrupted | UserError) -> float:
    """Mark ``trial`` FAIL for ``exc`` (a signal, or what ends any run) and start no other trial of its study: the
    value to return from the objective (NaN: Optuna's warnings about it are off until the caller puts its verbosity
    back), the caller re-raising ``exc`` once the study has stopped (:meth:`_Objective._interrupted`)."""
    import optuna
    trial.set_user_attr("stopped", "interrupted" if isinstance(exc, Interrupted) else "failed")
    trial.set_user_attr("reason", str(exc))
    trial.study.stop()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return float("nan")


def format_params(params: dict) -> str:
    return " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())
