"""``nnrnn doctor``: checks that nnrnn trains correctly on a device, and times it there, in one table.

For every model and task, at a small size:

* **parity**: K training updates on the device (float32) and the same K updates in float64 on the CPU
  from the same initial parameters and batches, through the project's optimizer, parameter groups,
  penalty and clipping; the losses of every update and the change of every parameter must agree within
  :data:`PARITY_RTOL`.  On the CPU this compares float32 with float64 on the CPU, which runs different
  loops (the compiled or oneDNN loops against the ``aten`` ones) and so still finds bugs.
* **resume**: N updates of the real :func:`nnrnn.train.train` in one go, against N/2 and then
  ``--resume`` to N; the final parameters must be equal (to :data:`RESUME_RTOL` on CUDA, where some
  kernels need not add in a fixed order).
* **autocast**: one update under ``torch.autocast(device, bfloat16)`` (docs/layers.md claims it on cpu and
  cuda): finite, and its loss within :data:`AUTOCAST_RTOL` of float32's.
* **compile**: the losses of K updates of ``torch.compile(network)`` against eager, within
  :data:`COMPILE_RTOL`.  With ``--quick``, nnRNN only and with ``backend="eager"`` (Dynamo's tracing of
  nnrnn's custom ops without inductor's code generation, which takes tens of seconds per model on a CPU).
* **ddp**: two processes of ``nnrnn train`` launched as torchrun launches them (NCCL on two CUDA
  devices, gloo on the CPU) against one process on the whole batch: the same parameters to
  :data:`DDP_RTOL`.  Skipped with one CUDA device, and with ``--quick``.
* **update time**: one training update (forward, backward, RMSprop step) at the paper's sizes,
  (784, 128, 512, 1) psMNIST and (150, 128, 1024, 200) PTB, as a ratio to torch.nn.RNN(relu) (cuDNN on a
  GPU) and to torch.nn.LSTM measured in the same process, alternating, median of several rounds; and the
  peak memory of one update (CUDA only).  ``--quick`` times a tiny size instead, to exercise the code.

psMNIST and PTB parity, autocast and compile use synthetic batches of those tasks' shapes (pixels in
[0, 1], 50 character ids carried across segments) with the tasks' own losses, so they need no data;
their resume rows run the real tasks and read "skipped (no data: ...)" where the data is not found.

The exit status is 1 if any check failed, else 0.
"""
from __future__ import annotations

import contextlib
import copy
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

from .training import checkpoint

from . import presets
from .errors import UserError
from .models import MODELS, PAPER_MODELS, create, param_groups
from .tasks import make_task, task_class
from .tasks.base import Batch, generator
# Everything taken from the trainer, in one place (nnrnn.train is being split up).
from .training.config import check_device, resolve_config
from .training.network import build, build_network
from .training.train import make_optimizer, train

TASKS = ("copy", "adding", "psmnist", "ptb")
PAPER_SIZES = {"psmnist": (784, 128, 512, 1), "ptb": (150, 128, 1024, 200)}  # (T, B, N, I)
QUICK_SIZES = {"psmnist": (24, 4, 16, 1), "ptb": (12, 4, 16, 8)}
CLASSES = 10

# float32 on the device against float64 on the CPU, relative (‖a − b‖ / ‖b‖ per tensor).  The losses of
# every update and the gradients of the first (same parameters, same batch: a wrong forward or backward on
# the device shows here) are held tight.  The recurrent matrix V and the parameters after the last update
# only catch gross errors (a parameter not updated, updated twice, on the wrong device): RMSprop divides each
# gradient entry by its running RMS, so an entry whose float64 gradient is zero or nearly so (nnRNN's T and
# the biases start at zero; A and EURNN's angles have directions that leave V unchanged) takes a whole step
# on float32 rounding alone.  The values measured on a CPU and the margins: docs/performance.md.
PARITY_RTOL = {"losses": 1e-3, "gradients": 1e-4, "V": 2e-2, "parameters": 0.2}
COMPILE_RTOL = 1e-4
AUTOCAST_RTOL = 0.1   # bfloat16 keeps 8 bits of mantissa; docs/layers.md reports within 7% of float32
RESUME_RTOL = {"cpu": 0.0, "cuda": 1e-5}
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

