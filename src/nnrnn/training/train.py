"""Training: one loop, read top to bottom in :func:`train`, configured by a plain dict (:mod:`nnrnn.training.config`).

A run writes into a run folder (its layout: :mod:`nnrnn.training.runfolder`).

Batches are a pure function of (seed, step), and everything that changes during training is in one
:class:`~.run_state.Progress`, saved to ``last.pt`` and restored from it in one place (:mod:`.run_state`), so a
resumed run continues exactly as if uninterrupted.  Evaluation is :mod:`.evaluation`'s; SIGINT and SIGTERM,
:mod:`.interrupt`'s.
"""
from __future__ import annotations

import contextlib
import functools
import json
import math
import signal
import sys
from pathlib import Path

import torch
from torch import nn

from ..kernels import policy as kernel_policy
from . import checkpoint, distributed, evaluation, outcome, runfolder, runlock
from .config import evaluation_interval, total_steps
from .options import DEFAULTS
from ..errors import Interrupted, TrainingDiverged, UserError
from ..models import param_groups
from .interrupt import StopRequested
from .network import build_task, network_sizes, seeded_network
from .pace import Pace
from .resources import check_device, check_memory
from .run_state import Progress, Training, restore, save
from .runlog import MetricsLog, plot_curves, read_metrics, summary_lines, validation_line
from .step import CapturedStep, TrainStep, capturable, make_step
from ..tasks.base import accumulate

PLATEAU_FACTOR = 0.5
STEP_FACTOR, STEP_EPOCHS = 0.1, 100  # coRNN's and LEM's psMNIST and sMNIST code: lr /= 10 after every 100 epochs


def make_optimizer(config: dict, net: nn.Module) -> torch.optim.Optimizer:
    groups = param_groups(net, config["lr"], config["lr_orth"])
    if config["optimizer"] == "adam":
        return torch.optim.Adam(groups, betas=tuple(config["betas"]))
    return torch.optim.RMSprop(groups, alpha=config["alpha"])


def make_schedule(config: dict, optimizer: torch.optim.Optimizer, task):
    """The learning-rate schedule, or None.  "plateau" is the authors' PTB schedule: after every
    validation whose score is not strictly better than the best so far, every learning rate (lr and
    lr_orth) is halved (their StepLR(step_size=1, gamma=0.5), stepped only then); it is stepped by
    :func:`validation_pass`.  "step" is coRNN's and LEM's: every learning rate divided by 10 after every
    ``lr_step_epochs`` epochs (default 100; a task with epochs: :func:`nnrnn.training.config.validate`); it is
    stepped before every update but the first (:func:`update`), skipped ones included, so that the rate of an
    update depends on its number alone and the rate logged with an update is the one it used."""
    if config["lr_schedule"] == "plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode=task.monitor[1], factor=PLATEAU_FACTOR,
                                                          patience=0, threshold=0.0, eps=0.0)
    if config["lr_schedule"] == "step":
        every = (config["lr_step_epochs"] or STEP_EPOCHS) * task.steps_per_epoch
        return torch.optim.lr_scheduler.StepLR(optimizer, step_size=every, gamma=STEP_FACTOR)
    return None


def lr_halvings(initial: float, current: float) -> int:
    """How many times a learning rate was halved to go from ``initial`` to ``current``."""
    return round(math.log2(initial / current)) if current > 0 else 0


def halvings(config: dict, optimizer: torch.optim.Optimizer) -> int:
    """How many times the schedule has halved the learning rates so far (read off the optimizer's state)."""
    return lr_halvings(config["lr"], optimizer.param_groups[0]["lr"])


def plateau_reached(config: dict, optimizer: torch.optim.Optimizer) -> bool:
    return bool(config["stop_after_halvings"]) and halvings(config, optimizer) >= config["stop_after_halvings"]


SOLVED_IN_A_ROW = 2  # --stop-when-solved: validations in a row below the threshold (one could be a lucky batch)


def solved(training: Training) -> bool:
    """Whether --stop-when-solved's condition holds: the last :data:`SOLVED_IN_A_ROW` validation losses were all
    below ``stop_when_solved`` × the task's baseline loss."""
    return bool(training.config.get("stop_when_solved")) and training.progress.below_solved >= SOLVED_IN_A_ROW


