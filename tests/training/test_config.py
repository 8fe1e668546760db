"""nnrnn.training.config: the options, their defaults, how presets and explicit options combine, their checks."""

import re

import pytest
from helpers import TINY, one_line, run_cli

from nnrnn.models import MODELS, PAPER_MODELS, RecurrentModel
from nnrnn.training import config as config_module
from nnrnn.training import network as network_module
from nnrnn.training.config import resolve_config
from nnrnn.training.options import called
from nnrnn.errors import OptionError

POSITIVE_INTEGERS = ["hidden", "batch_size", "eval_batch_size", "T", "bptt", "steps", "epochs", "log_every",
                     "eval_every", "checkpoint_every", "max_bad_steps", "capacity", "stop_after_halvings",
                     "rebase_every"]


def test_the_number_of_updates_from_steps_epochs_or_the_task():
    from types import SimpleNamespace

    from nnrnn.tasks import task_class
    from nnrnn.tasks.base import Task
    fixed = SimpleNamespace(name="psmnist", steps_per_epoch=7)
    fresh = task_class("copy")(T=5)
    assert config_module.total_steps({"steps": 5, "epochs": None}, fixed) == 5
    assert config_module.total_steps({"steps": None, "epochs": 3}, fixed) == 21
    assert config_module.total_steps({"steps": None, "epochs": None}, fixed) == 7  # one epoch
    with pytest.raises(ValueError, match="epochs needs a task with a fixed training set"):
        config_module.total_steps({"steps": None, "epochs": 3}, fresh)
    assert config_module.total_steps({"steps": None, "epochs": None}, fresh) == 3000
    assert config_module.total_steps({"steps": None, "epochs": None}, task_class("adding")(T=5)) == 3000

    class New(Task):  # a task added without a default of its own
        name = "new"

    assert config_module.total_steps({"steps": None, "epochs": None}, New()) == 1000


def test_the_preset_is_recorded_in_the_config_and_explicit_options_win():
    config = resolve_config({"task": "copy", "model": "nnrnn", "lr": 0.5}, "paper")
    assert config["preset"] == "paper" and config["lr"] == 0.5
    assert "preset" not in resolve_config({"task": "copy", "model": "nnrnn"})


def test_a_device_name_is_checked_when_resolved_and_its_presence_when_the_run_starts():
    assert resolve_config({"device": "cpu"})["device"] == "cpu"
    assert resolve_config({"device": "cuda:3"})["device"] == "cuda:3"  # whether it is here: resources.check_device
    for name, message in (("meta", "nnrnn trains on cpu or cuda"), ("cpu:1", "there is one cpu device"),
                          ("gpu", "is not a device")):
        with pytest.raises(OptionError, match=message):
            resolve_config({"device": name})


@pytest.mark.parametrize("key", POSITIVE_INTEGERS)
@pytest.mark.parametrize("value", [0, -3, True, 2.0])
def test_each_count_option_must_be_a_positive_integer(key, value):
    """From the library (the command line's parser catches non-integers before this)."""
    with pytest.raises(ValueError, match=f"^{re.escape(called(key))} must be a positive integer"):
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
    with pytest.raises(ValueError, match=f"{re.escape(called(key))} must be a positive finite number"):
        resolve_config({key: value})


@pytest.mark.parametrize("key", ["delta", "t_decay", "clip"])
@pytest.mark.parametrize("value", [-1e-9, float("nan"), float("-inf"), False])
def test_penalties_and_clip_must_be_zero_or_positive_finite_numbers(key, value):
    with pytest.raises(ValueError, match=f"{re.escape(called(key))} must be zero or a positive finite number"):
        resolve_config({key: value})
    assert resolve_config({key: 0.0})[key] == 0.0 and resolve_config({key: 2})[key] == 2


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
    from nnrnn.training.config import inapplicable
    with pytest.raises(ValueError, match="unknown option\\(s\\) lrr, stpes"):
        resolve_config({"task": "copy", "lrr": 0.1, "stpes": 3})
    saved = resolve_config({"task": "ptb", "model": "nnrnn", "steps": 5}, "paper")  # holds "preset"
    acting = {k: v for k, v in saved.items() if k == "preset" or not inapplicable(k, saved)}
    assert resolve_config(acting) == saved  # what acts on the run, given again, gives the run's configuration
    with pytest.raises(ValueError, match="--betas applies to --optimizer adam"):  # at its default value too
        resolve_config(saved)


