"""The task registry: one module per task registers its Task class here (``@register``)."""

from __future__ import annotations

from edge_tool import tasks  # noqa: F401
from edge_tool.core.registry import Registry
from edge_tool.errors import UsageError
from edge_tool.tasks.base import Task

TASKS: Registry[str, Task] = Registry("task")


def register(cls: type[Task]) -> type[Task]:
    """Class decorator: add one instance of ``cls`` under its ``name``."""
    TASKS.add(cls.name, cls())
    return cls


def get_task(name: str) -> Task:
    """The registered task ``name``; UsageError listing the known ones."""
    if name not in TASKS:
        raise UsageError(f"--task expects one of {', '.join(TASK_NAMES)}, got {name!r}")
    return TASKS[name]


TASK_NAMES = (
    "classification",
    "multilabel",
    "regression",
    "segmentation",
    "detection",
    "embedding",
    "image",
    "heatmap",
)
