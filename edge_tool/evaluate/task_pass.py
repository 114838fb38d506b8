"""The task side of eval's pass: which task is measured (``--task`` or inferred), the labels that task checked,
the running accumulators of the reference and of every artefact, and each row's figures from them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.errors import ModelError
from edge_tool.evaluate import metrics
from edge_tool.tasks import Task, TaskChoice, TaskContext, get_task
from edge_tool.tasks.activation import final_activations
from edge_tool.tasks.detection import is_box_output
from edge_tool.tasks.embedding import unit_rows
from edge_tool.tasks.infer import infer_task

LABELS_FILE = "labels.txt"
MAX_LABELS_BYTES = 1 << 20


@dataclass(frozen=True)
class TaskSettings:
    """What eval was told about the task: ``--task`` (None: infer), ``--top-k``, ``--threshold``, the reference
    SavedModel (its graph says the final activation, its labels.txt names classes), the data's class names and
    ``--keypoint-order``."""

    task: str | None
    top_k: int
    threshold: float
    reference: Path
    class_names: tuple[str, ...] | None = None
    keypoint_order: str = "xy"

    def wanted_guess(self, primary: str, ref) -> tuple[str, ...]:
        """The outputs to ask the artefacts for before any output was seen (every one for detection)."""
        specs = list(ref.signature.outputs)
        boxes = any(s.shape is not None and is_box_output(s.name, s.shape) for s in specs)
        if self.task == "detection" or (self.task is None and len(specs) > 1 and boxes):
            return tuple(sorted(s.name for s in specs))
        return (primary,)

    def reference_only(self, ref) -> bool:
        """True when the task will be one measured against the reference alone (detection): no labels needed."""
        return len(self.wanted_guess("", ref)) > 1

    def resolve(
        self, ref_out: dict[str, np.ndarray], primary: str, labels: np.ndarray | None, data: Path, inputs: dict
    ) -> TaskMeasure:
        """Choose the task (given or inferred from the first reference batch and the labels) and check the labels
        (``inputs``: the first batch fed, whose image shape keypoint pixels are measured in)."""
        shapes = {k: np.shape(v) for k, v in ref_out.items()}
        if self.task is not None:
            choice = TaskChoice(self.task, "--task", overridden=True)
        else:
            unit = unit_rows(ref_out[primary]) if np.ndim(ref_out[primary]) == 2 else False
            choice = infer_task(shapes, primary, _activations(self.reference), labels, unit)
        task = get_task(choice.name)
        ctx = TaskContext(
            primary,
            tuple(sorted(ref_out)),
            self.top_k,
            self.threshold,
            self.class_names or _labels_file(self.reference),
            _image_size(inputs),
            self.keypoint_order,
        )
        checked = None
        if labels is not None and task.uses_labels():
            checked = task.labels(np.asarray(labels), ref_out, ctx, data)
        return TaskMeasure(task, choice, ctx, checked, labels is not None)


def _image_size(inputs: dict) -> tuple[int, int] | None:
    """(H, W) of the one (n, H, W, C) input, else None."""
    images = [np.shape(v)[1:3] for v in inputs.values() if np.ndim(v) == 4]
    return tuple(int(d) for d in images[0]) if len(images) == 1 else None


def _activations(reference: Path) -> dict[str, str]:
    try:
        return final_activations(reference)
    except (ModelError, ValueError, KeyError):
        return {}


def _labels_file(reference: Path) -> tuple[str, ...] | None:
    """Class names from labels.txt inside the reference directory (one per line), else None."""
    path = Path(reference) / LABELS_FILE
    try:
        inside = path.is_file() and path.resolve().is_relative_to(Path(reference).resolve())
        if not inside or path.stat().st_size > MAX_LABELS_BYTES:
            return None
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return None
    return tuple(ln for ln in lines if ln) or None


@dataclass
class RowAccumulators:
    """One artefact's running totals: generic drift of the primary output, the task's drift and its metrics."""

    generic: metrics.DriftAccumulator
    drift: object
    scores: object


@dataclass
class TaskMeasure:
    """The task being measured, why, its context and the labels it checked (None without labels)."""

    task: Task
    choice: TaskChoice
    ctx: TaskContext
    labels: np.ndarray | None
    data_labelled: bool = False

    @property
    def wanted(self) -> tuple[str, ...]:
        """Reference outputs the artefacts must return."""
        return self.task.wanted(self.ctx)

    @property
    def scored(self) -> bool:
        """True when task metrics are computed (labels given, or a task measured against the reference)."""
        return self.labels is not None or not self.task.uses_labels()

    def reference_scores(self):
        """The reference's task-metric accumulator."""
        return self.task.scores(self.ctx)

    def runner_accumulators(self) -> RowAccumulators:
        """Fresh accumulators for one artefact."""
        return RowAccumulators(
            metrics.DriftAccumulator(self.ctx.top_k), self.task.drift(self.ctx), self.task.scores(self.ctx)
        )

    def fold_reference(self, scores, ref: dict, labels: np.ndarray | None) -> None:
        """The reference's outputs of one batch against the labels."""
        if self.scored:
            scores.update(ref, ref, labels)

    def fold(self, acc: RowAccumulators, ref: dict, out: dict, labels: np.ndarray | None) -> None:
        """One artefact's outputs of one batch against the reference's and the labels."""
        p = self.ctx.primary
        acc.generic.update(ref[p], out[p], None)
        acc.drift.update(ref, out, labels)
        if self.scored:
            acc.scores.update(ref, out, labels)

    def reference_metrics(self, scores) -> dict:
        """The reference's task metrics (every key None without labels)."""
        return scores.result() if self.scored else dict.fromkeys(self.task.metric_keys)

    def row_fields(self, acc: RowAccumulators, ref_metrics: dict) -> dict:
        """The artefact row's figures: legacy fields (classification accuracy, agreement, errors), the task's
        ``metrics`` and ``drift``, and ``metric_drop`` of the main metric."""
        task, generic = self.task, acc.generic.drift()
        drift = acc.drift.result()
        mets = acc.scores.result() if self.scored else dict.fromkeys(task.metric_keys)
        classifying = task.name == "classification"
        main, ref_main = mets.get(task.main_metric), ref_metrics.get(task.main_metric)
        drop = None
        if main is not None and ref_main is not None:
            drop = ref_main - main if task.higher_is_better else main - ref_main
        max_err = drift.get("max_abs_error", generic["max_abs_error"])
        return {
            "accuracy": mets["accuracy"] if classifying else None,
            "top_k_accuracy": mets["top_k"] if classifying else None,
            "reference_accuracy": ref_metrics["accuracy"] if classifying else None,
            "accuracy_drop": drop if classifying else None,
            "top1_agreement": task.agreement(drift),
            "max_abs_error": max_err,
            "mean_abs_error": generic["mean_abs_error"],
            "cosine": generic["cosine"],
            "metrics": mets,
            "drift": drift,
            "metric_drop": drop,
        }
