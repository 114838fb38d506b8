"""Multi-label classification: independent yes/no per label (sigmoid outputs), decided at ``--threshold``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.tasks.base import Accumulator, Task, TaskContext, label_error, per_sample, shape_text, whole
from edge_tool.tasks.registry import TASKS


class _Agreement(Accumulator):
    def __init__(self, ctx: TaskContext):
        self.ctx, self.same, self.n = ctx, 0, 0

    def update(self, ref, out, labels) -> None:
        """Count label decisions equal to the reference's."""
        name, t = self.ctx.primary, self.ctx.threshold
        same = (per_sample(ref[name]) >= t) == (per_sample(out[name]) >= t)
        self.same += int(same.sum())
        self.n += same.size

    def result(self) -> dict:
        """label_agreement: share of (sample, label) decisions equal to the reference's."""
        return {"label_agreement": self.same / self.n if self.n else None}


class _Scores(Accumulator):
    def __init__(self, ctx: TaskContext):
        self.ctx, self.tp, self.fp, self.fn, self.wrong, self.n = ctx, None, None, None, 0, 0

    def update(self, ref, out, labels) -> None:
        """Per-label true/false positives and negatives of one batch."""
        pred = per_sample(out[self.ctx.primary]) >= self.ctx.threshold
        truth = per_sample(labels) > 0.5
        if self.tp is None:
            self.tp = self.fp = self.fn = np.zeros(pred.shape[1], dtype=np.int64)
        self.tp = self.tp + np.sum(pred & truth, axis=0)
        self.fp = self.fp + np.sum(pred & ~truth, axis=0)
        self.fn = self.fn + np.sum(~pred & truth, axis=0)
        self.wrong += int(np.sum(pred != truth))
        self.n += pred.size

    def result(self) -> dict:
        """f1_macro (a label never true nor predicted scores 0, as scikit-learn's default) and hamming loss."""
        if self.tp is None:
            return {"f1_macro": None, "hamming": None}
        denom = 2 * self.tp + self.fp + self.fn
        f1 = np.where(denom > 0, 2 * self.tp / np.maximum(denom, 1), 0.0)
        return {"f1_macro": float(np.mean(f1)), "hamming": self.wrong / self.n}


class Multilabel(Task):
    """Independent labels per sample; ``--max-drop`` gates macro F1."""

    name = "multilabel"
    qat_head = True
    main_metric = "f1_macro"
    metric_keys = ("f1_macro", "hamming")
    drift_keys = ("label_agreement",)
    percent = frozenset({"f1_macro", "label_agreement"})
    agreement_label = "label agreement"

    def labels(self, labels: np.ndarray, ref: dict, ctx: TaskContext, data: Path) -> np.ndarray:
        """Multi-hot rows (n, labels) of 0/1 matching the output's labels."""
        width = per_sample(ref[ctx.primary]).shape[1]
        flat = labels.reshape(len(labels), -1) if labels.ndim >= 1 else labels
        if labels.ndim == 1 and width == 1:
            flat = labels.reshape(-1, 1)
        if flat.ndim != 2 or flat.shape[1] != width:
            raise label_error(
                data,
                f"have shape {shape_text(labels)}",
                f"multi-label output {ctx.primary!r} has {width} labels per sample, so y must be "
                f"multi-hot rows (n, {width}) of 0/1",
            )
        if not whole(flat) or not np.all((flat == 0) | (flat == 1)):
            raise label_error(
                data, "hold values other than 0 and 1", "multi-label needs multi-hot rows of 0/1 (one column per label)"
            )
        return flat.astype(np.int8)

    def drift(self, ctx: TaskContext) -> Accumulator:
        """Per-label decision agreement with the reference."""
        return _Agreement(ctx)

    def scores(self, ctx: TaskContext) -> Accumulator:
        """f1_macro and hamming loss at the threshold."""
        return _Scores(ctx)

    def agreement(self, drift: dict) -> float | None:
        """Per-label agreement."""
        return drift["label_agreement"]


TASK = TASKS.register(Multilabel())