def config_for(task: str, model: str, sizes: Sizes, **options) -> dict:
    """The paper preset's options for (task, model) where it has them (the defaults for adding), at a small
    size."""
    base = {"task": task, "model": model, "hidden": sizes.hidden, "batch_size": sizes.batch, "progress": False}
    if task in ("copy", "adding"):
        base["T"] = sizes.T[task]
    in_paper = model in PAPER_MODELS  # the others (gru, nngru) have no preset: nnrnn's defaults
    if task == "adding" and in_paper:  # the paper has no adding task: its copy-task settings, where training is calm
        keep = ("optimizer", "lr", "lr_orth", "alpha", "delta", "t_decay", "init", "triangular", "bias")
        base.update({k: v for k, v in presets.lookup("paper", "copy", model).items() if k in keep})
    preset = "paper" if in_paper and task != "adding" else None  # PTB: bptt 150's table
    config = resolve_config({**base, **options}, preset)
    if task == "ptb":
        config["bptt"] = sizes.T[task]
        config["embedding"] = min(config["embedding"] or 0, 2 * sizes.hidden) or None
    return config


def synthetic_task(name: str, T: int, batch: int, seed: int = 0):
    """A task with the real task's loss and shapes; copy and adding are themselves synthetic.  psMNIST:
    T pixels in [0, 1] and one of 10 classes; PTB: character ids of a 50-symbol vocabulary, the state
    carried from one segment to the next."""
    if name in ("copy", "adding"):
        return make_task(name, seed=seed, batch_size=batch, T=T)
    cls = task_class(name)

    class Synthetic(cls):
        def __init__(self):  # no data to read
            self.seed, self.batch_size = seed, batch
            if name == "ptb":
                self.vocab_size = self.input_size = self.output_size = 50

        def train_batch(self, step: int) -> Batch:
            gen = generator(seed, 7, step)
            if name == "ptb":
                ids = torch.randint(0, 50, (T + 1, batch), generator=gen)
                return Batch(ids[:-1], ids[1:], carry=step > 0)
            return Batch(torch.rand(T, batch, 1, generator=gen), torch.randint(0, CLASSES, (batch,), generator=gen))

    return Synthetic()


def _to(tensor: torch.Tensor, device, dtype) -> torch.Tensor:
    return tensor.to(device=device, dtype=dtype) if tensor.is_floating_point() else tensor.to(device)


def _detach(state):
    if state is None:
        return None
    return tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()


def run_updates(config: dict, net: nn.Module, task, device, dtype, updates: int, forward=None,
                autocast: bool = False, gradients: dict | None = None) -> list[float]:
    """``updates`` training updates as nnrnn.train.train makes them (loss + penalty, clipping, the
    optimizer with its parameter groups, the state carried where the task carries it); the losses.
    ``gradients``, if given, receives the first update's gradients by parameter name."""
    net.to(device=device, dtype=dtype)
    optimizer = make_optimizer(config, net)
    forward = net if forward is None else forward
    clip = config["clip"] or math.inf
    losses, state = [], None
    for step in range(updates):
        batch = task.train_batch(step)
        inputs, targets = _to(batch.inputs, device, dtype), _to(batch.targets, device, dtype)
        state = state if batch.carry else None
        with torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=autocast):
            outputs, new_state = forward(inputs, state)
            loss, _ = task.loss(outputs.float() if autocast else outputs, targets)
        penalty = net.rnn.regularization(config["delta"], config["t_decay"])
        optimizer.zero_grad(set_to_none=True)
        (loss + penalty).backward()
        if step == 0 and gradients is not None:
            gradients.update({n: p.grad.detach().clone() for n, p in net.named_parameters() if p.grad is not None})
        nn.utils.clip_grad_norm_(net.parameters(), clip)
        optimizer.step()
        state = _detach(new_state)
        losses.append(loss.item())
    return losses


def network(config: dict, task) -> nn.Module:
    torch.manual_seed(config["seed"])
    return build_network(config, task.input_size, task.output_size, task.readout, task.vocab_size)


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


def recurrent_matrix(net: nn.Module) -> torch.Tensor:
    rnn = net.rnn
    with torch.no_grad():
        return rnn.weight_hh_l0 if isinstance(rnn, nn.LSTM) else rnn.recurrent_matrix()


def check_parity(model: str, task_name: str, device: torch.device, sizes: Sizes) -> Row:
    config = config_for(task_name, model, sizes)
    task = synthetic_task(task_name, sizes.T[task_name], sizes.batch)
    net = network(config, task)
    reference = copy.deepcopy(net)
    grads, expected_grads = {}, {}
    with exact_float32():
        losses = run_updates(config, net, task, device, torch.float32, sizes.updates, gradients=grads)
    expected = run_updates(config, reference, task, "cpu", torch.float64, sizes.updates, gradients=expected_grads)
    errors = {"losses": max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, expected))}
    errors["gradients"], grad_worst = _worst(grads, expected_grads)
    errors["V"] = relative(recurrent_matrix(net), recurrent_matrix(reference))
    errors["parameters"], param_worst = _worst(net.state_dict(), reference.state_dict())
    ok = set(grads) == set(expected_grads) and all(math.isfinite(e) and e <= PARITY_RTOL[k] for k, e in errors.items())
    detail = (f"vs float64 cpu, {sizes.updates} updates: losses {errors['losses']:.1e}, first gradients "
              f"{errors['gradients']:.1e} ({grad_worst}), final V {errors['V']:.1e}, final parameters "
              f"{errors['parameters']:.1e} ({param_worst})")
    return Row("parity", model, task_name, "ok" if ok else "FAIL", detail)