def test_each_model_gets_the_options_its_constructor_takes():
    config = {"nonlinearity": "tanh", "input_init": "xavier", "bias_init": "zeros", "bias": False,
              "init": "random", "triangular": "block", "capacity": 4, "rebase_every": None, "dt": 0.5, "gamma": 2.0,
              "epsilon": 3.0, "r_min": 0.5, "r_max": 0.9}
    shared = {"nonlinearity", "input_init", "bias_init", "bias"}
    takes = {"lstm": {"init", "bias"}, "rnn": shared | {"init"}, "eurnn": shared | {"capacity"},
             "nnrnn": shared | {"init", "triangular"}, "exprnn": shared | {"init"}, "rnn-orth": shared | {"init"},
             "nngru": {"init", "triangular", "bias", "schur_gates"}, "cornn": {"bias", "dt", "gamma", "epsilon"},
             "lem": {"bias", "dt"}, "lru": {"bias", "r_min", "r_max"}, "mingru": {"bias"}}
    own_init = {"lstm": "concat", "rnn": "chain:1.0"}
    config = {**config, "schur_gates": True}
    for model, names in takes.items():
        options = config_module.model_options({**config, "model": model})
        assert options == {name: config[name] for name in names}, model
        built = {**config, "model": model, "hidden": 6, "task": "copy", "init": own_init.get(model, "random")}
        network_module.build_network(built, 3, 2, "all")  # the constructor accepts them
    assert config_module.model_options({**config, "model": "nnrnn", "rebase_every": 10})["dynamic"] is True


def test_fixed_gamma_and_t_init_reach_nnrnn_and_are_checked():
    config = resolve_config({"model": "nnrnn", "fixed_gamma": 0.958, "t_init": "delay:1.0", "delta": 0.0})
    assert config_module.model_options(config) == {"bias": True, "fixed_gamma": 0.958, "t_init": "delay:1.0"}
    model = network_module.build_network({**config, "hidden": 6}, 3, 2, "all").rnn
    assert model.schur_form.fixed_gamma == 0.958 and model.schur_form.t_init == "delay:1.0"
    assert resolve_config({})["fixed_gamma"] is None and resolve_config({})["t_init"] is None  # the paper's
    for options, message in (({"fixed_gamma": 1.0, "delta": 0.1}, "give delta 0"),
                             ({"fixed_gamma": -1.0}, "fixed_gamma must be None or a finite number >= 0"),
                             ({"fixed_gamma": "1"}, "fixed_gamma must be None or a number"),
                             ({"t_init": "delay:x"}, "t_init must be 'zeros' or 'delay:ALPHA'"),
                             ({"t_init": "chain:1"}, "t_init must be 'zeros' or 'delay:ALPHA'"),
                             ({"model": "lstm", "t_init": "zeros"}, "--t-init applies to nnrnn, nnlru, not to lstm"),
                             ({"triangular": "none", "t_init": "delay:1.0"}, "triangular none holds T at zero"),
                             ({"model": "exprnn", "fixed_gamma": 1.0},
                              "--fixed-gamma applies to nnrnn, not to exprnn")):
        with pytest.raises(ValueError, match=message):
            resolve_config(options)
    # a preset's δ with a held γ: refused, and accepted once δ is given as 0
    with pytest.raises(ValueError, match="give delta 0"):
        resolve_config({"task": "ptb", "model": "nnrnn", "fixed_gamma": 1.0}, "paper")
    assert resolve_config({"task": "ptb", "model": "nnrnn", "fixed_gamma": 1.0, "delta": 0.0}, "paper")["delta"] == 0


def test_state_noise_reaches_the_model_and_its_default_is_none():
    config = resolve_config({"model": "nnrnn", "state_noise": 0.25})
    assert config_module.model_options(config)["state_noise"] == 0.25
    assert network_module.build_network({**config, "hidden": 6}, 3, 2, "all").rnn.state_noise == 0.25
    assert resolve_config({})["state_noise"] is None and "state_noise" not in config_module.model_options(
        resolve_config({}))
    with pytest.raises(ValueError, match=r"state_noise \(--state-noise\) must be zero or a positive"):
        resolve_config({"state_noise": -1.0})


