"""nnrnn.training.options: the one table of training options, from which the train command's parser, the
defaults, the checks and the resumable set are made."""
import pytest

from nnrnn.errors import OptionError
from nnrnn.training import options
from nnrnn.training.config import resolve_config
from nnrnn_cli.command import make_parser

COMMAND_ONLY = {"preset", "resume", "overwrite", "help"}  # the train command's own flags, not configuration keys


def train_parser():
    return next(a for a in make_parser()._actions if a.dest == "command").choices["train"].defined()


def test_the_train_command_has_a_flag_for_each_row_of_the_table_and_nothing_else():
    parser = train_parser()
    dests = {action.dest for action in parser._actions} - COMMAND_ONLY
    assert dests == set(options.BY_NAME)
    for action in parser._actions:
        if action.dest in options.BY_NAME and action.option_strings:
            assert action.option_strings == [options.flag(action.dest)]
            assert action.default is None  # so that what was typed can be told from what was left out


def test_what_is_left_out_takes_the_tables_default():
    config = resolve_config({})
    rates = {"lr": 5e-4, "lr_orth": 1e-6}  # but the learning rates: the task's and model's (training/rates.py)
    assert {k: config[k] for k in options.DEFAULTS if k != "data_dir"} == \
        {k: rates.get(k, v) for k, v in options.DEFAULTS.items() if k != "data_dir"}
    args = train_parser().parse_args(["copy"])
    assert {k for k, v in vars(args).items() if v is not None} == {"task", "resume", "overwrite", "handler"}


def test_the_help_shows_each_default_from_the_table():
    text = " ".join(train_parser().format_help().split())
    for option in options.OPTIONS:
        if option.default is not None and option.const is options.NO_VALUE and "default" not in option.help \
                and option.flag != option.name:  # the positional task has no default on the command line
            shown = " ".join(map(str, option.default)) if isinstance(option.default, list) else option.default
            assert f"(default: {shown})" in text, option.name


@pytest.mark.parametrize("option", [o for o in options.OPTIONS if o.choices], ids=lambda o: o.name)
def test_choices_offered_by_the_command_line_are_the_ones_the_check_accepts(option):
    for choice in option.choices:
        if option.check is not None:
            option.check(option.name, choice)
    if option.check is not None:
        with pytest.raises(OptionError, match=f"^{option.name} must be"):
            option.check(option.name, "no-such-choice")


def test_the_resumable_set_is_the_tables_column():
    assert options.RESUMABLE == {o.name for o in options.OPTIONS if o.resumable}
    assert {"steps", "epochs", "device", "data_dir", "progress"} <= options.RESUMABLE
    assert not {"hidden", "lr", "seed", "model", "task"} & options.RESUMABLE


def test_flags_of_the_rows_that_name_their_own():
    assert [options.flag(k) for k in ("T", "bias", "permute", "progress", "cuda_graph", "lr_orth", "task")] == \
        ["--T", "--no-bias", "--no-permute", "--no-progress", "--no-cuda-graph", "--lr-orth", "--task"]
