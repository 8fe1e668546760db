"""The tasks' data layout, baselines and metrics against values worked out by hand from the paper."""
import math
import os
from pathlib import Path

import pytest
import torch
from conftest import SHARED
from torch.nn import functional as F

from nnrnn import MODELS
from nnrnn.training.config import resolve_config
from nnrnn.training.runlog import read_metrics
from nnrnn.training.train import train


def test_copy_layout_by_hand():
    """Supplementary 'Copy task': T + 20 steps; symbols 1..10 from 8 values; T - 1 blanks; the cue at step
    T + 10 (1-based); then 10 blanks.  Targets: T + 10 blanks, then the 10 symbols."""
    from nnrnn.tasks.copy import CopyTask
    task = CopyTask(T=7, batch_size=5)
    batch = task.train_batch(0)
    x = batch.inputs.argmax(-1)  # (T + 20, B) symbol ids; 8 = blank, 9 = cue
    assert batch.inputs.shape == (27, 5, 10) and torch.equal(batch.inputs.sum(-1), torch.ones(27, 5))
    assert torch.all(x[:10] < 8)
    assert torch.all(x[10:16] == 8)      # T - 1 = 6 blanks
    assert torch.all(x[16] == 9)         # the cue, at 0-based index 10 + T - 1
    assert torch.all(x[17:] == 8)        # 10 blanks while recalling
    assert torch.all(batch.targets[:17] == 8) and torch.equal(batch.targets[17:], x[:10])


def test_copy_baseline_is_the_cross_entropy_of_blanks_then_a_uniform_guess():
    from nnrnn.tasks.copy import CopyTask
    T = 13
    task = CopyTask(T=T, batch_size=50)
    batch = task.train_batch(0)
    logits = torch.full((T + 20, 50, 9), -1e9)
    logits[:T + 10, :, 8] = 0.0           # certain of the blank while there is nothing to recall
    logits[T + 10:, :, :8] = 0.0          # then uniform over the 8 symbols
    predictor = F.cross_entropy(logits.reshape(-1, 9), batch.targets.reshape(-1)).item()
    assert predictor == pytest.approx(10 * math.log(8) / (T + 20), rel=1e-6)  # the paper's 10 log 8 / (T + 20)
    assert task.baseline == pytest.approx(predictor, rel=1e-6)
    assert CopyTask(T=200).baseline == pytest.approx(0.0945, abs=5e-5)       # "a baseline loss of 0.095"


def test_copy_defaults_are_the_papers_and_every_symbol_is_drawn():
    """Supplementary: T = 200, batch 10; the 10 symbols to copy are drawn from all 8 values."""
    from nnrnn.tasks.copy import CopyTask
    task = CopyTask()
    assert (task.seed, task.batch_size, task.T) == (0, 10, 200)
    assert len(list(task.eval_batches("valid"))) == 10
    assert CopyTask(T=1).train_batch(0).inputs.shape[0] == 21  # the shortest delay: the cue right after
    with pytest.raises(ValueError, match="T must be a positive int"):
        CopyTask(T=0)
    batch = CopyTask(T=3, batch_size=200).train_batch(0)
    assert set(batch.inputs.argmax(-1)[:10].unique().tolist()) == set(range(8))
    loss, stats = task.loss(torch.zeros(23, 200, 9), batch.targets)  # uniform guesses: loss ln 9
    assert stats["loss"] == (pytest.approx(math.log(9) * 23 * 200, rel=1e-5), 23 * 200)  # a sum, and a count


def test_adding_defaults_and_baseline():
    """Defaults T = 200, batch 50, 10 evaluation batches, seed 0; the shortest problem has T = 2 (one mark
    in each half).  Always predicting 1 scores Var(u1 + u2) = 2 × 1/12 for independent U(0, 1) values."""
    from nnrnn.tasks.adding import AddingTask
    task = AddingTask()
    assert (task.seed, task.batch_size, task.T) == (0, 50, 200)
    assert len(list(task.eval_batches("valid"))) == 10
    assert task.baseline == task.realised_baseline("valid") == pytest.approx(2 / 12, abs=0.03)  # 500 sequences
    assert AddingTask(T=2).train_batch(0).inputs[:, :, 1].sum(0).tolist() == [2.0] * 50  # both marks
    with pytest.raises(ValueError, match="T must be at least 2"):
        AddingTask(T=1)


