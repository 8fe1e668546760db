"""`--preset paper` trains as the authors' released code (github.com/KyleGoyette/nnRNN) does.

Each reference here is rebuilt from the release's procedure as its code states it (utils.select_optimizer,
RNN_Cell.OrthoRNNCell, language_task.py, sMNIST.py, copytask.py), with torch's own pieces
(torch.linalg.matrix_exp, two torch.optim.RMSprop optimizers, a StepLR stepped on a plateau), never with
nnrnn's code under test.
"""
import math

import pytest
import torch
from torch import nn

import nnrnn
from nnrnn.config import resolve_config
from nnrnn.network import build, build_network
from nnrnn.runlog import read_metrics
from nnrnn.train import make_optimizer, make_schedule

# What the release does, per task and model, as its scripts set it (see the module docstring).
RELEASE = {
    "copy": {"iinit": "xavier", "readout": ("xavier", "uniform")},
    "psmnist": {"iinit": "xavier", "readout": ("uniform", "uniform"), "epochs": 100},  # sMNIST.py --epochs
    "ptb": {"iinit": "kaiming", "readout": ("uniform:0.1", "zeros")},
}




# --------------------------------------------------------------------------- the presets say what the release does

@pytest.mark.parametrize("preset", ["paper", "paper-params"])
@pytest.mark.parametrize("task, bptt", [("copy", None), ("psmnist", None), ("ptb", 150), ("ptb", 300)])
def test_presets_carry_the_release_procedure(preset, task, bptt):
    release = RELEASE[task]
    for model in nnrnn.models.PAPER_MODELS:  # the models the paper's presets cover
        config = resolve_config({"task": task, "model": model, "bptt": bptt}, preset)
        assert (config["readout_init"], config["readout_bias_init"]) == release["readout"], model
        if model == "nnrnn":  # OrthoRNNCell: nn.Linear(bias=False) left at torch's init; UppT masked by triu(1)
            assert (config["bias"], config["input_init"], config["triangular"]) == (False, "uniform", "strict")
        elif model == "exprnn":  # input_kernel has no bias; input_initializer = --iinit
            assert (config["bias"], config["input_init"]) == (False, release["iinit"])
        elif model in ("rnn", "rnn-orth"):  # RNNCell: nn.Linear(bias=True), weight re-drawn by --iinit
            assert (config["bias"], config["input_init"], config["bias_init"]) == (True, release["iinit"], "uniform")
        elif model == "lstm":
            assert config["init"] == "concat"
        if task == "ptb":
            assert config["embedding"] == 200 and config["lr_schedule"] == "plateau"
        else:
            assert config["lr_schedule"] == "none"
        if task == "psmnist":
            assert config["shuffle"] == "fixed"  # DataLoader(trainset, shuffle=False)
            assert (config["epochs"], config["steps"]) == (release["epochs"], None), model


def test_the_paper_scale_trains_the_releases_lengths():
    """copytask.py trains 1500 updates (hard-coded), sMNIST.py and language_task.py 100 epochs."""
    from nnrnn.reproduce import SCALES
    tasks = SCALES["paper"]["tasks"]
    assert tasks["copy"]["options"]["steps"] == 1500
    assert tasks["psmnist"]["options"]["epochs"] == RELEASE["psmnist"]["epochs"] == 100
    assert tasks["ptb"]["options"]["epochs"] == 100


# --------------------------------------------------------------------------- nnRNN updates: the release's, step for step