@pytest.mark.parametrize("model, gate, gates", [("lstm", 1, 4), ("gru", 1, 3)])
def test_chrono_takes_its_t_max_from_the_option_else_the_tasks_sequence_length(model, gate, gates):
    config = resolve_config({"model": model, "init": "chrono", "T": 30})
    assert config["chrono_tmax"] is None
    assert config_module.model_options(config)["chrono_tmax"] == 30 + 20  # copy: T + its 20 other steps
    assert config_module.model_options({**config, "chrono_tmax": 12.0})["chrono_tmax"] == 12.0
    rnn = network_module.build_network({**config, "hidden": 64}, 10, 9, "all").rnn
    u = rnn.bias_ih_l0.detach().chunk(gates)[gate].exp()
    assert u.min() >= 1 and u.max() <= 50 - 1 and u.max() > 25
    # no --T: the task's own default length, copy's T = 200, adding's 200 (no steps beyond T)
    assert config_module.model_options(resolve_config({"model": model, "init": "chrono"}))["chrono_tmax"] == 220
    assert config_module.model_options(resolve_config({"task": "adding", "model": model,
                                                       "init": "chrono"}))["chrono_tmax"] == 200
    ptb = resolve_config({"task": "ptb", "model": model, "init": "chrono", "bptt": 300})
    assert config_module.model_options(ptb)["chrono_tmax"] == 300
    for options, message in (({"chrono_tmax": 10.0}, "give --init chrono with it"),
                             ({"init": "chrono", "chrono_tmax": 2.0}, r"chrono_tmax \(--chrono-tmax\) must be above 2"),
                             ({"init": "chrono", "chrono_tmax": -1.0},
                              r"chrono_tmax \(--chrono-tmax\) must be a positive")):
        with pytest.raises(OptionError, match=message):
            resolve_config({"model": model, **options})
    with pytest.raises(OptionError, match="--chrono-tmax applies to lstm, gru, not to nnrnn"):
        resolve_config({"model": "nnrnn", "chrono_tmax": 10.0})


# --------------------------------------------------------------------------- no option silently ignored

# Where each option acts: tasks (the paper's set-ups), models (what each model's equations contain),
# optimizers (torch's RMSprop has alpha, Adam has betas).
TASK_OPTIONS = {"T": {"copy", "adding"}, "bptt": {"ptb"}, "permute": {"psmnist"}, "shuffle": {"psmnist"},
                "data_dir": {"psmnist", "ptb"}, "eval_batch_size": {"psmnist", "ptb"}, "embedding": {"ptb"}}

NON_GATED = {name for name in PAPER_MODELS if issubclass(MODELS[name], RecurrentModel)}

MODEL_OPTIONS = {"capacity": {"eurnn"}, "triangular": {"nnrnn"}, "delta": {"nnrnn"}, "t_decay": {"nnrnn"},
                 "fixed_gamma": {"nnrnn"}, "t_init": {"nnrnn"}, "lr_orth": {"nnrnn", "exprnn"},
                 "rebase_every": {"nnrnn", "exprnn"}, "nonlinearity": NON_GATED, "input_init": NON_GATED,
                 "bias_init": NON_GATED, "init": {"rnn-orth", "exprnn", "nnrnn", "lstm"},
                 "state_noise": {name for name in PAPER_MODELS if "state_noise" in MODELS[name].CONFIG_OPTIONS}}

OPTIMIZER_OPTIONS = {"alpha": {"rmsprop"}, "betas": {"adam"}}

# a value other than the default for each option, valid wherever the option acts
VALUES = {"T": 7, "bptt": 30, "permute": False, "shuffle": "fixed", "data_dir": "/somewhere", "eval_batch_size": 3,
          "embedding": 4, "capacity": 3, "triangular": "block", "delta": 0.1, "t_decay": 0.1, "fixed_gamma": 1.0,
          "t_init": "delay:0.5", "lr_orth": 0.5, "rebase_every": 5, "nonlinearity": "tanh", "input_init": "zeros",
          "bias_init": "uniform", "alpha": 0.5, "betas": [0.5, 0.5], "state_noise": 0.1}

