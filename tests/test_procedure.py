"""The training procedure itself: what the optimizer groups hold, that the penalty and lr_orth act in the
real training loop, that resume restores every piece of state, that checkpoint writes are atomic, and each
task's data layout and baseline against values worked out by hand from the paper.  References here come
from the paper or from an independent computation, never from the module under test."""
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import nnrnn
from nnrnn import checkpoint
from nnrnn.errors import UserError
from nnrnn import train as trainer
from nnrnn.train import OneHot, load_model, make_optimizer, read_metrics, resolve_config, train

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NNRNN_SHARED_DATA") or REPO.parent / "shared" / "data")


def copy_config(tmp_path, name="run", **options):
    return resolve_config({"task": "copy", "model": "nnrnn", "hidden": 8, "T": 4, "batch_size": 4, "steps": 2,
                           "log_every": 1, "eval_every": 1, "progress": False, "out": str(tmp_path / name), **options})


def with_network(monkeypatch, edit):
    """Make the trainer's build() apply ``edit(net)`` to the network it builds, before training starts."""
    real = trainer.build

    def build(config):
        task, net = real(config)
        with torch.no_grad():
            edit(net)
        return task, net
    monkeypatch.setattr(trainer, "build", build)


def parameters(run: Path) -> dict:
    return checkpoint.load(run / "checkpoints" / "last.pt")["model"]


# --------------------------------------------------------------------------- optimizer groups and penalty

def test_optimizer_groups_hold_each_parameter_once_at_its_learning_rate(tmp_path):
    config = copy_config(tmp_path, lr=3e-3, lr_orth=2e-5)
    _, net = trainer.build(config)
    optimizer = make_optimizer(config, net)
    groups = {g["name"]: g for g in optimizer.param_groups}
    generator = net.rnn.parametrizations.weight_hh_l0.original
    assert [p is generator for p in groups["orthogonal"]["params"]] == [True] and groups["orthogonal"]["lr"] == 2e-5
    rest = {id(p) for p in groups["default"]["params"]}
    assert rest == {id(p) for p in net.parameters() if p is not generator} and groups["default"]["lr"] == 3e-3
    assert isinstance(optimizer, torch.optim.RMSprop) and optimizer.defaults["alpha"] == config["alpha"]
    assert make_optimizer({**config, "alpha": 0.9}, net).defaults["alpha"] == 0.9
    adam = make_optimizer({**config, "optimizer": "adam", "betas": [0.8, 0.95]}, net)
    assert isinstance(adam, torch.optim.Adam) and adam.defaults["betas"] == (0.8, 0.95)
    assert [(g["name"], g["lr"], len(g["params"])) for g in adam.param_groups] == \
        [(g["name"], g["lr"], len(g["params"])) for g in optimizer.param_groups]


def test_the_penalty_acts_on_gamma_and_t_in_the_training_loop(tmp_path, monkeypatch):
    """δ Σ(1 - γ)² and t_decay‖T‖²/2 in the trainer's loss: with γ = 0.5 and a large δ every γ moves up in
    the first update; with a large t_decay every entry of T moves toward 0 (RMSprop's first step has the
    sign of the gradient, which these penalties dominate)."""
    torch.manual_seed(0)
    t0 = torch.randn(8, 8).tril(-1)

    def edit(net):
        net.rnn.schur_form.gamma.fill_(0.5)
        net.rnn.schur_form.lower.copy_(t0)
    with_network(monkeypatch, edit)
    train(copy_config(tmp_path, steps=1, delta=1e4, t_decay=1e4, lr=1e-3))
    after = parameters(tmp_path / "run")
    gamma, lower = after["rnn.parametrizations.weight_hh_l0.0.gamma"], after["rnn.parametrizations.weight_hh_l0.0.lower"]
    assert torch.all(gamma > 0.5)
    moved = lower[t0 != 0]
    assert torch.all(moved.abs() < t0[t0 != 0].abs())


def test_the_orthogonal_generator_trains_at_lr_orth(tmp_path):
    train(copy_config(tmp_path, steps=3, lr=1e-2, lr_orth=1e-7))
    start = parameters(tmp_path / "run")
    config = copy_config(tmp_path, name="init", steps=1, lr=1e-12, lr_orth=1e-12)
    _, net = trainer.build(config)  # the same seed: the initial parameters of the run above
    initial = net.state_dict()
    generator = "rnn.parametrizations.weight_hh_l0.original"
    moved = (start[generator] - initial[generator]).abs().max().item()
    assert 0 < moved < 3 * 1e-7 * 10 * 1.01  # RMSprop moves at most lr / sqrt(1 - α) per update: α = 0.99 → 10 lr
    assert (start["rnn.weight_ih_l0"] - initial["rnn.weight_ih_l0"]).abs().max().item() > 1e-3


# --------------------------------------------------------------------------- resume

def fake_ptb(folder: Path) -> Path:
    import random
    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    for split, lines in (("valid", 400), ("test", 40)):
        text = "\n".join(" ".join(rng.choice("abcdefgh_") for _ in range(rng.randint(5, 40))) for _ in range(lines))
        (folder / f"ptb.char.{split}.txt").write_text(text + "\n")
    return folder


def test_resume_restores_the_carried_ptb_state_and_the_schedule(tmp_path, monkeypatch):
    """PTB carries the hidden state across segments and halves the learning rate on a plateau: a run stopped
    after 3 updates and resumed to 6 ends with the parameters, learning rates and metrics of a run of 6."""
    data = fake_ptb(tmp_path / "ptb")
    scores = {"whole": iter([3.0, 3.1, 2.9, 3.2, 2.8, 3.3, 9, 9]), "split": iter([3.0, 3.1, 2.9, 3.2, 2.8, 3.3, 9, 9])}
    which = {"run": "whole"}
    real_evaluate = trainer.evaluate

    def scripted(net, task, split, device):
        metrics = real_evaluate(net, task, split, device)
        return {**metrics, "bpc": next(scores[which["run"]]) if split == "valid" else metrics["bpc"]}
    monkeypatch.setattr(trainer, "evaluate", scripted)
    options = dict(task="ptb", model="nnrnn", hidden=8, batch_size=4, bptt=7, eval_every=1, log_every=1,
                   eval_batch_size=2, lr_schedule="plateau", progress=False, data_dir=str(data))
    train(resolve_config({**options, "steps": 6, "out": str(tmp_path / "whole")}))
    which["run"] = "split"
    train(resolve_config({**options, "steps": 3, "out": str(tmp_path / "split")}))
    saved = checkpoint.load(tmp_path / "split" / "checkpoints" / "last.pt")
    assert saved["state"] is not None and saved["state"].abs().sum() > 0  # a carried state was saved
    train(resolve_config({**options, "steps": 6, "out": str(tmp_path / "split")}), resume=True)
    a, b = parameters(tmp_path / "whole"), parameters(tmp_path / "split")
    assert all(torch.equal(a[k], b[k]) for k in a)
    lrs = lambda run: [r["lr"] for r in read_metrics(tmp_path / run) if r["split"] == "train"]
    assert lrs("whole") == lrs("split") and len(set(lrs("whole"))) > 1  # the schedule fired, identically