def release_step_reference(net, batches, lr, lr_orth, alpha, delta, t_decay):
    """The release's nnRNN training on ``batches``, from ``net``'s initial values: its forward pass, loss +
    δ Σ (α_i - 1)² (alpha_loss), one RMSprop over everything but log_P with weight_decay=t_decay on T,
    a second RMSprop(lr_orth) on log_P.  float64; returns V after the last update."""
    form = net.rnn.schur_form
    n = net.rnn.hidden_size
    generator = net.rnn.parametrizations.weight_hh_l0.original.detach().clone().requires_grad_()
    theta = form.theta.detach().clone().requires_grad_()
    gamma = form.gamma.detach().clone().requires_grad_()
    upper_t = form.lower.detach().clone().requires_grad_()  # the release's UppT, here stored below the diagonal
    u = net.rnn.weight_ih_l0.detach().clone().requires_grad_()
    b_mod = net.rnn.modrelu_bias_l0.detach().clone().requires_grad_()
    w_out, b_out = (net.readout.weight.detach().clone().requires_grad_(),
                    net.readout.bias.detach().clone().requires_grad_())
    mask = torch.ones(n, n, dtype=torch.float64).tril(-1)  # strictly lower: every entry below the diagonal

    def recurrent_matrix():
        lower = generator.tril(-1)
        p = torch.linalg.matrix_exp(lower - lower.T)
        c, s = gamma * torch.cos(theta), gamma * torch.sin(theta)
        lam = torch.zeros(n, n, dtype=torch.float64)
        for i in range(n // 2):
            lam = lam + torch.zeros(n, n, dtype=torch.float64).index_put(
                (torch.tensor([2 * i, 2 * i, 2 * i + 1, 2 * i + 1]), torch.tensor([2 * i, 2 * i + 1, 2 * i, 2 * i + 1])),
                torch.stack([c[i], -s[i], s[i], c[i]]))
        return p @ (lam + upper_t * mask) @ p.T

    main = torch.optim.RMSprop([{"params": [theta, gamma, u, b_mod, w_out, b_out]},
                                {"params": [upper_t], "weight_decay": t_decay}], lr=lr, alpha=alpha)
    orth = torch.optim.RMSprop([generator], lr=lr_orth, alpha=alpha)
    for x, y in batches:
        v = recurrent_matrix()
        h = torch.zeros(x.shape[1], n, dtype=torch.float64)
        loss = 0
        for t in range(x.shape[0]):
            z = x[t] @ u.T + h @ v.T
            h = torch.sign(z) * torch.relu(z.abs() + b_mod)  # modReLU
            loss = loss + nn.functional.cross_entropy(h @ w_out.T + b_out, y[t])
        loss = loss / x.shape[0] + delta * ((gamma - 1) ** 2).sum()
        main.zero_grad()
        orth.zero_grad()
        loss.backward()
        orth.step()
        main.step()
    with torch.no_grad():
        return recurrent_matrix()


def test_nnrnn_paper_updates_are_the_releases():
    """Five updates of `--preset paper` nnRNN on copy equal the release's procedure to float64 rounding:
    the same δ penalty, T decayed as RMSprop's weight_decay (gradient + t_decay·T, not 2·t_decay·T), the
    generator under its own RMSprop at lr_orth, all of T's strictly lower entries trained."""
    config = resolve_config({"task": "copy", "model": "nnrnn", "hidden": 6, "T": 4, "batch_size": 3,
                             "lr": 3e-3, "lr_orth": 1e-3, "t_decay": 0.3, "delta": 0.2}, "paper")
    task, net = build(config)
    net.double()
    with torch.no_grad():  # a non-zero T and γ ≠ 1, so that the decay and the penalty matter from update 1
        net.rnn.schur_form.lower.normal_(0, 0.3)
        net.rnn.schur_form.gamma.uniform_(0.8, 1.2)
    batches = [(task.train_batch(k).inputs.double(), task.train_batch(k).targets) for k in range(5)]
    expected = release_step_reference(net, batches, config["lr"], config["lr_orth"], config["alpha"],
                                      config["delta"], config["t_decay"])
    optimizer = make_optimizer(config, net)
    for x, y in batches:  # the trainer's update (nnrnn/train.py)
        out, _ = net(x)
        loss, _ = task.loss(out, y)
        optimizer.zero_grad()
        (loss + net.rnn.regularization(config["delta"], config["t_decay"])).backward()
        optimizer.step()
    torch.testing.assert_close(net.rnn.recurrent_matrix().detach(), expected, rtol=0, atol=1e-10)


# --------------------------------------------------------------------------- the PTB schedule

def release_plateau_lrs(valid_losses, lr):
    """language_task.py: StepLR(step_size=1, gamma=0.5) stepped after every epoch whose validation loss is
    not below the best so far (the first epoch always improves)."""
    best, lrs = None, []
    for loss in valid_losses:
        if not best or loss < best:
            best = loss
        else:
            lr = lr * 0.5
        lrs.append(lr)
    return lrs


def test_plateau_schedule_halves_exactly_when_the_release_does():
    valid = [3.0, 2.5, 2.6, 2.5, 2.4, 2.4, 2.41, 2.3, 2.3, 2.2]
    config = resolve_config({"task": "copy", "model": "nnrnn", "hidden": 4, "lr_schedule": "plateau",
                             "lr": 8e-4, "lr_orth": 8e-5})
    net = build_network(config, 10, 9, "all")
    optimizer = make_optimizer(config, net)
    schedule = make_schedule(config, optimizer, "min")
    got = []
    for loss in valid:
        schedule.step(loss)
        got.append([g["lr"] for g in optimizer.param_groups])
    assert [g[0] for g in got] == pytest.approx(release_plateau_lrs(valid, 8e-4), rel=1e-12)
    assert [g[1] for g in got] == pytest.approx(release_plateau_lrs(valid, 8e-5), rel=1e-12)  # lr_orth too
    assert make_schedule(resolve_config({"task": "copy"}), optimizer, "min") is None


def test_trainer_halves_both_learning_rates_after_a_validation_that_did_not_improve(tmp_path, monkeypatch):
    """The trainer steps the schedule on every validation score: scripted scores, the release's rule."""
    from nnrnn import train as trainer
    scores = iter([3.0, 2.5, 2.6, 2.5, 2.4, 2.45, 9.0])  # the last: the test split, scored at the end
    monkeypatch.setattr(trainer, "evaluate", lambda net, task, split, device: {"loss": next(scores)})
    config = resolve_config({"task": "copy", "model": "nnrnn", "hidden": 8, "T": 3, "batch_size": 2, "steps": 12,
                             "eval_every": 2, "log_every": 1, "progress": False, "lr": 1e-3, "lr_orth": 1e-4,
                             "lr_schedule": "plateau", "out": str(tmp_path / "run")})
    trainer.train(config)
    records = read_metrics(tmp_path / "run")
    used = {r["step"]: r["lr"] for r in records if r["split"] == "train"}
    after = release_plateau_lrs([3.0, 2.5, 2.6, 2.5, 2.4, 2.45], 1e-3)  # lr in force after each validation
    assert [used[s] for s in (3, 5, 7, 9, 11)] == pytest.approx(after[:5], rel=1e-12)
    assert after[:5] != [1e-3] * 5  # the script does halve


# --------------------------------------------------------------------------- inputs, embedding, initialisations

def test_ptb_network_embeds_characters_like_the_release():
    config = resolve_config({"task": "ptb", "model": "exprnn", "hidden": 32}, "paper")
    net = build_network(config, 50, 50, "all", vocab_size=50)
    assert isinstance(net.encoder, nn.Embedding) and net.encoder.weight.shape == (50, 200)
    w = net.encoder.weight.detach()
    assert w.abs().max() <= 0.1 and abs(w.std().item() - 0.1 / math.sqrt(3)) < 0.005  # U(-0.1, 0.1)
    assert net.rnn.input_size == 200
    assert torch.all(net.readout.bias == 0) and net.readout.weight.abs().max() <= 0.1  # decoder: U(-0.1, 0.1), 0
    out, _ = net(torch.randint(0, 50, (7, 3)))
    assert out.shape == (7, 3, 50)
    one_hot = build_network({**config, "embedding": 0}, 50, 50, "all", vocab_size=50)
    assert one_hot.rnn.input_size == 50 and not list(one_hot.encoder.parameters())
    counted = nnrnn.parameter_count("exprnn", 200, 32, 50, vocab_size=50, bias=False)
    assert counted == sum(p.numel() for p in net.parameters()) - 32 * 33 // 2  # less the generator's unused half


@pytest.mark.parametrize("scheme, std", [("xavier", lambda i, n: math.sqrt(2 / (i + n))),
                                         ("kaiming", lambda i, n: math.sqrt(2 / i)),
                                         ("uniform", lambda i, n: 1 / math.sqrt(3 * i))])
def test_input_initialisations(scheme, std):
    i, n = 200, 400
    model = nnrnn.create("exprnn", i, n, input_init=scheme, bias_init="uniform")
    w = model.weight_ih_l0.detach()
    assert abs(w.std().item() / std(i, n) - 1) < 0.03
    if scheme == "uniform":  # torch.nn.Linear's U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        assert w.abs().max() <= 1 / math.sqrt(i)
    assert model.bias_ih_l0.abs().max() <= 1 / math.sqrt(i) and model.bias_ih_l0.std() > 0


def test_release_nnrnn_input_weights_are_9x_exprnns_on_psmnist():
    """psMNIST (1 input): the release's nnRNN keeps torch's U(-1, 1), expRNN gets Glorot, ~9x smaller."""
    nn_cfg = resolve_config({"task": "psmnist", "model": "nnrnn"}, "paper")
    exp_cfg = resolve_config({"task": "psmnist", "model": "exprnn"}, "paper")
    a = build_network(nn_cfg, 1, 10, "last").rnn.weight_ih_l0.std().item()
    b = build_network(exp_cfg, 1, 10, "last").rnn.weight_ih_l0.std().item()
    assert 8 < a / b < 10.5


def test_release_lstm_initialisation():
    """LSTM.py: each gate is nn.Linear(I + N, N), Glorot normal as a whole, with one bias U(±1/sqrt(I + N))."""
    i, n = 30, 200
    lstm = nnrnn.create("lstm", i, n, init="concat")
    for gate_ih, gate_hh in zip(lstm.weight_ih_l0.chunk(4), lstm.weight_hh_l0.chunk(4)):
        whole = torch.cat([gate_hh, gate_ih], 1).detach()
        assert abs(whole.std().item() / math.sqrt(2 / (2 * n + i)) - 1) < 0.03
    assert lstm.bias_ih_l0.abs().max() <= 1 / math.sqrt(i + n) and lstm.bias_ih_l0.std() > 0
    assert torch.all(lstm.bias_hh_l0 == 0) and not lstm.bias_hh_l0.requires_grad  # one bias per gate
    groups = nnrnn.param_groups(lstm, 1e-3, 1e-4)
    assert all(p is not lstm.bias_hh_l0 for g in groups for p in g["params"])
    assert nnrnn.parameter_count("lstm", i, n, init="concat") == 4 * (n * (i + n) + n)


# --------------------------------------------------------------------------- psMNIST order

def test_fixed_shuffle_visits_the_training_set_in_one_order(tmp_path):
    from test_data import fake_mnist, write_idx  # the suite's own small MNIST files

    from nnrnn.tasks import psmnist
    images, labels = fake_mnist(60)
    write_idx(tmp_path / "t10k-images-idx3-ubyte", images)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", labels)
    folder = tmp_path
    fixed = psmnist.PermutedMNISTTask(data_dir=folder, batch_size=5, shuffle="fixed")
    per_epoch = psmnist.PermutedMNISTTask(data_dir=folder, batch_size=5, shuffle="epoch")
    e = fixed.steps_per_epoch
    assert torch.equal(fixed.train_batch(0).targets, fixed.train_batch(e).targets)
    assert torch.equal(fixed.epoch_order(3), torch.arange(fixed.n_train))
    assert not torch.equal(per_epoch.epoch_order(0), per_epoch.epoch_order(1))
    with pytest.raises(ValueError, match="shuffle"):
        psmnist.PermutedMNISTTask(data_dir=folder, shuffle="sometimes")
