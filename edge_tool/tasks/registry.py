"""The task table: each module under ``tasks`` registers one instance of its ``Task`` with ``TASKS.register(task)``
(importing ``edge_tool.tasks`` fills it; its name list ``TASK_NAMES`` lives there)."""

from __future__ import annotations

from edge_tool.core.registry import Registry
from edge_tool.errors import UsageError
from edge_tool.tasks.base import Task

TASKS: Registry[Task] = Registry("task")


def get_task(name: str) -> Task:
    """The registered task ``name``; UsageError listing the known ones."""
    name = getattr(name, "value", name)
    if name not in TASKS:
        raise UsageError(f"--task expects one of {', '.join(TASKS.names())}, got {name!r}")
    return TASKS[name]