def test_synthetic_batches_are_a_function_of_seed_split_and_index():
    """Training, validation and test batches come from three separate streams of the task's seed: no batch
    is shared between splits, seeds or steps, and the same (seed, split, index) gives the same batch."""
    from nnrnn.tasks.base import generator
    from nnrnn.tasks.copy import CopyTask

    def key(batch):
        return tuple(batch.inputs.argmax(-1).flatten().tolist())
    task = CopyTask(T=5, batch_size=4, seed=1, eval_batches=3)
    seen = {}
    for name, batches in (("train", [task.train_batch(i) for i in range(3)]),
                          ("valid", list(task.eval_batches("valid"))), ("test", list(task.eval_batches("test"))),
                          ("other seed", [CopyTask(T=5, batch_size=4, seed=2).train_batch(0)])):
        for i, batch in enumerate(batches):
            assert key(batch) not in seen, f"{name} {i} repeats {seen.get(key(batch))}"
            seen[key(batch)] = (name, i)
    again = CopyTask(T=5, batch_size=4, seed=1, eval_batches=3)
    assert key(again.train_batch(2)) == key(task.train_batch(2))
    assert [key(b) for b in again.eval_batches("valid")] == [key(b) for b in task.eval_batches("valid")]
    valid_0 = task.make_batch(5, 4, generator(1, task.VALID, 0))
    test_0 = task.make_batch(5, 4, generator(1, task.TEST, 0))
    assert key(next(iter(task.eval_batches("valid")))) == tuple(valid_0[0].argmax(-1).flatten().tolist())
    assert key(next(iter(task.eval_batches("test")))) == tuple(test_0[0].argmax(-1).flatten().tolist())


def test_batch_generators_are_seeded_from_numpys_seed_sequence():
    """generator(seed, stream, index) is numpy's SeedSequence of the key, its first 64-bit word masked to 63
    bits: computed here with numpy, so that a release that changed it (and so every run's data) fails."""
    import numpy as np

    from nnrnn.tasks.base import generator
    for key in ((0, 0, 0), (1, 2, 3), (5, 0, 7)):  # the first two have the top bit set, the last an odd word
        word = int(np.random.SeedSequence(list(key)).generate_state(2, dtype=np.uint64)[0])
        expected = torch.Generator().manual_seed(word & (2 ** 63 - 1))
        assert torch.equal(torch.rand(5, generator=generator(*key)), torch.rand(5, generator=expected))


def test_metric_sums_accumulate_over_batches():
    from nnrnn.tasks.base import accumulate
    sums = accumulate({}, {"loss": (2.5, 4), "accuracy": (3, 4)})
    assert accumulate(sums, {"loss": (1.0, 2), "accuracy": (0, 2)}) == {"loss": (3.5, 6), "accuracy": (3.0, 6)}


def test_copy_accuracy_counts_the_recall_steps_only():
    from nnrnn.tasks.copy import CopyTask
    task = CopyTask(T=6, batch_size=3)
    batch = task.train_batch(0)
    perfect_recall = F.one_hot(batch.targets, 9).float()
    perfect_recall[:16] = torch.roll(perfect_recall[:16], 1, dims=-1)  # every step before the recall wrong
    _, stats = task.loss(perfect_recall, batch.targets)
    assert stats["accuracy"] == (30, 30)
    wrong_recall = F.one_hot(batch.targets, 9).float()
    wrong_recall[16:] = torch.roll(wrong_recall[16:], 1, dims=-1)
    assert task.loss(wrong_recall, batch.targets)[1]["accuracy"] == (0, 30)


def test_adding_layout_and_baseline():
    """Two marked values, one in each half; target their sum; always answering 1 scores Var(u1 + u2) = 1/6."""
    from nnrnn.tasks.adding import AddingTask
    task = AddingTask(T=10, batch_size=2000)
    batch = task.train_batch(0)
    values, marks = batch.inputs[..., 0], batch.inputs[..., 1]
    assert torch.all(marks[:5].sum(0) == 1) and torch.all(marks[5:].sum(0) == 1)
    assert torch.all(marks.sum(1) > 0)  # every position of each half is drawn, the first and last included
    torch.testing.assert_close(batch.targets[:, 0], (values * marks).sum(0))
    assert F.mse_loss(torch.ones_like(batch.targets), batch.targets).item() == pytest.approx(1 / 6, abs=0.01)


