"""The doctor's workloads: small configurations of the paper's presets, synthetic batches of the tasks' shapes,
and K updates through the trainer's own step."""
from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field

import torch
from torch import nn

from .. import presets
from ..errors import OptionError
from ..tasks import TASKS as ALL_TASKS
from ..tasks import make_task, task_class
from ..tasks.base import Batch, generator
from ..training.config import resolve_config
from ..training.network import DEFAULT_EMBEDDING
from ..training.step import CapturedStep, TrainStep, capturable
from ..training.train import make_optimizer

TASKS = tuple(ALL_TASKS)  # every task: QUICK and FULL give each a sequence length
_PSMNIST, _PTB = task_class("psmnist"), task_class("ptb")
# (T, B, N, I): the tasks' own sequence lengths and psMNIST's input size; PTB reads its default embedding
PAPER_SIZES = {"psmnist": (_PSMNIST.sequence_length({}), 128, 512, _PSMNIST.input_size),
               "ptb": (_PTB.sequence_length({}), 128, 1024, DEFAULT_EMBEDDING)}
QUICK_SIZES = {"psmnist": (24, 4, 16, _PSMNIST.input_size), "ptb": (12, 4, 16, 8)}
CLASSES = _PSMNIST.output_size


@dataclass
class Sizes:
    hidden: int
    batch: int
    T: dict = field(default_factory=dict)   # task -> sequence length of the parity batches
    updates: int = 3


QUICK = Sizes(hidden=8, batch=4, T={"copy": 12, "adding": 12, "psmnist": 16, "ptb": 12}, updates=3)
# Parity at short sequences only: float32 and float64 part ways over hundreds of steps (an activation at
# modReLU's or ReLU's threshold flips), without any bug; the paper's lengths are timed instead.
FULL = Sizes(hidden=32, batch=8, T={"copy": 24, "adding": 24, "psmnist": 24, "ptb": 24}, updates=5)


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    """‖a − b‖ / ‖b‖ in float64 on the CPU (0 when both are zero)."""
    a, b = (torch.view_as_real(t) if t.is_complex() else t for t in (a, b))  # the complex nnRNN's V: both parts
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    scale = float(b.norm())
    diff = float((a - b).norm())
    return diff / scale if scale else diff


# ----------------------------------------------------------------------------- configurations and batches

def _paper_preset(task: str, model: str) -> dict | None:
    """The paper preset's options for (task, model); None where it has none (gru and nngru; the adding task)."""
    try:
        return presets.lookup("paper", task, model)
    except OptionError:
        return None


def config_for(task: str, model: str, sizes: Sizes, **options) -> dict:
    """The paper preset's options for (task, model) where it has them, at a small size.  A task the paper does
    not train (adding) takes the model's copy-task optimisation settings, where training is calm."""
    cls = task_class(task)
    base = {"task": task, "model": model, "hidden": sizes.hidden, "batch_size": sizes.batch, "progress": False}
    if "T" in cls.CONFIG_OPTIONS:
        base["T"] = sizes.T[task]
    in_preset = _paper_preset(task, model) is not None  # PTB: bptt 150's table
    copy_settings = _paper_preset("copy", model)
    if not in_preset and copy_settings is not None:
        keep = ("optimizer", "lr", "lr_orth", "alpha", "delta", "t_decay", "init", "triangular", "bias")
        base.update({k: v for k, v in copy_settings.items() if k in keep})
    config = resolve_config({**base, **options}, "paper" if in_preset else None)
    if "bptt" in cls.CONFIG_OPTIONS:
        config["bptt"] = sizes.T[task]
    if cls.token_inputs:
        config["embedding"] = min(config["embedding"] or 0, 2 * sizes.hidden) or None
    return config