def count_solved(training: Training, record: dict | None) -> None:
    """Count a validation (rank 0's ``record``, broadcast) towards --stop-when-solved: one more in a row when its
    loss is below the threshold, none otherwise.  Every rank counts alike, so all stop together."""
    share, baseline = training.config.get("stop_when_solved"), loss_references(training.task)[0]
    if not share or baseline is None:
        return
    loss = distributed.broadcast_float(record["loss"] if training.main else 0.0, training.world)
    training.progress.below_solved = training.progress.below_solved + 1 if loss < share * baseline else 0


# ----------------------------------------------------------------------------- the run

def train(config: dict, resume: bool = False, on_eval=None, overwrite: bool = False, last: dict | None = None,
          on_end=None) -> dict:
    """Train as configured; returns the final metrics ({"valid": ..., "test": ...}).

    ``resume``: continue the run in ``config["out"]`` from its last checkpoint (from the start if it died
    before its first); ``last``, that checkpoint when the caller has read it already
    (:func:`~nnrnn.training.runfolder.saved_run`), so that it is read once.  ``overwrite``: replace the run
    there instead (nnrnn's own files only).
    ``on_eval(step, record)``, if given, is called after every validation; an exception it raises (e.g.
    ``optuna.TrialPruned``) ends training after the last checkpoint has been written.
    ``on_end(folder)``, if given, is called (rank 0) when the run ends, finished or diverged, after its last
    checkpoint and before its outcome is written (so a run with an outcome has what it wrote): the command line and
    the grids pass :func:`nnrnn.analysis.mechanism.write_record`, which training cannot import (it is a floor above).
    """
    folder = Path(config["out"])
    if config.get("threads"):  # None: the process's own setting (a grid's --jobs gives each run one thread)
        torch.set_num_threads(config["threads"])
    device = check_device(config["device"])
    task = build_task(config)  # the data is read, and the memory checked, before the folder is touched
    check_memory(config, task)
    rank, world = distributed.setup(device)
    with distributed.failures_shared():  # a refusal on one rank ends every rank, in one line each
        return run(config, folder, task, device, rank, world, resume, overwrite, last, on_eval, on_end)


def run(config: dict, folder: Path, task, device: torch.device, rank: int, world: int, resume: bool,
        overwrite: bool, last: dict | None, on_eval, on_end=None) -> dict:
    """:func:`train` once the processes have met: the folder claimed, the run started or restored, trained."""
    if rank == 0:
        runfolder.check_not_foreign(folder)  # before the lock file: a folder of the user's own is left as it was
    # rank 0 claims the run folder and holds its lock; the others only read its checkpoint
    with (runlock.hold(folder) if rank == 0 else contextlib.nullcontext()):
        if rank == 0:
            restoring = runfolder.claim(folder, resume, overwrite)
        else:
            restoring = resume and runfolder.last_checkpoint(folder).is_file()
        write_config = functools.partial(checkpoint.atomic_write, runfolder.config_file(folder),
                                         lambda f: f.write(json.dumps(config, indent=1).encode()))
        if rank == 0 and not restoring:  # at once: a run stopped at any moment resumes with its own options
            write_config()
        training = start(config, task, folder, restoring, distributed.local_device(device), rank, world, last)
        training.on_end = on_end
        if training.main:  # restored (or refused, leaving the folder as it was): the outcome is judged anew at the end
            outcome.clear(folder)
            (folder / runfolder.MECHANISM).unlink(missing_ok=True)  # and what on_end measures, measured anew
        if training.main and restoring:  # once the checkpoint is restored: the options that may change are now these
            write_config()
        if restoring and (training.progress.step == training.steps or plateau_reached(config, training.optimizer)
                          or solved(training)):
            return finish(training)
        try:
            return loop(training, restoring, on_eval)
        except TrainingDiverged as exc:
            if training.main:
                why = str(exc).removeprefix("training diverged: ")
                conclude(training, outcome.Outcome(outcome.DIVERGED, why, None, *loss_references(training.task)))
            raise


