"""The doctor's correctness checks on a device: parity with float64 on the CPU, autocast, torch.compile and
CUDA graphs."""
from __future__ import annotations

import copy
import math

import torch

from ..training import step as training_step
from ..training.network import seeded_network
from ..training.step import WARMUP
from .rows import Row
from .workload import (
    Sizes,
    config_for,
    exact_float32,
    gradient_sensitivity,
    recurrent_matrix,
    relative,
    run_updates,
    synthetic_task,
)

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


def _worst(got: dict, expected: dict) -> tuple[float, str]:
    """The largest relative difference over the tensors of two dicts, and its name."""
    errors = {name: relative(got[name], value) for name, value in expected.items() if value.is_floating_point()}
    worst = max(errors, key=errors.get)
    return errors[worst], worst


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