def synthetic_task(name: str, T: int, batch: int, seed: int = 0):
    """A task with the real task's loss and shapes; copy and adding are themselves synthetic.  psMNIST:
    T pixels in [0, 1] and one of its classes; PTB: character ids of the official files' vocabulary, the state
    carried from one segment to the next."""
    cls = task_class(name)
    if not cls.has_data_files:
        return make_task(name, seed=seed, batch_size=batch, T=T)

    class Synthetic(cls):
        def __init__(self):  # no data to read
            self.seed, self.batch_size = seed, batch
            if cls.token_inputs:
                self.input_size = self.output_size = cls.vocab_size

        def train_batch(self, step: int) -> Batch:
            gen = generator(seed, 7, step)
            if cls.token_inputs:
                ids = torch.randint(0, cls.vocab_size, (T + 1, batch), generator=gen)
                return Batch(ids[:-1], ids[1:], carry=step > 0)
            return Batch(torch.rand(T, batch, cls.input_size, generator=gen),
                         torch.randint(0, cls.output_size, (batch,), generator=gen))

    return Synthetic()


def _to(tensor: torch.Tensor, device, dtype) -> torch.Tensor:
    return tensor.to(device=device, dtype=dtype) if tensor.is_floating_point() else tensor.to(device)


def run_updates(config: dict, net: nn.Module, task, device, dtype, updates: int, forward=None,
                autocast: bool = False, gradients: dict | None = None, captured: list | None = None) -> list[float]:
    """``updates`` training updates through the trainer's own step (:class:`~nnrnn.training.step.TrainStep`:
    loss + penalty, clipping, the non-finite skip, ``rebase_every``, the optimizer with its parameter groups),
    the state carried where the task carries it; the losses.  ``gradients``, if given, receives the first
    update's gradients (after clipping) by parameter name.  ``captured``, if given: the updates go through
    :class:`~nnrnn.training.step.CapturedStep`, as the trainer's on CUDA, which is appended to it."""
    net.to(device=device, dtype=dtype)
    optimizer = make_optimizer(config, net)
    step = TrainStep(config, net, optimizer, task, forward=forward, autocast=autocast)
    if captured is not None:
        capturable(optimizer, torch.device(device).type == "cuda")
        step = CapturedStep(step, torch.device(device))
        captured.append(step)
    losses, carried = [], None
    for number in range(1, updates + 1):
        batch = task.train_batch(number - 1)
        outcome = step(_to(batch.inputs, device, dtype), _to(batch.targets, device, dtype),
                       carried if batch.carry else None, number)
        if number == 1 and gradients is not None:
            gradients.update({n: p.grad.detach().clone() for n, p in net.named_parameters() if p.grad is not None})
        carried = outcome.carried
        losses.append(float(outcome.loss))
    return losses


@contextlib.contextmanager
def exact_float32():
    """TF32 off while comparing: torch lets cuDNN (torch.nn.LSTM, so nnrnn's lstm) use TF32 tensor cores by
    default on Ampere and newer GPUs, whose 10-bit mantissa is not float32's, and parity is about float32."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def recurrent_matrix(net: nn.Module) -> torch.Tensor | None:
    """The layer's V (the LSTM's stacked weight_hh); None for a model with its own cell (coRNN, LEM, LRU, minGRU),
    whose parameters the parity check compares all the same."""
    rnn = net.rnn
    with torch.no_grad():
        if isinstance(rnn, nn.LSTM):
            return rnn.weight_hh_l0
        return rnn.recurrent_matrix() if hasattr(rnn, "recurrent_matrix") else None


def gradient_sensitivity(config: dict, net: nn.Module, task, reference: dict) -> dict:
    """Per parameter, how far (relative) the first update's float64 gradients move from ``reference`` when every
    parameter of ``net`` is multiplied by 1 + u·U(−1, 1), u = 2⁻²⁴ (a float32 rounding of each)."""
    perturbed = copy.deepcopy(net).double()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in perturbed.parameters():
            p.mul_(1 + 2.0 ** -24 * (2 * torch.rand(p.shape, generator=gen, dtype=torch.float64) - 1))
    moved = {}
    run_updates(config, perturbed, task, "cpu", torch.float64, 1, gradients=moved)
    return {name: relative(moved[name], value) for name, value in reference.items()}