def start(config: dict, task, folder: Path, restoring: bool, device: torch.device, rank: int, world: int,
          last: dict | None = None) -> Training:
    """Build the network, optimizer and schedule for ``task``; restore them and the run's state from ``last.pt``
    (``last``, when already read) when resuming."""
    net = seeded_network(config, task)
    net.to(device)
    model = net
    if world > 1:  # averages gradients over processes; broadcasts rank 0's parameters at start
        model = nn.parallel.DistributedDataParallel(net, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = make_optimizer(config, net)
    schedule = make_schedule(config, optimizer, task)

    def agree(finite: bool) -> bool:  # every process takes the same branch of the non-finite skip
        return distributed.sum_stats({"ok": (float(finite), 1)}, world)["ok"][0] == world

    # DDP's all-reduce is not captured: several processes update eagerly
    train_step = make_step(TrainStep(config, net, optimizer, task, forward=model, agree=agree if world > 1 else None),
                           device, config.get("cuda_graph", DEFAULTS["cuda_graph"]) and world == 1)
    training = Training(config, folder, device, rank, world, task, net, model, optimizer, schedule, Progress(),
                        total_steps(config, task), task.data_state(), train_step)
    capturable(optimizer, isinstance(train_step, CapturedStep) and device.type == "cuda")
    if restoring:
        restore(training, last)
    return training


def finish(training: Training) -> dict:
    """A resumed run that had already trained to its end: what it was stopped before doing (its test evaluation
    and its plot are part of the run) is done now; otherwise there is nothing to do."""
    if not training.main:
        return result(training.folder, training.main)
    records = read_metrics(training.folder)
    if not (records and records[-1].get("split") == "test") and "test" in training.task.splits \
            and training.best_path.exists():
        log = MetricsLog(training.folder, training.progress.step)
        try:
            test = score_test(training, log)
        except BaseException:
            with contextlib.suppress(Exception):  # the first failure is the one reported
                close_log_and_plot(training, log)
            raise
        close_log_and_plot(training, log)
        conclude(training, final_outcome(training))
        return result(training.folder, training.main, test)
    if not (training.folder / runfolder.CURVES).exists():
        plot_curves(training.folder, training.task.references())
    why = (f"already solved at update {training.progress.step}" if solved(training) else
           f"already finished its {training.steps} updates" if training.progress.step == training.steps else
           f"already stopped after {halvings(training.config, training.optimizer)} halvings of the learning rate")
    print(f"[nnrnn] {training.folder} {why}; nothing to train (give a larger --steps to train further)", flush=True)
    conclude(training, final_outcome(training))
    return result(training.folder, training.main)


def loop(training: Training, restoring: bool, on_eval) -> dict:
    """Train from ``training.progress.step`` to the end (or the plateau stop), validating, checkpointing and logging
    on the way; then score the best checkpoint on the test split."""
    from tqdm import tqdm
    config, task, state = training.config, training.task, training.progress
    eval_every = evaluation_interval(config, task)
    checkpoint_every = config["checkpoint_every"] or eval_every
    log = MetricsLog(training.folder, state.step if restoring else None) if training.main else None
    announce(training, restoring)
    # a bar only on a terminal (disable=None): redirected, its carriage returns would pile up into one line, and
    # the run's pace is said in lines instead (pace.py)
    bar = tqdm(total=training.steps, initial=state.step, disable=None if config["progress"] and training.main else True,
               unit="upd", dynamic_ncols=True)
    pace = Pace(state.step, training.steps, config["progress"] and training.main and bar.disable,
                log=lambda line: print(line, flush=True))
    last_valid = last_train = None
    training.net.train()
    with closing(training, log, bar):
        with StopRequested(training.last_path) as stop:
            while state.step < training.steps:
                stop.updating(True)
                update(training, log)
                stop.updating(False)
                done = state.step
                bar.update(1)
                pace.update(done, latest_loss(state.window, last_train))
                if (done % config["log_every"] == 0 or done == training.steps) and state.window:
                    last_train = log_training(training, log)
                    bar.set_postfix(loss=f"{last_train['loss']:.4f}")
                evaluated = done % eval_every == 0 or done == training.steps
                if evaluated:
                    last_valid = validation_pass(training, log)
                    if training.main:  # above the bar on a terminal, a plain line otherwise
                        tqdm.write(validation_line(done, training.steps, last_train, last_valid, state.best,
                                                   task.monitor[0], training.optimizer.param_groups[0]["lr"]))
                        sys.stdout.flush()
                    if stops_early(training, log, last_valid):
                        save(training)
                        break
                if done % checkpoint_every == 0 or done == training.steps:
                    save(training)
                if training.main and on_eval is not None and evaluated:
                    on_eval(done, last_valid)
                if stop.signal is not None:
                    save(training)
                    raise Interrupted(stop.signal, training.last_path)
        test = score_test(training, log)
    check_converged(training, last_valid)
    if training.main:
        conclude(training, final_outcome(training), summary=True)
    return result(training.folder, training.main, test)


@contextlib.contextmanager
def closing(training: Training, log: MetricsLog | None, bar):
    """The progress bar closed, the metrics file closed and the curves drawn after the loop, whatever ends it; the
    first failure is the one reported: a cleanup failing too (a full disk) stays quiet then."""
    try:
        yield
    except BaseException:
        bar.close()
        if training.main:
            with contextlib.suppress(Exception):
                close_log_and_plot(training, log)
        raise
    bar.close()
    if training.main:
        close_log_and_plot(training, log)


def close_log_and_plot(training: Training, log: MetricsLog) -> None:
    """The metrics file closed (a full disk fails its last flush: one line) and the curves drawn."""
    try:
        log.close()
    except OSError as error:
        raise UserError(f"cannot write {log.path} ({error.strerror}); free some space, then continue with --resume "
                        f"(the last checkpoint is unchanged)") from None
    plot_curves(training.folder, training.task.references())


def announce(training: Training, restoring: bool) -> None:
    """The lines a run starts with: its task, its model and sizes, where it trains, and where it resumes from."""
    config, state = training.config, training.progress
    print("\n".join(f"[nnrnn] {line}" for line in training.task.describe_lines()), flush=True)
    layers = config.get("num_layers") or 1
    shape = f"{layers} layers of {config['hidden']}" if layers > 1 else f"{config['hidden']}"
    print(f"[nnrnn] {config['model']} with {shape} hidden units, "
          f"{sum(p.numel() for p in training.net.parameters())} parameter entries, {training.steps} updates on "
          f"{training.device}, {torch.get_num_threads()} thread{'s' * (torch.get_num_threads() != 1)}", flush=True)
    if restoring and training.main:
        print(f"[nnrnn] resuming {training.folder} from update {state.step} of {training.steps} "
              f"({training.last_path})", flush=True)


def latest_loss(window: dict, last_train: dict | None) -> float | None:
    """This process's mean training loss since the last logged point, else the last one logged (a progress line's)."""
    if "loss" in window and window["loss"][1]:
        return float(window["loss"][0]) / window["loss"][1]
    return last_train.get("loss") if last_train else None


def stops_early(training: Training, log: MetricsLog | None, record: dict | None) -> bool:
    """After a validation (rank 0's ``record``): whether the run stops before its last update, solved
    (--stop-when-solved) or at the plateau stop; the reason is logged."""
    count_solved(training, record)
    if not (plateau_reached(training.config, training.optimizer) or solved(training)):
        return False
    if training.main:
        log.log({"step": training.progress.step, "split": "train", "event": "stopped",
                 "reason": stop_reason(training)})
    return True


def stop_reason(training: Training) -> str:
    """Why the run stopped before its last update: solved (--stop-when-solved) or the plateau stop."""
    if solved(training):
        return (f"solved: validation loss below {training.config['stop_when_solved']:g} times the baseline at "
                f"{SOLVED_IN_A_ROW} validations in a row")
    return f"learning rates halved {halvings(training.config, training.optimizer)} times"


def loss_references(task) -> tuple[float | None, float | None]:
    """The task's baseline and chance losses (what a run's outcome is judged against)."""
    loss = task.references().get("loss") or {}
    return loss.get("baseline"), loss.get("chance")


def divergence_limit(training: Training) -> float | None:
    return outcome.divergence_limit(*loss_references(training.task), divergence_factor(training.config),
                                    training.progress.initial_loss)


def divergence_factor(config: dict) -> float | None:
    return config.get("divergence_factor", DEFAULTS["divergence_factor"])


def final_outcome(training: Training) -> outcome.Outcome:
    """The outcome of a run that trained to its end (:func:`nnrnn.training.outcome.from_records`)."""
    ended = outcome.from_records(read_metrics(training.folder), *loss_references(training.task),
                                 divergence_limit(training), divergence_factor(training.config))
    if solved(training):  # what `nnrnn runs` shows of it, and what the memory grid's climb counts on
        ended.solved_at = training.progress.step
        ended.reason += f"; solved at update {ended.solved_at} (--stop-when-solved)"
    return ended


def conclude(training: Training, ended: outcome.Outcome, summary: bool = False) -> None:
    """Record the run's outcome in its folder, in its curves' title, and print it as its last lines (after the run's
    closing summary, with ``summary``, which lists the files just written); first, the caller's run-end hook
    (``on_end``): a grid counts a run with an outcome as finished, so it has what the hook wrote too."""
    if training.on_end is not None:
        training.on_end(training.folder)
    outcome.write(training.folder, ended)
    plot_curves(training.folder, training.task.references())
    if summary:
        print("\n".join(summary_lines(training.folder, training.task.monitor, training.task.data_seen())),
              flush=True)
    print("\n".join(ended.lines(training.config.get("preset"))), flush=True)


def stop_if_diverged(training: Training, loss: float, what: str) -> None:
    """TrainingDiverged, ending the run now, when ``loss`` is the :data:`~nnrnn.training.outcome.PATIENCE`th
    logged loss in a row far above the task's baseline and chance (:mod:`nnrnn.training.outcome`).  Non-finite
    losses are left to --max-bad-steps and :func:`check_converged`."""
    progress = training.progress
    progress.above_limit = outcome.points_above(progress.above_limit, loss, divergence_limit(training))
    if progress.above_limit >= outcome.PATIENCE and math.isfinite(loss):
        why = outcome.divergence(what, loss, divergence_limit(training), divergence_factor(training.config))
        kept = (f"the last good checkpoint is {training.last_path}" if training.last_path.exists()
                else "no checkpoint had been written yet")
        raise TrainingDiverged(f"training diverged: {why}; {kept}; lower --lr or set --clip")


def update(training: Training, log: MetricsLog | None) -> None:
    """One training update on batch ``training.progress.step`` (:mod:`.step`); a non-finite loss or gradient skips it
    (parameters and the carried state stay as they were) and too many in a row end the run."""
    config, task, state = training.config, training.task, training.progress
    batch = task.train_batch(state.step)
    inputs = distributed.shard(batch.inputs, training.rank, training.world).to(training.device)
    time_axis = 1 if task.predict_at == "all" else 0
    targets = distributed.shard(batch.targets, training.rank, training.world, time_axis).to(training.device)
    if config["check_inputs"] and not torch.isfinite(inputs).all():
        raise UserError(f"the input batch of update {state.step} holds NaN or Inf values; check the data files")
    if isinstance(training.schedule, torch.optim.lr_scheduler.StepLR) and state.step > 0:
        training.schedule.step()  # the rate of update state.step + 1: divided after every lr_step_epochs' updates
    stepped = training.train_step(inputs, targets, state.carried if batch.carry else None, state.step + 1)
    state.step += 1
    state.carried = stepped.carried
    if stepped.finite:
        if state.initial_loss is None:  # the untrained model's loss, a reference for divergence (outcome.py)
            total, count = stepped.stats["loss"]
            state.initial_loss = float(total) / count
        state.bad_steps = 0
        accumulate(state.window, {**stepped.stats, "grad_norm": (stepped.grad_norm, 1)})
        return
    state.bad_steps += 1
    state.skipped += 1
    if training.main:
        log.log({"step": state.step, "split": "train", "event": "skipped update",
                 "reason": "non-finite loss or gradient"})
    if state.bad_steps >= config["max_bad_steps"]:
        kept = (f"the last good checkpoint is {training.last_path}" if training.last_path.exists()
                else "no checkpoint had been written yet")
        raise TrainingDiverged(f"training diverged: {state.bad_steps} non-finite losses or gradients in a row at "
                               f"update {state.step}; {kept}; lower --lr or set --clip")


def log_training(training: Training, log: MetricsLog | None) -> dict:
    """Log the training metrics summed since the last logged point (over every process) and start a new window."""
    record = {"step": training.progress.step, "split": "train",
              **training.task.summarize(distributed.sum_stats(training.progress.window, training.world)),
              "lr": training.optimizer.param_groups[0]["lr"]}
    if training.main:
        log.log(record)
    training.progress.window = {}
    if "loss" in record:
        stop_if_diverged(training, record["loss"], f"the training loss at update {record['step']}")
    return record


def validation_pass(training: Training, log: MetricsLog | None) -> dict | None:
    """Score the validation split (rank 0), keep ``best.pt`` when it improved, and step the schedule on the score
    (every rank, on rank 0's score, so that all keep one learning rate).  Returns rank 0's record."""
    monitor, mode = training.task.monitor
    record = None
    if training.main:
        scores = evaluation.evaluate(training.net, training.task, "valid", training.device)
        record = {"step": training.progress.step, "split": "valid", **scores}
        log.log(record)
        score, best = record[monitor], training.progress.best
        if math.isfinite(score) and (best is None or (score < best if mode == "min" else score > best)):
            training.progress.best = score
            checkpoint.save(training.best_path, {"config": training.config, "sizes": network_sizes(training.task),
                                                 "model": training.net.state_dict(), "step": training.progress.step,
                                                 "valid": record, "data": training.data_state,
                                                 "kernels": kernel_policy.record()})
    if isinstance(training.schedule, torch.optim.lr_scheduler.ReduceLROnPlateau):
        training.schedule.step(distributed.broadcast_float(record[monitor] if training.main else 0.0, training.world))
    # every rank stops together, on rank 0's validation loss
    loss = distributed.broadcast_float(record["loss"] if training.main else 0.0, training.world)
    stop_if_diverged(training, loss, f"the validation loss at update {training.progress.step}")
    return record


def score_test(training: Training, log: MetricsLog | None) -> dict | None:
    """Training is over: the test metrics of the best-validation parameters (rank 0, tasks with a test split)."""
    if not (training.main and "test" in training.task.splits and training.best_path.exists()):
        return None
    training.net.load_state_dict(checkpoint.load(training.best_path, map_location=training.device)["model"])
    try:
        test = evaluation.evaluate(training.net, training.task, "test", training.device)
    except KeyboardInterrupt:  # Ctrl-C while the finished run is scored: its last checkpoint is written
        raise Interrupted(signal.SIGINT, training.last_path) from None
    log.log({"step": training.progress.step, "split": "test", **test})
    evaluation.check_finite(test, "test", training.best_path)
    return test


def check_converged(training: Training, last_valid: dict | None) -> None:
    """TrainingDiverged when the run's results cannot be trusted: too many updates were skipped as
    non-finite, or the last validation score is not finite."""
    skipped, steps, config = training.progress.skipped, training.steps, training.config
    if skipped and (skipped >= steps or skipped > config["max_bad_steps"]):
        how_many = "all of them" if skipped >= steps else f"more than --max-bad-steps {config['max_bad_steps']}"
        raise TrainingDiverged(f"training diverged: {skipped} of the {steps} updates had a non-finite loss or "
                               f"gradient and were skipped ({how_many}); the results in {training.folder} are not "
                               f"trustworthy; lower --lr or set --clip")
    monitor = training.task.monitor[0]
    if last_valid is not None and not math.isfinite(last_valid[monitor]):
        raise TrainingDiverged(f"training diverged: the validation {monitor} after update {last_valid['step']} is "
                               f"{last_valid[monitor]}; the results in {training.folder} are not trustworthy; lower "
                               f"--lr or set --clip")


def result(folder: Path, main: bool, test: dict | None = None) -> dict:
    """What train() returns: the last validation record, and the test metrics when they were taken."""
    if not main:
        return {}
    records = read_metrics(folder)
    out = {"valid": next((r for r in reversed(records) if r["split"] == "valid"), None)}
    test = test or next((r for r in reversed(records) if r["split"] == "test"), None)
    if test is not None:
        out["test"] = {k: v for k, v in test.items() if k not in ("step", "split")}
    return out
