"""The ``smoke`` grid: a few updates per run at 16 units, one seed; checks that an installation runs the whole
pipeline."""
from ..planning.declaration import Scale, Setting
from .paper import REPORT

NAME = "smoke"
SCALE = Scale(
    name=NAME,
    about="smoke: the pipeline at tiny sizes (about a minute)",
    seeds=(0,),
    report=REPORT,
    settings={
        "copy": Setting(task="copy", hidden=16, columns=("hidden",),
                        options={"T": 20, "batch_size": 4, "steps": 6, "eval_every": 3, "log_every": 3}),
        "psmnist": Setting(task="psmnist", hidden=16, columns=("hidden",),
                           options={"batch_size": 8, "steps": 3, "eval_every": 3, "log_every": 3,
                                    "eval_batch_size": 1000}),
        "ptb": Setting(task="ptb", hidden=16, columns=("hidden",),
                       options={"bptt": 150, "batch_size": 16, "steps": 3, "eval_every": 3, "log_every": 3,
                                "eval_batch_size": 500}),
    },
)
