"""Small training runs and scripted validations shared by the tests of the training procedure."""
import contextlib
import functools
import hashlib
from pathlib import Path

import torch

from nnrnn_cli import command as cli
from nnrnn.training import checkpoint
from nnrnn.training import network as network_module
from nnrnn.training import evaluation
from nnrnn.training.config import resolve_config

REPO = Path(__file__).resolve().parents[1]
TINY = ["--hidden", "8", "--T", "3", "--batch-size", "2", "--no-progress"]


def copy_config(tmp_path, name="run", **options):
    return resolve_config({"task": "copy", "model": "nnrnn", "hidden": 8, "T": 4, "batch_size": 4, "steps": 2,
                           "log_every": 1, "eval_every": 1, "progress": False, "out": str(tmp_path / name), **options})


def with_network(monkeypatch, edit):
    """Make the trainer apply ``edit(net)`` to the network it builds, before training starts."""
    real = network_module.build_network

    def build_network(*args, **kwargs):
        net = real(*args, **kwargs)
        with torch.no_grad():
            edit(net)
        return net
    monkeypatch.setattr(network_module, "build_network", build_network)


def undraw(monkeypatch) -> None:
    """Figures are built but not drawn (the undrawn_figures fixture; a module-scoped fixture passes a
    ``pytest.MonkeyPatch.context()``)."""
    import matplotlib.figure

    def save(fig, fname, *args, **kwargs):
        Path(fname).write_bytes(b"\x89PNG not drawn (undrawn_figures)")
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", save)
    monkeypatch.setattr(matplotlib.figure.Figure, "tight_layout", lambda fig, *args, **kwargs: None)


# undraw for a process a test starts: the first lines of its script
UNDRAWN = r"""
import pathlib
import matplotlib.figure
matplotlib.figure.Figure.savefig = lambda fig, fname, *a, **k: pathlib.Path(fname).write_bytes(b"not drawn")
matplotlib.figure.Figure.tight_layout = lambda fig, *a, **k: None
"""


def parameters(run: Path) -> dict:
    return checkpoint.load(run / "checkpoints" / "last.pt")["model"]


def fake_ptb(folder: Path, alphabet: str = "abcdefgh_", seed: int = 0) -> Path:
    """Small PTB character files (valid and test) in ``folder``, their symbols drawn from ``alphabet``."""
    import random
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, lines in (("valid", 400), ("test", 40)):
        text = "\n".join(" ".join(rng.choice(alphabet) for _ in range(rng.randint(5, 40))) for _ in range(lines))
        (folder / f"ptb.char.{split}.txt").write_text(text + "\n")
    return folder


def tensorboard_scalars(folder: Path) -> dict:
    """{tag: [(step, value), ...]} read back from the run's event files with TensorBoard's own reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    events = EventAccumulator(str(folder / "tensorboard"))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def script_validation(monkeypatch, metric: str, values: list) -> None:
    """The trainer's validations report ``values`` for ``metric``, one per validation, the rest as measured."""
    values, real_evaluate = iter(values), getattr(evaluation.evaluate, "real", evaluation.evaluate)

    def scripted(net, task, split, device):
        metrics = real_evaluate(net, task, split, device)
        return {**metrics, metric: next(values)} if split == "valid" else metrics
    scripted.real = real_evaluate  # scripting again replaces this script instead of wrapping it
    monkeypatch.setattr(evaluation, "evaluate", scripted)


def on_training_losses(monkeypatch, edit):
    """The copy task's training loss of 0-based update i becomes ``edit(i, loss)`` (evaluations untouched)."""
    from nnrnn.tasks.copy import CopyTask
    real_loss, count = CopyTask.loss, {"n": 0}

    def loss(self, outputs, targets):
        value, stats = real_loss(self, outputs, targets)
        if outputs.requires_grad:  # a training update, not an evaluation
            count["n"] += 1
            value = edit(count["n"] - 1, value)
        return value, stats
    monkeypatch.setattr(CopyTask, "loss", loss)


def nan_losses_at(monkeypatch, updates: set):
    """The copy task's training loss is NaN at the given 0-based updates."""
    on_training_losses(monkeypatch, lambda i, loss: loss * float("nan") if i in updates else loss)


def spy_states(monkeypatch) -> list:
    """Record (state passed in, state returned) of every training forward of the trainer's network."""
    calls = []

    def spy(net):
        real_forward = net.forward

        def forward(inputs, state=None):
            out, new_state = real_forward(inputs, state)
            if torch.is_grad_enabled():
                calls.append((state, new_state))
            return out, new_state
        net.forward = forward
    with_network(monkeypatch, spy)
    return calls


