"""Detection-style models: several heads (class scores, boxes, ...), each compared with the reference's.

A detection label set (a variable number of boxes and classes per image) does not fit eval's one ``y`` array, so
this task is measured against the reference only: per-output error, and the IoU of the artefact's boxes with the
reference's for every output named like boxes/bbox with 4 values per box (read as corner pairs, either axis order).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from edge_tool.tasks.base import Accumulator, ErrorTotals, Task, TaskContext
from edge_tool.tasks.registry import TASKS

BOX_NAME = re.compile(r"box|bbox", re.IGNORECASE)


def is_box_output(name: str, shape) -> bool:
    """True for an output named like boxes whose last axis holds 4 coordinates."""
    return bool(BOX_NAME.search(name)) and len(shape) >= 2 and shape[-1] == 4


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of corresponding boxes (..., 4) given as corner pairs; two identical empty boxes score 1."""
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)

    def corners(x):
        return (
            np.minimum(x[:, 0], x[:, 2]),
            np.minimum(x[:, 1], x[:, 3]),
            np.maximum(x[:, 0], x[:, 2]),
            np.maximum(x[:, 1], x[:, 3]),
        )

    a0, a1, a2, a3 = corners(a)
    b0, b1, b2, b3 = corners(b)
    inter = np.clip(np.minimum(a2, b2) - np.maximum(a0, b0), 0, None) * np.clip(
        np.minimum(a3, b3) - np.maximum(a1, b1), 0, None
    )
    union = (a2 - a0) * (a3 - a1) + (b2 - b0) * (b3 - b1) - inter
    same = np.all(a == b, axis=1)
    return np.where(union > 0, inter / np.where(union > 0, union, 1), np.where(same, 1.0, 0.0))


class _PerOutput(Accumulator):
    def __init__(self, ctx: TaskContext):
        self.ctx = ctx
        self.err = {n: ErrorTotals() for n in ctx.outputs}
        self.agree = {n: [0, 0] for n in ctx.outputs}
        self.iou = {n: [0.0, 0] for n in ctx.outputs}
        self.shapes: dict[str, tuple] = {}

    def update(self, ref, out, labels) -> None:
        """Per output: errors, arg-max agreement of score heads, IoU of box heads."""
        for name in self.ctx.outputs:
            r, o = ref[name], out[name]
            self.shapes[name] = np.shape(r)
            self.err[name].update(r, o)
            if is_box_output(name, np.shape(r)):
                iou = box_iou(r, o)
                self.iou[name][0] += float(iou.sum())
                self.iou[name][1] += iou.size
            elif np.ndim(r) >= 2 and np.shape(r)[-1] > 1:
                same = np.asarray(r).argmax(axis=-1) == np.asarray(o).argmax(axis=-1)
                self.agree[name][0] += int(same.sum())
                self.agree[name][1] += same.size

    def result(self) -> dict:
        """per_output {name: max/mean abs error, agreement or box_iou} and box_iou (mean over box outputs)."""
        per, ious = {}, []
        for name in self.ctx.outputs:
            e, (same, n), (s, m) = self.err[name], self.agree[name], self.iou[name]
            row = {"max_abs_error": e.max, "mean_abs_error": e.mean}
            if n:
                row["agreement"] = same / n
            if m:
                row["box_iou"] = s / m
                ious.append(s / m)
            per[name] = row
        return {"per_output": per, "box_iou": float(np.mean(ious)) if ious else None}


class Detection(Task):
    """Several heads measured against the reference; ``--max-drop`` gates 1 − box IoU (needs a box output),
    ``--max-error`` the largest absolute error of any output."""

    name = "detection"
    main_metric = "box_iou"
    metric_keys = ("per_output", "box_iou")
    drift_keys = ("per_output", "box_iou", "max_abs_error")
    agreement_label = "max abs err"

    def wanted(self, ctx: TaskContext) -> tuple[str, ...]:
        """Every output."""
        return ctx.outputs

    def labels(self, labels: np.ndarray, ref: dict, ctx: TaskContext, data: Path) -> np.ndarray:
        """Not used (see the module docstring)."""
        return labels

    def uses_labels(self) -> bool:
        """Measured against the reference only."""
        return False

    def drift(self, ctx: TaskContext) -> Accumulator:
        """Per-output error and box IoU against the reference."""
        return _Drift(ctx)

    def scores(self, ctx: TaskContext) -> Accumulator:
        """The same figures (against the reference: no labels are read)."""
        return _PerOutput(ctx)


class _Drift(_PerOutput):
    def result(self) -> dict:
        """per_output, box_iou and the largest error of any output."""
        res = super().result()
        maxes = [e.max for e in self.err.values() if e.max is not None]
        return {**res, "max_abs_error": max(maxes) if maxes else None}


TASK = TASKS.register(Detection())
