"""Eval tasks: one module per task (label validation, drift, task metrics, main metric), registered by name."""

from __future__ import annotations

from edge_tool.tasks import classification, detection, embedding, heatmap, image, multilabel, regression, segmentation
from edge_tool.tasks.base import Task, TaskChoice, TaskContext
from edge_tool.tasks.registry import TASK_NAMES, TASKS, get_task

__all__ = [
    "TASKS",
    "TASK_NAMES",
    "Task",
    "TaskChoice",
    "TaskContext",
    "classification",
    "detection",
    "embedding",
    "get_task",
    "heatmap",
    "image",
    "multilabel",
    "regression",
    "segmentation",
]
