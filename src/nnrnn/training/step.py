"""One training update, as the trainer and ``nnrnn doctor`` both make it, and its capture in a CUDA graph.

:class:`TrainStep` is the update itself (the reference): the task's loss plus the model's penalty, backward,
gradient clipping, and the optimizer's step only when the loss and the gradient norm are finite (a skipped
update leaves the parameters, the optimizer's state and the carried state as they were).

:class:`CapturedStep` is its fast path on CUDA: after a few eager updates of one shape it captures the update in
two CUDA graphs sharing one memory pool (forward, loss, backward and clipping; then the optimizer's step) and
replays them for every later batch of that shape, copying each batch into the graphs' static inputs.  The
finiteness test stays between the two graphs, on the host, so the non-finite skip behaves as in eager.  Other
shapes (a short last batch, PTB's first segment without a carried state) and changed learning rates (the
plateau schedule) run eagerly until they too have been seen often enough.  The graph API is reached through
:data:`GRAPHS` only, so the tests drive this logic on the CPU with a stand-in for it.
"""
from __future__ import annotations

import contextlib
import functools
import math
import warnings
from dataclasses import dataclass

import torch
from torch import nn

from ..kernels.policy import policy
from ..parametrizations import rebase_

WARMUP = 3  # eager updates of one shape before it is captured (torch.cuda.make_graphed_callables warms up 3)


def detach_state(state):
    """The carried hidden state cut from the graph that made it (a tensor, a tuple of them, or None)."""
    if state is None:
        return None
    if isinstance(state, tuple):
        return tuple(s.detach() for s in state)
    return state.detach()


@dataclass
class StepResult:
    """What one update produced: the task's loss (a 0-d tensor on the device) and metric sums, the gradient norm
    before clipping, whether both were finite (else the update was skipped), and the state to carry on."""

    loss: torch.Tensor
    stats: dict
    grad_norm: torch.Tensor
    finite: bool
    carried: torch.Tensor | tuple | None


class TrainStep:
    """One training update of ``net`` on ``task``'s loss through ``optimizer``, configured by ``config``
    (``clip``, ``delta``, ``t_decay``, ``rebase_every``).

    ``forward``: what runs the network (its DistributedDataParallel wrapper, ``torch.compile(net)``); ``net``
    by default.  ``agree(finite) -> bool``: makes every process take the same branch (DDP).  ``autocast``:
    forward and loss under ``torch.autocast(bfloat16)`` on the inputs' device (the doctor checks that).
    """

    def __init__(self, config: dict, net: nn.Module, optimizer: torch.optim.Optimizer, task, forward=None,
                 agree=None, autocast: bool = False):
        self.config, self.net, self.optimizer, self.task = config, net, optimizer, task
        self.forward = net if forward is None else forward
        self.agree = agree
        self.autocast = autocast
        self.clip = config["clip"] or math.inf

    def gradients(self, inputs: torch.Tensor, targets: torch.Tensor, carried):
        """Forward, loss + penalty, backward and clipping, with no value read to the host (the part
        :class:`CapturedStep` captures first): (loss, metric sums, gradient norm before clipping, new state)."""
        self.optimizer.zero_grad(set_to_none=False)  # in place: a captured graph keeps writing the same .grad
        with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            outputs, new_carried = self.forward(inputs, carried)
            loss, stats = self.task.loss(outputs.float() if self.autocast else outputs, targets)
        penalty = self.net.rnn.regularization(self.config["delta"], self.config["t_decay"])
        (loss + penalty).backward()
        grad_norm = nn.utils.clip_grad_norm_(self.net.parameters(), self.clip)
        return loss, stats, grad_norm, detach_state(new_carried)

    def finite(self, loss: torch.Tensor, grad_norm: torch.Tensor) -> bool:
        """Whether the update may be applied: loss and gradient norm finite (on every process)."""
        finite = bool(torch.isfinite(loss.detach()) & torch.isfinite(grad_norm))
        return self.agree(finite) if self.agree is not None else finite

    def apply(self) -> None:
        self.optimizer.step()

    def rebase(self, number: int) -> None:
        """Dynamic trivialization: P's base moved every ``rebase_every`` updates (``number`` counts from 1)."""
        if self.config.get("rebase_every") and number % self.config["rebase_every"] == 0:
            rebase_(self.net)

    def __call__(self, inputs: torch.Tensor, targets: torch.Tensor, carried, number: int) -> StepResult:
        """Update ``number`` (counted from 1) on one batch, from the carried state ``carried`` (or None)."""
        self.optimizer.zero_grad(set_to_none=True)
        loss, stats, grad_norm, new_carried = self.gradients(inputs, targets, detach_state(carried))
        finite = self.finite(loss, grad_norm)
        if finite:
            self.apply()
            self.rebase(number)
        return StepResult(loss.detach(), stats, grad_norm, finite, new_carried if finite else detach_state(carried))


