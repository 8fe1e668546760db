"""What machine this is, in words, for the head of every speed figure: a timing ratio can differ between
hosts (docs/performance.md), so a figure names the CPU it was measured on."""
from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_fields(cpuinfo: str) -> dict[str, str]:
    """The first processor's fields of a Linux ``/proc/cpuinfo`` text."""
    fields = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def describe_cpu(cpuinfo: str | None = None) -> str:
    """E.g. "AMD EPYC (AuthenticAMD family 25 model 17), 2 cores": the model name, the vendor's family and model
    numbers (which tell CPU generations apart where the name does not) and the cores this process may use."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text() if path.is_file() else ""
    fields = cpu_fields(cpuinfo)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    name = fields.get("model name") or platform.processor() or platform.machine() or "unknown CPU"
    detail = " ".join(f"{k} {fields[k]}" for k in ("cpu family", "model") if k in fields)
    vendor = fields.get("vendor_id", "")
    detail = f" ({vendor} {detail.replace('cpu family', 'family')})" if detail else ""
    return f"{name}{detail.replace('( ', '(')}, {cores} cores"
