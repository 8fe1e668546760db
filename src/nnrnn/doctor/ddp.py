"""The doctor's DDP check: two processes of ``nnrnn train`` as torchrun launches them against one process."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from ..training.train import train
from .resume import final_parameters, quietly
from .rows import Row
from .workload import Sizes, config_for, relative

DDP_RTOL = 1e-3       # two half batches averaged by all_reduce against one whole batch: rounding, amplified as above


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
    package_root = str(Path(__file__).resolve().parents[2])
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
        quietly(train, single)
        a, b = final_parameters(Path(tmp) / "ddp"), final_parameters(Path(tmp) / "one")
    errors = {name: relative(a[name], b[name]) for name in b if b[name].is_floating_point()}
    worst = max(errors, key=errors.get)
    backend = "nccl" if device.type == "cuda" else "gloo"
    ok = errors[worst] <= DDP_RTOL
    return Row("ddp, 2 processes", model, task_name, "ok" if ok else "FAIL",
               f"{backend}, {updates} updates vs 1 process on the whole batch: parameters within "
               f"{errors[worst]:.1e} ({worst}); tolerance {DDP_RTOL:g}")
