"""The ``cpu-long`` grid: the paper's tables at small sizes and long training, 3 seeds
(docs/reproduction-cpu-long/report.md), with the checks of why EURNN and RNN-orth miss copy and nnRNN with γ held."""
from ..planning.declaration import BOTH, Scale, Setting, Variant
from ..judging.labels import variant
from ..judging.paper import GAMMA_HELD, GAMMA_ONE, NON_GATED
from .paper import REPORT

# Supplementary Table 7: nnRNN with every γ held at 1 or at 0.958 (no δ penalty then), at the reference size.
variant(GAMMA_ONE, "nnRNN, γ = 1", ("#fb9a99", (0, (4, 1, 4, 4))))
variant(GAMMA_HELD, "nnRNN, γ = 0.958", ("#8c8cff", (0, (2, 1))))
GAMMA_CLAMPED = {GAMMA_ONE: Variant(model="nnrnn", options={"fixed_gamma": 1.0, "delta": 0.0}),
                 GAMMA_HELD: Variant(model="nnrnn", options={"fixed_gamma": 0.958, "delta": 0.0})}
# Why EURNN and RNN-orth miss copy with the paper's settings (docs/design.md, Baselines): EURNN with Jing et al.'s
# copy-task capacity of 4 rotation layers instead of N/2, and RNN-orth with its gradient norm clipped at 1.
CAPACITY_4 = variant("eurnn, capacity 4", "EURNN, capacity 4", ("#c2b280", (0, (2, 2, 6, 2))))
CLIPPED = variant("rnn-orth, clipped at 1", "RNN-orth, clipped at 1", ("#e7298a", (0, (1, 1, 1, 4))))
COPY_CHECKS = {CAPACITY_4: Variant(model="eurnn", options={"capacity": 4}),
               CLIPPED: Variant(model="rnn-orth", options={"clip": 1.0})}
# cpu-long's lengths: copy 4000 updates, psMNIST 20 epochs, PTB the release's 100 epochs with the plateau rule
# halving the rates as in the presets (no early stop: with patience 0 a few bad validations early in a run would
# end it; docs/training.md)
LONG_COPY = {"T": 200, "batch_size": 10, "steps": 4000, "eval_every": 100, "log_every": 50}
LONG_PSMNIST = {"batch_size": 64, "epochs": 20, "eval_every": 125, "log_every": 25, "eval_batch_size": 1000}
LONG_PTB = {"bptt": 150, "batch_size": 32, "epochs": 100, "eval_every": 74, "log_every": 10, "eval_batch_size": 50}
LONG_PTB_300 = {"bptt": 300, "batch_size": 32, "epochs": 100, "eval_every": 37, "log_every": 5,
                "eval_batch_size": 50}
NAME = "cpu-long"
SCALE = Scale(
    name=NAME,
    about="cpu-long: the paper's tables at small sizes (1 h 48 min with --jobs 2 on a 2-core AMD EPYC, README.md)",
    seeds=(0, 1, 2),
    report=REPORT,
    settings={
        "copy": Setting(task="copy", hidden=128, columns=BOTH, variants=COPY_CHECKS, options=LONG_COPY),
        "psmnist": Setting(task="psmnist", hidden=64, columns=BOTH, options=LONG_PSMNIST),
        "ptb": Setting(task="ptb", hidden=128, columns=BOTH, variants=GAMMA_CLAMPED, options=LONG_PTB),
        # supplementary Tables 1 and 7 at T_PTB = 300: the non-gated models only, as there
        "ptb-300": Setting(task="ptb", hidden=128, columns=BOTH, variants=GAMMA_CLAMPED, models=NON_GATED,
                           options=LONG_PTB_300),
    },
)
