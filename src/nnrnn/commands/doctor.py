"""``nnrnn doctor``: check training on a device against float64 on the CPU, and time it."""
from __future__ import annotations

from ..doctor.command import run_doctor
from ..models import MODELS, PAPER_MODELS
from ..tasks import TASKS


def add_arguments(p) -> None:
    p.description = ("Check every model and task on a device (parity with float64 on the CPU, "
                       "save/load/resume, autocast, torch.compile, DDP) and time one update at the paper's sizes "
                       "against torch.nn.RNN, torch.nn.GRU and torch.nn.LSTM. Prints one table; exits 1 if a check "
                       "fails.")
    p.add_argument("--device", default="auto", help="auto (cuda if available, else cpu), cpu, cuda, cuda:1 ...")
    p.add_argument("--quick", action="store_true", help="tiny sizes; torch.compile of nnrnn only, with Dynamo's "
                   "eager backend (no code generation); no DDP; timing at a tiny size")
    p.add_argument("--no-timing", dest="no_timing", action="store_true", help="skip the update timing")
    p.add_argument("--models", help=f"comma-separated subset of {','.join(MODELS)} (default: the paper's, "
                                    f"{','.join(PAPER_MODELS)})")
    p.add_argument("--tasks", help=f"comma-separated subset of {','.join(TASKS)}")
    p.add_argument("--data-dir", dest="data_dir", help="where psmnist and ptb data are (default: nnrnn's usual places)")
    p.add_argument("--rounds", type=int, help="timing rounds (default 5, 7 with --quick)")


def main(args) -> int:
    return run_doctor(args)
