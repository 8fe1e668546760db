"""``nnrnn doctor``: checks that nnrnn trains correctly on a device, and times it there, in one table.

For every model and task, at a small size:

* **parity**: K training updates on the device (float32) and the same K updates in float64 on the CPU
  from the same initial parameters and batches, through the trainer's own update
  (:class:`~nnrnn.training.step.TrainStep`); the losses of every update and the change of every parameter
  must agree within :data:`PARITY_RTOL`, each first gradient also within :data:`GRADIENT_NOISE_MARGIN` times
  its float64 sensitivity to float32 rounding.  On the CPU this compares float32 with float64 on the CPU,
  which runs different loops (the compiled or oneDNN loops against the ``aten`` ones) and so still finds bugs.
* **resume**: N updates of the real :func:`nnrnn.training.train.train` in one go, against N/2 and then
  ``--resume`` to N; the final parameters must be equal (to :data:`RESUME_RTOL` on CUDA, where some
  kernels need not add in a fixed order).  An evaluation that is not finite is tolerated when every update
  was (:func:`_train_to_checkpoint`).
* **autocast**: one update under ``torch.autocast(device, bfloat16)`` (docs/layers.md claims it on cpu and
  cuda): finite, and its loss within :data:`AUTOCAST_RTOL` of float32's.
* **compile**: the losses of K updates of ``torch.compile(network)`` against eager, within
  :data:`COMPILE_RTOL`.  With ``--quick``, nnRNN only and with ``backend="eager"`` (Dynamo's tracing of
  nnrnn's custom ops without inductor's code generation, which takes tens of seconds per model on a CPU).
* **cuda graph**: the trainer's update replayed from CUDA graphs against the same updates made eagerly, within
  :data:`CUDA_GRAPH_RTOL` (CUDA only; "skipped (runs eagerly: ...)" for an update that reads the host).
* **ddp**: two processes of ``nnrnn train`` launched as torchrun launches them (NCCL on two CUDA
  devices, gloo on the CPU) against one process on the whole batch: the same parameters to
  :data:`DDP_RTOL`.  Skipped with one CUDA device, and with ``--quick``.
* **update time**: one training update (forward, backward, RMSprop step) at the paper's sizes,
  (784, 128, 512, 1) psMNIST and (150, 128, 1024, 200) PTB, as a ratio to torch.nn.RNN(relu) (cuDNN on a
  GPU) and to torch.nn.LSTM measured in the same process, alternating, median of several rounds; and the
  peak memory of one update (CUDA only); on CUDA also the trainer's update replayed from its CUDA graphs
  against the same update made eagerly.  ``--quick`` times a tiny size instead, to exercise the code.

psMNIST and PTB parity, autocast and compile use synthetic batches of those tasks' shapes (pixels in
[0, 1], 50 character ids carried across segments) with the tasks' own losses, so they need no data;
their resume rows run the real tasks and read "skipped (no data: ...)" where the data is not found.

The exit status is 1 if any check failed, else 0.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import io
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from . import presets
from .errors import OptionError, TrainingDiverged, UserError
from .host import describe_cpu
from .models import MODELS, PAPER_MODELS, create, param_groups
from .tasks import make_task, task_class
from .tasks.base import Batch, generator
# Everything taken from the trainer, in one place.
from .training import checkpoint, runfolder
from .training.config import resolve_config
from .training.resources import check_device
from .training.network import build, seeded_network
from .training import step as training_step
from .training.step import WARMUP, CapturedStep, TrainStep, capturable
from .training.train import make_optimizer, train

TASKS = ("copy", "adding", "psmnist", "ptb")
_PSMNIST, _PTB = task_class("psmnist"), task_class("ptb")
# (T, B, N, I): the tasks' own sequence lengths and psMNIST's input size; PTB's 200 is its default embedding
PAPER_SIZES = {"psmnist": (_PSMNIST.sequence_length({}), 128, 512, _PSMNIST.input_size),
               "ptb": (_PTB.sequence_length({}), 128, 1024, 200)}
QUICK_SIZES = {"psmnist": (24, 4, 16, _PSMNIST.input_size), "ptb": (12, 4, 16, 8)}
CLASSES = _PSMNIST.output_size

# float32 on the device against float64 on the CPU, relative (‖a − b‖ / ‖b‖ per tensor).  The losses of
# every update and the gradients of the first (same parameters, same batch: a wrong forward or backward on
# the device shows here) are held tight.  The recurrent matrix V and the parameters after the last update
# only catch gross errors (a parameter not updated, updated twice, on the wrong device): RMSprop divides each
# gradient entry by its running RMS, so an entry whose float64 gradient is zero or nearly so (nnRNN's T and
# the biases start at zero; A and EURNN's angles have directions that leave V unchanged) takes a whole step
# on float32 rounding alone.  The values measured on a CPU and the margins: docs/performance.md.
PARITY_RTOL = {"losses": 1e-3, "gradients": 1e-4, "V": 2e-2, "parameters": 0.2}
# A gradient can be ill-conditioned where it is taken (the complex modReLU's phase z/|z| at a small |z|): then
# float32 rounding alone moves it by more than PARITY_RTOL["gradients"], on any device.  So each first gradient
# may also differ by GRADIENT_NOISE_MARGIN times its sensitivity, measured in float64, to a relative
# perturbation of every parameter by float32's unit roundoff (2⁻²⁴): the tolerance scales with the dtype's
# precision and the problem's conditioning, and a wrong gradient still fails wherever it is well conditioned.
GRADIENT_NOISE_MARGIN = 10
COMPILE_RTOL = 1e-4
# The same kernels replayed: equal but for a capturable optimizer's arithmetic on the device (Adam's bias
# corrections in float32 rather than Python floats).
CUDA_GRAPH_RTOL = 1e-5
AUTOCAST_RTOL = 0.1   # bfloat16 keeps 8 bits of mantissa; docs/layers.md reports within 7% of float32
RESUME_RTOL = {"cpu": 0.0, "cuda": 1e-5}
# Evaluation batch of the resume rows' real tasks (psMNIST: images; PTB: parallel streams, each carrying its state
# through 1/EVAL_BATCH of the file): few sequential steps, so an evaluation is quick and an nnRNN whose |λ| drifted
# just above 1 in its first updates stays finite over it (over PTB's whole file it does not).
EVAL_BATCH = 1000
DDP_RTOL = 1e-3       # two half batches averaged by all_reduce against one whole batch: rounding, amplified as above


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


@dataclass
class Row:
    check: str
    model: str
    task: str
    result: str      # "ok", "FAIL" or "skipped (why)"
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.result == "FAIL"


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
    T pixels in [0, 1] and one of 10 classes; PTB: character ids of a 50-symbol vocabulary, the state
    carried from one segment to the next."""
    cls = task_class(name)
    if not cls.has_data_files:
        return make_task(name, seed=seed, batch_size=batch, T=T)

    class Synthetic(cls):
        def __init__(self):  # no data to read
            self.seed, self.batch_size = seed, batch
            if cls.token_inputs:
                self.vocab_size = self.input_size = self.output_size = 50

        def train_batch(self, step: int) -> Batch:
            gen = generator(seed, 7, step)
            if cls.token_inputs:
                ids = torch.randint(0, 50, (T + 1, batch), generator=gen)
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


