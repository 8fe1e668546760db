"""MNIST from the official IDX files (gzipped or not), with fixed train/valid/test splits.

Files (in the MNIST folder, see :mod:`nnrnn.data.paths`)::

    train-images-idx3-ubyte[.gz]  train-labels-idx1-ubyte[.gz]   (optional)
    t10k-images-idx3-ubyte[.gz]   t10k-labels-idx1-ubyte[.gz]    (required)

Splits (fixed, independent of the run's seed):

* official training files present: the paper's released code's split of the
  60,000 training images, 50,000 train / 10,000 valid, drawn by
  ``np.random.RandomState(1234)`` right after the pixel permutation (so this is
  exactly the authors' split); the official 10,000 test images are the test set.
* only the t10k files present: their 10,000 images are shuffled by
  ``np.random.RandomState(1234)`` and cut 8,000 train / 1,000 valid / 1,000 test,
  and :attr:`MNISTData.note` says so (numbers are then not comparable with the paper).
"""
from __future__ import annotations

import gzip
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DataError, UserError
from .paths import DataNotFound, resolve_dir

IMAGES_MAGIC, LABELS_MAGIC = 2051, 2049
ROWS = COLS = 28
FETCH_HINT = "run `nnrnn data fetch mnist`"
STEMS = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
SPLIT_SEED = 1234
OFFICIAL_VALID = 10_000
TEST_ONLY_SPLIT = (8_000, 1_000, 1_000)

