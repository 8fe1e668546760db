"""Permuted (or plain) sequential MNIST (Le et al. 2015; paper's supplementary
"Sequential MNIST classification task").

Each 28x28 image is read one pixel per step (T = 784, input size 1, pixel values
scaled to [0, 1] as torchvision's ToTensor does in the paper's code, no other
normalisation), after a fixed permutation of the pixel order; the class (10) is
predicted after the last step.  The permutation is
``np.random.RandomState(permutation_seed).permutation(784)``, with the paper code's
seed 1234 by default, and does not depend on the run's seed; ``permute=False`` gives
sequential MNIST.  Data and splits: :mod:`nnrnn.data.mnist` (when only the official
test set is present it is split 8,000 / 1,000 / 1,000 and :attr:`data_note` says so).

Training batches: with ``shuffle="epoch"`` (default), epoch ``e = step // steps_per_epoch``
visits the training set in a random order drawn from ``(seed, e)``; with
``shuffle="fixed"`` (the authors' code: an unshuffled loader over its split), every
epoch visits it in the same order, the order the split left it in (for the official
files exactly the authors' order).  Step ``step % steps_per_epoch`` takes that
order's slice (the last slice of an epoch may be smaller), so a batch is a pure
function of (seed, step).  Loss: cross entropy; metrics: loss and accuracy.
"""
from __future__ import annotations

import hashlib
import math

import numpy as np
import torch
import torch.nn.functional as F

from ..data.mnist import load_mnist
from ..errors import UserError
from .base import Batch, Reported, Task, generator, prior_references

PIXELS = 784
PAPER_PERMUTATION_SEED = 1234
SHUFFLES = ("epoch", "fixed")
TRAIN_STREAM = 0


def pixel_order(permute: bool = True, permutation_seed: int = PAPER_PERMUTATION_SEED) -> np.ndarray:
    """The order in which pixels are fed: a fixed permutation of 0..783, or the identity."""
    if not permute:
        return np.arange(PIXELS)
    return np.random.RandomState(permutation_seed).permutation(PIXELS)


def to_inputs(pixels: torch.Tensor) -> torch.Tensor:
    """uint8 (B, 784) in feeding order -> float (784, B, 1) in [0, 1]."""
    return (pixels.float() / 255.0).t().unsqueeze(-1).contiguous()