def check_autocast(model: str, task_name: str, device: torch.device, sizes: Sizes) -> Row:
    config = config_for(task_name, model, sizes)
    task = synthetic_task(task_name, sizes.T[task_name], sizes.batch)
    net = network(config, task)
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
    net = network(config, task)
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


def _train_options(task: str, model: str, sizes: Sizes, device: torch.device, data_dir) -> dict:
    options = {"device": str(device), "seed": 0, "log_every": 1, "eval_every": 2, "checkpoint_every": 2,
               "lr_schedule": "none"}
    if task in ("psmnist", "ptb"):
        options["data_dir"] = data_dir
        options["eval_batch_size"] = 2000 if task == "psmnist" else 10
    return options


def _final_parameters(folder: Path) -> dict:
    return checkpoint.load(folder / "checkpoints" / "last.pt")["model"]


def _quietly(function, *args, **kwargs):
    """Runs ``function`` with its stdout (the trainer's progress lines) discarded."""
    with contextlib.redirect_stdout(io.StringIO()):
        return function(*args, **kwargs)


def _train_to_checkpoint(config: dict, resume: bool = False) -> bool:
    """Trains quietly; True if the run's validation diverged.  The checkpoint is written before train()
    refuses a run whose validation score is not finite (a vanilla RNN does that on PTB, whose validation
    carries the state through the whole file), and its parameters are what the check compares."""
    try:
        _quietly(train, config, resume=resume)
    except UserError as error:
        if not str(error).startswith("training diverged: the validation"):
            raise
        return True
    return False


def check_resume(model: str, task_name: str, device: torch.device, sizes: Sizes, data_dir=None,
                 workdir: Path | None = None) -> Row:
    updates = 4
    options = _train_options(task_name, model, sizes, device, data_dir)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        straight = config_for(task_name, model, sizes, out=str(Path(tmp) / "straight"), steps=updates, **options)
        if task_name in ("psmnist", "ptb"):
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
    note = "; a validation score was not finite (parameters compared all the same)" if diverged else ""
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


def timing_rows(device: torch.device, models, quick: bool, rounds: int) -> list[Row]:
    rows = []
    for task_name, size in (QUICK_SIZES if quick else PAPER_SIZES).items():
        label = f"{task_name} {size}"
        results = time_updates(size, device, models, rounds)
        rnn, lstm = results["torch.nn.RNN"][0], results["torch.nn.LSTM"][0]
        for name, (seconds, peak) in results.items():
            memory = f"peak {peak / 2 ** 20:.0f} MB above resident" if peak is not None else "peak memory n/a on cpu"
            rows.append(Row("update time", name, label, f"{seconds / rnn:.2f}× RNN, {seconds / lstm:.2f}× LSTM",
                            f"median of {rounds}: {seconds * 1e3:.1f} ms; {memory}"))
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
    return f"cpu ({torch.get_num_threads()} threads, {capability}), torch {torch.__version__}"


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
    failed = [r for r in rows if r.failed]
    print(f"{len(rows) - len(failed)} of {len(rows)} rows passed or skipped, {len(failed)} failed, "
          f"in {time.perf_counter() - started:.0f} s", flush=True)
    return 1 if failed else 0


def add_doctor_parser(sub) -> None:
    p = sub.add_parser("doctor", help="check training on a device against float64 on the CPU, and time it",
                       description="Check every model and task on a device (parity with float64 on the CPU, "
                       "save/load/resume, autocast, torch.compile, DDP) and time one update at the paper's sizes "
                       "against torch.nn.RNN and torch.nn.LSTM. Prints one table; exits 1 if a check fails.")
    p.add_argument("--device", default="auto", help="auto (cuda if available, else cpu), cpu, cuda, cuda:1 ...")
    p.add_argument("--quick", action="store_true", help="tiny sizes, no compile or DDP, timing at a tiny size")
    p.add_argument("--no-timing", dest="no_timing", action="store_true", help="skip the update timing")
    p.add_argument("--models", help=f"comma-separated subset of {','.join(MODELS)} (default: the paper's, "
                                    f"{','.join(PAPER_MODELS)})")
    p.add_argument("--tasks", help=f"comma-separated subset of {','.join(TASKS)}")
    p.add_argument("--data-dir", dest="data_dir", help="where psmnist and ptb data are (default: nnrnn's usual places)")
    p.add_argument("--rounds", type=int, help="timing rounds (default 5, 7 with --quick)")
    p.set_defaults(func=run_doctor)
