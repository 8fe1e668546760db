"""The psMNIST and PTB tasks on the real data in the shared folder (../shared/data
relative to the repository, or $NNRNN_SHARED_DATA); skipped when it is absent."""
from __future__ import annotations

import copy
import hashlib
import math
import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nnrnn.data.ptb import EOS
from nnrnn.errors import UserError
from nnrnn.tasks import make_task
from nnrnn.tasks.base import accumulate
from nnrnn.tasks.psmnist import pixel_order

from conftest import SHARED, needs_mnist, needs_ptb  # noqa: E402


@pytest.fixture(scope="module")
def psmnist():
    return make_task("psmnist", seed=3, batch_size=128, data_dir=SHARED)


@pytest.fixture(scope="module")
def ptb():
    return make_task("ptb", seed=0, batch_size=128, bptt=150, data_dir=SHARED)


# ---------------------------------------------------------------------------- psMNIST
@needs_mnist
def test_psmnist_shapes_and_split(psmnist):
    assert (psmnist.input_size, psmnist.output_size, psmnist.predict_at) == (1, 10, "last")
    assert psmnist.monitor == ("accuracy", "max")
    assert psmnist.n_train == 8000 and psmnist.steps_per_epoch == math.ceil(8000 / 128)
    batch = psmnist.train_batch(0)
    assert batch.inputs.shape == (784, 128, 1) and batch.inputs.dtype == torch.float32
    assert batch.targets.shape == (128,) and batch.targets.dtype == torch.int64
    assert 0.0 <= batch.inputs.min() and batch.inputs.max() <= 1.0 and batch.inputs.max() > 0.99
    assert psmnist.train_batch(psmnist.steps_per_epoch - 1).targets.shape == (8000 - 62 * 128,)
    assert "8,000 train / 1,000 valid / 1,000 test" in psmnist.data_note
    assert psmnist.describe_lines()[-1] == f"note: {psmnist.data_note}"
    for split in ("valid", "test"):
        batches = list(psmnist.eval_batches(split))
        assert sum(len(b.targets) for b in batches) == 1000 and not any(b.carry for b in batches)


@needs_mnist
def test_psmnist_batches_are_a_pure_function_of_seed_and_step(psmnist):
    other = make_task("psmnist", seed=3, batch_size=128, data_dir=SHARED)
    for step in (0, 5, 200, 7):                       # any order, across epochs
        a, b = psmnist.train_batch(step), other.train_batch(step)
        assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)
    different = make_task("psmnist", seed=4, batch_size=128, data_dir=SHARED)
    assert not torch.equal(different.train_batch(0).targets, psmnist.train_batch(0).targets)
    # each epoch visits every training image once, in an order that changes with the epoch
    counts = torch.bincount(torch.cat([psmnist.train_batch(s).targets for s in range(psmnist.steps_per_epoch)]),
                            minlength=10)
    assert torch.equal(counts, torch.bincount(psmnist._labels["train"], minlength=10))
    assert not torch.equal(psmnist.epoch_order(0), psmnist.epoch_order(1))


@needs_mnist
def test_psmnist_permutation(psmnist):
    order = pixel_order(True, 1234)
    assert sorted(order.tolist()) == list(range(784)) and not np.array_equal(order, np.arange(784))
    np.testing.assert_array_equal(order, np.random.RandomState(1234).permutation(784))   # the paper code's
    np.testing.assert_array_equal(psmnist.order, order)                                  # fixed, not from the run seed
    assert not np.array_equal(pixel_order(True, 1), order)
    np.testing.assert_array_equal(pixel_order(False), np.arange(784))
    plain = make_task("psmnist", seed=3, batch_size=128, data_dir=SHARED, permute=False)
    a, b = psmnist.train_batch(2), plain.train_batch(2)
    assert torch.equal(a.targets, b.targets)
    assert torch.equal(a.inputs, b.inputs[torch.from_numpy(order)])      # same images, pixels reordered


