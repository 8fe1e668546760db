"""The ``beyond`` grid, beyond the paper (docs/beyond/report.md): the non-normal family at cpu-long's sizes and
sequence lengths, at nnRNN's parameter count, with the paper's hyperparameters where it gives them and with the same
search for every model (5 trials of runs a fifth as long, on seed TUNE_SEED, which no table reports).  Shorter
training than cpu-long's, so that the whole grid, searches included, ends within one sitting: about an hour on 2
cores (docs/design.md)."""
from ..beyond import compared_section, family_learned_section, tuning_section
from ..grid import TUNE_SEED, TUNED
from ..sections import Report, settings_sections, settled_section
from .cpu_long import LONG_COPY, LONG_PSMNIST, LONG_PTB

BEYOND_MODELS = ("nnrnn", "exprnn", "lstm", "gru", "nngru", "nnrnn-complex")
# nnRNN with T starting as a delay line (the paper's §3); α = 0.02, the largest of 0.5, 0.2, 0.1, 0.05, 0.02
# that trains on psMNIST and PTB from its start (docs/design.md)
DELAY_INIT = {"nnrnn delay": {"model": "nnrnn", "t_init": "delay:0.02", "columns": ("params", TUNED)}}
REPORT = Report("Beyond the paper: the non-normal family", (
    tuning_section, settings_sections, compared_section, family_learned_section, settled_section))
NAME = "beyond"
SCALE = {
    "about": "beyond: the non-normal family, each model tuned alike (0 h 57 min with --jobs 2 on 2 cores, "
             "docs/beyond/report.md)",
    "seeds": [0, 1, 2],
    "report": REPORT,
    "tune": {"trials": 5, "share": 0.2, "seed": TUNE_SEED},
    "tasks": {
        "copy": {"hidden": 128, "columns": ("params", TUNED), "models": BEYOND_MODELS, "variants": DELAY_INIT,
                 "options": {**LONG_COPY, "steps": 2000}},
        "psmnist": {"hidden": 64, "columns": ("params", TUNED), "models": BEYOND_MODELS,
                    "variants": DELAY_INIT, "options": {**LONG_PSMNIST, "epochs": 5}},
        "ptb": {"hidden": 128, "columns": ("params", TUNED), "models": BEYOND_MODELS, "variants": DELAY_INIT,
                "options": {**LONG_PTB, "epochs": 30}},
    },
}
