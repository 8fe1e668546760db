"""Penn Treebank characters from Mikolov's ``ptb.char.{train,valid,test}.txt``.

Format: one sentence per line, symbols separated by single spaces, ``_`` marks a
word boundary and ``<unk>`` is spelled out as ``< u n k >``.  Tokens are the
space-separated symbols (so ``<unk>`` is five tokens), and every line ends with
one more token, the newline :data:`EOS` (``"\\n"``), as the paper's code appends
``<eos>`` to each line: one token per newline in the file.  (The files end with a
newline followed by a single space; the paper's code counts that whitespace-only
remainder as one more, empty line with its own ``<eos>``; we do not.)  The 49
printable symbols plus the newline give a vocabulary of 50.

The vocabulary is the sorted set of symbols of the *training* text plus the newline
(deterministic), kept in :attr:`PTBCorpus.vocab` so a checkpoint can store and verify
it.  A character of the validation or test text that the training text never has
would be an output class the model cannot learn: such characters are read as one
unknown symbol, :data:`UNKNOWN` (U+FFFD, then the last entry of the vocabulary), and
:attr:`PTBCorpus.note` says which and how many.  Symbols outside Penn Treebank's
printable-ASCII alphabet in the training text are kept as symbols of their own, with
a note; so are whitespace characters other than the separating spaces and newlines
(a tab, say), which the format cannot represent and which are dropped, with a note.

Splits: with ``ptb.char.train.txt`` present, the official train / valid / test.
Without it (valid and test present), training uses the first 90% of the lines of
``ptb.char.valid.txt``, validation its last 10%, and test ``ptb.char.test.txt``;
:attr:`PTBCorpus.note` says so.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError, UserError
from .paths import DataNotFound, resolve_dir

EOS = "\n"
VOCABULARY_SIZE = 50  # the official files' 49 printable symbols and the newline
UNKNOWN = "\ufffd"  # what a validation or test character unseen in training is read as
FETCH_HINT = "run `nnrnn data fetch ptb`"
FILES = {split: f"ptb.char.{split}.txt" for split in ("train", "valid", "test")}
TRAIN_FRACTION = 0.9


def read_ptb(path: str | os.PathLike, hint: str = FETCH_HINT) -> list[str]:
    """The lines of a ptb.char file, each as a string of its symbols with spaces removed
    (one character per token); raises :class:`UserError` if it is not in that format."""
    return _read_ptb(path, hint)[0]


def _read_ptb(path: str | os.PathLike, hint: str = FETCH_HINT) -> tuple[list[str], dict[str, int]]:
    """(lines, {whitespace character other than space and newline: count}) of a ptb.char file."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise UserError(f"cannot read {path} ({e.strerror}); check the file or {hint}") from None
    except UnicodeDecodeError as e:
        raise DataError(f"{path} is not a text file (byte {e.start} is not UTF-8); "
                        f"replace it with Mikolov's ptb.char file or {hint}") from None
    pieces = text.split("\n")
    if pieces and not pieces[-1].strip():
        pieces.pop()   # the final newline ends the last line; what follows it (the files have one space) is no line
    lines, n_tokens = [], 0
    for piece in pieces:
        tokens = piece.split()
        lines.append("".join(tokens))
        n_tokens += len(tokens)
    if sum(map(len, lines)) != n_tokens:  # some token is longer than one character
        bad = next(t for p in pieces for t in p.split() if len(t) != 1)
        raise DataError(f"{path} is not in the ptb.char format (it has the multi-character token {bad[:20]!r}, "
                        f"so it may be the word-level file); use Mikolov's ptb.char.*.txt or {hint}")
    if not n_tokens:
        raise DataError(f"{path} holds no characters; replace it with Mikolov's ptb.char file or {hint}")
    stray = {c: text.count(c) for c in set(text) if c.isspace() and c not in " \n"}
    return lines, stray


def _show(symbols) -> str:
    return ", ".join(repr(c) for c in sorted(symbols)[:8]) + (", …" if len(symbols) > 8 else "")


def encode(lines: list[str], vocab: list[str]) -> np.ndarray:
    """int64 token ids of the lines, each line followed by EOS; every symbol must be in ``vocab``."""
    text = EOS.join(lines) + EOS
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    table = np.array([ord(s) for s in vocab], dtype=np.uint32)
    # vocab is sorted except for the appended UNKNOWN, which a training symbol beyond U+FFFD (an emoji) sorts after
    by_code = np.argsort(table, kind="stable")
    found = np.minimum(np.searchsorted(table[by_code], codes), len(table) - 1)
    ids = by_code[found]
    assert np.array_equal(table[ids], codes), "symbol outside the vocabulary"
    return ids.astype(np.int64)


