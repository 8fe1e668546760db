"""The ``paper`` grid: the paper's sizes and the release's lengths (copy 1500 updates, psMNIST and PTB 100 epochs);
meant for GPUs."""
from ..grid import BOTH
from ..reproduction import REPORT

NAME = "paper"
SCALE = {
    "about": "paper: the paper's sizes and the release's 100 epochs (for GPUs; its time is not measured)",
    "seeds": [0, 1, 2],
    "report": REPORT,
    "tasks": {
        # the release's lengths: copytask.py's 1500 updates, sMNIST.py's and language_task.py's 100 epochs
        "copy": {"hidden": None, "columns": BOTH, "options": {"T": 200, "batch_size": 10, "steps": 1500}},
        "psmnist": {"hidden": None, "columns": BOTH, "options": {"batch_size": 128, "epochs": 100}},
        "ptb": {"hidden": None, "columns": BOTH, "options": {"bptt": 150, "batch_size": 128, "epochs": 100}},
    },
}