class CudaGraphs:
    """The part of ``torch.cuda``'s graph API :class:`CapturedStep` uses, in one place (a test replaces it)."""

    @staticmethod
    def available(device: torch.device) -> bool:
        return device.type == "cuda"

    @staticmethod
    @contextlib.contextmanager
    def warmup(device: torch.device):
        """Eager updates before a capture run on a side stream, as torch's whole-network capture recipe does."""
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            yield
        torch.cuda.current_stream(device).wait_stream(stream)

    @staticmethod
    @contextlib.contextmanager
    def no_sync(device: torch.device):
        """Any operation that waits for the device (a value read to the host) raises a RuntimeError inside."""
        previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode(previous)

    @staticmethod
    def capture(function, pool=None):
        """(graph, outputs): ``function``'s kernels recorded, not run; its outputs are the tensors each replay
        rewrites."""
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            outputs = function()
        return graph, outputs


GRAPHS = CudaGraphs()


def _copy_into(static, value) -> None:
    if isinstance(static, tuple):
        for s, v in zip(static, value):
            _copy_into(s, v)
    elif static is not None:
        static.copy_(value)


def _clone(value):
    if isinstance(value, tuple):
        return tuple(_clone(v) for v in value)
    return None if value is None else value.clone()


def _shape(value):
    if isinstance(value, tuple):
        return tuple(_shape(v) for v in value)
    return None if value is None else (tuple(value.shape), value.dtype)