@needs_mnist
def test_psmnist_loss_and_state(psmnist):
    targets = torch.tensor([0, 1, 2, 3])
    logits = torch.zeros(4, 10)
    logits[0, 0] = logits[1, 5] = 10.0
    loss, stats = psmnist.loss(logits, targets)
    assert stats["accuracy"] == (1, 4) and stats["loss"][1] == 4
    assert stats["loss"][0] == pytest.approx(loss.item() * 4)                         # a sum over the batch
    loss3, stats3 = psmnist.loss(torch.stack([torch.randn(4, 10), torch.randn(4, 10), logits]), targets)
    assert torch.allclose(loss, loss3) and stats3["accuracy"] == (1, 4)               # (T, B, 10): last step
    assert psmnist.loss(F.one_hot(targets, 10).float(), targets)[1]["accuracy"] == (4, 4)
    state = psmnist.data_state()
    psmnist.check_data_state(state)
    with pytest.raises(UserError, match="different MNIST data"):
        psmnist.check_data_state({**state, "permutation_md5": "0" * 32})
    # what checkpoints written by this version hold: the keys, and the permutation's md5 computed here
    expected_md5 = hashlib.md5(np.random.RandomState(1234).permutation(784).astype(np.int64).tobytes()).hexdigest()
    assert state == {"dataset": "mnist", "split": psmnist.data.split, "sizes": [8000, 1000, 1000], "permute": True,
                     "permutation_md5": expected_md5}


@needs_mnist
def test_psmnist_eval_batches_split_at_the_eval_batch_size_and_describe():
    task = make_task("psmnist", seed=3, batch_size=128, data_dir=SHARED, eval_batch_size=300)
    sizes = [len(b.targets) for b in task.eval_batches("valid")]
    assert sizes == [300, 300, 300, 100]
    assert torch.equal(torch.cat([b.targets for b in task.eval_batches("valid")]), task._labels["valid"])
    assert task.describe() == (
        "permuted sequential MNIST (permutation seed 1234): 784 pixels in [0,1], the class at the last step, "
        f"batch 128, 63 updates per epoch in a new order each epoch; baseline loss {task.baseline:.4f}, chance 2.3026")
    assert task.describe_lines() == [task.describe(), task.data.describe(), f"note: {task.data_note}"]
    task.data_note = ""  # as with the official files: no note at all
    assert task.describe_lines() == [task.describe(), task.data.describe()]
    plain = make_task("psmnist", batch_size=128, data_dir=SHARED, permute=False, shuffle="fixed")
    assert plain.describe().startswith("sequential MNIST (no permutation): 784 pixels")
    assert "in the same order every epoch" in plain.describe()


@needs_mnist
def test_psmnist_defaults_bounds_and_permutation_seed():
    from nnrnn.tasks.psmnist import PermutedMNISTTask
    task = PermutedMNISTTask(data_dir=SHARED)  # the paper's batch 128 and permutation seed 1234
    assert (task.seed, task.batch_size, task.eval_batch_size, task.permute) == (0, 128, 1000, True)
    np.testing.assert_array_equal(pixel_order(), np.random.RandomState(1234).permutation(784))
    other = PermutedMNISTTask(data_dir=SHARED, batch_size=1, eval_batch_size=1, permutation_seed=7)
    np.testing.assert_array_equal(other.order, np.random.RandomState(7).permutation(784))
    assert other.train_batch(0).inputs.shape == (784, 1, 1)
    for bad in ({"batch_size": 0}, {"eval_batch_size": 0}):
        with pytest.raises(ValueError, match="batch sizes must be positive"):
            PermutedMNISTTask(data_dir=SHARED, **bad)


