"""Regression: real-valued outputs compared as numbers (no arg-max, no classes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.tasks.base import Accumulator, ErrorTotals, Task, TaskContext, label_error, per_sample, shape_text
from edge_tool.tasks.registry import TASKS


class _Drift(Accumulator):
    def __init__(self, ctx: TaskContext):
        self.ctx, self.err = ctx, ErrorTotals()

    def update(self, ref, out, labels) -> None:
        """Fold |artefact - reference| of one batch in."""
        self.err.update(ref[self.ctx.primary], out[self.ctx.primary])

    def result(self) -> dict:
        """max_abs_error, mean_abs_error, relative_error (mean abs error / mean |reference|)."""
        return {"max_abs_error": self.err.max, "mean_abs_error": self.err.mean, "relative_error": self.err.relative}


class _Scores(Accumulator):
    """MAE, RMSE and R² (uniform average over output columns, as scikit-learn's r2_score), streaming."""

    def __init__(self, ctx: TaskContext):
        self.ctx, self.n, self.abs, self.sq = ctx, 0, 0.0, 0.0
        self.mean = self.m2 = self.res = None

    def update(self, ref, out, labels) -> None:
        """Residual sums and the labels' per-column mean / M2 (Chan's update, float64)."""
        p, y = per_sample(out[self.ctx.primary]), per_sample(labels)
        d = p - y
        self.abs += float(np.abs(d).sum())
        self.sq += float((d * d).sum())
        nb, mean_b = len(y), y.mean(axis=0)
        m2_b = ((y - mean_b) ** 2).sum(axis=0)
        res_b = (d * d).sum(axis=0)
        if self.mean is None:
            self.mean, self.m2, self.res = mean_b, m2_b, res_b
        else:
            delta, total = mean_b - self.mean, self.n + nb
            self.mean = self.mean + delta * nb / total
            self.m2 = self.m2 + m2_b + delta * delta * self.n * nb / total
            self.res = self.res + res_b
        self.n += nb

    def result(self) -> dict:
        """mae, rmse, r2 (a column with constant labels scores 1.0 when predicted exactly, else 0.0)."""
        if not self.n:
            return {"mae": None, "rmse": None, "r2": None}
        size = self.n * len(self.res)
        r2 = np.where(self.m2 > 0, 1 - self.res / np.where(self.m2 > 0, self.m2, 1), np.where(self.res == 0, 1.0, 0.0))
        return {"mae": self.abs / size, "rmse": float(np.sqrt(self.sq / size)), "r2": float(np.mean(r2))}


class Regression(Task):
    """Real-valued targets; ``--max-drop`` gates R² (absolute: 0.05 = R² may fall by 0.05); ``--max-error``
    gates the artefact's largest absolute difference from the reference."""

    name = "regression"
    qat_head = True
    value_outputs = True
    main_metric = "r2"
    metric_keys = ("mae", "rmse", "r2")
    drift_keys = ("max_abs_error", "mean_abs_error", "relative_error")
    agreement_label = "max abs err"

    def labels(self, labels: np.ndarray, ref: dict, ctx: TaskContext, data: Path) -> np.ndarray:
        """Real targets with as many values per sample as the output."""
        width = per_sample(ref[ctx.primary]).shape[1]
        if labels.dtype.kind not in "iuf":
            raise label_error(data, f"hold {labels.dtype} values", "regression needs numbers")
        flat = labels.reshape(len(labels), -1)
        if flat.shape[1] != width:
            raise label_error(
                data,
                f"have {flat.shape[1]} value(s) per sample, shape {shape_text(labels)}",
                f"regression output {ctx.primary!r} gives {width} value(s) per sample",
            )
        if not np.all(np.isfinite(flat)):
            raise label_error(data, "hold NaN or Inf", "regression targets must be finite numbers")
        return flat.astype(np.float64)

    def drift(self, ctx: TaskContext) -> Accumulator:
        """max / mean absolute and relative error against the reference."""
        return _Drift(ctx)

    def scores(self, ctx: TaskContext) -> Accumulator:
        """mae, rmse, r2."""
        return _Scores(ctx)


TASK = TASKS.register(Regression())
