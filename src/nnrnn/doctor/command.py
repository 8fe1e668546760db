"""``nnrnn doctor``: every check over the models and tasks, and the table."""
from __future__ import annotations

import sys
import time

import torch

from ..errors import UserError
from ..kernels.host import describe_cpu
from ..kernels.policy import policy
from ..kernels.report import table as policy_table
from ..models import MODELS, PAPER_MODELS
from ..training.resources import check_device
from .checks import check_autocast, check_compile, check_cuda_graph, check_parity, graphs_apply
from .ddp import check_ddp
from .resume import check_resume
from .rows import Row, table
from .timing import timing_rows
from .workload import FULL, QUICK, TASKS


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


def describe(device: torch.device) -> str:
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        return f"{name} (cuda, {torch.cuda.device_count()} device(s)), torch {torch.__version__}"
    capability = torch.backends.cpu.get_cpu_capability()
    return f"cpu: {describe_cpu()} ({torch.get_num_threads()} threads, {capability}), torch {torch.__version__}"


def _names(text: str | None, allowed, what: str) -> tuple:
    if text is None:
        return tuple(allowed)
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))  # each once, in the order given
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
    print(f"kernel policy on {device.type} (float32), as the checks above used it:")  # decisions made by then
    print("\n".join(policy_table(policy(device, torch.float32).describe())))
    failed = [r for r in rows if r.failed]
    print(f"{len(rows) - len(failed)} of {len(rows)} rows passed or skipped, {len(failed)} failed, "
          f"in {time.perf_counter() - started:.0f} s", flush=True)
    return 1 if failed else 0