def test_the_adding_baseline_an_evaluation_set_realises_is_its_constant_answers_loss():
    from nnrnn.tasks.adding import BASELINE, AddingTask
    task = AddingTask(seed=3, T=20, batch_size=50)
    targets = torch.cat([b.targets for b in task.eval_batches("test")])
    assert task.realised_baseline("test") == pytest.approx(F.mse_loss(torch.ones_like(targets), targets).item())
    realised = [AddingTask(seed=s, T=20, batch_size=50).realised_baseline("test") for s in range(3)]
    assert len(set(realised)) == 3 and all(abs(r - BASELINE) < 0.04 for r in realised)  # 500 sequences each
    assert task.realised_baseline("valid") != task.realised_baseline("test")


def test_adding_batches_depend_on_seed_and_step_only_and_the_loss_metric_is_a_sum():
    from nnrnn.tasks.adding import AddingTask
    torch.manual_seed(1)
    first = AddingTask(T=10, batch_size=4, seed=3).train_batch(5)
    torch.manual_seed(2)  # the global generator must not matter
    again = AddingTask(T=10, batch_size=4, seed=3).train_batch(5)
    assert torch.equal(first.inputs, again.inputs) and torch.equal(first.targets, again.targets)
    prediction = torch.zeros_like(first.targets)
    loss, stats = AddingTask(T=10, batch_size=4).loss(prediction, first.targets)
    total, count = stats["loss"]  # summed over the batch, so that epochs average over examples
    assert count == 4 and total == pytest.approx(first.targets.pow(2).sum().item(), rel=1e-6)


@pytest.mark.skipif(not (SHARED / "mnist" / "t10k-images-idx3-ubyte.gz").is_file(), reason="shared MNIST not found")
def test_psmnist_layout_against_the_papers_permutation():
    """784 steps of one pixel in [0, 1], permuted by numpy.random.RandomState(1234).permutation(784) as in the
    authors' sMNIST.py, the class read after the last step."""
    import numpy as np

    from nnrnn.data.mnist import load_mnist
    from nnrnn.tasks.psmnist import PermutedMNISTTask
    task = PermutedMNISTTask(data_dir=SHARED, batch_size=3, shuffle="fixed")
    data = load_mnist(SHARED)
    order = np.random.RandomState(1234).permutation(784)
    batch = task.train_batch(0)
    expected = torch.from_numpy(data.train_images[:3].reshape(3, 784)[:, order].astype(np.float32) / 255.0)
    torch.testing.assert_close(batch.inputs[..., 0].T, expected)
    assert torch.equal(batch.targets, torch.from_numpy(data.train_labels[:3]).long())
    assert task.predict_at == "last"


def test_synthetic_tasks_refuse_an_unknown_split():
    from nnrnn.tasks.adding import AddingTask
    from nnrnn.tasks.copy import CopyTask
    for task in (CopyTask(T=5, batch_size=2), AddingTask(T=5, batch_size=2)):
        with pytest.raises(ValueError, match="unknown split 'tset'; choose valid or test"):
            next(task.eval_batches("tset"))


