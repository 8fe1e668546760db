"""Every task trains with every model for a few updates, on the real data where it needs it."""
import os
from pathlib import Path

import pytest

from nnrnn import MODELS
from nnrnn.train import read_metrics, resolve_config, train

SHARED = Path(os.environ.get("NNRNN_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
SIZES = {
    "copy": {"T": 10, "batch_size": 4},
    "adding": {"T": 20, "batch_size": 4},
    "psmnist": {"batch_size": 4},
    "ptb": {"bptt": 50, "batch_size": 4, "eval_batch_size": 500},
}
NEEDS = {"psmnist": "mnist", "ptb": "ptb"}


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("task", list(SIZES))
def test_task_trains_with_model(tmp_path, task, model):
    options = {"task": task, "model": model, "hidden": 6, "steps": 2, "log_every": 1, "eval_every": 2,
               "progress": False, "out": str(tmp_path / "run"), **SIZES[task]}
    if task in NEEDS:
        if not (SHARED / NEEDS[task]).is_dir():
            pytest.skip(f"the real {NEEDS[task]} files are not at {SHARED / NEEDS[task]} (set NNRNN_SHARED_DATA)")
        options["data_dir"] = str(SHARED)
    result = train(resolve_config(options))
    splits = [r["split"] for r in read_metrics(tmp_path / "run")]
    assert splits.count("train") == 2 and "valid" in splits and "test" in splits
    metric = {"copy": "accuracy", "adding": "loss", "psmnist": "accuracy", "ptb": "bpc"}[task]
    assert metric in result["test"]
