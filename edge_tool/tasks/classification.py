"""Single-label classification: one class per sample, the arg-max of the scores (softmax, logits or one-hot)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.tasks.base import Accumulator, Confusion, Task, TaskContext, label_error, per_sample, shape_text, whole
from edge_tool.tasks.registry import TASKS

MAX_MATRIX_CLASSES = 100  # a larger confusion matrix is left out of the JSON (per_class still lists every class)


class _Agreement(Accumulator):
    def __init__(self):
        self.same, self.n = 0, 0

    def update(self, ref, out, labels) -> None:
        """Count samples whose arg-max equals the reference's."""
        (name,) = out
        self.same += int(np.sum(per_sample(ref[name]).argmax(axis=1) == per_sample(out[name]).argmax(axis=1)))
        self.n += len(out[name])

    def result(self) -> dict:
        """top1_agreement."""
        return {"top1_agreement": self.same / self.n if self.n else None}


class _Scores(Accumulator):
    def __init__(self, ctx: TaskContext):
        self.ctx, self.confusion, self.topk_hits, self.n, self.classes = ctx, None, 0, 0, 0

    def update(self, ref, out, labels) -> None:
        """Fold arg-max predictions (and top-k hits) of one batch in."""
        scores = per_sample(out[self.ctx.primary])
        self.classes = scores.shape[1]
        if self.confusion is None:
            self.confusion = Confusion(self.classes)
        self.confusion.update(labels, scores.argmax(axis=1))
        if self.classes > self.ctx.top_k:
            top = np.argsort(-scores, axis=1, kind="stable")[:, : self.ctx.top_k]
            self.topk_hits += int(np.sum(np.any(top == labels[:, None], axis=1)))
        self.n += len(scores)

    def result(self) -> dict:
        """accuracy, top_k (None with k or fewer classes), per_class, confusion_matrix."""
        if self.confusion is None or not self.n:
            return dict.fromkeys(Classification.metric_keys)
        m = self.confusion.m
        names = _names(self.ctx.class_names, self.classes)
        counts = m.sum(axis=1)
        per_class = [
            {
                "index": i,
                "label": names[i],
                "count": int(counts[i]),
                "accuracy": float(m[i, i] / counts[i]) if counts[i] else None,
            }
            for i in range(self.classes)
        ]
        matrix = (
            {"labels": names, "rows": "true class", "columns": "predicted class", "counts": m.tolist()}
            if self.classes <= MAX_MATRIX_CLASSES
            else None
        )
        return {
            "accuracy": self.confusion.accuracy(),
            "top_k": self.topk_hits / self.n if self.classes > self.ctx.top_k else None,
            "per_class": per_class,
            "confusion_matrix": matrix,
        }


def _names(names: tuple[str, ...] | None, classes: int) -> list[str]:
    return list(names) if names is not None and len(names) == classes else [str(i) for i in range(classes)]


class Classification(Task):
    """One class per sample; ``--max-drop`` gates top-1 accuracy."""

    name = "classification"
    qat_head = True
    main_metric = "accuracy"
    metric_keys = ("accuracy", "top_k", "per_class", "confusion_matrix")
    drift_keys = ("top1_agreement",)
    percent = frozenset({"accuracy", "top_k", "top1_agreement"})

    def labels(self, labels: np.ndarray, ref: dict, ctx: TaskContext, data: Path) -> np.ndarray:
        """Class indices (n,), from indices, (n, 1) or one-hot rows; each within the output's classes."""
        classes = per_sample(ref[ctx.primary]).shape[1]
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim == 2 and labels.shape[1] == classes and whole(labels) and np.all(labels.sum(axis=1) == 1):
            labels = labels.argmax(axis=1)
        if labels.ndim != 1:
            raise label_error(
                data,
                f"have shape {shape_text(labels)}",
                f"single-label classification of {classes} classes needs one class index per sample "
                "(n,) or one-hot rows",
            )
        if not whole(labels):
            raise label_error(
                data,
                f"hold non-integer values ({labels.dtype})",
                f"classification needs class indices 0..{classes - 1}",
            )
        labels = labels.astype(np.int64)
        lo, hi = int(labels.min()), int(labels.max())
        if lo < 0 or hi >= classes:
            outside = int(np.count_nonzero((labels < 0) | (labels >= classes)))
            raise label_error(
                data,
                f"range {lo}..{hi} ({outside} of {len(labels)} outside 0..{classes - 1})",
                f"the reference's output {ctx.primary!r} has {classes} class"
                f"{'es' if classes != 1 else ''} per sample, so labels must be class indices "
                f"0..{classes - 1}",
            )
        return labels

    def drift(self, ctx: TaskContext) -> Accumulator:
        """top-1 agreement with the reference."""
        return _Agreement()

    def scores(self, ctx: TaskContext) -> Accumulator:
        """accuracy, top-k, per-class accuracy, confusion matrix."""
        return _Scores(ctx)

    def agreement(self, drift: dict) -> float | None:
        """top-1 agreement."""
        return drift["top1_agreement"]


TASK = TASKS.register(Classification())