def vocab_digest(vocab: list[str]) -> str:
    """A short fingerprint of a vocabulary (md5 of its JSON), for logs and checkpoint checks."""
    return hashlib.md5(json.dumps(vocab).encode()).hexdigest()[:12]


@dataclass
class PTBCorpus:
    vocab: list[str]                 # sorted symbols; index = token id; "\n" is the end-of-line symbol
    train: np.ndarray                # int64 token ids
    valid: np.ndarray
    test: np.ndarray
    folder: Path
    split: str                       # "official" or "valid-as-train"
    note: str | None = None          # set when the splits differ from the paper's
    files: dict = field(default_factory=dict)

    @property
    def digest(self) -> str:
        return vocab_digest(self.vocab)

    def describe(self) -> str:
        sizes = f"{len(self.train):,} train / {len(self.valid):,} valid / {len(self.test):,} test tokens"
        where = "official splits" if self.split == "official" else "train/valid carved from ptb.char.valid.txt"
        return (f"PTB characters from {self.folder}: {sizes} ({where}), vocabulary {len(self.vocab)} "
                f"symbols incl. newline [{self.digest}]")


def _has_eval_files(folder: Path) -> bool:
    return (folder / FILES["valid"]).is_file() and (folder / FILES["test"]).is_file()


def missing_message(folder: Path) -> str:
    return (f"Penn Treebank characters not found: expected {FILES['valid']} and {FILES['test']} (and for the full "
            f"training set {FILES['train']}) in {folder}; {FETCH_HINT}, or pass --data-dir (or set NNRNN_DATA to) a "
            f"folder that has them")


def load_ptb(data_dir: str | os.PathLike | None = None) -> PTBCorpus:
    """Read the ptb.char files and split them (see the module docstring)."""
    folder = resolve_dir("ptb", data_dir, _has_eval_files)
    if not _has_eval_files(folder):
        if (folder / FILES["train"]).is_file():
            lack = FILES["valid"] if not (folder / FILES["valid"]).is_file() else FILES["test"]
            raise UserError(f"found {FILES['train']} but not {lack} in {folder}; {FETCH_HINT} to complete it")
        raise DataNotFound(missing_message(folder))
    paths = {s: folder / f for s, f in FILES.items() if (folder / f).is_file()}
    read = {s: _read_ptb(p) for s, p in paths.items()}
    lines = {s: r[0] for s, r in read.items()}
    notes = [f"{paths[s].name} holds {sum(stray.values())} whitespace character(s) other than spaces and newlines "
             f"({_show(stray)}), which the ptb.char format cannot represent; they were dropped"
             for s, (_, stray) in read.items() if stray]
    if "train" in lines:
        split, train, valid, test, note = "official", lines["train"], lines["valid"], lines["test"], None
    else:
        cut = int(round(TRAIN_FRACTION * len(lines["valid"])))
        if cut < 1 or cut >= len(lines["valid"]):
            raise DataError(f"{paths['valid']} has only {len(lines['valid'])} lines, too few to carve out a training "
                            f"set; {FETCH_HINT} to get {FILES['train']}")
        split, train, valid, test = "valid-as-train", lines["valid"][:cut], lines["valid"][cut:], lines["test"]
        note = (f"no {FILES['train']}: training on the first {cut:,} lines (90%) of {FILES['valid']}, validation "
                f"on its last {len(lines['valid']) - cut:,}; bpc not comparable with the paper's (`nnrnn data fetch "
                f"ptb`)")
    symbols = set("".join(train))
    foreign = {c for c in symbols if not " " < c <= "~"}
    if foreign:
        notes.append(f"the training text has {len(foreign)} symbol(s) outside Penn Treebank's printable-ASCII "
                     f"alphabet ({_show(foreign)}); they are kept as symbols of their own")
    vocab = sorted(symbols | {EOS})
    unseen = {}  # split name -> (unseen symbols, how many times they occur)
    for name, split_lines in (("validation", valid), ("test", test)):
        text = "".join(split_lines)
        missing = set(text) - symbols
        if missing:
            unseen[name] = (missing, sum(text.count(c) for c in missing))
    if unseen:
        if UNKNOWN not in symbols:  # a training text that has U+FFFD already has its id
            vocab.append(UNKNOWN)   # last, whatever its code point's place (encode does not rely on its order)
        table = str.maketrans({c: UNKNOWN for group, _ in unseen.values() for c in group})
        valid, test = [line.translate(table) for line in valid], [line.translate(table) for line in test]
        notes.append("characters that the training text never has were read as the unknown symbol U+FFFD: "
                     + "; ".join(f"{count} in the {name} text ({_show(group)})"
                                 for name, (group, count) in unseen.items()))
    note = "; ".join(([note] if note else []) + notes) or None
    return PTBCorpus(vocab, encode(train, vocab), encode(valid, vocab), encode(test, vocab), folder, split, note,
                     {s: str(p) for s, p in paths.items()})