class PermutedMNISTTask(Task):
    name = "psmnist"
    CONFIG_OPTIONS = ("permute", "shuffle", "data_dir", "eval_batch_size")
    input_size = 1
    output_size = 10
    predict_at = "last"
    monitor = ("accuracy", "max")
    reported = Reported("accuracy", "test", "test accuracy", 3)
    curve_axis = "validation accuracy"
    reference_line = ("chance", "chance {:.0%} (a uniform guess)")
    percent = True
    nearest_tasks = ("adding", "copy")

    @classmethod
    def title(cls, options: dict) -> str:
        return "psMNIST"

    @classmethod
    def sequence_length(cls, options: dict) -> int:
        return cls.T

    @classmethod
    def rough_updates_per_epoch(cls, options: dict) -> float:
        return 125  # the shared data's 8,000 training images in batches of 64
    T = PIXELS

    def __init__(self, seed: int = 0, batch_size: int = 128, data_dir=None, permute: bool = True,
                 permutation_seed: int = PAPER_PERMUTATION_SEED, eval_batch_size: int = 1000, shuffle: str = "epoch",
                 **_):
        if batch_size < 1 or eval_batch_size < 1:
            raise ValueError(f"batch sizes must be positive; got {batch_size} and {eval_batch_size}")
        if shuffle not in SHUFFLES:
            raise ValueError(f"shuffle must be 'epoch' or 'fixed'; got {shuffle!r}")
        self.shuffle = shuffle
        self.seed, self.batch_size, self.eval_batch_size = seed, batch_size, eval_batch_size
        self.permute, self.permutation_seed = bool(permute), permutation_seed
        self.order = pixel_order(self.permute, permutation_seed)
        data = load_mnist(data_dir)
        self.data = data
        self.data_note = data.note
        index = torch.from_numpy(self.order)

        def pixels(images: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(images.reshape(len(images), PIXELS))[:, index].contiguous()

        self._pixels = {"train": pixels(data.train_images), "valid": pixels(data.valid_images),
                        "test": pixels(data.test_images)}
        self._labels = {"train": torch.from_numpy(data.train_labels), "valid": torch.from_numpy(data.valid_labels),
                        "test": torch.from_numpy(data.test_labels)}
        self.n_train = len(data.train_labels)
        self.steps_per_epoch = math.ceil(self.n_train / batch_size)
        self._epoch, self._epoch_order = None, None
        self._references = prior_references(torch.bincount(self._labels["train"].long(), minlength=10))
        self.baseline, self.chance = (self._references["loss"][k] for k in ("baseline", "chance"))

    def references(self) -> dict:
        return self._references

    # ---- data -------------------------------------------------------------------------
    def epoch_order(self, epoch: int) -> torch.Tensor:
        """The order in which epoch ``epoch`` visits the training set."""
        if self.shuffle == "fixed":
            epoch = 0
        if self._epoch != epoch:
            self._epoch_order = (torch.arange(self.n_train) if self.shuffle == "fixed" else
                                 torch.randperm(self.n_train, generator=generator(self.seed, TRAIN_STREAM, epoch)))
            self._epoch = epoch
        return self._epoch_order

    def train_batch(self, step: int) -> Batch:
        epoch, i = divmod(int(step), self.steps_per_epoch)
        idx = self.epoch_order(epoch)[i * self.batch_size:(i + 1) * self.batch_size]
        return Batch(to_inputs(self._pixels["train"][idx]), self._labels["train"][idx])

    def eval_batches(self, split: str):
        if split not in self._pixels:
            raise ValueError(f"unknown split {split!r}; choose train, valid or test")
        pixels, labels = self._pixels[split], self._labels[split]
        for start in range(0, len(labels), self.eval_batch_size):
            stop = start + self.eval_batch_size
            yield Batch(to_inputs(pixels[start:stop]), labels[start:stop])

    # ---- loss and metrics -------------------------------------------------------------
    def loss(self, outputs, targets):
        if outputs.dim() == 3:            # (T, B, 10): the prediction is read at the last step
            outputs = outputs[-1]
        loss = F.cross_entropy(outputs, targets)
        n = targets.numel()
        correct = (outputs.argmax(-1) == targets).sum()
        return loss, {"loss": (loss.detach().double() * n, n), "accuracy": (correct, n)}

    # ---- description and checkpoint checks --------------------------------------------
    def batch_shapes(self):
        return (PIXELS, self.batch_size), (PIXELS, self.eval_batch_size)

    def describe(self) -> str:
        kind = (f"permuted sequential MNIST (permutation seed {self.permutation_seed})"
                if self.permute else "sequential MNIST (no permutation)")
        order = "a new order each epoch" if self.shuffle == "epoch" else "the same order every epoch"
        return (f"{kind}: 784 pixels in [0,1], the class at the last step, batch {self.batch_size}, "
                f"{self.steps_per_epoch} updates per epoch in {order}; baseline loss {self.baseline:.4f}, chance "
                f"{self.chance:.4f}")

    def describe_lines(self) -> list[str]:
        return [self.describe(), self.data.describe()] + ([f"note: {self.data_note}"] if self.data_note else [])

    def data_seen(self) -> str:
        return self.data.describe()

    def data_report(self) -> tuple[str, str | None]:
        n = (len(self.data.train_labels), len(self.data.valid_labels), len(self.data.test_labels))
        row = (f"| psMNIST | {n[0]:,} images | {n[1]:,} images | {n[2]:,} images | 60,000 training images "
               "(the release holds some out for validation), 10,000 test images |")
        if n[0] >= 50_000:
            return row, None
        se = math.sqrt(0.8 * 0.2 / n[2]) * 100
        return row, (f"psMNIST: the models train on {n[0]:,} images, about {n[0] / 60_000:.0%} of the official "
                     "training set, all taken from the official test set, so accuracies are lower than the "
                     f"paper's and not comparable with them. Every seed is tested on the same {n[2]:,} images: "
                     f"at 80% accuracy the sampling error of that test set alone is about ±{se:.1f} points "
                     "(binomial), which the seed-to-seed standard errors do not contain. Differences between "
                     "models are judged by the seed error bars, so a difference of about a point says little "
                     "about the full test set.")

    def data_state(self) -> dict:
        """What a checkpoint should record to check that a resumed run sees the same data."""
        return {"dataset": "mnist", "split": self.data.split,
                "sizes": [len(self._labels[s]) for s in ("train", "valid", "test")],
                "permute": self.permute,
                "permutation_md5": hashlib.md5(self.order.astype(np.int64).tobytes()).hexdigest()}

    def check_data_state(self, state: dict) -> None:
        """Raise :class:`UserError` if ``state`` (from :meth:`data_state`) differs from the data now loaded."""
        now = self.data_state()
        diff = [k for k in now if k in state and state[k] != now[k]]
        if diff:
            raise UserError(f"the checkpoint was trained on different MNIST data ({', '.join(diff)}: "
                            f"{[state[k] for k in diff]} then, {[now[k] for k in diff]} now, from {self.data.folder}); "
                            f"use the same data folder and permutation options as the original run")
