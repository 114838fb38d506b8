"""Keypoint heatmaps: one (H, W) map per keypoint (n, H, W, K), the keypoint at each map's peak.

Each channel's arg-max location is compared with the target heatmap's arg-max: ``keypoint_error`` is the mean
Euclidean distance in heatmap pixels, ``pck`` the share of keypoints within ``PCK_ALPHA`` × max(H, W) of the target
(PCK@0.1 of the heatmap size). A target map that is all zero (a keypoint not visible) is left out. Drift compares the
artefact's peaks with the reference's the same way (``peak_agreement``: the same pixel; ``peak_shift``: mean
distance).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.tasks.base import Accumulator, Task, TaskContext, label_error
from edge_tool.tasks.image import check_same_shape
from edge_tool.tasks.registry import TASKS

PCK_ALPHA = 0.1


def peaks(maps: np.ndarray) -> np.ndarray:
    """(n, H, W, K) → (n, K, 2) (row, column) of each channel's maximum."""
    m = np.asarray(maps)
    n, h, w, k = m.shape
    flat = m.reshape(n, h * w, k).argmax(axis=1)
    return np.stack([flat // w, flat % w], axis=-1).astype(np.float64)


class _Peaks(Accumulator):
    """Distances between the peaks of ``out`` and of the truth (labels, or the reference for drift)."""

    def __init__(self, ctx: TaskContext, against_reference: bool):
        self.ctx, self.ref_side = ctx, against_reference
        self.dist, self.within, self.same, self.n = 0.0, 0, 0, 0

    def update(self, ref, out, labels) -> None:
        """Fold one batch's peak distances in (visible target keypoints only)."""
        got = np.asarray(out[self.ctx.primary], np.float64)
        truth = np.asarray(ref[self.ctx.primary] if self.ref_side else labels, np.float64).reshape(got.shape)
        if not len(got):
            return
        visible = np.abs(truth).reshape(len(truth), -1, truth.shape[-1]).max(axis=1) > 0
        if self.ref_side:
            visible = np.ones_like(visible)
        d = np.linalg.norm(peaks(got) - peaks(truth), axis=-1)[visible]
        self.dist += float(d.sum())
        self.within += int(np.sum(d <= PCK_ALPHA * max(got.shape[1:3])))
        self.same += int(np.sum(d == 0))
        self.n += d.size

    def result(self) -> dict:
        """pck and keypoint_error (px); for drift peak_agreement and peak_shift (px)."""
        if self.ref_side:
            return {
                "peak_agreement": self.same / self.n if self.n else None,
                "peak_shift": self.dist / self.n if self.n else None,
            }
        return {
            "pck": self.within / self.n if self.n else None,
            "keypoint_error": self.dist / self.n if self.n else None,
        }


class Heatmap(Task):
    """Keypoint heatmaps (n, H, W, K); ``--max-drop`` gates PCK@0.1 (absolute: 0.02 = 2 points)."""

    name = "heatmap"
    qat_head = True
    value_outputs = True
    main_metric = "pck"
    metric_keys = ("pck", "keypoint_error")
    drift_keys = ("peak_agreement", "peak_shift")
    percent = frozenset({"pck", "peak_agreement"})
    agreement_label = "peak agreement"

    def labels(self, labels: np.ndarray, ref: dict, ctx: TaskContext, data: Path) -> np.ndarray:
        """Target heatmaps of the output's shape (n, H, W, K)."""
        checked = check_same_shape("heatmap", labels, ref, ctx, data)
        if checked.ndim != 4:
            raise label_error(data, f"have shape {checked.shape}", "heatmap outputs must be (n, H, W, keypoints) maps")
        return checked

    def drift(self, ctx: TaskContext) -> Accumulator:
        """Peak agreement and shift against the reference's maps."""
        return _Peaks(ctx, against_reference=True)

    def scores(self, ctx: TaskContext) -> Accumulator:
        """pck and keypoint_error against the target maps."""
        return _Peaks(ctx, against_reference=False)

    def agreement(self, drift: dict) -> float | None:
        """Share of keypoints whose peak is the reference's pixel."""
        return drift["peak_agreement"]


TASK = TASKS.register(Heatmap())
