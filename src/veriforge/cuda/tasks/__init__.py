"""CUDA tasks: the folder format (docs/tasks.md), loading, input generation, references, validation.

>>> from veriforge.cuda.tasks import load_task, bundled_tasks, validate_task
>>> spec = load_task(bundled_tasks()[0]); spec.id, [c.name for c in spec.configs]
"""

from __future__ import annotations

from typing import Any

from .load import bundled_tasks, find_task, iter_tasks, load_task
from .schema import TaskFormatError, TaskSpec

__all__ = ["TaskFormatError", "TaskSpec", "bundled_tasks", "find_task", "iter_tasks", "load_task", "validate_task"]


def __getattr__(name: str) -> Any:
    if name == "validate_task":
        from .validate import validate_task

        return validate_task
    raise AttributeError(f"module 'veriforge.cuda.tasks' has no attribute {name!r}")