# ----------------------------------------------------------------------------- the checks

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


def _worst(got: dict, expected: dict) -> tuple[float, str]:
    """The largest relative difference over the tensors of two dicts, and its name."""
    errors = {name: relative(got[name], value) for name, value in expected.items() if value.is_floating_point()}
    worst = max(errors, key=errors.get)
    return errors[worst], worst


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


def check_parity(model: str, task_name: str, device: torch.device, sizes: Sizes) -> Row:
    config = config_for(task_name, model, sizes)
    task = synthetic_task(task_name, sizes.T[task_name], sizes.batch)
    net = seeded_network(config, task)
    reference, start = copy.deepcopy(net), copy.deepcopy(net)
    grads, expected_grads = {}, {}
    with exact_float32():
        losses = run_updates(config, net, task, device, torch.float32, sizes.updates, gradients=grads)
    expected = run_updates(config, reference, task, "cpu", torch.float64, sizes.updates, gradients=expected_grads)
    sensitivity = gradient_sensitivity(config, start, task, expected_grads)
    tolerance = {name: max(PARITY_RTOL["gradients"], GRADIENT_NOISE_MARGIN * sensitivity[name])
                 for name in expected_grads}
    gradient_errors = {name: relative(grads[name], value) for name, value in expected_grads.items() if name in grads}
    grad_worst = max(gradient_errors, key=lambda name: gradient_errors[name] / tolerance[name])
    errors = {"losses": max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, expected))}
    v = recurrent_matrix(net)
    if v is not None:
        errors["V"] = relative(v, recurrent_matrix(reference))
    errors["parameters"], param_worst = _worst(net.state_dict(), reference.state_dict())
    ok = (set(grads) == set(expected_grads) and all(math.isfinite(e) and e <= PARITY_RTOL[k] for k, e in errors.items())
          and all(math.isfinite(e) and e <= tolerance[name] for name, e in gradient_errors.items()))
    detail = (f"vs float64 cpu, {sizes.updates} updates: losses {errors['losses']:.1e}, first gradients "
              f"{gradient_errors[grad_worst]:.1e} ({grad_worst}; tolerance {tolerance[grad_worst]:.1e}), "
              + (f"final V {errors['V']:.1e}, " if "V" in errors else "")
              + f"final parameters {errors['parameters']:.1e} ({param_worst})")
    return Row("parity", model, task_name, "ok" if ok else "FAIL", detail)