SHARED = Path(os.environ.get("NNRNN_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))


SIZES = {
    "copy": {"T": 10, "batch_size": 4},
    "adding": {"T": 20, "batch_size": 4},
    "psmnist": {"batch_size": 4},
    "ptb": {"bptt": 50, "batch_size": 4, "eval_batch_size": 500},
}


NEEDS = {"psmnist": "mnist", "ptb": "ptb"}


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("task", list(SIZES))
def test_task_trains_with_model(tmp_path, task, model, data_head, undrawn_figures):
    """Each task trains each model and scores it, on the head of the shared data (data_head) and without drawing
    its curves (undrawn_figures): what is checked is the run's records, not the data or the figure, and evaluating
    the whole files and drawing were most of the 64 runs' time."""
    # lr 1e-4: at 1e-3 nnrnn-complex's second psMNIST update is already far above chance, which ends a run
    options = {"task": task, "model": model, "hidden": 6, "steps": 2, "log_every": 1, "eval_every": 2, "lr": 1e-4,
               "progress": False, "out": str(tmp_path / "run"), **SIZES[task]}
    if task in NEEDS:
        if not (SHARED / NEEDS[task]).is_dir():
            pytest.skip(f"the real {NEEDS[task]} files are not at {SHARED / NEEDS[task]} (set NNRNN_SHARED_DATA)")
        options["data_dir"] = str(data_head)
    result = train(resolve_config(options))
    splits = [r["split"] for r in read_metrics(tmp_path / "run")]
    assert splits.count("train") == 2 and "valid" in splits and "test" in splits
    metric = {"copy": "accuracy", "adding": "loss", "psmnist": "accuracy", "ptb": "bpc"}[task]
    assert metric in result["test"]


def test_the_synthetic_tasks_line_gives_the_baseline_and_chance_a_run_is_judged_against():
    from nnrnn.tasks.adding import AddingTask
    from nnrnn.tasks.copy import CopyTask
    assert CopyTask(T=10).describe().endswith(f"baseline loss {CopyTask(T=10).baseline:.4f}, chance 2.1972")  # ln 9
    assert "chance 1.1667 (answering 0)" in AddingTask(T=10).describe()  # 7/6


def test_what_a_report_asks_of_a_task_is_its_classs():
    """Better is lower for a loss and bits per character, higher for psMNIST's accuracy; psMNIST's accuracy is printed
    in percent; the generated tasks' losses fall by decades (a log axis) from a baseline said in words; the data tasks
    draw a reference line of their own; PTB's table shows its test accuracy beside its bits per character."""
    from nnrnn.tasks import TASKS, task_class
    assert {name: task_class(name).lower_is_better() for name in TASKS} == {
        "copy": True, "adding": True, "psmnist": False, "ptb": True}
    assert [name for name in TASKS if task_class(name).percent] == ["psmnist"]
    assert [name for name in TASKS if task_class(name).log_axis] == ["copy", "adding"]
    assert task_class("copy").baseline_words == "always the blank"
    assert {name: task_class(name).reference_line[0] for name in TASKS if task_class(name).reference_line} == {
        "psmnist": "chance", "ptb": "baseline"}
    assert task_class("ptb").reported_beside.metric == "accuracy" and task_class("copy").reported_beside is None


def test_what_a_grid_asks_of_a_task_beyond_its_report_is_its_classs():
    """Copy is solved by its baseline (a report times how fast, its curves draw the line) and was scored by its last
    validation loss before the rule SCORED_BY; PTB's runs halve their rates on a plateau; a search starts from the
    nearest task's published settings, copy and adding each other's first; the floor run keeps the length of copy
    and PTB only (adding's floor is measured at its default T, as before these traits)."""
    from nnrnn.tasks import TASKS, task_class
    from nnrnn.tasks.base import Reported
    assert [name for name in TASKS if task_class(name).solved_by_baseline] == ["copy"]
    assert {name: task_class(name).scored_before for name in TASKS} == {
        "copy": Reported("loss", "valid", "valid loss", 4), "adding": None, "psmnist": None, "ptb": None}
    assert [name for name in TASKS if task_class(name).halves_rates] == ["ptb"]
    assert {name: task_class(name).nearest_tasks for name in TASKS} == {
        "copy": ("adding", "psmnist"), "adding": ("copy", "psmnist"), "psmnist": ("adding", "copy"),
        "ptb": ("psmnist", "copy", "adding")}
    for name in TASKS:  # the nearest are other tasks that exist
        assert name not in task_class(name).nearest_tasks and set(task_class(name).nearest_tasks) <= set(TASKS)
    assert {name: task_class(name).floor_keeps for name in TASKS} == {
        "copy": ("T",), "adding": (), "psmnist": (), "ptb": ("bptt",)}
    for name in TASKS:  # each kept option is one the task reads
        assert set(task_class(name).floor_keeps) <= set(task_class(name).CONFIG_OPTIONS)


def test_a_generated_task_adds_nothing_to_a_rows_scope_about_its_data():
    from nnrnn.tasks.adding import AddingTask
    from nnrnn.tasks.copy import CopyTask
    assert CopyTask(T=10).data_scope() == AddingTask(T=10).data_scope() == ""