class CapturedStep:
    """:class:`TrainStep` replayed from CUDA graphs for every batch of a shape seen :data:`WARMUP` times before
    (see the module's docstring); called as a :class:`TrainStep` is, with the same :class:`StepResult`.

    On CUDA the optimizer must be capturable (:func:`capturable`), its step counters on the device.  The
    learning rates are part of what a graph holds, so a change of them (the plateau schedule) starts a new
    warm-up and capture.  One pair of graphs is kept, the latest captured.  The task's loss must return its
    metric sums as tensors (a number read to the host would be frozen into the graph).
    """

    def __init__(self, step: TrainStep, device: torch.device):
        self.step, self.device = step, device
        self.key = None        # the shapes and learning rates the graphs hold
        self.graphs = None     # (gradients graph, optimizer graph)
        self.static = None     # (inputs, targets, carried) the graphs read
        self.results = None    # (loss, stats, grad_norm, new carried) the gradients graph writes
        self.pending, self.seen = None, 0  # a key being warmed up and its finite eager updates so far
        self.captures = self.replays = 0
        self.eager_because = None  # why this update cannot be captured, once found: every update is then eager

    def _key(self, inputs, targets, carried):
        rates = tuple(group["lr"] for group in self.step.optimizer.param_groups)
        return _shape(inputs), _shape(targets), _shape(carried), rates

    def __call__(self, inputs: torch.Tensor, targets: torch.Tensor, carried, number: int) -> StepResult:
        if self.eager_because is not None:
            return self.step(inputs, targets, carried, number)
        key = self._key(inputs, targets, carried)
        if key != self.key:
            if key != self.pending or self.seen < WARMUP:
                return self._warm(key, inputs, targets, carried, number)
            try:
                self._capture(key, inputs, targets, carried)
            except RuntimeError as error:  # what the probe cannot see (a capture of an unsupported operation)
                return self._give_up(f"its capture failed ({str(error).splitlines()[0][:120]})", inputs, targets,
                                     carried, number)
        _copy_into(self.static, (inputs, targets, detach_state(carried)))
        return self._replay(number, carried)

    def _give_up(self, why: str, inputs, targets, carried, number) -> StepResult:
        self.eager_because = why
        self.graphs = self.results = self.static = None
        warnings.warn(f"every training update runs eagerly, without a CUDA graph: {why}", RuntimeWarning,
                      stacklevel=3)
        return self.step(inputs, targets, carried, number)

    def _probe(self, inputs, targets, carried) -> bool:
        """Whether the update's forward and backward run without reading a value to the host (a capture cannot
        hold one); tried once, with the random number generators put back after."""
        devices = [self.device] if self.device.type == "cuda" else []
        try:
            with torch.random.fork_rng(devices=devices), GRAPHS.no_sync(self.device):
                self.step.gradients(inputs, targets, detach_state(carried))
        except RuntimeError as error:
            self.eager_because = f"it reads a value to the host ({str(error).splitlines()[0][:120]})"
            return False
        return True

    def _warm(self, key, inputs, targets, carried, number) -> StepResult:
        if self.captures == 0 and self.pending is None and not self._probe(inputs, targets, carried):
            return self._give_up(self.eager_because, inputs, targets, carried, number)
        if key != self.pending:
            self.pending, self.seen = key, 0
        with GRAPHS.warmup(self.device):
            result = self.step(inputs, targets, carried, number)
        self.seen += result.finite  # a capture needs the optimizer's state that a real step makes
        return result

    def _capture(self, key, inputs, targets, carried) -> None:
        self.graphs = self.results = None  # the previous pair's memory goes back to the allocator
        self.static = (inputs.clone(), targets.clone(), _clone(detach_state(carried)))
        self.step.optimizer.zero_grad(set_to_none=True)  # .grad allocated in the graphs' pool, rewritten by each replay
        gradients, self.results = GRAPHS.capture(functools.partial(self.step.gradients, *self.static))
        update, _ = GRAPHS.capture(self.step.apply, pool=gradients.pool())
        self.graphs, self.key = (gradients, update), key
        self.pending, self.seen = None, 0
        self.captures += 1

    def _replay(self, number: int, carried) -> StepResult:
        gradients, update = self.graphs
        gradients.replay()
        loss, stats, grad_norm, new_carried = self.results
        finite = self.step.finite(loss, grad_norm)
        if finite:
            update.replay()
            self.step.rebase(number)
        self.replays += 1
        # the graphs overwrite their outputs at the next replay: what outlives this update is copied out
        kept = _clone(new_carried) if finite else detach_state(carried)
        stats = {name: tuple(_clone(v) if isinstance(v, torch.Tensor) else v for v in sums)
                 for name, sums in stats.items()}
        return StepResult(loss.detach().clone(), stats, grad_norm.clone(), finite, kept)


def capturable(optimizer: torch.optim.Optimizer, on: bool) -> None:
    """Make ``optimizer`` capturable in a CUDA graph (its step counters on the parameters' device) or not; also
    after ``load_state_dict``, which brings back the flag the checkpoint was saved with."""
    for group in optimizer.param_groups:
        group["capturable"] = on
        if on:
            for p in group["params"]:
                state = optimizer.state.get(p, {})
                if "step" in state:
                    state["step"] = state["step"].to(device=p.device, dtype=torch.float32)


def make_step(step: TrainStep, device: torch.device, enabled: bool):
    """The update a run makes: :class:`CapturedStep` where CUDA graphs are ``enabled``, the kernel policy captures
    on ``device`` and graphs are available there, else ``step`` itself."""
    captured = enabled and policy(device).capture(GRAPHS.available(device))
    return CapturedStep(step, device) if captured else step
