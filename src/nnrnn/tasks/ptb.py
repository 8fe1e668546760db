"""Penn Treebank character-level language modelling (paper's supplementary "Penn Tree
Bank character prediction task").

Inputs are character ids, (T, B) int64: the trainer embeds them (``--embedding``,
200 dimensions by default and in the presets, as the paper's code does) or feeds
them one-hot (``--embedding 0``).  The vocabulary is 50 with the newline, which is
counted as a symbol as in the paper's code; the next character is predicted at
every step.  Data, vocabulary and splits:
:mod:`nnrnn.data.ptb` (without ``ptb.char.train.txt``, training uses the first 90%
of ``ptb.char.valid.txt`` and validation its last 10%, and :attr:`data_note` says so).

Each split's token stream is cut into ``batch_size`` contiguous parallel streams
(the standard ``batchify``: the remainder that does not fill a row is dropped), and
those into segments of ``bptt`` steps for truncated backpropagation through time;
the target is the input shifted by one character.  ``train_batch(step)`` is segment
``step % steps_per_epoch`` of the training streams, with ``carry=False`` on the first
segment of each epoch and ``True`` otherwise: the hidden state is carried over from
the previous segment, as in the paper ("the initial hidden state for a sequence is
the last hidden state produced from its preceding sequence").  The last segment of
an epoch may be shorter than ``bptt``.  The order is fixed, so ``seed`` plays no role
in the data.  ``eval_batches(split)`` walks the split the same way, with
``eval_batch_size`` streams (10, as in the paper's code).

Loss: cross entropy averaged over all predicted characters; metrics: loss (nats),
bpc = loss / ln 2 (derived in :meth:`summarize` from the summed loss) and accuracy.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..data.ptb import VOCABULARY_SIZE, load_ptb, vocab_digest
from ..errors import UserError
from .base import LN2, Batch, Reported, Task, prior_references

OFFICIAL_TRAIN_CHARACTERS = 5_010_000  # characters in ptb.char.train.txt, as usually published (about 5.01M)
PAPER_EVAL_BATCH_SIZE = 10


def batchify(ids: torch.Tensor, streams: int) -> torch.Tensor:
    """(N,) token ids -> (N // streams, streams): column b is the b-th contiguous slice."""
    rows = ids.numel() // streams
    return ids[:rows * streams].view(streams, rows).t().contiguous()


def n_segments(data: torch.Tensor, bptt: int) -> int:
    return math.ceil((data.shape[0] - 1) / bptt)


def segment(data: torch.Tensor, i: int, bptt: int) -> Batch:
    """Segment i: inputs (L, B) ids, targets (L, B) the next ids, L = bptt or what is left."""
    start = i * bptt
    length = min(bptt, data.shape[0] - 1 - start)
    x = data[start:start + length]
    y = data[start + 1:start + 1 + length]
    return Batch(x.contiguous(), y.contiguous(), carry=i > 0)


class PTBTask(Task):
    name = "ptb"
    CONFIG_OPTIONS = ("bptt", "data_dir", "eval_batch_size", "embedding")
    predict_at = "all"
    token_inputs = True
    monitor = ("bpc", "min")
    reported = Reported("bpc", "test", "test bpc", 3)
    curve_axis = "validation bits per character"
    reference_line = ("baseline", "unigram {:.3f} bpc (the training text's character frequencies)")
    reported_beside = Reported("accuracy", "test", "test accuracy", 3)
    halves_rates = True
    nearest_tasks = ("psmnist", "copy", "adding")
    floor_keeps = ("bptt",)
    vocab_size = VOCABULARY_SIZE  # the official files'; an instance reads its own from its data

    @classmethod
    def title(cls, options: dict) -> str:
        return f"PTB, T_PTB = {options['bptt']}"

    @classmethod
    def sequence_length(cls, options: dict) -> int:
        return options.get("bptt", 150)

    @classmethod
    def rough_updates_per_epoch(cls, options: dict) -> float:
        return 11000 / cls.sequence_length(options)  # the shared data's 354K training characters in batches of 32

    def __init__(self, seed: int = 0, batch_size: int = 128, bptt: int = 150, data_dir=None,
                 eval_batch_size: int = PAPER_EVAL_BATCH_SIZE, **_):
        if batch_size < 1 or eval_batch_size < 1 or bptt < 1:
            raise ValueError(f"batch_size, eval_batch_size and bptt must be positive; "
                             f"got {batch_size}, {eval_batch_size}, {bptt}")
        self.seed, self.batch_size, self.bptt, self.eval_batch_size = seed, batch_size, bptt, eval_batch_size
        corpus = load_ptb(data_dir)
        self.corpus = corpus
        self.data_note = corpus.note
        self.vocab = list(corpus.vocab)
        self.vocab_size = self.input_size = self.output_size = len(self.vocab)
        self._ids = {s: torch.from_numpy(getattr(corpus, s)) for s in ("train", "valid", "test")}
        self.train_data = batchify(self._ids["train"], batch_size)
        if self.train_data.shape[0] < 2:
            raise UserError(f"batch_size {batch_size} is too large for the {self._ids['train'].numel():,} training "
                            f"characters (each of the {batch_size} streams needs at least 2); use a smaller batch_size")
        self.steps_per_epoch = n_segments(self.train_data, bptt)
        # the unigram model of the training text (baseline) and a uniform guess over the vocabulary (chance)
        refs = prior_references(torch.bincount(self._ids["train"].long(), minlength=self.vocab_size))
        self._references = {**refs, "bpc": {k: v / LN2 for k, v in refs["loss"].items()}}
        self.baseline, self.chance = (refs["loss"][k] for k in ("baseline", "chance"))
        self._eval = {}
        for split in ("valid", "test"):  # a too large eval_batch_size is refused now, not after training
            self.eval_data(split)

    def train_batch(self, step: int) -> Batch:
        return segment(self.train_data, int(step) % self.steps_per_epoch, self.bptt)

    def eval_data(self, split: str) -> torch.Tensor:
        if split not in self._ids:
            raise ValueError(f"unknown split {split!r}; choose train, valid or test")
        if split not in self._eval:
            data = batchify(self._ids[split], self.eval_batch_size)
            if data.shape[0] < 2:
                raise UserError(f"eval_batch_size {self.eval_batch_size} is too large for the "
                                f"{self._ids[split].numel():,} {split} characters; use a smaller eval_batch_size")
            self._eval[split] = data
        return self._eval[split]

    def eval_batches(self, split: str):
        data = self.eval_data(split)
        for i in range(n_segments(data, self.bptt)):
            yield segment(data, i, self.bptt)

    def loss(self, outputs, targets):
        logits = outputs.reshape(-1, outputs.shape[-1])
        flat = targets.reshape(-1)
        loss = F.cross_entropy(logits, flat)
        n = flat.numel()
        correct = (logits.argmax(-1) == flat).sum()
        return loss, {"loss": (loss.detach().double() * n, n), "accuracy": (correct, n)}

    def summarize(self, sums: dict) -> dict:
        values = super().summarize(sums)
        if "loss" in values:
            values["bpc"] = values["loss"] / LN2
        return values

    def batch_shapes(self):
        return (self.bptt, self.batch_size), (self.bptt, self.eval_batch_size)

    def references(self) -> dict:
        return self._references

    def describe(self) -> str:
        bpc = self._references["bpc"]
        return (f"Penn Treebank characters: {self.batch_size} streams x {self.bptt}-step segments, "
                f"{self.steps_per_epoch} updates per epoch, state carried across segments, evaluation with "
                f"{self.eval_batch_size} streams; baseline {bpc['baseline']:.3f} bpc, chance {bpc['chance']:.3f}")

    def describe_lines(self) -> list[str]:
        return [self.describe(), self.corpus.describe()] + ([f"note: {self.data_note}"] if self.data_note else [])

    def data_seen(self) -> str:
        return self.corpus.describe()

    def data_report(self) -> tuple[str, str | None]:
        n = len(self.corpus.train), len(self.corpus.valid), len(self.corpus.test)
        row = (f"| PTB | {n[0]:,} characters | {n[1]:,} characters | {n[2]:,} characters | "
               "`ptb.char.train.txt`: about 5.01 million characters (the count usually published, whose "
               "validation and test counts, 393K and 442K, match the files here) |")
        if n[0] >= 1_000_000:
            return row, None
        return row, (f"PTB: the models see none of the official training file. They train on {n[0]:,} "
                     "characters, 90% of the official validation file (as many characters as "
                     f"{n[0] / OFFICIAL_TRAIN_CHARACTERS:.0%} of the training file), and validate on the rest of "
                     "that file. With so little "
                     "text the larger models over-fit sooner, and the plateau schedule then halves their "
                     "learning rates early; bits per character are higher than the paper's and not comparable "
                     "with them. The test file is the official one, so test scores of different models here are "
                     "comparable with each other.")

    def data_scope(self) -> str:
        """The share of the official training text its runs trained on, and that the paper's N = 1024 over-fits so
        little text (a report's notes); nothing when the runs had the official training file."""
        characters = len(self.corpus.train)
        if characters >= 1_000_000:
            return ""
        return (f"; trained on {characters:,} characters, as many as {characters / OFFICIAL_TRAIN_CHARACTERS:.0%} of "
                "the official training file, on which the paper's N = 1024 over-fits (the notes): the paper's size is "
                "not tested here")

    def data_state(self) -> dict:
        """What a checkpoint should record (the vocabulary above all) to check a resumed run's data."""
        return {"dataset": "ptb", "split": self.corpus.split, "vocab": list(self.vocab),
                "sizes": [self._ids[s].numel() for s in ("train", "valid", "test")]}

    def check_data_state(self, state: dict) -> None:
        """Raise :class:`UserError` if ``state`` (from :meth:`data_state`) differs from the data now loaded."""
        now = self.data_state()
        if "vocab" in state and list(state["vocab"]) != now["vocab"]:
            raise UserError(f"the checkpoint was trained with a different PTB vocabulary ({len(state['vocab'])} "
                            f"symbols [{vocab_digest(list(state['vocab']))}]) than the files in {self.corpus.folder} "
                            f"give ({len(now['vocab'])} symbols [{vocab_digest(now['vocab'])}]); "
                            f"use the same ptb.char files as the original run")
        diff = [k for k in ("split", "sizes") if k in state and state[k] != now[k]]
        if diff:
            raise UserError(f"the checkpoint was trained on different PTB data ({', '.join(diff)}: "
                            f"{[state[k] for k in diff]} then, {[now[k] for k in diff]} now, from "
                            f"{self.corpus.folder}); use the same data folder as the original run")
