"""``nnrnn train TASK``: train a model on a task, or resume a run."""
from __future__ import annotations

import json
from pathlib import Path

from .. import presets
from ..errors import OptionError
from ..models import MODELS
from ..tasks import TASKS
from ..training import distributed
from ..training.config import DEFAULTS, resolve_config, resume_config
from ..training.train import train


def add_arguments(p) -> None:
    p.description = (
        f"Train MODEL on TASK. Options left out come from --preset, then from the defaults shown. Without a "
        f"preset every model trains with those defaults, not with the paper's hyperparameters: nnRNN with lr "
        f"{DEFAULTS['lr']:g}, lr_orth {DEFAULTS['lr_orth']:g}, delta {DEFAULTS['delta']:g}, t_decay "
        f"{DEFAULTS['t_decay']:g} and an input bias; --preset paper gives the paper's (`nnrnn presets`). Prints a "
        f"line after every validation and a summary at the end, then the final metrics as one JSON line.")
    p.add_argument("task", help=f"the task: {', '.join(TASKS)}")
    p.add_argument("--model", help=f"the recurrent model: {', '.join(MODELS)}")
    p.add_argument("--preset", help=f"hyperparameters for (task, model): {', '.join(presets.preset_names())} (each "
                   f"listed by `nnrnn presets`)")
    p.add_argument("--out", help="run folder (default: runs/TASK-MODEL)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from checkpoints/last.pt, with its "
                   "own options (only the length, logging, device and evaluation options may be given again)")
    p.add_argument("--overwrite", action="store_true", help="replace the run in --out (its checkpoints, metrics, "
                   "logs and plots) instead of refusing")
    _add_model_options(p.add_argument_group("model"))
    _add_optimisation_options(p.add_argument_group("optimisation"))
    _add_data_options(p.add_argument_group("data"))
    _add_logging_options(p.add_argument_group("logging"))
    for action in p._actions:  # argparse's own defaults stay None, so that run_train sees what was typed
        default = DEFAULTS.get(action.dest)
        if default is not None and action.option_strings and action.nargs != 0 and "default" not in action.help:
            shown = " ".join(map(str, default)) if isinstance(default, list) else default
            action.help = f"{action.help} (default: {shown})"


def _add_model_options(g) -> None:
    g.add_argument("--hidden", type=int, help="hidden units")
    g.add_argument("--nonlinearity", choices=["modrelu", "tanh", "relu", "none"],
                   help="the recurrence's nonlinearity (default: the model's, modrelu for the non-gated models)")
    g.add_argument("--init", metavar="INIT",
                   help="initialisation scheme, each model's own (its class's INITS): orthogonal ones (henaff, "
                        "cayley, random); LSTM: xavier or concat; GRU: xavier or torch; nnrnn-complex: random (Haar "
                        "P) or identity; rnn, lstm, gru: chain:ALPHA or fbchain:BETA, Orhan & Pitkow's chains "
                        "(default: the model's own)")
    g.add_argument("--dt", type=float, help="coRNN, LEM: the time step Δt (default: the model's, 0.076 and 1)")
    g.add_argument("--gamma", type=float, help="coRNN: γ, its oscillators' stiffness (default 0.4)")
    g.add_argument("--epsilon", type=float, help="coRNN: ε, their damping (default 8)")
    g.add_argument("--r-min", dest="r_min", type=float, help="LRU: |λ| starts in the ring [r_min, r_max] (default 0.9)")
    g.add_argument("--r-max", dest="r_max", type=float, help="LRU: the ring's outer radius (default 0.999)")
    g.add_argument("--capacity", type=int, help="EURNN layers (default: hidden // 2)")
    g.add_argument("--triangular", choices=["strict", "block"],
                   help="nnRNN's T: strict (the paper's, default) or block (eigenvalues stay γe^{±iθ})")
    g.add_argument("--fixed-gamma", dest="fixed_gamma", type=float, metavar="G",
                   help="nnRNN: hold every gamma at G instead of training it (needs --delta 0)")
    g.add_argument("--t-init", dest="t_init", metavar="INIT", help="nnRNN's T at start: zeros (default) or delay:ALPHA")
    g.add_argument("--schur-gates", dest="schur_gates", action="store_const", const=True,
                   help="nngru: the reset and update gates' recurrent matrices in Schur form too (not only W_hn)")
    g.add_argument("--no-bias", dest="bias", action="store_const", const=False,
                   help="no input bias b in φ(Vh + W_ih x + b) (the paper's code has none for nnRNN and expRNN)")
    g.add_argument("--input-init", dest="input_init", metavar="SCHEME",
                   help="W_ih: xavier, kaiming, uniform (torch.nn.Linear's), uniform:A or zeros (default: the "
                        "model's, xavier)")
    g.add_argument("--bias-init", dest="bias_init", metavar="SCHEME",
                   help="input bias b: a scheme as above (default: the model's, zeros)")
    g.add_argument("--readout-init", dest="readout_init", metavar="SCHEME", help="read-out weight: a scheme as above")
    g.add_argument("--readout-bias-init", dest="readout_bias_init", metavar="SCHEME",
                   help="read-out bias: a scheme as above")
    g.add_argument("--embedding", type=int, help="ptb: embedding size (default 200; 0: one-hot inputs)")


