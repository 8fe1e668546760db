"""The trainer's update replayed from CUDA graphs (nnrnn.training.step.CapturedStep), driven on the CPU through a
stand-in for torch.cuda's graph API (tests/helpers.FakeGraphs): warm-up, one capture, replays for equal shapes,
eager updates for other shapes, and the same losses, parameters and optimizer state as the eager update, through
clipping, the non-finite skip, a carried state, a change of learning rate and a resume."""
import copy
import json

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from helpers import FakeGraphs, copy_config
from nnrnn.doctor import workload
from nnrnn.errors import OptionError
from nnrnn.training import checkpoint, step
from nnrnn.training.config import resolve_config
from nnrnn.training.network import seeded_network
from nnrnn.training.train import make_optimizer, train


pytestmark = pytest.mark.usefixtures("undrawn_figures")  # what is trained and written, not the drawing


@pytest.fixture
def graphs(monkeypatch):
    fake = FakeGraphs()
    monkeypatch.setattr(step, "GRAPHS", fake)
    return fake


def steps(task_name="copy", model="nnrnn", **options):
    """An eager TrainStep and a CapturedStep over two copies of one network."""
    sizes = workload.Sizes(hidden=8, batch=4, T={task_name: 6})
    config = workload.config_for(task_name, model, sizes, **options)
    task = workload.synthetic_task(task_name, 6, 4)
    made = []
    for _ in range(2):
        net = seeded_network(config, task)
        made.append(step.TrainStep(config, net, make_optimizer(config, net), task))
    return task, made[0], step.CapturedStep(made[1], torch.device("cpu"))


def assert_same(eager: step.TrainStep, captured: step.CapturedStep):
    for (name, a), b in zip(eager.net.state_dict().items(), captured.step.net.state_dict().values()):
        assert torch.equal(a, b), name
    for a, b in zip(eager.optimizer.state.values(), captured.step.optimizer.state.values()):
        for key in a:
            assert torch.equal(a[key], b[key]), key


def run_both(eager, captured, batches):
    """The same batches through both; the outcomes side by side (the carried state follows each)."""
    outcomes, carried = [], [None, None]
    for number, (inputs, targets, carry) in enumerate(batches, 1):
        pair = []
        for i, update in enumerate((eager, captured)):
            outcome = update(inputs, targets, carried[i] if carry else None, number)
            carried[i] = outcome.carried
            pair.append(outcome)
        outcomes.append(pair)
    return outcomes


@pytest.mark.parametrize("optimizer", ["rmsprop", "adam"])
def test_warm_up_then_one_capture_then_replays_and_other_shapes_eager(graphs, optimizer):
    # clip: a threshold the gradients exceed, so clipping acts inside the graph
    task, eager, captured = steps(clip=0.05, optimizer=optimizer)
    batches = [(b.inputs, b.targets, b.carry) for b in map(task.train_batch, range(8))]
    short = (batches[0][0][:, :2], batches[0][1][:, :2], False)  # a short last batch
    sequence = batches[:6] + [short] + batches[6:]
    outcomes = run_both(eager, captured, sequence)
    assert graphs.warmups == step.WARMUP + 1  # the short batch is an eager update too
    assert len(graphs.graphs) == 2 and captured.captures == 1  # one pair: gradients, optimizer step
    assert captured.replays == len(sequence) - step.WARMUP - 1
    assert len(graphs.replayed_inputs) == captured.replays
    for (inputs, *_), replayed in zip(batches[step.WARMUP:6] + batches[6:], graphs.replayed_inputs):
        assert torch.equal(replayed, inputs)  # each batch copied into the graph's static input
    for a, b in outcomes:
        assert torch.equal(a.loss, b.loss) and torch.equal(a.grad_norm, b.grad_norm) and a.finite and b.finite
        assert {k: tuple(map(float, v)) for k, v in a.stats.items()} == \
            {k: tuple(map(float, v)) for k, v in b.stats.items()}
    assert float(outcomes[-1][0].grad_norm) > 0.05
    assert_same(eager, captured)


def test_a_non_finite_replay_is_skipped_as_in_eager(graphs):
    task, eager, captured = steps()
    batches = [(b.inputs, b.targets, b.carry) for b in map(task.train_batch, range(7))]
    batches[5] = (batches[5][0] * float("nan"), batches[5][1], False)
    run_both(eager, captured, batches[:5])
    before = copy.deepcopy(captured.step.net.state_dict())
    a, b = run_both(eager, captured, batches[5:6])[0]
    assert captured.replays == 3 and not a.finite and not b.finite  # the NaN batch was replayed, and skipped
    for name, value in captured.step.net.state_dict().items():
        assert torch.equal(value, before[name]), name
    run_both(eager, captured, batches[6:])
    assert_same(eager, captured)


def test_a_carried_state_and_its_first_segment(graphs):
    task, eager, captured = steps("ptb")  # segment 0 starts from no state: another shape, eager
    batches = [(b.inputs, b.targets, b.carry) for b in map(task.train_batch, range(7))]
    outcomes = run_both(eager, captured, batches)
    assert captured.captures == 1 and captured.replays == len(batches) - 1 - step.WARMUP
    assert all(torch.equal(a.loss, b.loss) for a, b in outcomes)
    assert torch.equal(outcomes[-1][0].carried, outcomes[-1][1].carried)
    assert_same(eager, captured)


