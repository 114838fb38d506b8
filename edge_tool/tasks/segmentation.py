"""Semantic segmentation: one class per pixel, the arg-max over the last axis (or a single sigmoid channel at
``--threshold``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.tasks.base import Accumulator, Confusion, Task, TaskContext, label_error, shape_text, whole
from edge_tool.tasks.registry import TASKS


def pixel_classes(scores: np.ndarray, threshold: float) -> np.ndarray:
    """(n, H, W, C) scores → (n, H, W) classes: arg-max over C, or ``>= threshold`` for one channel."""
    scores = np.asarray(scores)
    if scores.shape[-1] == 1:
        return (scores[..., 0] >= threshold).astype(np.int64)
    return scores.argmax(axis=-1)


def _classes(scores: np.ndarray) -> int:
    return max(2, int(np.shape(scores)[-1]))


class _Agreement(Accumulator):
    def __init__(self, ctx: TaskContext):
        self.ctx, self.same, self.n = ctx, 0, 0

    def update(self, ref, out, labels) -> None:
        """Count pixels whose class equals the reference's."""
        name, t = self.ctx.primary, self.ctx.threshold
        same = pixel_classes(ref[name], t) == pixel_classes(out[name], t)
        self.same += int(same.sum())
        self.n += same.size

    def result(self) -> dict:
        """pixel_agreement."""
        return {"pixel_agreement": self.same / self.n if self.n else None}


class _Scores(Accumulator):
    def __init__(self, ctx: TaskContext):
        self.ctx, self.confusion = ctx, None

    def update(self, ref, out, labels) -> None:
        """Fold the batch's per-pixel confusion in."""
        scores = out[self.ctx.primary]
        if self.confusion is None:
            self.confusion = Confusion(_classes(scores))
        self.confusion.update(labels, pixel_classes(scores, self.ctx.threshold))

    def result(self) -> dict:
        """pixel_accuracy and mean IoU (over classes present in the masks or the predictions)."""
        if self.confusion is None:
            return {"pixel_accuracy": None, "miou": None}
        return {"pixel_accuracy": self.confusion.accuracy(), "miou": self.confusion.mean_iou()}


class Segmentation(Task):
    """Per-pixel classes; ``--max-drop`` gates mean IoU."""

    name = "segmentation"
    qat_head = True
    main_metric = "miou"
    metric_keys = ("pixel_accuracy", "miou")
    drift_keys = ("pixel_agreement",)
    percent = frozenset({"pixel_accuracy", "miou", "pixel_agreement"})
    agreement_label = "pixel agreement"

    def labels(self, labels: np.ndarray, ref: dict, ctx: TaskContext, data: Path) -> np.ndarray:
        """Masks (n, H, W) of class indices, also as (n, H, W, 1) or one-hot (n, H, W, C)."""
        scores = ref[ctx.primary]
        spatial, classes = tuple(np.shape(scores)[1:-1]), _classes(scores)
        if labels.shape[1:] == (*spatial, 1):
            labels = labels[..., 0]
        elif labels.shape[1:] == (*spatial, classes) and classes > 2 and whole(labels):
            labels = labels.argmax(axis=-1)
        if labels.shape[1:] != spatial:
            raise label_error(
                data,
                f"have shape {shape_text(labels)}",
                f"segmentation output {ctx.primary!r} gives {shape_text(scores)}, so y must be masks "
                f"{shape_text(np.empty((0, *spatial)))} of class indices",
            )
        if not whole(labels):
            raise label_error(
                data, f"hold non-integer values ({labels.dtype})", f"masks must hold class indices 0..{classes - 1}"
            )
        labels = labels.astype(np.int64)
        lo, hi = int(labels.min()), int(labels.max())
        if lo < 0 or hi >= classes:
            raise label_error(
                data,
                f"range {lo}..{hi}",
                f"the output {ctx.primary!r} scores {classes} classes per pixel, so masks must hold 0..{classes - 1}",
            )
        return labels

    def drift(self, ctx: TaskContext) -> Accumulator:
        """Per-pixel class agreement with the reference."""
        return _Agreement(ctx)

    def scores(self, ctx: TaskContext) -> Accumulator:
        """pixel_accuracy and miou."""
        return _Scores(ctx)

    def agreement(self, drift: dict) -> float | None:
        """Per-pixel agreement."""
        return drift["pixel_agreement"]


TASK = TASKS.register(Segmentation())
