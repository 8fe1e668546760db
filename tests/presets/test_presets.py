"""The presets as users reach them: ``--preset NAME`` resolves every entry to a configuration that validates."""
import json

import pytest

from nnrnn import presets
from nnrnn.experiments import reproduce
from nnrnn.experiments.grids import SCALES, beyond
from nnrnn.training.config import resolve_config
from nnrnn.models import MODELS

from conftest import REPO, SHARED, needs_ptb


def entries(name):
    for table, models in presets.load(name).items():
        if not table.startswith("_"):
            for model in models:
                yield table, model


@pytest.mark.parametrize("name", presets.preset_names())
def test_every_entry_of_every_preset_resolves(name):
    for table, model in entries(name):
        task, _, bptt = table.partition("-")
        config = resolve_config({"task": task, "model": model, **({"bptt": int(bptt)} if bptt else {})}, name)
        assert config["preset"] == name and config["model"] in MODELS


def test_the_beyond_preset_is_the_beyond_grids_tuned_column():
    preset = presets.load("beyond")
    # every model of the grid on every task, at the grid's lengths
    assert {(t, m) for t, m in entries("beyond")} == {(t, m) for t in ("copy", "psmnist", "ptb-150")
                                                      for m in beyond.BEYOND_MODELS}
    assert preset["ptb-150"]["gru"]["epochs"] == SCALES["beyond"].settings["ptb"].options["epochs"]
    # nnRNN's size is the grid's reference, and the LSTM's is smaller: the same parameter count
    assert preset["copy"]["nnrnn"]["hidden"] == 128 and preset["copy"]["lstm"]["hidden"] < 128
    delay = preset["_variants"]["copy"]["nnrnn delay"]
    assert delay["model"] == "nnrnn" and delay["t_init"] == beyond.DELAY_INIT["nnrnn delay"].options["t_init"]
    resolve_config({"task": "copy", **delay})  # a variant's entry is a whole configuration too


@needs_ptb
def test_the_beyond_preset_holds_the_picks_its_report_publishes():
    picks = json.loads((REPO / "docs" / "beyond" / "tuned.json").read_text())
    assert reproduce.tuned_preset("beyond", picks, SHARED) == presets.load("beyond")
