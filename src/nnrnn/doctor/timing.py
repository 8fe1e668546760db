"""The doctor's update timing at the paper's sizes, against torch.nn.RNN, torch.nn.GRU and torch.nn.LSTM in the same
process."""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

from ..models import create, param_groups
from ..training.network import seeded_network
from ..training.step import WARMUP, CapturedStep, TrainStep, capturable
from ..training.train import make_optimizer
from .checks import graphs_apply
from .harness import alternate, medians, update_memory
from .rows import Row
from .workload import CLASSES, PAPER_SIZES, QUICK_SIZES, Sizes, config_for, synthetic_task


class TorchBaseline(nn.Module):
    def __init__(self, kind: str, input_size: int, hidden: int):
        super().__init__()
        self.rnn = {"rnn": lambda: nn.RNN(input_size, hidden, nonlinearity="relu"),
                    "lstm": lambda: nn.LSTM(input_size, hidden), "gru": lambda: nn.GRU(input_size, hidden)}[kind]()

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


def time_updates(size, device: torch.device, models, rounds: int) -> dict:
    """name -> (median seconds of one update, peak bytes or None), all in this process, alternating."""
    builders = {"torch.nn.RNN": lambda i, n: TorchBaseline("rnn", i, n),
                "torch.nn.GRU": lambda i, n: TorchBaseline("gru", i, n),
                "torch.nn.LSTM": lambda i, n: TorchBaseline("lstm", i, n)}
    for model in models:
        builders[model] = (lambda name: lambda i, n: create(name, i, n))(model)
    updates, peaks = {}, {}
    for name, build_model in builders.items():
        updates[name] = TimedUpdate(build_model, size, device)
        updates[name]()  # warm-up: cuDNN plans, the optimizer's state, the caching allocator
        peaks[name] = update_memory(device, updates[name])
    seconds = medians(alternate(updates, rounds, device))
    return {name: (seconds[name], peaks[name]) for name in builders}


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
    seconds = medians(alternate({captured: functools.partial(steps[captured], inputs, targets, None, 1)
                                 for captured in (False, True)}, rounds, device))
    return seconds[False], seconds[True], steps[True].eager_because


def timing_rows(device: torch.device, models, quick: bool, rounds: int) -> list[Row]:
    rows = []
    for task_name, size in (QUICK_SIZES if quick else PAPER_SIZES).items():
        label = f"{task_name} {size}"
        results = time_updates(size, device, models, rounds)
        rnn, gru, lstm = (results[f"torch.nn.{name}"][0] for name in ("RNN", "GRU", "LSTM"))
        # at --quick's toy sizes fixed per-call costs dominate: a ratio there says nothing of the paper's sizes
        toy = ((" (toy size, not the paper's)", "; --quick's toy size: fixed per-call costs dominate, so the ratio "
                "does not predict the paper's sizes, which `nnrnn doctor` without --quick times; ")
               if quick else ("", "; "))
        for name, (seconds, peak) in results.items():
            memory = f"peak {peak / 2 ** 20:.0f} MB above resident" if peak is not None else "peak memory n/a on cpu"
            rows.append(Row("update time", name, label,
                            f"{seconds / rnn:.2f}× RNN, {seconds / gru:.2f}× GRU, {seconds / lstm:.2f}× LSTM{toy[0]}",
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