# ---------------------------------------------------------------------------- PTB
@needs_ptb
def test_ptb_shapes_vocab_and_split(ptb):
    assert len(ptb.vocab) == type(ptb).vocab_size == 50 and ptb.vocab == sorted(ptb.vocab) and EOS in ptb.vocab
    assert ptb.input_size == ptb.output_size == 50 and ptb.predict_at == "all" and ptb.monitor == ("bpc", "min")
    n_valid_file = 389_672 + 3_370                   # characters + one newline per line
    assert ptb.corpus.train.size + ptb.corpus.valid.size == n_valid_file
    assert ptb.corpus.test.size == 438_662 + 3_761
    assert "first 3,033 lines (90%)" in ptb.data_note and ptb.describe_lines()[-1] == f"note: {ptb.data_note}"
    rows = ptb.corpus.train.size // 128
    assert ptb.steps_per_epoch == math.ceil((rows - 1) / 150)
    batch = ptb.train_batch(0)
    assert batch.inputs.shape == (150, 128) and batch.targets.shape == (150, 128)
    assert batch.inputs.dtype == torch.int64 and 0 <= batch.inputs.min() and batch.inputs.max() < 50  # ids
    assert torch.equal(batch.inputs[1:], batch.targets[:-1])                              # next character
    last = ptb.train_batch(ptb.steps_per_epoch - 1)
    assert last.inputs.shape[0] == (rows - 1) - 150 * (ptb.steps_per_epoch - 1)
    decoded = "".join(ptb.vocab[i] for i in ptb.train_data[:, 0][:40])
    assert decoded.startswith("consumers_may_want_to_move_their_telepho")


@needs_ptb
def test_a_ptb_rows_scope_says_how_little_training_text_its_runs_read(ptb):
    """Trained on 90% of the validation file, a claim row says how many characters that is against the official
    training file (about 7% of its 5.01M), and that the paper's size is not tested; with the official file, nothing."""
    n = ptb.corpus.train.size
    assert ptb.data_scope() == (f"; trained on {n:,} characters, as many as 7% of the official training file, on "
                                "which the paper's N = 1024 over-fits (the notes): the paper's size is not tested here")
    official = copy.copy(ptb)
    official.corpus = types.SimpleNamespace(train=np.zeros(5_010_000, dtype=np.uint8))
    assert official.data_scope() == ""



