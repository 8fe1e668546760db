"""nnrnn.training.network: the network a run builds from its configuration, and loading it back."""
import math
from pathlib import Path

import pytest
import torch
from conftest import SHARED
from helpers import copy_config, fake_ptb
from torch import nn

import nnrnn
from nnrnn.training import checkpoint
from nnrnn.training import network as network_module
from nnrnn.training.config import resolve_config
from nnrnn.training.network import OneHot, load_model
from nnrnn.training.train import train


def test_build_task_passes_the_configs_task_options(tmp_path):
    copy_task = network_module.build_task(copy_config(tmp_path, seed=7, batch_size=3, T=6))
    assert (copy_task.seed, copy_task.batch_size, copy_task.T) == (7, 3, 6)
    ptb = network_module.build_task(resolve_config(dict(task="ptb", model="rnn", seed=5, batch_size=4, bptt=7,
                                                 eval_batch_size=9, data_dir=str(fake_ptb(tmp_path / "ptb")),
                                                 out=str(tmp_path / "run"))))
    assert (ptb.seed, ptb.batch_size, ptb.bptt, ptb.eval_batch_size) == (5, 4, 7, 9)


@pytest.mark.skipif(not (SHARED / "mnist" / "t10k-images-idx3-ubyte.gz").is_file(),
                    reason=f"MNIST test files not found in {SHARED}/mnist (set NNRNN_SHARED_DATA)")
def test_build_task_passes_psmnists_permutation_and_order_options(tmp_path):
    task = network_module.build_task(resolve_config(dict(task="psmnist", model="rnn", permute=False, shuffle="fixed",
                                                  data_dir=str(SHARED), out=str(tmp_path / "run"))))
    assert task.permute is False and task.shuffle == "fixed"


def test_a_config_saved_without_the_read_out_options_gets_the_original_read_out():
    """Runs saved before --readout-init existed: Glorot-normal weight, N(0, 2 / (fan_in + fan_out)), zero bias."""
    torch.manual_seed(0)
    net = network_module.build_network({"model": "rnn", "hidden": 40, "task": "copy"}, 3, 60, "all")
    assert abs(net.readout.weight.detach().std().item() - math.sqrt(2 / (40 + 60))) < 0.01  # 2,400 draws
    assert torch.equal(net.readout.bias.detach(), torch.zeros(60))
    given = network_module.build_network({"model": "rnn", "hidden": 40, "task": "copy", "readout_bias_init": "uniform"},
                                  3, 60, "all")
    assert given.readout.bias.detach().abs().min() > 0  # the config's scheme when it has one


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
    assert net.predict_at == {"adding": "last", "ptb": "all"}[task]  # the task's read-out, not the default
    assert type(net.encoder) is encoder if encoder else net.encoder is None
    if task == "ptb":  # runs on any ids, even a batch that holds only the first symbol
        assert net(torch.zeros(2, 1, dtype=torch.long))[0].shape == (2, 1, net.readout.out_features)


def test_sequence_model_carries_the_state_given_and_reads_the_last_step():
    """The network the trainer builds runs the recurrent layer from the state it is given (PTB carries it
    across segments) and, for a "last" read-out, maps only the final step's hidden state."""
    torch.manual_seed(0)
    config = copy_config(Path("unused"), model="rnn", hidden=6)
    for mode in ("all", "last"):
        net = network_module.build_network(config, 10, 9, mode)
        x, h0 = torch.randn(3, 2, 10), torch.randn(1, 2, 6)
        out, h_n = net(x, h0)
        hidden, want_h_n = net.rnn(x, h0)
        torch.testing.assert_close(out, net.readout(hidden[-1] if mode == "last" else hidden))
        torch.testing.assert_close(h_n, want_h_n)
        assert not torch.allclose(out, net(x)[0])  # from zeros: another result
    standalone = network_module.SequenceModel(nnrnn.create("rnn", 3, 200), 100, "all")  # its defaults: Glorot, zero bias
    assert abs(standalone.readout.weight.std().item() / math.sqrt(2 / 300) - 1) < 0.05
    assert torch.all(standalone.readout.bias == 0)


def test_build_gives_the_network_the_tasks_read_out(monkeypatch):
    from types import SimpleNamespace
    for readout, shape in (("last", (2, 10)), ("all", (3, 2, 10))):
        task = SimpleNamespace(input_size=1, output_size=10, readout=readout, vocab_size=None)
        monkeypatch.setattr(network_module, "build_task", lambda config: task)
        built, net = network_module.build(resolve_config({"task": "psmnist", "model": "rnn", "hidden": 4}))
        assert built is task and net.predict_at == readout
        assert net(torch.zeros(3, 2, 1))[0].shape == shape  # psMNIST reads out the last step only