def check_autocast(model: str, task_name: str, device: torch.device, sizes: Sizes) -> Row:
    config = config_for(task_name, model, sizes)
    task = synthetic_task(task_name, sizes.T[task_name], sizes.batch)
    net = seeded_network(config, task)
    plain = copy.deepcopy(net)
    low = run_updates(config, net, task, device, torch.float32, 1, autocast=True)[0]
    full = run_updates(config, plain, task, device, torch.float32, 1)[0]
    finite = all(torch.isfinite(p).all() for p in net.parameters())
    error = abs(low - full) / max(abs(full), 1e-12)
    ok = finite and error <= AUTOCAST_RTOL
    return Row("autocast bf16", model, task_name, "ok" if ok else "FAIL",
               f"loss {low:.4g} vs float32 {full:.4g} ({error:.1e}; tolerance {AUTOCAST_RTOL:g})"
               + ("" if finite else "; non-finite parameters"))


def check_compile(model: str, task_name: str, device: torch.device, sizes: Sizes, backend: str = "inductor") -> Row:
    config = config_for(task_name, model, sizes)
    task = synthetic_task(task_name, sizes.T[task_name], sizes.batch)
    net = seeded_network(config, task)
    eager = copy.deepcopy(net)
    torch._dynamo.reset()
    compiled = torch.compile(net, backend=backend)
    with exact_float32():
        got = run_updates(config, net, task, device, torch.float32, sizes.updates, forward=compiled)
        expected = run_updates(config, eager, task, device, torch.float32, sizes.updates)
    error = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(got, expected))
    ok = math.isfinite(error) and error <= COMPILE_RTOL
    return Row("torch.compile", model, task_name, "ok" if ok else "FAIL",
               f"{backend}, {sizes.updates} updates vs eager: loss {error:.1e}; tolerance {COMPILE_RTOL:g}")


def graphs_apply(device: torch.device) -> bool:
    return training_step.GRAPHS.available(device)


def check_cuda_graph(model: str, task_name: str, device: torch.device, sizes: Sizes) -> Row:
    """The trainer's update replayed from CUDA graphs against the same updates made eagerly on the device:
    the losses of every update and the parameters after the last, from the same start."""
    config = config_for(task_name, model, sizes)
    task = synthetic_task(task_name, sizes.T[task_name], sizes.batch)
    net = seeded_network(config, task)
    eager = copy.deepcopy(net)
    updates = WARMUP + sizes.updates  # the first WARMUP eager, then one capture and its replays
    captured = []
    with exact_float32():
        got = run_updates(config, net, task, device, torch.float32, updates, captured=captured)
        expected = run_updates(config, eager, task, device, torch.float32, updates)
    if captured[0].eager_because is not None:
        return Row("cuda graph", model, task_name, f"skipped (runs eagerly: {captured[0].eager_because})")
    errors = {"losses": max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(got, expected))}
    errors["parameters"], worst = _worst(net.state_dict(), eager.state_dict())
    ok = all(math.isfinite(e) and e <= CUDA_GRAPH_RTOL for e in errors.values())
    return Row("cuda graph", model, task_name, "ok" if ok else "FAIL",
               f"{updates} updates ({WARMUP} eager, then replayed) vs eager: losses {errors['losses']:.1e}, "
               f"parameters {errors['parameters']:.1e} ({worst}); tolerance {CUDA_GRAPH_RTOL:g}")