def _add_optimisation_options(g) -> None:
    g.add_argument("--optimizer", choices=["rmsprop", "adam"], help="the optimizer")
    g.add_argument("--lr", type=float, help="learning rate (of every parameter but the orthogonal factor)")
    g.add_argument("--lr-orth", dest="lr_orth", type=float, help="learning rate of the orthogonal factor")
    g.add_argument("--rebase-every", dest="rebase_every", type=int, metavar="K",
                   help="nnrnn, exprnn: dynamic trivialization, move P's base every K updates (not the paper's)")
    g.add_argument("--alpha", type=float, help="RMSprop smoothing")
    g.add_argument("--betas", type=float, nargs=2, help="Adam betas")
    g.add_argument("--delta", type=float, help="nnRNN: weight of the penalty on (1 - gamma)^2")
    g.add_argument("--t-decay", dest="t_decay", type=float,
                   help="nnRNN: weight decay on T (its gradient gains t_decay·T)")
    g.add_argument("--clip", type=float, help="max gradient norm (0: off)")
    g.add_argument("--lr-schedule", dest="lr_schedule", choices=["none", "plateau"],
                   help="plateau: halve every learning rate after a validation that did not improve (ptb presets)")
    g.add_argument("--stop-after-halvings", dest="stop_after_halvings", type=int, metavar="K",
                   help="with --lr-schedule plateau: stop once the learning rates were halved K times")
    g.add_argument("--seed", type=int, help="seed of the initial parameters and the data")
    g.add_argument("--steps", type=int, help="total updates (default: from --epochs, else the task's)")
    g.add_argument("--epochs", type=int, help="total epochs (psmnist, ptb)")


def _add_data_options(g) -> None:
    g.add_argument("--batch-size", dest="batch_size", type=int, help="sequences per update (default: the task's)")
    g.add_argument("--eval-batch-size", dest="eval_batch_size", type=int,
                   help="psmnist: images per evaluation batch; ptb: parallel evaluation streams")
    g.add_argument("--T", dest="T", type=int, help="copy/adding sequence length (default: the task's)")
    g.add_argument("--bptt", type=int, help="PTB truncation length (150 or 300 in the paper)")
    g.add_argument("--no-permute", dest="permute", action="store_const", const=False,
                   help="psmnist: sequential MNIST, no permutation")
    g.add_argument("--shuffle", choices=["epoch", "fixed"],
                   help="psmnist: a new training order each epoch or the same order every epoch")
    g.add_argument("--data-dir", dest="data_dir",
                   help="folder with the data files (default: NNRNN_DATA, then nnrnn's usual places; docs/data.md)")
    g.add_argument("--check-inputs", dest="check_inputs", action="store_const", const=True,
                   help="stop with an error on NaN or Inf inputs")


def _add_logging_options(g) -> None:
    g.add_argument("--log-every", dest="log_every", type=int, help="updates between training points in metrics.jsonl")
    g.add_argument("--eval-every", dest="eval_every", type=int,
                   help="updates between validations (default: once per epoch; 250 for copy and adding)")
    g.add_argument("--checkpoint-every", dest="checkpoint_every", type=int,
                   help="updates between saves of checkpoints/last.pt (default: at every validation)")
    g.add_argument("--max-bad-steps", dest="max_bad_steps", type=int,
                   help="stop after this many updates in a row with a non-finite loss or gradient")
    g.add_argument("--device", help="auto, cpu, cuda, cuda:1 ...")
    g.add_argument("--no-cuda-graph", dest="cuda_graph", action="store_const", const=False,
                   help="on CUDA, run every update eagerly instead of replaying it from a CUDA graph")
    g.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                   help="no progress bar (the line after each validation and the summary still print)")


def run(args) -> int:
    if args.resume and args.overwrite:
        raise OptionError("give --resume or --overwrite, not both")
    typed = {k: v for k, v in vars(args).items()  # what the user typed: argparse leaves the rest None
             if k not in ("command", "handler", "resume", "overwrite", "preset") and v is not None}
    if typed.get("out") == "":
        raise OptionError("--out must name a folder; got an empty string")
    out = Path(typed.get("out") or f"runs/{args.task}-{typed.get('model', 'nnrnn')}")
    typed["out"] = str(out)
    # a resumed run keeps its own options; only those typed again, and allowed to change, differ
    config = resume_config(out, typed, args.preset) if args.resume else resolve_config(typed, args.preset)
    try:
        result = train(config, resume=args.resume, overwrite=args.overwrite)
    finally:
        distributed.cleanup()
    if result:  # rank 0 only
        print(json.dumps(result))
    return 0