def test_build_task_passes_the_configs_task_options(tmp_path):
    copy_task = trainer.build_task(copy_config(tmp_path, seed=7, batch_size=3, T=6))
    assert (copy_task.seed, copy_task.batch_size, copy_task.T) == (7, 3, 6)
    ptb = trainer.build_task(resolve_config(dict(task="ptb", model="rnn", seed=5, batch_size=4, bptt=7,
                                                 eval_batch_size=9, data_dir=str(fake_ptb(tmp_path / "ptb")),
                                                 out=str(tmp_path / "run"))))
    assert (ptb.seed, ptb.batch_size, ptb.bptt, ptb.eval_batch_size) == (5, 4, 7, 9)


@pytest.mark.skipif(not (SHARED / "mnist" / "t10k-images-idx3-ubyte.gz").is_file(),
                    reason=f"MNIST test files not found in {SHARED}/mnist (set NNRNN_SHARED_DATA)")
def test_build_task_passes_psmnists_permutation_and_order_options(tmp_path):
    task = trainer.build_task(resolve_config(dict(task="psmnist", model="rnn", permute=False, shuffle="fixed",
                                                  data_dir=str(SHARED), out=str(tmp_path / "run"))))
    assert task.permute is False and task.shuffle == "fixed"


def test_a_config_saved_without_the_read_out_options_gets_the_original_read_out():
    """Runs saved before --readout-init existed: Glorot-normal weight, N(0, 2 / (fan_in + fan_out)), zero bias."""
    torch.manual_seed(0)
    net = trainer.build_network({"model": "rnn", "hidden": 40, "task": "copy"}, 3, 60, "all")
    assert abs(net.readout.weight.detach().std().item() - math.sqrt(2 / (40 + 60))) < 0.01  # 2,400 draws
    assert torch.equal(net.readout.bias.detach(), torch.zeros(60))
    given = trainer.build_network({"model": "rnn", "hidden": 40, "task": "copy", "readout_bias_init": "uniform"},
                                  3, 60, "all")
    assert given.readout.bias.detach().abs().min() > 0  # the config's scheme when it has one


def test_each_model_gets_the_options_its_constructor_takes():
    config = {"nonlinearity": "tanh", "input_init": "xavier", "bias_init": "zeros", "bias": False,
              "init": "random", "triangular": "block", "capacity": 4, "rebase_every": None}
    shared = {"nonlinearity", "input_init", "bias_init", "bias"}
    takes = {"lstm": {"init", "bias"}, "rnn": shared, "eurnn": shared | {"capacity"},
             "nnrnn": shared | {"init", "triangular"}, "exprnn": shared | {"init"}, "rnn-orth": shared | {"init"}}
    for model, names in takes.items():
        options = trainer.model_options({**config, "model": model})
        assert options == {name: config[name] for name in names}, model
        built = {**config, "model": model, "hidden": 6, "task": "copy", "init": "concat" if model == "lstm" else "random"}
        trainer.build_network(built, 3, 2, "all")  # the constructor accepts them
    assert trainer.model_options({**config, "model": "nnrnn", "rebase_every": 10})["dynamic"] is True


@pytest.mark.parametrize("task, options, encoder", [("adding", {}, None), ("ptb", {}, nn.Embedding),
                                                     ("ptb", {"embedding": 0}, OneHot)])
def test_load_model_rebuilds_the_trained_network(tmp_path, task, options, encoder):
    if task == "ptb":
        options = {**options, "data_dir": str(fake_ptb(tmp_path / "ptb")), "bptt": 7, "batch_size": 4}
    train(resolve_config(dict(task=task, model="nnrnn", hidden=8, steps=1, eval_every=1, log_every=1,
                              progress=False, out=str(tmp_path / "run"), **options)))
    net, config = load_model(tmp_path / "run")
    saved = checkpoint.load(tmp_path / "run" / "checkpoints" / "best.pt")["model"]
    assert config["task"] == task and net.state_dict().keys() == saved.keys()
    assert all(torch.equal(net.state_dict()[name], value) for name, value in saved.items())
    assert net.readout_mode == {"adding": "last", "ptb": "all"}[task]  # the task's read-out, not the default
    assert type(net.encoder) is encoder if encoder else net.encoder is None
    if task == "ptb":  # runs on any ids, even a batch that holds only the first symbol
        assert net(torch.zeros(2, 1, dtype=torch.long))[0].shape == (2, 1, net.readout.out_features)


def test_last_checkpoint_holds_the_state_carried_into_the_next_segment(tmp_path):
    data = fake_ptb(tmp_path / "ptb")
    config = resolve_config(dict(task="ptb", model="rnn", hidden=8, batch_size=4, bptt=7, steps=3, eval_every=3,
                                 eval_batch_size=2, progress=False, data_dir=str(data), out=str(tmp_path / "r")))
    train(config)
    saved = checkpoint.load(tmp_path / "r" / "checkpoints" / "last.pt")
    assert saved["state"].shape == (1, 4, 8)  # (layers, streams, hidden): carried into update 4


# --------------------------------------------------------------------------- atomic checkpoints

