"""Eval tasks: one module per task (label validation, drift, task metrics, main metric), each registering an
instance of its ``Task`` in ``registry.TASKS`` at import. Derived from it: ``TASK_NAMES`` (the import order below:
``--task``'s choices, the schemas' ``task`` enums) and ``TaskName`` (``--task``'s str Enum)."""

from __future__ import annotations

# isort: off
# each module registers itself; this order is TASKS' order
from edge_tool.tasks import classification, multilabel, regression, segmentation, detection, embedding, image, heatmap
from edge_tool.tasks import keypoints, lm

# isort: on
from edge_tool.tasks.base import Task, TaskChoice, TaskContext
from edge_tool.tasks.registry import TASKS, get_task

TASK_NAMES = TASKS.names()
TaskName = TASKS.choices("TaskName")
TaskName.__doc__ = "A --task value: one registered task."

__all__ = [
    "TASKS",
    "TASK_NAMES",
    "Task",
    "TaskChoice",
    "TaskContext",
    "TaskName",
    "classification",
    "detection",
    "embedding",
    "get_task",
    "heatmap",
    "image",
    "keypoints",
    "lm",
    "multilabel",
    "regression",
    "segmentation",
]