@needs_ptb
def test_ptb_carry_and_determinism(ptb):
    spe = ptb.steps_per_epoch
    assert [ptb.train_batch(s).carry for s in (0, 1, spe - 1, spe, spe + 1)] == [False, True, True, False, True]
    a, b = ptb.train_batch(1), ptb.train_batch(1 + 3 * spe)        # same segment in a later epoch
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)
    # consecutive segments continue each stream
    assert torch.equal(ptb.train_batch(1).inputs[0], ptb.train_batch(0).targets[-1])
    batches = list(ptb.eval_batches("valid"))
    assert [x.carry for x in batches] == [False] + [True] * (len(batches) - 1)
    assert all(x.inputs.shape[1] == 10 for x in batches)                                   # paper's eval batch
    assert sum(x.targets.numel() for x in batches) == (ptb.corpus.valid.size // 10 - 1) * 10


@needs_ptb
def test_ptb_bpc_is_loss_over_ln2(ptb):
    sums = {}
    for step in range(2):
        batch = ptb.train_batch(step)
        outputs = torch.randn(*batch.targets.shape, 50, generator=torch.Generator().manual_seed(step))
        loss, stats = ptb.loss(outputs, batch.targets)
        assert math.isclose(stats["loss"][0] / stats["loss"][1], loss.item(), rel_tol=1e-6)
        accumulate(sums, stats)
    values = ptb.summarize(sums)
    assert math.isclose(values["bpc"], values["loss"] / math.log(2), rel_tol=1e-12)
    assert 0.0 <= values["accuracy"] <= 1.0
    uniform, _ = ptb.loss(torch.zeros(3, 2, 50), torch.zeros(3, 2, dtype=torch.long))
    assert math.isclose(uniform.item() / math.log(2), math.log2(50), rel_tol=1e-6)
    targets = torch.tensor([[1, 2], [3, 4], [5, 6]])
    logits = F.one_hot(targets, 50).float()
    logits[0, 0] = F.one_hot(torch.tensor(9), 50).float()  # one of six predictions wrong
    assert ptb.loss(logits, targets)[1]["accuracy"] == (5, 6)


@needs_ptb
def test_ptb_checkpoint_vocab_check(ptb):
    state = ptb.data_state()
    ptb.check_data_state(state)
    with pytest.raises(UserError, match="different PTB vocabulary"):
        ptb.check_data_state({**state, "vocab": state["vocab"][:-1]})
    assert sorted(state) == ["dataset", "sizes", "split", "vocab"] and state["dataset"] == "ptb"
    assert state["sizes"] == [ptb._ids[s].numel() for s in ("train", "valid", "test")]
    for key, other in (("split", "official"), ("sizes", [1, 2, 3])):
        with pytest.raises(UserError, match=f"different PTB data \\({key}"):
            ptb.check_data_state({**state, key: other})


# ---------------------------------------------------------------------------- missing data
@pytest.mark.parametrize("task, command", [("psmnist", "nnrnn data fetch mnist"), ("ptb", "nnrnn data fetch ptb")])
def test_missing_data_folder(tmp_path, task, command):
    with pytest.raises(UserError, match=command) as info:
        make_task(task, data_dir=tmp_path / "empty")
    assert str(tmp_path / "empty") in str(info.value)


def test_ptb_segments_cover_every_target_once():
    """A stream of L ids has L - 1 (input, next id) pairs, cut into ceil((L - 1) / bptt) segments."""
    from nnrnn.tasks.ptb import n_segments, segment
    for length in (7, 8, 9, 13):
        data = torch.arange(length).view(length, 1)
        parts = [segment(data, i, 3) for i in range(n_segments(data, 3))]
        assert n_segments(data, 3) == math.ceil((length - 1) / 3)
        assert torch.equal(torch.cat([p.targets for p in parts]).view(-1), torch.arange(1, length))


@needs_ptb
def test_ptb_defaults_and_bounds():
    from nnrnn.tasks.ptb import PTBTask
    task = PTBTask(data_dir=SHARED)
    assert (task.seed, task.batch_size, task.bptt) == (0, 128, 150)  # the paper's batch and truncation
    PTBTask(data_dir=SHARED, batch_size=1, eval_batch_size=1, bptt=1)  # the smallest valid values
    for bad in ({"batch_size": 0}, {"eval_batch_size": 0}, {"bptt": 0}):
        with pytest.raises(ValueError, match="must be positive"):
            PTBTask(data_dir=SHARED, **bad)
    assert PTBTask(data_dir=SHARED, batch_size=task._ids["train"].numel() // 2).train_data.shape[0] == 2
    with pytest.raises(UserError, match="batch_size .* is too large"):
        PTBTask(data_dir=SHARED, batch_size=task._ids["train"].numel())
    task.data_note = ""  # as with the official files: no note at all
    assert "evaluation with 10 streams; " in task.describe()  # the paper code's 10
    assert task.describe_lines() == [task.describe(), task.corpus.describe()]
    small = PTBTask(data_dir=SHARED, eval_batch_size=task._ids["valid"].numel() // 2)  # two rows: just enough
    assert small.eval_data("valid").shape[0] == 2
    with pytest.raises(UserError, match="too large"):
        PTBTask(data_dir=SHARED, eval_batch_size=task._ids["valid"].numel()).eval_data("valid")


@needs_mnist
@needs_ptb
def test_a_run_starts_with_short_lines_and_the_data_note_on_its_own(tmp_path, capsys):
    """The first lines of a psMNIST and a PTB run on the shared (not the paper's) data: each short enough to read
    at a glance, the note that the numbers are not the paper's on a line of its own."""
    from nnrnn.training.config import resolve_config
    from nnrnn.training.train import train
    for task, options in (("psmnist", {"batch_size": 500, "eval_batch_size": 1000}),
                          ("ptb", {"batch_size": 128, "bptt": 20, "eval_batch_size": 100})):
        train(resolve_config({"task": task, "model": "rnn", "hidden": 4, "steps": 1, "progress": False,
                              "data_dir": str(SHARED), "out": str(tmp_path / task), **options}))
        first = capsys.readouterr().out.splitlines()[:4]
        assert all(len(line) <= 220 for line in first), [len(line) for line in first]  # they were 600 long
        assert first[2].startswith("[nnrnn] note: ") and "not comparable with the paper's" in first[2], first