def test_a_failed_checkpoint_write_leaves_the_previous_one_readable(tmp_path, monkeypatch):
    path = tmp_path / "last.pt"
    checkpoint.save(path, {"step": 1, "model": {"w": torch.ones(3)}})
    real_save = torch.save

    during = []

    def dies_half_way(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 half of a zip archive")
        during.extend(sorted(p.name for p in tmp_path.iterdir()))
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(torch, "save", dies_half_way)
    with pytest.raises(OSError):
        checkpoint.save(path, {"step": 2, "model": {"w": torch.zeros(3)}})
    monkeypatch.setattr(torch, "save", real_save)
    assert checkpoint.load(path)["step"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]  # no temporary left behind
    # the half-written file was a hidden temporary beside the target, named after it
    assert len(during) == 2 and during[0].startswith(".last.pt.") and during[0].endswith(".tmp")
    checkpoint.save(tmp_path / "new" / "folders" / "last.pt", {"step": 4})  # missing folders are made
    assert checkpoint.load(tmp_path / "new" / "folders" / "last.pt")["step"] == 4


class NotAllowedInACheckpoint:
    """Any class outside torch's allow-list: unpickling it could run arbitrary code."""


def test_checkpoint_load_maps_storages_and_refuses_arbitrary_objects(tmp_path):
    path = tmp_path / "last.pt"
    checkpoint.save(path, {"step": 3, "model": {"w": torch.ones(2)}})
    seen = []

    def where(storage, location):  # a map_location function sees every storage (a GPU run read on a CPU)
        seen.append(location)
        return storage
    assert checkpoint.load(path, map_location=where)["step"] == 3 and seen == ["cpu"]
    torch.save({"format": checkpoint.FORMAT, "version": checkpoint.VERSION, "step": NotAllowedInACheckpoint()},
               tmp_path / "foreign.pt")
    with pytest.raises(UserError, match="not a readable nnrnn checkpoint"):
        checkpoint.load(tmp_path / "foreign.pt")  # only tensors and plain containers are unpickled


# --------------------------------------------------------------------------- tasks, against the paper

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
    assert task.baseline == pytest.approx(2 / 12, rel=1e-12)
    assert AddingTask(T=2).train_batch(0).inputs[:, :, 1].sum(0).tolist() == [2.0] * 50  # both marks
    with pytest.raises(ValueError, match="T must be at least 2"):
        AddingTask(T=1)


def test_sequence_model_carries_the_state_given_and_reads_the_last_step():
    """The network the trainer builds runs the recurrent layer from the state it is given (PTB carries it
    across segments) and, for a "last" read-out, maps only the final step's hidden state."""
    torch.manual_seed(0)
    config = copy_config(Path("unused"), model="rnn", hidden=6)
    for mode in ("all", "last"):
        net = trainer.build_network(config, 10, 9, mode)
        x, h0 = torch.randn(3, 2, 10), torch.randn(1, 2, 6)
        out, h_n = net(x, h0)
        hidden, want_h_n = net.rnn(x, h0)
        torch.testing.assert_close(out, net.readout(hidden[-1] if mode == "last" else hidden))
        torch.testing.assert_close(h_n, want_h_n)
        assert not torch.allclose(out, net(x)[0])  # from zeros: another result
    standalone = trainer.SequenceModel(nnrnn.create("rnn", 3, 200), 100, "all")  # its defaults: Glorot, zero bias
    assert abs(standalone.readout.weight.std().item() / math.sqrt(2 / 300) - 1) < 0.05
    assert torch.all(standalone.readout.bias == 0)


def test_synthetic_batches_are_a_function_of_seed_split_and_index():
    """Training, validation and test batches come from three separate streams of the task's seed: no batch
    is shared between splits, seeds or steps, and the same (seed, split, index) gives the same batch."""
    from nnrnn.tasks.copy import CopyTask
    from nnrnn.tasks.base import generator

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
    assert task.readout == "last"


# --------------------------------------------------------------------------- the installed command

NNRNN = Path(sys.executable).with_name("nnrnn")


@pytest.mark.skipif(not NNRNN.is_file(), reason="the nnrnn command is not installed beside this Python")
@pytest.mark.skipif(not (SHARED / "ptb" / "ptb.char.valid.txt").is_file(), reason="shared data not found")
@pytest.mark.parametrize("task", ["copy", "psmnist", "ptb"])
def test_installed_command_trains_each_task_with_the_paper_preset(task, tmp_path):
    """`nnrnn train TASK --preset paper` at the paper's sizes (128, 512, 1024 units), two updates."""
    extra = {"copy": [], "psmnist": ["--eval-batch-size", "1000"], "ptb": ["--eval-batch-size", "4000"]}[task]
    result = subprocess.run([str(NNRNN), "train", task, "--preset", "paper", "--steps", "2", "--no-progress",
                             "--data-dir", str(SHARED), "--out", str(tmp_path / "run"), *extra],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    config = trainer.read_config(tmp_path / "run" / "config.json")
    assert config["preset"] == "paper" and config["hidden"] == {"copy": 128, "psmnist": 512, "ptb": 1024}[task]
    assert {r["split"] for r in read_metrics(tmp_path / "run")} >= {"train", "valid"}


@pytest.mark.skipif(not NNRNN.is_file(), reason="the nnrnn command is not installed beside this Python")
def test_installed_command_runs_a_reproduction_and_writes_its_report(tmp_path):
    result = subprocess.run([str(NNRNN), "reproduce", "--scale", "smoke", "--tasks", "copy", "--models", "nnrnn",
                             "lstm", "--out", str(tmp_path / "repro")], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = (tmp_path / "repro" / "report.md").read_text()
    assert "| nnrnn |" in report and "| lstm |" in report and "The paper's claims at this scale" in report


@pytest.mark.skipif(not NNRNN.is_file(), reason="the nnrnn command is not installed beside this Python")
def test_installed_command_runs_the_readmes_torchrun_line(tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    result = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node=2", "-m", "nnrnn", "train", "copy",
                             "--batch-size", "8", "--hidden", "8", "--T", "5", "--steps", "4", "--no-progress",
                             "--out", str(tmp_path / "ddp")], capture_output=True, text=True, timeout=600,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert read_metrics(tmp_path / "ddp")[-1]["split"] == "test"


@pytest.mark.parametrize("mode, first, better, worse", [("max", 0.5, 0.5 + 1e-9, 0.4), ("min", 2.0, 2.0 - 1e-9, 2.5)])
def test_the_plateau_schedule_halves_every_rate_after_a_validation_not_strictly_better(mode, first, better, worse):
    """The authors' PTB rule: any strict improvement keeps the rates, however small; an equal or worse score
    halves lr and lr_orth, however small lr_orth already is."""
    p, q = nn.Parameter(torch.zeros(1)), nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.RMSprop([{"params": [p], "lr": 1e-3}, {"params": [q], "lr": 1e-8}])
    assert trainer.make_schedule({"lr_schedule": "none"}, optimizer, mode) is None
    schedule = trainer.make_schedule({"lr_schedule": "plateau"}, optimizer, mode)
    rates = lambda: [group["lr"] for group in optimizer.param_groups]  # noqa: E731
    for score, expected in ((first, [1e-3, 1e-8]), (better, [1e-3, 1e-8]), (better, [5e-4, 5e-9]),
                            (worse, [2.5e-4, 2.5e-9])):
        schedule.step(score)
        assert rates() == expected, score


def test_the_number_of_updates_from_steps_epochs_or_the_task():
    from types import SimpleNamespace
    fixed, fresh = SimpleNamespace(name="psmnist", steps_per_epoch=7), SimpleNamespace(name="copy", steps_per_epoch=None)
    assert trainer.total_steps({"steps": 5, "epochs": None}, fixed) == 5
    assert trainer.total_steps({"steps": None, "epochs": 3}, fixed) == 21
    assert trainer.total_steps({"steps": None, "epochs": None}, fixed) == 7  # one epoch
    with pytest.raises(ValueError, match="epochs needs a task with a fixed training set"):
        trainer.total_steps({"steps": None, "epochs": 3}, fresh)
    assert trainer.total_steps({"steps": None, "epochs": None}, fresh) == 3000
    assert trainer.total_steps({"steps": None, "epochs": None}, SimpleNamespace(name="adding", steps_per_epoch=None)) == 3000
    assert trainer.total_steps({"steps": None, "epochs": None}, SimpleNamespace(name="new", steps_per_epoch=None)) == 1000


def test_training_stops_after_the_asked_number_of_halvings_and_stays_stopped(tmp_path, monkeypatch, capsys):
    scores = iter([3.0, 3.1, 2.9, 3.0, 3.0, 2.0, 1.0, 0.5, 9.0])  # halvings after validations 2, 4 and 5
    monkeypatch.setattr(trainer, "evaluate", lambda net, task, split, device: {"loss": next(scores)})
    config = copy_config(tmp_path, steps=40, lr=1e-3, lr_schedule="plateau", stop_after_halvings=3)
    train(config)
    records = read_metrics(tmp_path / "run")
    stop = next(r for r in records if r.get("event") == "stopped")
    assert stop == {"step": 5, "split": "train", "event": "stopped", "reason": "learning rates halved 3 times"}
    assert records[-1]["split"] == "test" and records[-1]["step"] == 5
    assert checkpoint.load(tmp_path / "run" / "checkpoints" / "last.pt")["step"] == 5
    before = (tmp_path / "run" / "metrics.jsonl").read_text()
    capsys.readouterr()
    train(config, resume=True)  # nothing more to train
    assert (tmp_path / "run" / "metrics.jsonl").read_text() == before
    assert "already stopped after 3 halvings of the learning rate; nothing to train" in capsys.readouterr().out
    with pytest.raises(ValueError, match="stop_after_halvings needs lr_schedule plateau"):
        copy_config(tmp_path, stop_after_halvings=2)


def test_dynamic_trivialization_trains_and_resumes_exactly(tmp_path):
    # 7 updates, a rebase after updates 3 and 6: a rule off by one or inverted counts 3 or 5
    whole = copy_config(tmp_path, "whole", steps=7, rebase_every=3, model="exprnn")
    train(whole)
    train(copy_config(tmp_path, "split", steps=4, rebase_every=3, model="exprnn"))
    train(copy_config(tmp_path, "split", steps=7, rebase_every=3, model="exprnn"), resume=True)
    a, b = parameters(tmp_path / "whole"), parameters(tmp_path / "split")
    assert "rnn.parametrizations.weight_hh_l0.0.base" in a and int(a["rnn.parametrizations.weight_hh_l0.0.rebases"]) == 2
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="rebase_every moves the base"):
        copy_config(tmp_path, model="lstm", rebase_every=1)


# --------------------------------------------------------------------------- configuration and resources

def test_the_preset_is_recorded_in_the_config_and_explicit_options_win():
    config = resolve_config({"task": "copy", "model": "nnrnn", "lr": 0.5}, "paper")
    assert config["preset"] == "paper" and config["lr"] == 0.5
    assert "preset" not in resolve_config({"task": "copy", "model": "nnrnn"})


def test_device_names():
    assert trainer.check_device("cpu") == torch.device("cpu")
    assert resolve_config({"device": "cpu"})["device"] == "cpu"
    assert trainer.check_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(UserError, match="nnrnn trains on cpu or cuda"):
        trainer.check_device("meta")


def test_device_names_on_a_machine_with_two_cuda_devices(monkeypatch):
    """The CUDA rules, checked on a CPU-only machine by telling torch it has two devices."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert trainer.check_device("auto") == torch.device("cuda")
    assert trainer.check_device("cuda") == torch.device("cuda")
    assert trainer.check_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(UserError, match="this machine has 2 CUDA device"):
        trainer.check_device("cuda:2")


def test_build_gives_the_network_the_tasks_read_out(monkeypatch):
    from types import SimpleNamespace
    for readout, shape in (("last", (2, 10)), ("all", (3, 2, 10))):
        task = SimpleNamespace(input_size=1, output_size=10, readout=readout, vocab_size=None)
        monkeypatch.setattr(trainer, "build_task", lambda config: task)
        built, net = trainer.build(resolve_config({"task": "psmnist", "model": "rnn", "hidden": 4}))
        assert built is task and net.readout_mode == readout
        assert net(torch.zeros(3, 2, 1))[0].shape == shape  # psMNIST reads out the last step only


def test_available_memory_reads_memavailable_in_kib(monkeypatch):
    import io
    meminfo = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:    2048 kB\n"
    monkeypatch.setattr(trainer, "open", lambda *a, **k: io.StringIO(meminfo), raising=False)
    assert trainer.available_memory() == 2048 * 1024

    def unreadable(*args, **kwargs):
        raise OSError("no /proc here")
    monkeypatch.setattr(trainer, "open", unreadable, raising=False)
    assert trainer.available_memory() is None
    trainer.check_memory({"hidden": 10 ** 9})  # unknown memory: no refusal


def test_memory_check_is_four_float32_copies_of_three_n_squared_plus_four_n(monkeypatch):
    """The documented low estimate: parameter, gradient and two optimizer buffers of V (+ T, generator)."""
    n = 1000
    needed = 4 * 4 * (3 * n * n + 4 * n)
    monkeypatch.setattr(trainer, "available_memory", lambda: needed)
    trainer.check_memory({"hidden": n})  # exactly enough
    monkeypatch.setattr(trainer, "available_memory", lambda: needed - 1)
    with pytest.raises(UserError, match="--hidden 1000 needs at least"):
        trainer.check_memory({"hidden": n})


POSITIVE_INTEGERS = ["hidden", "batch_size", "eval_batch_size", "T", "bptt", "steps", "epochs", "log_every",
                     "eval_every", "checkpoint_every", "max_bad_steps", "capacity", "stop_after_halvings",
                     "rebase_every"]


@pytest.mark.parametrize("key", POSITIVE_INTEGERS)
@pytest.mark.parametrize("value", [0, -3, True, 2.0])
def test_each_count_option_must_be_a_positive_integer(key, value):
    """From the library (the command line's parser catches non-integers before this)."""
    with pytest.raises(ValueError, match=f"^{key} must be a positive integer"):
        resolve_config({key: value})


@pytest.mark.parametrize("seed, ok", [(0, True), (2 ** 63 - 1, True), (2 ** 63, False), (-1, False),
                                      (True, False), (1.0, False)])
def test_seed_range(seed, ok):
    if ok:
        assert resolve_config({"seed": seed})["seed"] == seed
    else:
        with pytest.raises(ValueError, match="seed must be a non-negative integer below 2\\*\\*63"):
            resolve_config({"seed": seed})


@pytest.mark.parametrize("options", [{"optimizer": "adam", "betas": [0.0, 0.0]}, {"optimizer": "rmsprop", "alpha": 0.0},
                                     {"model": "nnrnn", "rebase_every": 1}, {"model": "exprnn", "rebase_every": 1}])
def test_optimizer_and_rebase_options_at_the_edge_of_their_range_are_accepted(options):
    config = resolve_config(options)
    assert all(config[k] == v for k, v in options.items())


@pytest.mark.parametrize("options, message", [({"betas": [0.9, 1.0]}, "betas must be two numbers in"),
                                              ({"alpha": 1.0}, "alpha must be in"),
                                              ({"optimizer": "sgd"}, "optimizer must be 'rmsprop' or 'adam'")])
def test_optimizer_options_outside_their_range_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        resolve_config(options)


@pytest.mark.parametrize("key", ["lr", "lr_orth"])
@pytest.mark.parametrize("value", [0.0, -1e-3, float("nan"), float("inf"), True, "0.1"])
def test_learning_rates_must_be_positive_finite_numbers(key, value):
    with pytest.raises(ValueError, match=f"{key} must be a positive finite number"):
        resolve_config({key: value})


@pytest.mark.parametrize("key", ["delta", "t_decay", "clip"])
@pytest.mark.parametrize("value", [-1e-9, float("nan"), float("-inf"), False])
def test_penalties_and_clip_must_be_zero_or_positive_finite_numbers(key, value):
    with pytest.raises(ValueError, match=f"{key} must be zero or a positive finite number"):
        resolve_config({key: value})
    assert resolve_config({key: 0.0})[key] == 0.0 and resolve_config({key: 2})[key] == 2


def test_resuming_with_the_metrics_file_gone_starts_a_new_one(tmp_path):
    trainer.MetricsLog(tmp_path, resume_step=4).close()  # no metrics.jsonl: nothing to keep, no error
    assert (tmp_path / "metrics.jsonl").read_text() == ""


def test_interrupted_names_the_signal_and_the_checkpoint_and_exits_as_a_shell_would(tmp_path):
    import pickle
    import signal
    error = trainer.Interrupted(signal.SIGTERM, tmp_path / "last.pt")
    assert str(error) == f"stopped by signal SIGTERM; checkpoint saved to {tmp_path / 'last.pt'}"
    assert error.exit_code == 128 + 15 and error.advice == "continue with --resume"
    copy = pickle.loads(pickle.dumps(trainer.Interrupted(signal.SIGINT, tmp_path, "run it again")))
    assert (copy.signum, copy.path, copy.advice, copy.exit_code) == (signal.SIGINT, tmp_path, "run it again", 130)


def test_a_signal_during_training_is_recorded_and_the_handlers_are_restored():
    import signal
    before = signal.getsignal(signal.SIGTERM)
    with trainer.StopRequested() as stop:
        assert stop.signal is None
        os.kill(os.getpid(), signal.SIGTERM)  # handled at the next bytecode: the process does not end
        assert stop.signal == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


def test_synthetic_tasks_refuse_an_unknown_split():
    from nnrnn.tasks.adding import AddingTask
    from nnrnn.tasks.copy import CopyTask
    for task in (CopyTask(T=5, batch_size=2), AddingTask(T=5, batch_size=2)):
        with pytest.raises(ValueError, match="unknown split 'tset'; choose valid or test"):
            next(task.eval_batches("tset"))


def tensorboard_scalars(folder: Path) -> dict:
    """{tag: [(step, value), ...]} read back from the run's event files with TensorBoard's own reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    events = EventAccumulator(str(folder / "tensorboard"))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_tensorboard_holds_every_logged_scalar_at_its_step(tmp_path):
    train(copy_config(tmp_path, steps=8, log_every=2, eval_every=4))
    records = read_metrics(tmp_path / "run")
    expected = {}
    for r in records:
        for key, value in r.items():
            if key not in ("step", "split") and isinstance(value, (int, float)):
                expected.setdefault(f"{r['split']}/{key}", []).append((r["step"], value))
    assert {"train/loss", "train/lr", "valid/loss", "test/loss"} <= set(expected)
    scalars = tensorboard_scalars(tmp_path / "run")
    assert set(scalars) == set(expected)  # "step" and "split" are the coordinates, not scalars
    for tag, points in expected.items():
        assert [s for s, _ in scalars[tag]] == [s for s, _ in points], tag
        assert [v for _, v in scalars[tag]] == pytest.approx([v for _, v in points], rel=1e-6), tag


def test_without_tensorboard_the_metrics_file_is_still_written(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # `import` of it now raises ImportError
    log = trainer.MetricsLog(tmp_path, resume_step=None)
    log.log({"step": 1, "split": "train", "loss": 0.5})
    log.close()
    assert read_metrics(tmp_path) == [{"step": 1, "split": "train", "loss": 0.5}]
    assert not (tmp_path / "tensorboard").exists()


def test_tensorboard_after_a_resume_holds_what_one_uninterrupted_run_does(tmp_path):
    """The run stops after update 6 with its last checkpoint at 4: the resumed run logs 5 and 6 again, so
    TensorBoard must hide the first attempt's points after 4 (5 included), and keep those up to 4."""
    options = dict(steps=8, log_every=1, eval_every=2, checkpoint_every=4)
    train(copy_config(tmp_path, "whole", **options))

    def stop_after_six(step, record):
        if step == 6:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(copy_config(tmp_path, "part", **options), on_eval=stop_after_six)
    assert checkpoint.load(tmp_path / "part" / "checkpoints" / "last.pt")["step"] == 4
    train(copy_config(tmp_path, "part", **options), resume=True)
    assert read_metrics(tmp_path / "part") == read_metrics(tmp_path / "whole")
    assert tensorboard_scalars(tmp_path / "part") == tensorboard_scalars(tmp_path / "whole")


def test_curves_show_each_metric_for_train_and_valid_and_the_baseline_on_the_loss():
    records = [{"step": 2, "split": "train", "loss": 0.9, "accuracy": 0.1},
               {"step": 4, "split": "train", "loss": 0.7, "accuracy": 0.3},
               {"step": 4, "split": "valid", "loss": 0.8, "accuracy": 0.2},
               {"step": 5, "split": "train", "event": "skipped update"},
               {"step": 6, "split": "test", "loss": 0.1, "accuracy": 0.9}]
    fig = trainer.curves_figure(records, baseline=0.095)
    loss, accuracy = fig.axes
    assert [ax.get_ylabel() for ax in fig.axes] == ["loss", "accuracy"]  # no bpc logged: no bpc panel
    assert all(ax.get_xlabel() == "update" for ax in fig.axes)
    lines = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in loss.get_lines()}
    assert lines["train"] == ([2, 4], [0.9, 0.7]) and lines["valid"] == ([4], [0.8])
    assert list(lines["baseline"][1]) == [0.095, 0.095] and "test" not in lines
    # a single validation point must show: validation as small dots on a line, training as a line
    styles = {line.get_label(): (line.get_linestyle(), line.get_marker(), line.get_markersize())
              for line in loss.get_lines()}
    assert styles["train"][:2] == ("-", "None") and styles["valid"] == ("-", "o", 3)
    from matplotlib.colors import to_rgba
    baseline = next(line for line in loss.get_lines() if line.get_label() == "baseline")
    assert baseline.get_linestyle() == "--" and to_rgba(baseline.get_color()) == to_rgba("gray")  # not data
    assert loss.xaxis.get_gridlines()[0].get_alpha() == 0.3  # a faint grid
    lines = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in accuracy.get_lines()}
    assert lines == {"train": ([2, 4], [0.1, 0.3]), "valid": ([4], [0.2])}
    assert [t.get_text() for t in loss.get_legend().get_texts()] == ["train", "valid", "baseline"]
    assert fig.get_size_inches()[0] > fig.get_size_inches()[1]  # panels side by side
    ptb = trainer.curves_figure([{"step": 1, "split": "valid", "loss": 2.0, "bpc": 2.9}])
    assert [ax.get_ylabel() for ax in ptb.axes] == ["loss", "bpc"]
    assert trainer.curves_figure([{"step": 1, "split": "train", "event": "skipped update"}]) is None
    import matplotlib.pyplot as plt
    plt.close("all")


def test_plot_curves_writes_the_figure_of_the_metrics_file(tmp_path, monkeypatch):
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "split": "train", "loss": 1.0}\n')
    drawn = []
    real = trainer.curves_figure
    monkeypatch.setattr(trainer, "curves_figure", lambda records, baseline=None: drawn.append(baseline) or
                        real(records, baseline))
    path = trainer.plot_curves(tmp_path, baseline=0.5)
    png = path.read_bytes()
    assert path == tmp_path / "curves.png" and png[:8] == b"\x89PNG\r\n\x1a\n" and drawn == [0.5]
    # one 4.2 × 3.2 in panel per metric, at 120 dpi: readable in a browser without scaling
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (504, 384)
    assert trainer.plot_curves(tmp_path / "no-run-here") is None