# IDX type byte -> big-endian numpy dtype
IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | os.PathLike, magic: int | None = None, hint: str = FETCH_HINT) -> np.ndarray:
    """Read an IDX file (gzipped or not; detected from its first bytes, not its name).

    ``magic``: the expected magic number (2051 images, 2049 labels); a file that cannot be read raises
    :class:`UserError`, one that is not a whole IDX file of that kind (corrupt gzip, wrong magic, size not matching
    the header) :class:`~nnrnn.errors.DataError` (a ``ValueError``), each naming the file.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise UserError(f"cannot read {path} ({e.strerror}); check the file or {hint}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise DataError(f"{path} is a truncated or corrupt gzip file ({e}); delete it and {hint}") from None
    if len(raw) < 4:
        raise DataError(f"{path} is too short to be an IDX file ({len(raw)} bytes); delete it and {hint}")
    found = int.from_bytes(raw[:4], "big")
    type_code, ndim = raw[2], raw[3]
    if raw[:2] != b"\0\0" or type_code not in IDX_TYPES or ndim == 0 or (magic is not None and found != magic):
        expected = f"{magic}" if magic is not None else "an IDX magic number"
        raise DataError(f"{path} is not the expected IDX file (magic number {found}, expected {expected}); "
                        f"replace it with the official file or {hint}")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DataError(f"{path} is truncated inside its IDX header; delete it and {hint}")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = np.dtype(IDX_TYPES[type_code])
    count = int(np.prod(dims, dtype=np.int64))
    if len(raw) - header != count * dtype.itemsize:
        raise DataError(f"{path} holds {len(raw) - header} data bytes but its header {dims} calls for "
                        f"{count * dtype.itemsize}, so it is truncated or corrupt; delete it and {hint}")
    data = np.frombuffer(raw, dtype=dtype, count=count, offset=header).reshape(dims)
    return data.astype(dtype.newbyteorder("="), copy=True)


def find_file(folder: Path, stem: str) -> Path | None:
    """The file for ``stem`` in ``folder``: raw, gzipped, or with the ``.idx`` spelling some copies use.  Several
    copies are fine when they hold the same data; copies that differ are a UserError naming them, since which
    one is meant cannot be told."""
    alt = stem.replace("-idx", ".idx")
    found = [folder / name for name in dict.fromkeys((stem, stem + ".gz", alt, alt + ".gz"))
             if (folder / name).is_file()]
    if len(found) > 1:
        first = read_idx(found[0])
        for other in found[1:]:
            data = read_idx(other)
            if data.shape != first.shape or not np.array_equal(data, first):
                raise DataError(f"{found[0]} and {other} are two copies of {stem} with different contents, so "
                                f"which one to read is ambiguous; delete the one that is not the official file "
                                f"(or delete both and {FETCH_HINT})")
    return found[0] if found else None


def _has_test(folder: Path) -> bool:
    return find_file(folder, STEMS["test_images"]) is not None and find_file(folder, STEMS["test_labels"]) is not None


@dataclass
class MNISTData:
    """uint8 images (N, 28, 28) and int64 labels (N,) for each split."""
    train_images: np.ndarray
    train_labels: np.ndarray
    valid_images: np.ndarray
    valid_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    folder: Path
    split: str          # "official" or "test-only"
    note: str | None    # set when the splits differ from the paper's (test-only)

    def describe(self) -> str:
        sizes = f"{len(self.train_labels):,} train / {len(self.valid_labels):,} valid / {len(self.test_labels):,} test"
        if self.split == "official":
            return (f"MNIST from {self.folder}: official training images split {sizes} "
                    f"(the paper code's fixed split), official test set")
        return f"MNIST from {self.folder}: {sizes} (all from the official test set)"


def _load_pair(images_path: Path, labels_path: Path) -> tuple[np.ndarray, np.ndarray]:
    images = read_idx(images_path, IMAGES_MAGIC)
    labels = read_idx(labels_path, LABELS_MAGIC)
    if images.ndim != 3 or images.shape[1:] != (ROWS, COLS) or images.dtype != np.uint8:
        raise DataError(f"{images_path} holds {images.dtype} images of shape {images.shape[1:]}, "
                        f"not 28x28 uint8 MNIST images; replace it with the official file or {FETCH_HINT}")
    if labels.ndim != 1 or labels.dtype != np.uint8 or (labels.size and labels.max() > 9):
        raise DataError(f"{labels_path} does not hold MNIST labels 0-9; "
                        f"replace it with the official file or {FETCH_HINT}")
    if len(images) != len(labels):
        raise DataError(f"{images_path} has {len(images)} images but {labels_path} has {len(labels)} labels; "
                        f"replace them with the official files or {FETCH_HINT}")
    return images, labels.astype(np.int64)


def missing_message(folder: Path) -> str:
    names = ", ".join(f"{STEMS[k]}.gz" for k in ("test_images", "test_labels"))
    optional = ", ".join(f"{STEMS[k]}.gz" for k in ("train_images", "train_labels"))
    return (f"MNIST not found: expected {names} (and for the full training set {optional}; "
            f"gzipped or not) in {folder}; {FETCH_HINT}, or pass --data-dir (or set NNRNN_DATA to) a folder "
            "that has them")


def load_mnist(data_dir: str | os.PathLike | None = None) -> MNISTData:
    """Load MNIST and split it (see the module docstring)."""
    folder = resolve_dir("mnist", data_dir, _has_test)
    if not _has_test(folder):
        raise DataNotFound(missing_message(folder))
    test_images, test_labels = _load_pair(find_file(folder, STEMS["test_images"]),
                                          find_file(folder, STEMS["test_labels"]))
    train_img_path = find_file(folder, STEMS["train_images"])
    train_lab_path = find_file(folder, STEMS["train_labels"])
    if (train_img_path is None) != (train_lab_path is None):
        have, lack = ((train_img_path, STEMS["train_labels"]) if train_img_path
                      else (train_lab_path, STEMS["train_images"]))
        raise UserError(f"found {have.name} but not {lack}[.gz] in {folder}; {FETCH_HINT} to complete the "
                        f"training set, or remove {have.name} to train on a split of the test set")
    if train_img_path is not None:
        images, labels = _load_pair(train_img_path, train_lab_path)
        if len(labels) <= OFFICIAL_VALID:
            raise DataError(f"{train_img_path} has only {len(labels)} images; "
                            f"replace it with the official file or {FETCH_HINT}")
        rng = np.random.RandomState(SPLIT_SEED)
        rng.permutation(ROWS * COLS)          # the paper's code draws its pixel permutation first
        order = rng.permutation(len(labels))
        n_train = len(labels) - OFFICIAL_VALID
        tr, va = order[:n_train], order[n_train:]
        return MNISTData(images[tr], labels[tr], images[va], labels[va], test_images, test_labels,
                         folder, "official", None)
    n = len(test_labels)
    n_train, n_valid, n_test = (TEST_ONLY_SPLIT if n == sum(TEST_ONLY_SPLIT)
                                else (n - 2 * (n // 10), n // 10, n // 10))
    if min(n_train, n_valid, n_test) < 1:
        raise DataError(f"{folder} holds only {n} MNIST test images, too few to split; {FETCH_HINT}")
    order = np.random.RandomState(SPLIT_SEED).permutation(n)
    tr, va, te = order[:n_train], order[n_train:n_train + n_valid], order[n_train + n_valid:]
    note = (f"only MNIST's test set was found, split {n_train:,} train / {n_valid:,} valid / {n_test:,} test: "
            f"accuracies are not comparable with the paper's (`nnrnn data fetch mnist` gets the training set)")
    return MNISTData(test_images[tr], test_labels[tr], test_images[va], test_labels[va],
                     test_images[te], test_labels[te], folder, "test-only", note)
