"""Keypoints labelled as coordinates: a heatmap output (n, H, W, K) against labels (n, K, 2) or (n, K, 3).

Labels are each keypoint's position in pixels of the model's input, (x, y) by default (``--keypoint-order yx``
for (row, column)); a third column is a visibility flag (COCO's ``v``: 0 = not labelled), and a keypoint with a
non-finite coordinate or ``v <= 0`` is left out. Each heatmap is decoded twice: at its arg-max pixel and by a
local soft-argmax (the mean position of the non-negative map values in the (2r+1)² window around the arg-max, r =
``SOFT_RADIUS``: sub-pixel). A heatmap position maps to the input by pixel centres, ``x_in = (x_hm + 0.5) ·
W_in / W_hm - 0.5`` (likewise y). ``pck@a`` is the share of visible keypoints within a × max(H_in, W_in) input
pixels of the label (arg-max decoding; ``pck@0.1_soft`` with soft-argmax); ``keypoint_error`` the mean Euclidean
distance in input pixels. Drift: ``peak_agreement`` (the reference's arg-max pixel) and ``peak_shift`` (mean
distance of the arg-max positions, input pixels).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.errors import DataError
from edge_tool.tasks.base import Accumulator, Task, TaskContext, label_error, shape_text
from edge_tool.tasks.registry import TASKS

PCK_ALPHAS = (0.05, 0.1, 0.2)
SOFT_RADIUS = 2
ORDERS = ("xy", "yx")


def argmax_peaks(maps: np.ndarray) -> np.ndarray:
    """(n, H, W, K) → (n, K, 2) integer (row, column) of each channel's maximum."""
    m = np.asarray(maps)
    n, h, w, k = m.shape
    flat = m.reshape(n, h * w, k).argmax(axis=1)
    return np.stack([flat // w, flat % w], axis=-1)


def soft_peaks(maps: np.ndarray, radius: int = SOFT_RADIUS) -> np.ndarray:
    """(n, H, W, K) → (n, K, 2) sub-pixel (row, column): the mean position of the non-negative values in the
    window around each arg-max (the arg-max itself when they are all <= 0)."""
    m = np.asarray(maps, np.float64)
    n, h, w, k = m.shape
    top = argmax_peaks(m)
    flat = m.transpose(0, 3, 1, 2).reshape(n, k, h * w)
    total, moment = np.zeros((n, k)), np.zeros((n, k, 2))
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            y, x = top[..., 0] + dy, top[..., 1] + dx
            inside = (y >= 0) & (y < h) & (x >= 0) & (x < w)
            at = (np.clip(y, 0, h - 1) * w + np.clip(x, 0, w - 1))[..., None]
            v = np.where(inside, np.maximum(np.take_along_axis(flat, at, axis=2)[..., 0], 0.0), 0.0)
            total += v
            moment += v[..., None] * np.stack([y, x], axis=-1)
    safe = np.where(total > 0, total, 1.0)[..., None]
    return np.where(total[..., None] > 0, moment / safe, top)


def to_input(rc: np.ndarray, maps_hw: tuple[int, int], input_hw: tuple[int, int]) -> np.ndarray:
    """Heatmap (row, column) → input (x, y) pixels, pixel centre to pixel centre."""
    sy, sx = input_hw[0] / maps_hw[0], input_hw[1] / maps_hw[1]
    return np.stack([(rc[..., 1] + 0.5) * sx - 0.5, (rc[..., 0] + 0.5) * sy - 0.5], axis=-1)


class _Coordinates(Accumulator):
    """PCK at ``PCK_ALPHAS`` and mean pixel error of the decoded peaks against (x, y, visible) labels."""

    def __init__(self, ctx: TaskContext):
        self.ctx = ctx
        self.n, self.err, self.err_soft, self.within_soft = 0, 0.0, 0.0, 0
        self.within = dict.fromkeys(PCK_ALPHAS, 0)

    def update(self, ref, out, labels) -> None:
        """Fold one batch's visible keypoints in."""
        maps = np.asarray(out[self.ctx.primary], np.float64)
        if not len(maps):
            return
        hw, side = maps.shape[1:3], max(self.ctx.input_size)
        truth = np.asarray(labels, np.float64)
        seen = truth[..., 2] > 0
        d = np.linalg.norm(to_input(argmax_peaks(maps), hw, self.ctx.input_size) - truth[..., :2], axis=-1)[seen]
        ds = np.linalg.norm(to_input(soft_peaks(maps), hw, self.ctx.input_size) - truth[..., :2], axis=-1)[seen]
        self.n += d.size
        self.err += float(d.sum())
        self.err_soft += float(ds.sum())
        self.within_soft += int(np.sum(ds <= 0.1 * side))
        for a in PCK_ALPHAS:
            self.within[a] += int(np.sum(d <= a * side))

    def result(self) -> dict:
        """pck@a per alpha, keypoint_error (input px), and the soft-argmax pck@0.1 and error."""

        def share(count: float) -> float | None:
            return count / self.n if self.n else None

        got = {f"pck@{a:g}": share(self.within[a]) for a in PCK_ALPHAS}
        got["keypoint_error"] = share(self.err)
        got["pck@0.1_soft"] = share(self.within_soft)
        got["keypoint_error_soft"] = share(self.err_soft)
        return got


class _PeakDrift(Accumulator):
    """The artefact's arg-max peaks against the reference's."""

    def __init__(self, ctx: TaskContext):
        self.ctx, self.n, self.same, self.dist = ctx, 0, 0, 0.0

    def update(self, ref, out, labels) -> None:
        """Fold one batch of peak pairs in."""
        got, want = (np.asarray(o[self.ctx.primary]) for o in (out, ref))
        if not len(got):
            return
        a, b = argmax_peaks(got), argmax_peaks(want.reshape(got.shape))
        self.same += int(np.sum(np.all(a == b, axis=-1)))
        shift = to_input(a, got.shape[1:3], self.ctx.input_size) - to_input(b, got.shape[1:3], self.ctx.input_size)
        self.dist += float(np.linalg.norm(shift, axis=-1).sum())
        self.n += a.shape[0] * a.shape[1]

    def result(self) -> dict:
        """peak_agreement and peak_shift (input px)."""
        return {
            "peak_agreement": self.same / self.n if self.n else None,
            "peak_shift": self.dist / self.n if self.n else None,
        }


def keypoint_labels(labels: np.ndarray, out_shape: tuple) -> bool:
    """True when ``labels`` look like (n, K, 2|3) coordinates of a (n, H, W, K) output's K keypoints."""
    shape = np.shape(labels)
    return (
        len(out_shape) == 4
        and len(shape) == 3
        and shape[1] == out_shape[-1]
        and shape[2] in (2, 3)
        and tuple(out_shape[1:3]) != shape[1:3]
        and np.asarray(labels).dtype.kind in "iuf"
    )


class Keypoints(Task):
    """Heatmaps (n, H, W, K) scored against coordinates (n, K, 2|3); ``--max-drop`` gates pck@0.1 (absolute)."""

    name = "keypoints"
    value_outputs = True
    main_metric = "pck@0.1"
    metric_keys = (*(f"pck@{a:g}" for a in PCK_ALPHAS), "keypoint_error", "pck@0.1_soft", "keypoint_error_soft")
    drift_keys = ("peak_agreement", "peak_shift")
    percent = frozenset({*(f"pck@{a:g}" for a in PCK_ALPHAS), "pck@0.1_soft", "peak_agreement"})
    agreement_label = "peak agreement"

    def labels(self, labels: np.ndarray, ref: dict, ctx: TaskContext, data: Path) -> np.ndarray:
        """(n, K, 3) float: (x, y) in input pixels and 1/0 visible, whatever order and columns were given."""
        out_shape = np.shape(ref[ctx.primary])
        if not keypoint_labels(labels, out_shape):
            raise label_error(
                data,
                f"have shape {shape_text(labels)} ({labels.dtype})",
                f"keypoints needs a (n, H, W, K) heatmap output (this one: {shape_text(ref[ctx.primary])}) and "
                "numeric labels (n, K, 2) or (n, K, 3): each keypoint's coordinates in input pixels, then visibility",
            )
        if ctx.input_size is None:
            raise DataError(
                f"--data {data}: keypoints are scored in pixels of the model's input, but its input has no "
                "(n, H, W, C) image shape. Use --task heatmap with target heatmaps instead."
            )
        return _normalised(np.asarray(labels, np.float64), ctx, data)

    def drift(self, ctx: TaskContext) -> Accumulator:
        """Peak agreement and shift against the reference's maps."""
        return _PeakDrift(ctx)

    def scores(self, ctx: TaskContext) -> Accumulator:
        """PCK and pixel error against the coordinates."""
        return _Coordinates(ctx)

    def agreement(self, drift: dict) -> float | None:
        """Share of keypoints whose arg-max is the reference's pixel."""
        return drift["peak_agreement"]


def _normalised(y: np.ndarray, ctx: TaskContext, data: Path) -> np.ndarray:
    """(x, y, visible) from the given order; DataError for coordinates that look normalised to [0, 1]."""
    xy = y[..., :2] if ctx.keypoint_order == "xy" else y[..., 1::-1]
    seen = np.all(np.isfinite(xy), axis=-1) & (y[..., 2] > 0 if y.shape[-1] == 3 else True)
    if seen.any() and max(ctx.input_size) > 2 and np.abs(xy[seen]).max() <= 1.0:
        raise DataError(
            f"--data {data}: every keypoint coordinate is within [0, 1] for a {ctx.input_size[1]}x"
            f"{ctx.input_size[0]} input: they look normalised, and keypoints reads input pixels. Multiply x by the "
            "input width and y by its height."
        )
    return np.concatenate([np.where(seen[..., None], xy, 0.0), seen[..., None].astype(np.float64)], axis=-1)


TASK = TASKS.register(Keypoints())