def test_resuming_a_finished_run_returns_what_the_run_returned(tmp_path):
    config = copy_config(tmp_path, steps=4, log_every=2, eval_every=2)
    first = train(config)
    assert set(first) == {"valid", "test"} and set(first["test"]) == {"loss", "accuracy"}
    assert first["valid"]["step"] == 4
    assert train(config, resume=True) == first  # read back from metrics.jsonl this time
    assert trainer._result(tmp_path / "no-metrics-yet", main=True) == {"valid": None}
    assert trainer._result(tmp_path / "run", main=False) == {}  # other ranks report nothing


def test_synthetic_tasks_validate_every_250_updates_unless_told(tmp_path):
    copy = trainer.build_task(copy_config(tmp_path))
    assert trainer.evaluation_interval(copy_config(tmp_path, eval_every=None), copy) == 250
    assert trainer.evaluation_interval(copy_config(tmp_path, eval_every=7), copy) == 7


def test_epochs_train_that_many_passes_over_the_training_segments(tmp_path):
    data = fake_ptb(tmp_path / "ptb")
    config = resolve_config(dict(task="ptb", model="rnn", hidden=8, batch_size=32, bptt=50, eval_batch_size=8,
                                 epochs=2, log_every=1, progress=False, data_dir=str(data),
                                 out=str(tmp_path / "run")))
    per_epoch = trainer.build_task(config).steps_per_epoch
    assert 1 < per_epoch < 20
    train(config)
    records = read_metrics(tmp_path / "run")
    assert [r["step"] for r in records if r["split"] == "train"] == list(range(1, 2 * per_epoch + 1))
    assert [r["step"] for r in records if r["split"] == "valid"] == [per_epoch, 2 * per_epoch]  # once per epoch