INITS = {"rnn-orth": "cayley", "exprnn": "cayley", "nnrnn": "henaff", "lstm": "concat"}



def test_every_option_acts_where_it_is_given_or_is_refused_naming_it():
    """Every task × model × optimizer × option: an explicit non-default value is accepted exactly where the
    option acts, and otherwise refused with a sentence naming the option's flag."""
    cases = 0
    for task in ("copy", "adding", "psmnist", "ptb"):
        for model in PAPER_MODELS:
            for optimizer in ("rmsprop", "adam"):
                for option, value in VALUES.items():
                    where = TASK_OPTIONS.get(option) or MODEL_OPTIONS.get(option) or OPTIMIZER_OPTIONS[option]
                    acts = (task if option in TASK_OPTIONS else model if option in MODEL_OPTIONS else optimizer) \
                        in where
                    options = {"task": task, "model": model, "optimizer": optimizer, option: value}
                    if option == "init":
                        options["init"] = INITS.get(model, "cayley")
                    if acts:
                        resolve_config(options)
                    else:
                        flag = {"T": "--T", "permute": "--no-permute"}.get(option, "--" + option.replace("_", "-"))
                        with pytest.raises(OptionError, match=f"^{flag} applies to"):
                            resolve_config(options)
                    cases += 1
    assert cases == 4 * len(PAPER_MODELS) * 2 * len(VALUES)



def test_an_lru_ring_is_checked_at_the_values_given_and_the_model_defaults_otherwise():
    """r_min must be below r_max, each taken at LRU's default when left out; an explicit 0 is a value, not a
    missing one."""
    resolve_config({"task": "copy", "model": "lru", "r_min": 0.0, "r_max": 0.5})
    with pytest.raises(OptionError, match="r_min must be below r_max"):
        resolve_config({"task": "copy", "model": "lru", "r_min": 0.9995})  # above the default r_max, 0.999
    with pytest.raises(OptionError, match="r_min must be below r_max"):
        resolve_config({"task": "copy", "model": "lru", "r_max": 0.5})  # below the default r_min, 0.9


def test_a_preset_sets_what_applies_without_refusal():
    """A preset covers several models: the values it holds are never refused for not applying."""
    for model in PAPER_MODELS:
        for task in ("copy", "psmnist", "ptb"):
            resolve_config({"task": task, "model": model}, "paper")



def test_options_that_can_only_fail_later_are_checked_before_the_folder(capsys, tmp_path):
    from conftest import HAS_PTB, SHARED
    one_line(*run_cli(capsys, "train", "copy", "--T", "100000", "--batch-size", "100000", "--hidden", "4096",
                      "--out", tmp_path / "big"), "needs at least", "GiB of memory")
    assert not (tmp_path / "big").exists()
    one_line(*run_cli(capsys, "train", "copy", "--out", "", *TINY), "--out must name a folder")
    one_line(*run_cli(capsys, "train", "copy", "--device", "cpu:1", "--out", tmp_path / "d", *TINY),
             "there is one cpu device")
    for flag in ("--storage", "--study", "--out"):
        one_line(*run_cli(capsys, "sweep", "copy", "--trials", "1", flag, ""), f"{flag} must not be empty")
    if HAS_PTB:
        one_line(*run_cli(capsys, "train", "ptb", "--eval-batch-size", "100000", "--data-dir", SHARED,
                          "--out", tmp_path / "ptb", *TINY[:2]), "eval_batch_size 100000 is too large")
        assert not (tmp_path / "ptb").exists()



def test_an_option_that_does_not_act_is_refused_at_its_default_value_too(capsys, tmp_path):
    for argv, expected in ((["--bptt", "150"], "--bptt applies to the ptb task"),
                           (["--betas", "0.9", "0.999"], "--betas applies to --optimizer adam"),
                           (["--model", "rnn", "--lr-orth", "1e-4"], "--lr-orth applies to")):
        one_line(*run_cli(capsys, "train", "copy", *argv, "--out", tmp_path / "r", *TINY), expected)
    assert not (tmp_path / "r").exists()