def test_a_new_learning_rate_is_warmed_up_and_captured_again(graphs):
    task, eager, captured = steps()
    batches = [(b.inputs, b.targets, b.carry) for b in map(task.train_batch, range(12))]
    run_both(eager, captured, batches[:5])
    for update in (eager, captured.step):  # as the plateau schedule halves them
        for group in update.optimizer.param_groups:
            group["lr"] /= 2
    run_both(eager, captured, batches[5:])
    assert captured.captures == 2 and captured.replays == 2 + 12 - 5 - step.WARMUP
    assert_same(eager, captured)


def train_losses(folder):
    records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss"]) for r in records if r["split"] == "train" and "loss" in r]


def test_the_trainer_with_graphs_trains_and_resumes_as_eager(graphs, tmp_path):
    options = {"steps": 10, "eval_every": 5, "log_every": 1, "clip": 0.05, "rebase_every": 2}
    train(copy_config(tmp_path, "eager", cuda_graph=False, **options))
    assert not graphs.graphs  # turned off: every update eager
    train(copy_config(tmp_path, "graphs", **options))
    assert len(graphs.graphs) == 2 and graphs.replays == 2 * (10 - step.WARMUP)
    train(copy_config(tmp_path, "resumed", **{**options, "steps": 5}))
    train(copy_config(tmp_path, "resumed", **options), resume=True)  # warmed up and captured again
    assert len(graphs.graphs) == 6
    eager = checkpoint.load(tmp_path / "eager" / "checkpoints" / "last.pt")
    assert len(train_losses(tmp_path / "eager")) == 10
    for run in ("graphs", "resumed"):
        saved = checkpoint.load(tmp_path / run / "checkpoints" / "last.pt")
        for name, value in saved["model"].items():
            assert torch.equal(value, eager["model"][name]), (run, name)
        for key, state in eager["optimizer"]["state"].items():
            assert torch.equal(saved["optimizer"]["state"][key]["square_avg"], state["square_avg"]), (run, key)
        assert train_losses(tmp_path / run) == train_losses(tmp_path / "eager"), run


class RefuseHostReads(TorchDispatchMode):
    """What torch.cuda.set_sync_debug_mode("error") does on CUDA, on the CPU: a value read to the host raises."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            raise RuntimeError("called a synchronizing CUDA operation")
        return func(*args, **(kwargs or {}))


def test_an_update_that_reads_the_host_is_probed_once_and_runs_eagerly(graphs, monkeypatch):
    monkeypatch.setattr(graphs, "no_sync", lambda device: RefuseHostReads())
    task, eager, captured = steps("copy", "rnn")
    real_loss = task.loss

    def reading(outputs, targets):
        loss, stats = real_loss(outputs, targets)
        return loss, {**stats, "read": (float(loss.detach()), 1)}  # a number read to the host inside the update
    monkeypatch.setattr(task, "loss", reading)
    batches = [(b.inputs, b.targets, b.carry) for b in map(task.train_batch, range(6))]
    with pytest.warns(RuntimeWarning, match="reads a value to the host"):
        outcomes = run_both(eager, captured, batches)
    assert captured.captures == 0 and not graphs.graphs and graphs.warmups == 0
    assert all(torch.equal(a.loss, b.loss) for a, b in outcomes)
    assert_same(eager, captured)


def test_an_update_free_of_host_reads_passes_the_probe(graphs, monkeypatch):
    monkeypatch.setattr(graphs, "no_sync", lambda device: RefuseHostReads())
    task, eager, captured = steps("copy", "rnn")  # torch.nn.RNN's recurrence in nnrnn's loops: no host read
    batches = [(b.inputs, b.targets, b.carry) for b in map(task.train_batch, range(6))]
    run_both(eager, captured, batches)
    assert captured.eager_because is None and captured.captures == 1
    assert_same(eager, captured)


def test_a_run_resumed_on_the_cpu_from_a_capturable_optimizer_state(graphs, tmp_path):
    # what a run captured on CUDA saves: its optimizer's groups say capturable, its step counters on the GPU
    train(copy_config(tmp_path, "cuda", steps=5))
    last = tmp_path / "cuda" / "checkpoints" / "last.pt"
    saved = checkpoint.load(last)
    for group in saved["optimizer"]["param_groups"]:
        group["capturable"] = True
    checkpoint.save(last, saved)
    train(copy_config(tmp_path, "cuda", steps=8), resume=True)  # a CPU optimizer cannot step capturable
    train(copy_config(tmp_path, "eager", steps=8, cuda_graph=False))
    resumed, eager = (checkpoint.load(tmp_path / run / "checkpoints" / "last.pt") for run in ("cuda", "eager"))
    assert all(torch.equal(value, eager["model"][name]) for name, value in resumed["model"].items())
    assert not any(group["capturable"] for group in resumed["optimizer"]["param_groups"])


def test_capturable_puts_the_step_counters_on_the_parameters_device():
    task, eager, _ = steps()
    batch = task.train_batch(0)
    eager(batch.inputs, batch.targets, None, 1)
    step.capturable(eager.optimizer, True)
    assert all(group["capturable"] for group in eager.optimizer.param_groups)
    assert all(state["step"].dtype == torch.float32 for state in eager.optimizer.state.values())


def test_off_the_cuda_device_the_update_is_eager():
    _, eager, _ = steps()
    assert step.make_step(eager, torch.device("cpu"), True) is eager


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_cuda_graph_option_must_be_a_flag(value):
    if value is None:
        assert resolve_config({"cuda_graph": False})["cuda_graph"] is False
        return
    with pytest.raises(OptionError, match="cuda_graph"):
        resolve_config({"cuda_graph": value})