def script_validation(monkeypatch, metric: str, values: list) -> None:
    """The trainer's validations report ``values`` for ``metric``, one per validation, the rest as measured."""
    values, real_evaluate = iter(values), getattr(trainer.evaluate, "real", trainer.evaluate)

    def scripted(net, task, split, device):
        metrics = real_evaluate(net, task, split, device)
        return {**metrics, metric: next(values)} if split == "valid" else metrics
    scripted.real = real_evaluate  # scripting again replaces this script instead of wrapping it
    monkeypatch.setattr(trainer, "evaluate", scripted)


def test_best_checkpoint_holds_the_lowest_validation_loss(tmp_path, monkeypatch):
    script_validation(monkeypatch, "loss", [0.5, 0.3, 0.4, 0.3])  # a later tie does not replace the first
    train(copy_config(tmp_path, steps=4, eval_every=1))
    best = checkpoint.load(tmp_path / "run" / "checkpoints" / "best.pt")
    assert best["step"] == 2 and best["valid"]["loss"] == 0.3


def test_best_checkpoint_holds_the_highest_score_where_higher_is_better(tmp_path, monkeypatch):
    from nnrnn.tasks.copy import CopyTask
    monkeypatch.setattr(CopyTask, "monitor", ("accuracy", "max"))  # as psMNIST's
    script_validation(monkeypatch, "accuracy", [0.5, 0.7, 0.6, 0.7])
    train(copy_config(tmp_path, steps=4, eval_every=1))
    best = checkpoint.load(tmp_path / "run" / "checkpoints" / "best.pt")
    assert best["step"] == 2 and best["valid"]["accuracy"] == 0.7  # a later tie does not replace it