def _train_options(task: str, model: str, sizes: Sizes, device: torch.device, data_dir) -> dict:
    cls = task_class(task)
    options = {"device": str(device), "seed": 0, "log_every": 1, "eval_every": 2, "checkpoint_every": 2,
               "lr_schedule": "none"}
    if cls.has_data_files:
        options["data_dir"] = data_dir
    if "eval_batch_size" in cls.CONFIG_OPTIONS:
        options["eval_batch_size"] = EVAL_BATCH
    return options


def _final_parameters(folder: Path) -> dict:
    return checkpoint.load(runfolder.last_checkpoint(folder))["model"]


def _quietly(function, *args, **kwargs):
    """Runs ``function`` with its stdout (the trainer's progress lines) discarded."""
    with contextlib.redirect_stdout(io.StringIO()):
        return function(*args, **kwargs)


def _train_to_checkpoint(config: dict, resume: bool = False) -> bool:
    """Trains quietly; True if an evaluation diverged.  train() writes the last checkpoint before it refuses a run
    whose validation or test score is not finite, and that checkpoint's parameters are what the resume check
    compares; a divergence of the updates themselves (a skipped update, or a run stopped early) is a failure."""
    try:
        _quietly(train, config, resume=resume)
    except TrainingDiverged:
        last = runfolder.last_checkpoint(config["out"])
        saved = checkpoint.load(last) if last.is_file() else {}
        if saved.get("step") != config["steps"] or saved.get("skipped", 0):
            raise
        return True
    return False


