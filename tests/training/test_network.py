"""nnrnn.training.network: the network a run builds from its configuration, and loading it back."""
import json
import math
import os
import shutil
from pathlib import Path

import pytest
import torch
from conftest import SHARED
from helpers import copy_config, fake_ptb, one_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import nnrnn
from nnrnn_cli import command as cli
from nnrnn.training import checkpoint
from nnrnn.training import network as network_module
from nnrnn.errors import OptionError, UserError
from nnrnn.training.config import resolve_config, resume_config
from nnrnn.training.network import OneHot, load_model, load_saved
from nnrnn.training.train import train


pytestmark = pytest.mark.usefixtures("undrawn_figures")  # what is trained and written, not the drawing


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


@pytest.mark.parametrize("model", ["lru", "nnrnn"])
def test_num_layers_stacks_the_models_layers_and_may_not_change_on_resume(tmp_path, model):
    config = copy_config(tmp_path, model=model, num_layers=2)
    train(config)
    net, saved = load_model(tmp_path / "run")
    assert saved["num_layers"] == net.rnn.num_layers == 2 and hasattr(net.rnn, "weight_ih_l1")
    with pytest.raises(UserError, match="--num-layers was 2 and is now 3"):
        resume_config(tmp_path / "run", saved, {"num_layers": 3})
    del saved["num_layers"]  # a configuration saved before --num-layers: one layer
    assert network_module.build_network(saved, 3, 4, "all").rnn.num_layers == 1


def test_a_cornn_run_saved_before_the_damping_option_keeps_the_papers_step(tmp_path):
    """Runs saved before --damping existed ran the paper's implicit step; new ones run the released code's."""
    run = tmp_path / "run"
    train(resolve_config(dict(task="copy", model="cornn", hidden=8, T=4, batch_size=4, steps=1, eval_every=1,
                              log_every=1, progress=False, out=str(run))))
    assert load_saved(run).net.rnn.damping == "explicit"
    old = checkpoint.load(run / "checkpoints" / "best.pt")
    del old["config"]["damping"]
    torch.save(old, tmp_path / "old.pt")
    assert load_saved(tmp_path / "old.pt").net.rnn.damping == "implicit"
    assert resume_config(run, old["config"], {})["damping"] == "implicit"
    with pytest.raises(UserError, match="--damping was 'implicit' and is now 'explicit'"):
        resume_config(run, old["config"], {"damping": "explicit"})
    given = resolve_config(dict(task="copy", model="cornn", damping="implicit", out=str(tmp_path / "given")))
    assert network_module.build(given)[1].rnn.damping == "implicit"
    with pytest.raises(OptionError, match="damping"):
        resolve_config(dict(task="copy", model="lem", damping="implicit"))


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
    for name in ("best.pt", "last.pt"):  # the sizes the network is rebuilt from are stored, not guessed
        sizes = checkpoint.load(tmp_path / "run" / "checkpoints" / name)["sizes"]
        assert sizes["predict_at"] == net.predict_at and sizes["output_size"] == net.readout.out_features
        assert (sizes["vocab_size"] is None) == (task != "ptb")
    # a checkpoint written before checkpoints stored the sizes loads as before, its sizes read off its weights
    old = checkpoint.load(tmp_path / "run" / "checkpoints" / "best.pt")
    del old["sizes"]
    torch.save(old, tmp_path / "old.pt")
    again = load_saved(tmp_path / "old.pt")
    assert again.net.state_dict().keys() == saved.keys() and again.net.predict_at == net.predict_at
    assert type(again.net.encoder) is encoder if encoder else again.net.encoder is None


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
    # its defaults: Glorot, zero bias
    standalone = network_module.SequenceModel(nnrnn.create("rnn", 3, 200), 100, "all")
    assert abs(standalone.readout.weight.std().item() / math.sqrt(2 / 300) - 1) < 0.05
    assert torch.all(standalone.readout.bias == 0)


def test_build_gives_the_network_the_tasks_read_out(monkeypatch):
    from types import SimpleNamespace
    for predict_at, shape in (("last", (2, 10)), ("all", (3, 2, 10))):
        task = SimpleNamespace(input_size=1, output_size=10, predict_at=predict_at, vocab_size=None)
        monkeypatch.setattr(network_module, "build_task", lambda config: task)
        built, net = network_module.build(resolve_config({"task": "psmnist", "model": "rnn", "hidden": 4}))
        assert built is task and net.predict_at == predict_at
        assert net(torch.zeros(3, 2, 1))[0].shape == shape  # psMNIST reads out the last step only


# --------------------------------------------------------------------------- where evaluation finds the data

def other_vocabulary_ptb(folder: Path) -> Path:
    """PTB files whose alphabet differs from :func:`fake_ptb`'s."""
    return fake_ptb(folder, alphabet="abcxyz_", seed=1)


PLACES = ("good", "other-vocabulary", "empty")