def on_training_losses(monkeypatch, edit):
    """The copy task's training loss of 0-based update i becomes ``edit(i, loss)`` (evaluations untouched)."""
    from nnrnn.tasks.copy import CopyTask
    real_loss, count = CopyTask.loss, {"n": 0}

    def loss(self, outputs, targets):
        value, stats = real_loss(self, outputs, targets)
        if outputs.requires_grad:  # a training update, not an evaluation
            count["n"] += 1
            value = edit(count["n"] - 1, value)
        return value, stats
    monkeypatch.setattr(CopyTask, "loss", loss)


def nan_losses_at(monkeypatch, updates: set):
    """The copy task's training loss is NaN at the given 0-based updates."""
    on_training_losses(monkeypatch, lambda i, loss: loss * float("nan") if i in updates else loss)


def test_max_bad_steps_counts_non_finite_updates_in_a_row_from_the_first(tmp_path, monkeypatch):
    nan_losses_at(monkeypatch, {0, 2})  # never two in a row: training goes on past both
    train(copy_config(tmp_path, "apart", steps=4, max_bad_steps=2, eval_every=4))
    records = read_metrics(tmp_path / "apart")
    assert [r for r in records if "event" in r] == [{"step": step, "split": "train", "event": "skipped update",
                                                     "reason": "non-finite loss or gradient"} for step in (1, 3)]
    # updates 1 and 3 were skipped: their windows are empty, so they log no training record
    assert [r["step"] for r in records if r["split"] == "train" and "event" not in r] == [2, 4]
    nan_losses_at(monkeypatch, {0, 1})
    with pytest.raises(UserError, match="2 non-finite losses or gradients in a row at update 2; "
                                        "no checkpoint had been written yet"):
        train(copy_config(tmp_path, "row", steps=4, max_bad_steps=2, eval_every=4))
    nan_losses_at(monkeypatch, {2, 3})
    last = tmp_path / "later" / "checkpoints" / "last.pt"
    with pytest.raises(UserError, match=f"in a row at update 4; the last good checkpoint is {re.escape(str(last))};"):
        train(copy_config(tmp_path, "later", steps=6, max_bad_steps=2, eval_every=2))
    assert checkpoint.load(last)["step"] == 2


