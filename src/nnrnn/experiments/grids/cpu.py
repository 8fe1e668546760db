"""The ``cpu`` grid: a few epochs of each run of the paper's grid at small sizes (its last report, superseded by
cpu-long's, is docs/archive/reproduction-cpu/report.md), so it measures early learning speed, not the converged
models the paper's claims are about."""
from ..planning.declaration import BOTH, Scale, Setting
from .paper import REPORT

NAME = "cpu"
SCALE = Scale(
    name=NAME,
    about="cpu: a few epochs of each run (runs summing to about 16 min on 2 cores)",
    seeds=(0, 1),
    report=REPORT,
    settings={
        "copy": Setting(task="copy", hidden=128, columns=BOTH,
                        options={"T": 200, "batch_size": 10, "steps": 1000, "eval_every": 250, "log_every": 25}),
        "psmnist": Setting(task="psmnist", hidden=64, columns=BOTH,
                           options={"batch_size": 64, "epochs": 3, "eval_every": 125, "log_every": 25,
                                    "eval_batch_size": 1000}),
        "ptb": Setting(task="ptb", hidden=256, columns=BOTH,
                       options={"bptt": 150, "batch_size": 32, "epochs": 4, "eval_every": 74, "log_every": 10,
                                "eval_batch_size": 50}),
    },
)
