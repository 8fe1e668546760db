"""The copy task (Hochreiter & Schmidhuber 1997; paper's supplementary "Copy task").

Input (length T + 20, one-hot over 10 symbols): 10 symbols drawn uniformly
from 8, then T - 1 blanks, a cue, then 10 blanks.  Target: T + 10 blanks,
then the 10 symbols.  Loss: cross entropy averaged over all T + 20 steps and
the batch.  Predicting blanks and then a uniform guess over the 8 symbols
scores :func:`baseline_loss` = 10 log 8 / (T + 20).  Accuracy is measured on
the 10 recall steps.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .base import Reported, SyntheticTask

N_SYMBOLS = 8
COPY_LENGTH = 10
BLANK, CUE = 8, 9


def baseline_loss(T: int) -> float:
    return COPY_LENGTH * math.log(N_SYMBOLS) / (T + 2 * COPY_LENGTH)


def make_batch(T: int, batch_size: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """inputs (T+20, B, 10) one-hot float, targets (T+20, B) long."""
    symbols = torch.randint(0, N_SYMBOLS, (batch_size, COPY_LENGTH), generator=gen)
    length = T + 2 * COPY_LENGTH
    x = torch.full((batch_size, length), BLANK, dtype=torch.long)
    x[:, :COPY_LENGTH] = symbols
    x[:, COPY_LENGTH + T - 1] = CUE
    y = torch.full((batch_size, length), BLANK, dtype=torch.long)
    y[:, -COPY_LENGTH:] = symbols
    inputs = F.one_hot(x.t(), N_SYMBOLS + 2).float()
    return inputs, y.t().contiguous()


class CopyTask(SyntheticTask):
    make_batch = staticmethod(make_batch)
    name = "copy"
    CONFIG_OPTIONS = ("T",)
    sequence_extra = 2 * COPY_LENGTH
    input_size = N_SYMBOLS + 2
    output_size = N_SYMBOLS + 1
    predict_at = "all"
    default_steps = 3000
    curve_axis = "validation cross-entropy (nats per step)"  # the mean over all T + 20 steps
    baseline_words = "always the blank"
    scored_before = Reported("loss", "valid", "valid loss", 4)  # its last validation loss
    solved_by_baseline = True
    nearest_tasks = ("adding", "psmnist")
    floor_keeps = ("T",)

    @classmethod
    def title(cls, options: dict) -> str:
        return f"copy, T = {options.get('T')}"

    def __init__(self, seed: int = 0, batch_size: int = 10, T: int = 200, eval_batches: int = 10, **_):
        if T < 1:
            raise ValueError(f"T must be a positive int; got {T}")
        super().__init__(seed, batch_size, T, eval_batches)
        self.baseline = baseline_loss(T)
        self.chance = math.log(N_SYMBOLS + 1)  # a uniform guess over the 9 output classes at every step

    def references(self) -> dict:
        # the recalled symbols: a guess among the 8 symbols (baseline), or among all 9 outputs (chance)
        return {**super().references(), "accuracy": {"baseline": 1 / N_SYMBOLS, "chance": 1 / (N_SYMBOLS + 1)}}

    def describe(self) -> str:
        return (f"copy task: T={self.T}, batch {self.batch_size}, fresh random batches each update; "
                f"baseline loss {self.baseline:.4f}, chance {self.chance:.4f}")

    def loss(self, outputs, targets):
        logits = outputs.reshape(-1, outputs.shape[-1])
        loss = F.cross_entropy(logits, targets.reshape(-1))
        recall = outputs[-COPY_LENGTH:].argmax(-1) == targets[-COPY_LENGTH:]
        n = targets.numel()
        return loss, {"loss": (loss.detach().double() * n, n), "accuracy": (recall.sum(), recall.numel())}