def test_the_logged_gradient_norm_is_the_mean_over_the_window_before_clipping(tmp_path, monkeypatch):
    norms, clip = [], nn.utils.clip_grad_norm_

    def spy(parameters, max_norm, *args, **kwargs):
        norms.append(float(clip(parameters, max_norm, *args, **kwargs)))
        return torch.tensor(norms[-1])
    monkeypatch.setattr(nn.utils, "clip_grad_norm_", spy)
    train(copy_config(tmp_path, steps=4, log_every=2, eval_every=4, clip=1e-3, lr=1e-2, lr_orth=1e-3))
    records = [r for r in read_metrics(tmp_path / "run") if r["split"] == "train"]
    assert [sorted(r) for r in records] == [["accuracy", "grad_norm", "loss", "lr", "split", "step"]] * 2
    assert [r["lr"] for r in records] == [1e-2, 1e-2]  # the main group's rate, not lr_orth
    logged = [r["grad_norm"] for r in records]
    assert len(norms) == 4 and min(norms) > 1e-3  # the norms before clipping, not the clip value
    assert logged == pytest.approx([(norms[0] + norms[1]) / 2, (norms[2] + norms[3]) / 2], rel=1e-6)


@pytest.mark.parametrize("other, message", [({"task": "adding"}, "nnrnn run on adding .* not the 'copy' task"),
                                            ({"hidden": 6}, "with 6 hidden units, not the 8 hidden")])
def test_resume_refuses_a_checkpoint_of_another_task_or_size(tmp_path, other, message):
    """config.json is the run's own; only last.pt was replaced (copied from another run)."""
    train(copy_config(tmp_path, "a", steps=2))
    train(resolve_config({**copy_config(tmp_path, "b", steps=2), **other}))
    (tmp_path / "a/checkpoints/last.pt").write_bytes((tmp_path / "b/checkpoints/last.pt").read_bytes())
    with pytest.raises(UserError, match=message):
        train(copy_config(tmp_path, "a", steps=4), resume=True)


def test_skipped_updates_are_counted_across_a_resume(tmp_path, monkeypatch):
    nan_losses_at(monkeypatch, {0, 2, 4})  # never two in a row, but 3 in all: more than --max-bad-steps 2
    train(copy_config(tmp_path, steps=4, max_bad_steps=2, eval_every=2))  # 2 skipped: allowed
    with pytest.raises(UserError, match=r"3 of the 6 updates had a non-finite loss or gradient and were skipped "
                                        r"\(more than --max-bad-steps 2\)"):
        train(copy_config(tmp_path, steps=6, max_bad_steps=2, eval_every=2), resume=True)


def test_resume_refuses_ptb_data_that_changed_since_the_checkpoint(tmp_path):
    data = fake_ptb(tmp_path / "ptb")
    options = dict(task="ptb", model="exprnn", hidden=8, batch_size=4, bptt=7, eval_batch_size=2, eval_every=2,
                   progress=False, data_dir=str(data), out=str(tmp_path / "run"))
    train(resolve_config({**options, "steps": 2}))
    with (data / "ptb.char.valid.txt").open("a") as f:  # the training text is now longer
        f.write("a b c d e f g h\n" * 50)
    with pytest.raises(UserError, match="trained on different PTB data"):
        train(resolve_config({**options, "steps": 4}), resume=True)


def test_a_checkpoint_from_before_skipped_updates_were_saved_resumes_with_none_skipped(tmp_path, monkeypatch):
    train(copy_config(tmp_path, steps=4, eval_every=2))
    last = tmp_path / "run" / "checkpoints" / "last.pt"
    saved = checkpoint.load(last)
    del saved["skipped"]
    checkpoint.save(last, saved)
    nan_losses_at(monkeypatch, {0, 2})  # the resumed run's 1st and 3rd updates: 2 skipped, not more than 2
    train(copy_config(tmp_path, steps=8, max_bad_steps=2, eval_every=2), resume=True)
    assert [r["step"] for r in read_metrics(tmp_path / "run") if r.get("event") == "skipped update"] == [5, 7]