@pytest.fixture(scope="module")
def relative_ptb_run(tmp_path_factory):
    """A PTB run trained from folder ``where`` with the relative ``--data-dir data/ptb``, and folders holding the
    same data, PTB files of another vocabulary, and no data."""
    where = tmp_path_factory.mktemp("trained-here")
    fake_ptb(where / "data" / "ptb")
    before = os.getcwd()
    os.chdir(where)
    try:
        train(resolve_config(dict(task="ptb", model="rnn", nonlinearity="tanh", hidden=8, batch_size=4, bptt=5, steps=2,
                                  eval_every=1, eval_batch_size=2, data_dir="data/ptb", progress=False, out="run")))
    finally:
        os.chdir(before)
    places = {"good": fake_ptb(where / "copy" / "ptb").parent, "other-vocabulary":
              other_vocabulary_ptb(where / "other" / "ptb").parent, "empty": where / "empty"}
    places["empty"].mkdir()
    return where, places


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=st.sampled_from(["present", "moved"]), given_dir=st.sampled_from([None, *PLACES]),
       env=st.sampled_from([None, *PLACES]))
def test_eval_finds_the_data_by_the_documented_precedence(relative_ptb_run, tmp_path_factory, monkeypatch, capsys,
                                                         stored, given_dir, env):
    """``nnrnn eval`` from another folder: --data-dir, else the run's stored folder while it holds the data, else
    NNRNN_DATA (then the cache); the data used must be the run's, or it says which cause it found: no data, or
    another vocabulary (never "the file was altered")."""
    where, places = relative_ptb_run
    run = where / "run"
    assert json.loads((run / "config.json").read_text())["data_dir"] == str(where / "data" / "ptb")
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(places["empty"]))
    if env is None:
        monkeypatch.delenv("NNRNN_DATA", raising=False)
    else:
        monkeypatch.setenv("NNRNN_DATA", str(places[env]))
    argv = ["eval", str(run), "--json"] + (["--data-dir", str(places[given_dir])] if given_dir else [])
    if stored == "moved":
        (where / "data").rename(where / "data-moved")
    try:
        code = cli.main(argv)
    finally:
        if stored == "moved":
            (where / "data-moved").rename(where / "data")
    out, err = capsys.readouterr()
    source = given_dir or ("good" if stored == "present" else env or "empty")
    if source == "good":
        assert code == 0 and math.isfinite(json.loads(out)["bpc"]), err
        return
    assert code == 2 and len(err.strip().splitlines()) == 1 and "altered" not in err
    if source == "empty":
        assert "Penn Treebank characters not found" in err
    else:
        assert "different PTB vocabulary" in err


def test_eval_and_resume_name_what_does_not_fit_in_a_checkpoint(relative_ptb_run, tmp_path, capsys):
    """A best.pt without the data's description (written before it was kept there) on another vocabulary: the
    read-out's width, checked, names the data; a weight edited to another shape is named with both shapes."""
    where, places = relative_ptb_run
    path = tmp_path / "best.pt"
    saved = checkpoint.load(where / "run" / "checkpoints" / "best.pt")
    checkpoint.save(path, {k: v for k, v in saved.items() if k != "data"})
    assert cli.main(["eval", str(path), "--data-dir", str(places["other-vocabulary"])]) == 2
    assert "was trained on data with 10 symbols in its vocabulary, and the data read now has 8" in \
        capsys.readouterr().err
    saved["model"]["rnn.bias_ih_l0"] = torch.zeros(3)
    checkpoint.save(path, saved)
    assert cli.main(["eval", str(path)]) == 2
    err = capsys.readouterr().err
    assert "rnn.bias_ih_l0 has shape (3,) where the network has (8,)" in err and "altered" not in err
    shutil.copytree(where / "run", tmp_path / "run")
    checkpoint.save(tmp_path / "run" / "checkpoints" / "last.pt",
                    {**checkpoint.load(tmp_path / "run" / "checkpoints" / "last.pt"), "model": saved["model"]})
    assert cli.main(["train", "ptb", "--resume", "--out", str(tmp_path / "run"), "--steps", "3"]) == 2
    assert "rnn.bias_ih_l0 has shape (3,) where the network has (8,)" in capsys.readouterr().err


def test_eval_refuses_a_data_dir_for_a_task_whose_data_is_generated(finished, capsys, tmp_path):
    """As train refuses it: an option that would not act."""
    capsys.readouterr()
    code = cli.main(["eval", str(finished), "--data-dir", str(tmp_path)])
    one_line(code, capsys.readouterr().err, "--data-dir", "copy")


def test_load_run_of_a_missing_run_raises_file_not_found_without_command_line_advice(tmp_path):
    import nnrnn
    from nnrnn.errors import UserError
    (tmp_path / "empty").mkdir()
    for path, said in ((tmp_path / "runs" / "copy-nnrnn", "no run folder or checkpoint at"),
                       (tmp_path / "empty", "holds no run: it has no checkpoints/best.pt or checkpoints/last.pt"),
                       (tmp_path / "nothing.pt", "no run folder or checkpoint at")):
        with pytest.raises(FileNotFoundError) as caught:  # as torch.load of a missing file raises
            nnrnn.load_run(path)
        assert said in str(caught.value) and caught.value.filename == str(path)
        assert "nnrnn train" not in str(caught.value) and "--" not in str(caught.value)  # a library, not a command
        assert isinstance(caught.value, UserError)  # the command line still prints it as one line