def check_resume(model: str, task_name: str, device: torch.device, sizes: Sizes, data_dir=None,
                 workdir: Path | None = None) -> Row:
    updates = 4
    options = _train_options(task_name, model, sizes, device, data_dir)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        straight = config_for(task_name, model, sizes, out=str(Path(tmp) / "straight"), steps=updates, **options)
        if task_class(task_name).has_data_files:
            try:
                build(straight)
            except UserError as error:  # the data is not where it was looked for
                return Row("save/load/resume", model, task_name, f"skipped (no data: {error})")
        diverged = _train_to_checkpoint(straight)
        split = config_for(task_name, model, sizes, out=str(Path(tmp) / "split"), steps=updates // 2, **options)
        diverged |= _train_to_checkpoint(split)
        diverged |= _train_to_checkpoint({**split, "steps": updates}, resume=True)
        a, b = _final_parameters(Path(tmp) / "split"), _final_parameters(Path(tmp) / "straight")
    tolerance = RESUME_RTOL.get(device.type, 1e-5)
    errors = {name: relative(a[name], b[name]) for name in b if b[name].is_floating_point()}
    worst = max(errors, key=errors.get)
    ok = set(a) == set(b) and errors[worst] <= tolerance
    how = "equal" if tolerance == 0 else f"within {tolerance:g}"
    note = "; an evaluation was not finite, every update was (parameters compared all the same)" if diverged else ""
    return Row("save/load/resume", model, task_name, "ok" if ok else "FAIL",
               f"{updates} updates vs {updates // 2} + resume: parameters {how} (largest difference "
               f"{errors[worst]:.1e}, {worst}){note}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_ddp(model: str, task_name: str, device: torch.device, sizes: Sizes, workdir: Path | None = None,
              timeout: float = 300) -> Row:
    """Two processes of ``nnrnn train``, each with the environment torchrun gives, against one process."""
    updates = 2
    args = ["train", task_name, "--model", model, "--hidden", str(sizes.hidden), "--batch-size",
            str(2 * sizes.batch), "--T", str(sizes.T[task_name]), "--steps", str(updates), "--eval-every",
            str(updates), "--no-progress", "--device", device.type, "--preset", "paper"]
    package_root = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        port = _free_port()
        processes = []
        for rank in range(2):
            env = {**os.environ, "WORLD_SIZE": "2", "RANK": str(rank), "LOCAL_RANK": str(rank),
                   "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                   "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
                   "OMP_NUM_THREADS": "1"}
            processes.append(subprocess.Popen([sys.executable, "-m", "nnrnn", *args, "--out", str(Path(tmp) / "ddp")],
                                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outputs = []
        for process in processes:
            try:
                outputs.append(process.communicate(timeout=timeout)[0])
            except subprocess.TimeoutExpired:
                process.kill()
                outputs.append(process.communicate()[0])
        if any(p.returncode for p in processes):
            last = next((o.strip().splitlines()[-1] for o in outputs if o.strip()), "")
            return Row("ddp, 2 processes", model, task_name, "FAIL",
                       f"exit {[p.returncode for p in processes]}: {last[:120]}")
        single = config_for(task_name, model, Sizes(sizes.hidden, 2 * sizes.batch, sizes.T), steps=updates,
                            eval_every=updates, out=str(Path(tmp) / "one"), device=str(device))
        _quietly(train, single)
        a, b = _final_parameters(Path(tmp) / "ddp"), _final_parameters(Path(tmp) / "one")
    errors = {name: relative(a[name], b[name]) for name in b if b[name].is_floating_point()}
    worst = max(errors, key=errors.get)
    backend = "nccl" if device.type == "cuda" else "gloo"
    ok = errors[worst] <= DDP_RTOL
    return Row("ddp, 2 processes", model, task_name, "ok" if ok else "FAIL",
               f"{backend}, {updates} updates vs 1 process on the whole batch: parameters within "
               f"{errors[worst]:.1e} ({worst}); tolerance {DDP_RTOL:g}")


# ----------------------------------------------------------------------------- timing

class TorchBaseline(nn.Module):
    def __init__(self, kind: str, input_size: int, hidden: int):
        super().__init__()
        self.rnn = (nn.RNN(input_size, hidden, nonlinearity="relu") if kind == "rnn"
                    else nn.LSTM(input_size, hidden))

    def forward(self, x):
        return self.rnn(x)

    def regularization(self, delta, t_decay):
        return 0.0


class TimedUpdate:
    """Model, read-out, RMSprop over nnrnn's parameter groups, and one batch, on the device."""

    def __init__(self, build_model, size, device):
        t, b, n, i = size
        torch.manual_seed(0)
        self.model = build_model(i, n).to(device)
        # the layer's output features: N, or 2N for the complex nnRNN ([Re h, Im h])
        self.readout = nn.Linear(getattr(self.model, "output_size", n), CLASSES).to(device)
        self.optimizer = torch.optim.RMSprop(param_groups(nn.ModuleList([self.model, self.readout]), 1e-4, 1e-5),
                                             alpha=0.99)
        self.x = torch.randn(t, b, i, device=device)
        self.y = torch.randint(CLASSES, (t, b), device=device)

    def __call__(self):
        self.optimizer.zero_grad(set_to_none=True)
        out, _ = self.model(self.x)
        loss = F.cross_entropy(self.readout(out).reshape(-1, CLASSES), self.y.reshape(-1))
        penalty = self.model.regularization(1e-4, 1e-6)
        (loss + penalty).backward()
        self.optimizer.step()


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, update) -> float:
    """Seconds of one call of ``update``, the device's queued work finished before and after (CUDA runs
    kernels asynchronously: without the synchronisations the clock would time their launches only)."""
    _synchronize(device)
    start = time.perf_counter()
    update()
    _synchronize(device)
    return time.perf_counter() - start


def update_memory(device: torch.device, update) -> int | None:
    """Bytes one call of ``update`` allocates at its peak beyond what is resident before it (the models and
    optimizer states); None on the CPU, whose allocator torch does not count."""
    if device.type != "cuda":
        return None
    _synchronize(device)
    resident = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    update()
    _synchronize(device)
    return torch.cuda.max_memory_allocated(device) - resident


def time_updates(size, device: torch.device, models, rounds: int) -> dict:
    """name -> (median seconds of one update, peak bytes or None), all in this process, alternating."""
    builders = {"torch.nn.RNN": lambda i, n: TorchBaseline("rnn", i, n),
                "torch.nn.LSTM": lambda i, n: TorchBaseline("lstm", i, n)}
    for model in models:
        builders[model] = (lambda name: lambda i, n: create(name, i, n))(model)
    updates, peaks = {}, {}
    for name, build_model in builders.items():
        updates[name] = TimedUpdate(build_model, size, device)
        updates[name]()  # warm-up: cuDNN plans, the optimizer's state, the caching allocator
        peaks[name] = update_memory(device, updates[name])
    times = {name: [] for name in builders}
    names = list(builders)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(timed(device, updates[name]))
    return {name: (statistics.median(times[name]), peaks[name]) for name in names}


def time_captured(model: str, task_name: str, size, device: torch.device, rounds: int):
    """Median seconds of the trainer's update (:class:`TrainStep`) made eagerly and replayed from CUDA graphs
    (:class:`CapturedStep`), on one batch of ``task_name``'s shape at ``size``, alternating in this process;
    and why the update could not be captured (None when it was)."""
    t, b, n, _ = size
    config = config_for(task_name, model, Sizes(hidden=n, batch=b, T={task_name: t}))
    task = synthetic_task(task_name, t, b)
    batch = task.train_batch(0)
    inputs, targets = batch.inputs.to(device), batch.targets.to(device)
    steps = {}
    for captured in (False, True):
        net = seeded_network(config, task).to(device)
        optimizer = make_optimizer(config, net)
        steps[captured] = TrainStep(config, net, optimizer, task)
        if captured:
            capturable(optimizer, device.type == "cuda")
            steps[captured] = CapturedStep(steps[captured], device)
        for number in range(1, WARMUP + 2):  # warmed up and, for the graphs, captured
            steps[captured](inputs, targets, None, number)
    times = {False: [], True: []}
    for r in range(rounds):
        for captured in ((False, True) if r % 2 == 0 else (True, False)):
            times[captured].append(timed(device, functools.partial(steps[captured], inputs, targets, None, 1)))
    return statistics.median(times[False]), statistics.median(times[True]), steps[True].eager_because


def timing_rows(device: torch.device, models, quick: bool, rounds: int) -> list[Row]:
    rows = []
    for task_name, size in (QUICK_SIZES if quick else PAPER_SIZES).items():
        label = f"{task_name} {size}"
        results = time_updates(size, device, models, rounds)
        rnn, lstm = results["torch.nn.RNN"][0], results["torch.nn.LSTM"][0]
        # at --quick's toy sizes fixed per-call costs dominate: a ratio there says nothing of the paper's sizes
        toy = ((" (toy size, not the paper's)", "; --quick's toy size: fixed per-call costs dominate, so the ratio "
                "does not predict the paper's sizes, which `nnrnn doctor` without --quick times; ")
               if quick else ("", "; "))
        for name, (seconds, peak) in results.items():
            memory = f"peak {peak / 2 ** 20:.0f} MB above resident" if peak is not None else "peak memory n/a on cpu"
            rows.append(Row("update time", name, label,
                            f"{seconds / rnn:.2f}× RNN, {seconds / lstm:.2f}× LSTM{toy[0]}",
                            f"median of {rounds}: {seconds * 1e3:.1f} ms{toy[1]}{memory}"))
        for model in models:
            if not graphs_apply(device):
                continue
            eager, captured, why = time_captured(model, task_name, size, device, rounds)
            if why is not None:
                rows.append(Row("update time, cuda graph", model, label, f"skipped (runs eagerly: {why})"))
                continue
            rows.append(Row("update time, cuda graph", model, label, f"{captured / eager:.2f}× eager",
                            f"the trainer's update, median of {rounds}: eager {eager * 1e3:.1f} ms, replayed "
                            f"{captured * 1e3:.1f} ms"))
    return rows


# ----------------------------------------------------------------------------- the command

def run_checks(device: torch.device, models=PAPER_MODELS, tasks=TASKS, quick: bool = False, timing: bool = True,
               data_dir=None, rounds: int | None = None, log=None) -> list[Row]:
    sizes = QUICK if quick else FULL
    rows: list[Row] = []

    def add(row: Row) -> None:
        rows.append(row)
        if log is not None:
            log(row)

    def guarded(check: str, model: str, task: str, function, *args, **kwargs) -> None:
        started = time.perf_counter()
        try:
            row = function(*args, **kwargs)
        except Exception as error:  # a crash is a failed check, reported with the others
            row = Row(check, model, task, "FAIL", f"{type(error).__name__}: {str(error).splitlines()[0][:140]}"
                      if str(error) else type(error).__name__)
        row.detail += f" [{time.perf_counter() - started:.1f} s]"
        add(row)

    for task in tasks:
        for model in models:
            guarded("parity", model, task, check_parity, model, task, device, sizes)
    for task in tasks:
        for model in models:
            if quick and task != "copy" and model != "nnrnn":
                add(Row("save/load/resume", model, task, "skipped (--quick: nnrnn only on this task)"))
                continue
            guarded("save/load/resume", model, task, check_resume, model, task, device, sizes, data_dir)
    for model in models:
        guarded("autocast bf16", model, "copy", check_autocast, model, "copy", device, sizes)
    for model in models:
        if not quick:
            guarded("torch.compile", model, "copy", check_compile, model, "copy", device, sizes)
        elif model == "nnrnn":  # Dynamo's tracing of nnrnn's custom ops, without inductor's code generation
            guarded("torch.compile", model, "copy", check_compile, model, "copy", device, sizes, backend="eager")
        else:
            add(Row("torch.compile", model, "copy", "skipped (--quick)"))
    for model in models:
        if not graphs_apply(device):
            add(Row("cuda graph", model, "copy", f"skipped (CUDA graphs need a CUDA device, not {device.type})"))
        else:
            guarded("cuda graph", model, "copy", check_cuda_graph, model, "copy", device, sizes)
    cuda_devices = torch.cuda.device_count() if device.type == "cuda" else 0
    ddp_model = "nnrnn" if "nnrnn" in models else models[0]
    if quick:
        add(Row("ddp, 2 processes", ddp_model, "copy", "skipped (--quick)"))
    elif device.type == "cuda" and cuda_devices < 2:
        add(Row("ddp, 2 processes", ddp_model, "copy", f"skipped ({cuda_devices} device)"))
    else:
        guarded("ddp, 2 processes", ddp_model, "copy", check_ddp, ddp_model, "copy", device, sizes)
    if timing:
        try:
            for row in timing_rows(device, list(models), quick, rounds or (7 if quick else 5)):
                add(row)
        except Exception as error:
            add(Row("update time", "", "", "FAIL", f"{type(error).__name__}: {str(error)[:140]}"))
    else:
        add(Row("update time", "", "", "skipped (--no-timing)"))
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| check | model | task | result | detail |", "|---|---|---|---|---|"]
    lines += [f"| {r.check} | {r.model} | {r.task} | {r.result} | {r.detail} |" for r in rows]
    return "\n".join(lines)


def describe(device: torch.device) -> str:
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        return f"{name} (cuda, {torch.cuda.device_count()} device(s)), torch {torch.__version__}"
    capability = torch.backends.cpu.get_cpu_capability()
    return f"cpu: {describe_cpu()} ({torch.get_num_threads()} threads, {capability}), torch {torch.__version__}"


def _names(text: str | None, allowed, what: str) -> tuple:
    if text is None:
        return tuple(allowed)
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise UserError(f"--{what}: unknown {', '.join(unknown) or 'empty list'}; choose from {', '.join(allowed)}")
    return names


def run_doctor(args) -> int:
    device = check_device(args.device)
    models = PAPER_MODELS if args.models is None else _names(args.models, MODELS, "models")
    tasks = _names(args.tasks, TASKS, "tasks")
    if args.rounds is not None and args.rounds < 1:
        raise UserError(f"--rounds must be a positive integer; got {args.rounds}")
    started = time.perf_counter()
    print(f"nnrnn doctor on {describe(device)}{' (--quick)' if args.quick else ''}", flush=True)
    progress = (lambda row: print(f"  {row.check} {row.model} {row.task}: {row.result}", file=sys.stderr,
                                  flush=True)) if sys.stderr.isatty() else None  # the table comes at the end
    rows = run_checks(device, models, tasks, quick=args.quick, timing=not args.no_timing, data_dir=args.data_dir,
                      rounds=args.rounds, log=progress)
    print(table(rows))
    from .kernel_policy import policy
    from .kernel_report import table as policy_table
    print(f"kernel policy on {device.type} (float32), as the checks above used it:")  # decisions made by then
    print("\n".join(policy_table(policy(device, torch.float32).describe())))
    failed = [r for r in rows if r.failed]
    print(f"{len(rows) - len(failed)} of {len(rows)} rows passed or skipped, {len(failed)} failed, "
          f"in {time.perf_counter() - started:.0f} s", flush=True)
    return 1 if failed else 0