def test_a_new_run_hides_the_tensorboard_points_of_an_attempt_that_died_before_its_first_checkpoint(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    attempt = trainer.MetricsLog(folder, resume_step=None)  # an earlier attempt: logged, then killed
    attempt.log({"step": 1, "split": "train", "loss": 99.0})
    attempt.close()
    train(copy_config(tmp_path, steps=2, eval_every=2))
    assert 99.0 not in [v for _, v in tensorboard_scalars(folder)["train/loss"]]
    assert tensorboard_scalars(folder)["train/loss"] == [
        (r["step"], pytest.approx(r["loss"])) for r in read_metrics(folder) if r["split"] == "train"]


def test_the_progress_bar_counts_updates_from_where_a_resumed_run_starts(tmp_path, capsys):
    train(copy_config(tmp_path, steps=4, eval_every=2, progress=True))
    err = capsys.readouterr().err
    assert "4/4" in err and re.search(r"[0-9?]upd/s", err.split("4/4")[-1])  # "4/4 [00:00<00:00, 21.3upd/s, …]"
    final = err.rstrip().split("\r")[-1]  # what the bar shows at the end: one count per update, 4 of 4
    assert "4/4" in final and re.search(r"loss=\d+\.\d{4}\]", final)  # and the last logged training loss
    train(copy_config(tmp_path, steps=6, eval_every=2, progress=True), resume=True)
    err = capsys.readouterr().err
    assert "4/6" in err and "6/6" in err and "0/6" not in err and "1/6" not in err
    train(copy_config(tmp_path, "quiet", steps=2, progress=False))
    assert "2/2" not in capsys.readouterr().err


def spy_states(monkeypatch) -> list:
    """Record (state passed in, state returned) of every training forward of the trainer's network."""
    calls = []

    def spy(net):
        real_forward = net.forward

        def forward(inputs, state=None):
            out, new_state = real_forward(inputs, state)
            if torch.is_grad_enabled():
                calls.append((state, new_state))
            return out, new_state
        net.forward = forward
    with_network(monkeypatch, spy)
    return calls


def test_independent_batches_start_from_a_zero_state_and_ptb_segments_carry_it(tmp_path, monkeypatch):
    calls = spy_states(monkeypatch)
    train(copy_config(tmp_path, "copy", steps=3, eval_every=3))
    assert [state for state, _ in calls] == [None, None, None]
    calls.clear()
    data = fake_ptb(tmp_path / "ptb")
    train(resolve_config(dict(task="ptb", model="exprnn", hidden=8, batch_size=4, bptt=7, eval_batch_size=2,
                              steps=3, eval_every=3, progress=False, data_dir=str(data), out=str(tmp_path / "ptb-run"))))
    assert calls[0][0] is None
    for (_, returned), (passed, _) in zip(calls, calls[1:]):  # the last state, cut from its graph
        assert torch.equal(passed, returned) and not passed.requires_grad


def test_an_update_with_a_finite_loss_but_a_non_finite_gradient_is_skipped(tmp_path, monkeypatch):
    def inf_gradient_once(net):
        seen = {"n": 0}

        def hook(grad):
            seen["n"] += 1
            return grad * float("inf") if seen["n"] == 2 else grad
        net.readout.weight.register_hook(hook)
    with_network(monkeypatch, inf_gradient_once)
    train(copy_config(tmp_path, steps=3, eval_every=3))
    records = read_metrics(tmp_path / "run")
    assert [r["step"] for r in records if r.get("event") == "skipped update"] == [2]
    assert all(torch.isfinite(v).all() for v in parameters(tmp_path / "run").values())


def test_the_tensorboard_writer_is_closed_when_training_ends(tmp_path, monkeypatch):
    from torch.utils.tensorboard import SummaryWriter
    closed, real_close = [], SummaryWriter.close

    def close(self):
        closed.append(self.log_dir)
        real_close(self)
    monkeypatch.setattr(SummaryWriter, "close", close)
    train(copy_config(tmp_path, steps=2, eval_every=2))
    assert closed == [str(tmp_path / "run" / "tensorboard")]  # its thread and file released, once


def test_a_signal_mid_update_checkpoints_that_update_then_stops_and_resume_continues_exactly(tmp_path, monkeypatch):
    import signal
    options = dict(steps=6, log_every=1, eval_every=2, checkpoint_every=100)  # no regular checkpoint before 6
    train(copy_config(tmp_path, "whole", **options))

    def sigterm_in_third_update(i, loss):
        if i == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return loss
    on_training_losses(monkeypatch, sigterm_in_third_update)
    with pytest.raises(trainer.Interrupted) as stopped:
        train(copy_config(tmp_path, "part", **options))
    last = tmp_path / "part" / "checkpoints" / "last.pt"
    assert (stopped.value.signum, stopped.value.path) == (signal.SIGTERM, last)
    assert checkpoint.load(last)["step"] == 3  # the update it arrived in was finished and saved
    assert [r["step"] for r in read_metrics(tmp_path / "part")] == [1, 2, 2, 3]
    monkeypatch.undo()
    train(copy_config(tmp_path, "part", **options), resume=True)
    assert read_metrics(tmp_path / "part") == read_metrics(tmp_path / "whole")
    a, b = parameters(tmp_path / "whole"), parameters(tmp_path / "part")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_checkpoints_are_written_every_checkpoint_every_updates_and_at_the_end(tmp_path, monkeypatch):
    saves, save = [], checkpoint.save

    def spy(path, obj):
        saves.append((Path(path).name, obj["step"]))
        save(path, obj)
    monkeypatch.setattr(checkpoint, "save", spy)
    script_validation(monkeypatch, "loss", [0.5, 0.4])
    train(copy_config(tmp_path, "every4", steps=6, eval_every=3, checkpoint_every=4))
    assert saves == [("best.pt", 3), ("last.pt", 4), ("best.pt", 6), ("last.pt", 6)]
    saves.clear()
    script_validation(monkeypatch, "loss", [0.5, 0.6])
    train(copy_config(tmp_path, "default", steps=6, eval_every=3))  # by default, at every validation
    assert saves == [("best.pt", 3), ("last.pt", 3), ("last.pt", 6)]


def test_on_eval_sees_every_validation_record_as_logged(tmp_path):
    calls = []
    train(copy_config(tmp_path, steps=5, eval_every=2), on_eval=lambda step, record: calls.append((step, record)))
    valid = [r for r in read_metrics(tmp_path / "run") if r["split"] == "valid"]
    assert [step for step, _ in calls] == [2, 4, 5] and [record for _, record in calls] == valid


def test_the_test_split_is_scored_with_the_best_parameters_and_the_curves_get_the_baseline(tmp_path, monkeypatch):
    from nnrnn.tasks.copy import CopyTask
    plotted = []
    monkeypatch.setattr(trainer, "plot_curves", lambda folder, baseline=None: plotted.append((folder, baseline)))
    script_validation(monkeypatch, "loss", [0.2, 0.5])  # the best validation is the first
    result = train(copy_config(tmp_path, steps=2, eval_every=1))
    folder = tmp_path / "run"
    test = read_metrics(folder)[-1]
    assert test["split"] == "test" and test["step"] == 2
    best = trainer.evaluate_checkpoint(folder / "checkpoints" / "best.pt")
    assert {k: v for k, v in test.items() if k not in ("step", "split")} == best == result["test"]
    assert best != trainer.evaluate_checkpoint(folder / "checkpoints" / "last.pt")
    assert plotted == [(folder, CopyTask(T=4, batch_size=4).baseline)]


def test_a_run_whose_last_validation_is_not_finite_fails_and_an_earlier_one_does_not(tmp_path, monkeypatch):
    script_validation(monkeypatch, "loss", [float("nan"), 0.5])
    assert train(copy_config(tmp_path, "recovered", steps=2))["valid"]["loss"] == 0.5
    script_validation(monkeypatch, "loss", [0.5, float("inf")])
    with pytest.raises(UserError, match="training diverged: the validation loss after update 2 is inf"):
        train(copy_config(tmp_path, "diverged", steps=2))
    assert checkpoint.load(tmp_path / "diverged" / "checkpoints" / "best.pt")["step"] == 1


@pytest.mark.parametrize("embedding", [True, 1.5, -1, "8"])
def test_embedding_must_be_a_non_negative_integer(embedding):
    with pytest.raises(ValueError, match="embedding must be a non-negative integer"):
        resolve_config({"task": "ptb", "embedding": embedding})
    assert resolve_config({"task": "ptb", "embedding": 0})["embedding"] == 0  # one-hot inputs


def test_a_length_given_explicitly_replaces_the_presets():
    from nnrnn import presets
    ptb = {"task": "ptb", "model": "nnrnn"}
    preset_epochs = presets.lookup("paper", "ptb", "nnrnn")["epochs"]
    assert preset_epochs and [resolve_config(ptb, "paper")[k] for k in ("steps", "epochs")] == [None, preset_epochs]
    assert [resolve_config({**ptb, "steps": 5}, "paper")[k] for k in ("steps", "epochs")] == [5, None]
    assert [resolve_config({**ptb, "epochs": 2}, "paper")[k] for k in ("steps", "epochs")] == [None, 2]


def test_explicit_epochs_replace_a_presets_steps(monkeypatch):
    """The paper's presets give PTB and psMNIST in epochs; a preset that gives steps instead is replaced
    the same way by an explicit --epochs (and still by an explicit --steps)."""
    from nnrnn import presets
    monkeypatch.setattr(presets, "lookup", lambda *args: {"steps": 7, "epochs": None, "lr": 0.01})
    ptb = {"task": "ptb", "model": "nnrnn"}
    assert [resolve_config(ptb, "mine")[k] for k in ("steps", "epochs", "lr")] == [7, None, 0.01]
    assert [resolve_config({**ptb, "epochs": 2}, "mine")[k] for k in ("steps", "epochs")] == [None, 2]
    assert [resolve_config({**ptb, "steps": 3}, "mine")[k] for k in ("steps", "epochs")] == [3, None]


def test_unknown_options_are_refused_and_a_saved_config_resolves_to_itself():
    with pytest.raises(ValueError, match="unknown option\\(s\\) lrr, stpes"):
        resolve_config({"task": "copy", "lrr": 0.1, "stpes": 3})
    saved = resolve_config({"task": "ptb", "model": "nnrnn", "steps": 5}, "paper")  # holds "preset"
    assert resolve_config(saved) == saved
