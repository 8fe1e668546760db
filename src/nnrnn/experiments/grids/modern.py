"""The ``modern`` grid (docs/modern/report.md): today's long-memory RNNs beside the nnRNN, every model at nnRNN's
parameter count and its paper's depth (the LRU and nnLRU 6 layers, minGRU 3), each with the same search on equal
terms (4 trials as long as the run, on seed TUNE_SEED: the model's published settings first where it has them,
Optuna's TPE sampler drawing at random up to its second), on
psMNIST (--preset long-memory) and PTB at cpu-long's T_PTB.  Copy at T = 1000 and adding at T = 2000, which the grid
of 2026-11-27 also ran (10 trials a fifth as long; its data records both) and none of whose models learned at this
scale, left it for the memory grid (grids/memory.py: copy over a ladder of delays).  CPU scale: psMNIST on 8,000
images for 5 epochs, PTB for 20, far shorter than their papers train; it took 3 h 20 min with --jobs 2 on the
2-core AMD EPYC Zen 4, searches included (docs/modern/notes.md)."""
from ...models import PAPER_MODELS
from ..grid import TUNE_SEED, TUNED
from ..modern import (best_so_far_section, measure_speed_once, published_section, standings_section, tuned_section,
                      update_time_section)
from ..picks import picks_section
from ..sections import Report, settings_sections, settled_section
from .cpu_long import LONG_PSMNIST, LONG_PTB

# the paper's models, the non-normal family and today's long-memory RNNs, each tuned alike (issue 50)
MODERN_MODELS = PAPER_MODELS + ("gru", "nngru", "nnrnn-complex", "cornn", "lem", "lru", "nnlru", "mingru")
# Orhan & Pitkow's chain, at the gain their released code's example trains copy with (eminorhan/nonnormal-init),
# with their RNN's nonlinearity for the task: ELU on copy and psMNIST (ReLU on adding); on PTB, where they trained
# only LSTMs, it keeps the non-gated models' modReLU
CHAIN = {"model": "rnn", "init": "chain:1.02"}
CHAIN_INIT = {"rnn chain": CHAIN}
CHAIN_ELU = {"rnn chain": {**CHAIN, "nonlinearity": "elu"}}
REPORT = Report("Today's long-memory RNNs beside the nnRNN", (
    tuned_section, picks_section, best_so_far_section, settings_sections, standings_section, published_section,
    update_time_section, settled_section), prepare=measure_speed_once)
NAME = "modern"
SCALE = {
    "about": "modern: today's long-memory RNNs (coRNN, LEM, LRU, minGRU, a chain-initialised RNN) beside nnRNN and "
             "the paper's models, tuned alike, on psMNIST and PTB (3.3 h with --jobs 2 on 2 cores; "
             "docs/modern/report.md; it resumes across sittings)",
    "seeds": [0, 1, 2],
    "report": REPORT,
    "tune": {"trials": 4, "share": 1.0, "seed": TUNE_SEED, "startup": 2},
    "tasks": {
        "psmnist": {"hidden": 64, "preset": "long-memory", "paper_depth": True, "columns": (TUNED,),
                    "models": MODERN_MODELS, "variants": CHAIN_ELU,
                    "options": {**LONG_PSMNIST, "epochs": 5, "eval_every": 50}},
        "ptb": {"hidden": 128, "paper_depth": True, "columns": (TUNED,), "models": MODERN_MODELS,
                "variants": CHAIN_INIT, "options": {**LONG_PTB, "epochs": 20}},
    },
}