def assert_copies_train_apart(model, x, check_original):
    """A whole-model torch.save / torch.load and a deepcopy of ``model`` give its outputs on ``x``, train on their
    own (an SGD step over nnrnn.param_groups changes them), and leave ``model`` as it was (``check_original``
    compares its output with the expected one)."""
    import copy
    import io

    import nnrnn
    expected = model(x)[0]
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    for restored in (torch.load(buffer, weights_only=False), copy.deepcopy(model)):
        torch.testing.assert_close(restored(x)[0], expected)
        optimizer = torch.optim.SGD(nnrnn.param_groups(restored, 0.1, 0.1))
        restored(x)[0].sum().backward()
        optimizer.step()
        assert not torch.allclose(restored(x)[0], expected)
        check_original(model(x)[0], expected)
    return expected


class FakeGraph:
    """One captured graph of :class:`FakeGraphs`: ``replay`` re-runs the captured function and writes what it
    returns into the tensors the capture returned, as a CUDA graph rewrites its outputs in place."""

    def __init__(self, function, outputs, graphs):
        self.function, self.outputs, self.graphs = function, outputs, graphs

    def pool(self):
        return id(self)

    def replay(self):
        self.graphs.replays += 1
        if isinstance(self.function, functools.partial):  # the gradients: the static inputs as they are now
            self.graphs.replayed_inputs.append(self.function.args[0].clone())
        fresh = self.function()
        with torch.no_grad():
            _write_into(self.outputs, fresh)


def _write_into(static, fresh):
    if isinstance(static, torch.Tensor):
        static.copy_(fresh)
    elif isinstance(static, (tuple, list)):
        for s, f in zip(static, fresh, strict=True):
            _write_into(s, f)
    elif isinstance(static, dict):
        for key in static:
            _write_into(static[key], fresh[key])
    else:  # a number in a captured output is frozen at capture time: a real graph could not refresh it
        assert static == fresh or static is None, f"a captured output holds a host value ({static!r})"


def _poison(outputs):
    """NaN into every floating tensor of ``outputs``: a capture records kernels, it does not compute values."""
    if isinstance(outputs, torch.Tensor):
        if outputs.is_floating_point():
            outputs.detach().fill_(float("nan"))
    elif isinstance(outputs, (tuple, list)):
        for value in outputs:
            _poison(value)
    elif isinstance(outputs, dict):
        for value in outputs.values():
            _poison(value)


class FakeGraphs:
    """A stand-in for ``nnrnn.training.step.GRAPHS`` that works on the CPU.  ``capture`` runs the function once
    to get its output tensors and then puts back every tensor of the network and the optimizer (and the RNG) as
    it was before, and fills the outputs and gradients with NaN, since a real capture only records; it refuses a
    capture that creates optimizer state (which every replay would reset).  ``replay`` re-runs the function."""

    def __init__(self):
        self.graphs, self.replays, self.warmups, self.replayed_inputs = [], 0, 0, []

    @staticmethod
    def available(device):
        return True

    @contextlib.contextmanager
    def warmup(self, device):
        self.warmups += 1
        yield

    @staticmethod
    def no_sync(device):
        return contextlib.nullcontext()

    def capture(self, function, pool=None):
        step = (function.func if isinstance(function, functools.partial) else function).__self__
        net, optimizer = step.net, step.optimizer
        tensors = list(net.state_dict(keep_vars=True).values())
        tensors += [t for state in optimizer.state.values() for t in state.values() if isinstance(t, torch.Tensor)]
        saved, keys, rng = [t.detach().clone() for t in tensors], len(optimizer.state), torch.get_rng_state()
        outputs = function()
        with torch.no_grad():
            for tensor, value in zip(tensors, saved):
                tensor.copy_(value)
        assert len(optimizer.state) == keys, "optimizer state created inside a capture"
        torch.set_rng_state(rng)
        _poison(outputs)
        _poison([p.grad for p in net.parameters() if p.grad is not None])
        graph = FakeGraph(function, outputs, self)
        self.graphs.append(graph)
        return graph, outputs


def snapshot(folder: Path) -> dict:
    """{file: md5} of every file in ``folder`` but the lock: to show that nothing was written."""
    return {str(p.relative_to(folder)): hashlib.md5(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"}


def run_cli(capsys, *argv):
    """``nnrnn *argv`` in this process: its exit code and what it wrote to stderr."""
    code = cli.main([str(a) for a in argv])
    return code, capsys.readouterr().err


def one_line(code, err, *expected, exit_code=2):
    """The command failed with ``exit_code`` and one line, no traceback, holding each of ``expected``."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == exit_code and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("nnrnn: error: "), lines[0]
    for text in expected:
        assert text in lines[0], lines[0]


def steps_match_a_loaded_twin(model, twin, x, steps: int = 3) -> None:
    """``twin`` (a fresh model of ``model``'s architecture) loaded from ``model``'s state: ``steps`` no-grad steps of
    both, the state carried, give the same outputs: what a model reuses between no-grad calls is never stale."""
    twin.load_state_dict(model.state_dict())
    h, h_twin = None, None
    with torch.no_grad():
        for _ in range(steps):
            out, h = model(x, h)
            expected, h_twin = twin(x, h_twin)
            torch.testing.assert_close(out, expected, rtol=0, atol=0)
