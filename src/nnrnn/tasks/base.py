"""What every task provides to the trainer.

A task owns its data, its loss and its metrics.  Training batches are a pure
function of (seed, step), so a resumed run sees exactly the batches an
uninterrupted run would have seen, and no data-loader state needs saving.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Iterator, NamedTuple

import numpy as np
import torch


@dataclass
class Batch:
    inputs: torch.Tensor   # (T, B, input_size) float, or (T, B) token ids for a task with a vocab_size
    targets: torch.Tensor  # task-specific
    carry: bool = False    # continue from the previous batch's final state (truncated BPTT)


def generator(*key: int) -> torch.Generator:
    """A torch generator seeded from a tuple of ints (e.g. (seed, stream, step))."""
    seed = np.random.SeedSequence([int(k) for k in key]).generate_state(2, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(seed) & ((1 << 63) - 1))


class Reported(NamedTuple):
    """What a grid's report tables for a task: ``metric`` on ``split``, headed ``label``, to ``digits``."""

    metric: str
    split: str
    label: str
    digits: int


class Task:
    """Base class.  Subclasses set the attributes and implement the methods below."""

    name: str
    input_size: int
    output_size: int
    predict_at: str = "all"       # "all": a prediction at every step; "last": at the last step only
    token_inputs: bool = False     # inputs are token ids, which the trainer embeds or one-hot encodes
    vocab_size: int | None = None  # their vocabulary size (set by token tasks once the data is read)
    steps_per_epoch: int | None = None  # updates per epoch, set once the data is read; None: no epochs
    has_data_files: bool = True    # reads a fixed training set from files (--data-dir, epochs); False: fresh
                                   # random batches each update (copy, adding)
    CONFIG_OPTIONS: tuple[str, ...] = ()  # the task-specific training options it reads (nnrnn.training.config)
    default_steps: int = 1000      # updates of a run given neither --steps nor --epochs, for a task without epochs
    monitor: tuple[str, str] = ("loss", "min")  # validation metric that picks checkpoints/best.pt
    splits: tuple[str, ...] = ("valid", "test")
    # What a grid's report shows (nnrnn.experiments.reporting.report): the metric and split of its results table, their
    # heading and digits, and the learning curves' axis
    reported: Reported = Reported("loss", "test", "test loss", 4)
    curve_axis: str = "validation loss"
    # The gray reference line of its curves (nnrnn.experiments.reporting.figures): for a loss task, what its no-memory
    # baseline predicts, in words; for another, which of its references (:meth:`references`) the line draws and the
    # line's label, a format of that value (None: no line).
    baseline_words: str = "no memory"
    reference_line: tuple[str, str] | None = None
    # A second result its results table shows beside the first (PTB's test accuracy, the paper's supplementary Table
    # 2); whether papers print its reported metric, a share, in percent; whether its curves fall by decades (a loss
    # from its no-memory baseline toward 0), drawn on a log axis.
    reported_beside: Reported | None = None
    percent: bool = False
    log_axis: bool = False
    # What a report scored its runs by under the scoring before the rule SCORED_BY
    # (nnrnn.experiments.judging.rules.COPY_LAST_VALID: copy's last validation loss); None: its :attr:`reported`.
    scored_before: Reported | None = None
    # Whether a model "solves" it, its validation loss staying below a share of its no-memory baseline (the rule
    # SOLVED_SHARE): a report then says how fast each model solves it, and its loss curves draw that line (copy).
    solved_by_baseline: bool = False
    # Whether its runs follow the plateau schedule, which halves the learning rates when validation stalls (the
    # paper's PTB): a report's table of how settled the runs are says how many times.
    halves_rates: bool = False
    # The tasks nearest to it, nearest first, whose published settings a search starts from for a model whose
    # papers report none for this task (nnrnn.experiments.planning.searching.published).
    nearest_tasks: tuple[str, ...] = ()
    # The options a run of it keeps when the cost model measures the task's floor on a tiny network
    # (nnrnn.experiments.planning.cost.measure_floor): those whose value moves what every run costs beyond its
    # shape (copy's T, PTB's segment length; the adding task keeps none, so its floor is measured at its default T);
    # the floor is measured once per task, at the first run's values.
    floor_keeps: tuple[str, ...] = ()

    @classmethod
    def lower_is_better(cls) -> bool:
        """Whether a lower value of its validation metric (:attr:`monitor`) is better (a loss, bits per character)."""
        return cls.monitor[1] == "min"

    @classmethod
    def title(cls, options: dict) -> str:
        """A grid setting's heading in a report, from its options (e.g. the sequence length)."""
        return cls.name

    # A grid orders its queue by a rough cost of each run (nnrnn.experiments.reproduce.expected_cost): the
    # recurrent steps of a training sequence and about how many updates an epoch makes on the shared data files.
    @classmethod
    def sequence_length(cls, options: dict) -> int:
        return 1

    @classmethod
    def rough_updates_per_epoch(cls, options: dict) -> float:
        return 1

    def train_batch(self, step: int) -> Batch:
        raise NotImplementedError

    def eval_batches(self, split: str) -> Iterator[Batch]:
        raise NotImplementedError

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """Mean loss to minimise, and metric sums ``{name: (total, count)}`` for logging, each total a tensor on
        the outputs' device: nothing is read to the host, so a training update can be captured in a CUDA graph."""
        raise NotImplementedError

    def summarize(self, sums: dict) -> dict:
        """Turn accumulated ``{name: (total, count)}`` into metric values."""
        return {name: total / count for name, (total, count) in sums.items() if count}

    def describe(self) -> str:
        """One line for the log: what this task trains on."""
        return self.name

    def describe_lines(self) -> list[str]:
        """What a run prints first about its task: :meth:`describe`, then where its data comes from and any note
        on it, each a line of its own (a long first line hides the note)."""
        return [self.describe()]

    def data_seen(self) -> str | None:
        """How much of the official data the run read, said again beside its test score; None for a task that
        generates its data."""
        return None

    def data_report(self) -> tuple[str, str | None]:
        """A report's data row for a task with data files (nnrnn.experiments.reporting.sections.data_section): the
        cells after the task's, "| its name | trained on | validated on | tested on | the official files |", and a
        note on what reading less than the official files does to its scores (None when the runs had them)."""
        raise NotImplementedError

    # The loss of the best prediction that uses no memory of the inputs (``baseline``) and of an untrained
    # model's guess (``chance``): what a run's outcome is judged against (nnrnn.training.outcome)
    baseline: float | None = None
    chance: float | None = None

    def realised_baseline(self, split: str) -> float | None:
        """The loss of the no-memory prediction on this split's evaluation sequences.  :attr:`baseline` unless a
        task's evaluation set moves it (the adding task's few hundred sequences)."""
        return self.baseline

    def references(self) -> dict:
        """{metric: {"baseline": value, "chance": value}} for the metrics a run logs: the lines its curves draw
        and what its outcome is judged against.  The loss's come from :attr:`baseline` and :attr:`chance`."""
        return {"loss": {"baseline": self.baseline, "chance": self.chance}}

    def batch_shapes(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """(steps, sequences) of a training batch and of an evaluation batch, at most: what the trainer's memory
        check multiplies by the hidden size before anything is allocated."""
        raise NotImplementedError

    def data_scope(self) -> str:
        """What a report's claim row adds to its scope about the data its runs read (a clause starting "; "), for a
        task with data files (nnrnn.experiments.reporting.sections.row_scope); "" when the data limits nothing."""
        return ""

    def data_state(self) -> dict | None:
        """What a checkpoint records of the data this task read (e.g. its vocabulary), so that
        :meth:`check_data_state` can refuse to resume on other data; None for tasks that read no files."""
        return None

    def check_data_state(self, saved: dict) -> None:
        """UserError if the data read now differs from the ``saved`` :meth:`data_state` of a checkpoint."""


def accumulate(into: dict, stats: dict) -> dict:
    for name, (total, count) in stats.items():
        t, c = into.get(name, (0.0, 0))
        into[name] = (t + float(total), c + count)
    return into


LN2 = math.log(2.0)


def prior_references(counts: torch.Tensor) -> dict:
    """A classification task's references from its training set's class counts: the baseline always predicts
    the classes' frequencies (loss: their entropy; accuracy: the most frequent class's share), chance is a
    uniform guess over the classes (loss ln K, accuracy 1/K)."""
    counts = counts.double()
    freq = counts[counts > 0] / counts.sum()
    classes = counts.numel()
    entropy = float(-(freq * freq.log()).sum())
    return {"loss": {"baseline": entropy, "chance": math.log(classes)},
            "accuracy": {"baseline": float(freq.max()), "chance": 1 / classes}}


class SyntheticTask(Task):
    """A task whose batches are drawn fresh from ``make_batch(T, batch_size, generator)``:
    training batch k from stream (seed, 0, k), evaluation batch i from (seed, 1 or 2, i)."""

    has_data_files = False
    log_axis = True

    TRAIN, VALID, TEST = 0, 1, 2

    def __init__(self, seed: int, batch_size: int, T: int, eval_batches: int):
        self.seed, self.batch_size, self.T, self.n_eval = seed, batch_size, T, eval_batches

    @staticmethod
    def make_batch(T: int, batch_size: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    sequence_extra = 0  # steps a batch has beyond T (the copy task's 20)

    @classmethod
    def sequence_length(cls, options: dict) -> int:
        T = options.get("T")
        if T is None:  # not given (a configuration's None too): the task's own default, its constructor's
            T = inspect.signature(cls).parameters["T"].default
        return T + cls.sequence_extra

    def batch_shapes(self):
        steps = self.T + self.sequence_extra
        return (steps, self.batch_size), (steps, self.batch_size)

    def train_batch(self, step: int) -> Batch:
        return Batch(*self.make_batch(self.T, self.batch_size, generator(self.seed, self.TRAIN, step)))

    def eval_batches(self, split: str):
        if split not in self.splits:
            raise ValueError(f"unknown split {split!r}; choose {' or '.join(self.splits)}")
        stream = self.VALID if split == "valid" else self.TEST
        for i in range(self.n_eval):
            yield Batch(*self.make_batch(self.T, self.batch_size, generator(self.seed, stream, i)))
