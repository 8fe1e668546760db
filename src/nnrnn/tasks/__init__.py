"""The paper's tasks, one module each (data, loss, metric), behind :func:`make_task`.

Adding a task is one file in this package (a subclass of :class:`~nnrnn.tasks.base.Task`) and one line in
:data:`TASKS`.
"""
from __future__ import annotations

import importlib

from ..errors import OptionError
from .base import Batch, Task

TASKS = {
    "copy": ("nnrnn.tasks.copy", "CopyTask"),
    "adding": ("nnrnn.tasks.adding", "AddingTask"),
    "psmnist": ("nnrnn.tasks.psmnist", "PermutedMNISTTask"),
    "ptb": ("nnrnn.tasks.ptb", "PTBTask"),
}


def task_class(name: str) -> type[Task]:
    if name not in TASKS:
        raise OptionError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")
    module, cls = TASKS[name]
    return getattr(importlib.import_module(module), cls)


def make_task(name: str, **options) -> Task:
    return task_class(name)(**options)


__all__ = ["Batch", "TASKS", "Task", "make_task", "task_class"]
