"""Image-to-image models (denoisers, autoencoders, super-resolution at a fixed size): an image out per image in,
compared with the target images by PSNR and SSIM.

The data range L (PSNR's peak, SSIM's constants) is read off the first batch of targets (the reference's outputs for
drift): 1 when they lie in [0, 1], 255 when in [0, 255], else their peak-to-peak. PSNR is computed per image
(``10 log10(L² / MSE)``, capped at 100 dB for identical images) and averaged; SSIM is the standard form (Wang et
al. 2004): an 11×11 Gaussian window of σ 1.5, K1 0.01, K2 0.03, population (co)variances, the mean over the
positions where the window fits inside the image, averaged over channels (as scikit-image's
``structural_similarity(..., gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=L)``).
Images smaller than 11×11 get no SSIM (None).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.tasks.base import Accumulator, Task, TaskContext, label_error, shape_text
from edge_tool.tasks.registry import TASKS

MAX_PSNR = 100.0
WINDOW, SIGMA, K1, K2 = 11, 1.5, 0.01, 0.03


def data_range(targets: np.ndarray) -> float:
    """1 for targets in [0, 1], 255 for [0, 255], else their peak-to-peak (1 when constant)."""
    t = np.asarray(targets, np.float64)
    lo, hi = float(t.min()), float(t.max())
    if lo >= 0 and hi <= 1:
        return 1.0
    if lo >= 0 and hi <= 255:
        return 255.0
    return hi - lo or 1.0


def psnr(a: np.ndarray, b: np.ndarray, peak: float) -> np.ndarray:
    """Per-image PSNR (dB) of (n, ...) arrays, capped at MAX_PSNR."""
    d = np.asarray(a, np.float64).reshape(len(a), -1) - np.asarray(b, np.float64).reshape(len(b), -1)
    mse = np.mean(d * d, axis=1)
    with np.errstate(divide="ignore"):
        value = 10.0 * np.log10(peak * peak / mse)
    return np.minimum(value, MAX_PSNR)


def _gauss() -> np.ndarray:
    r = np.arange(WINDOW) - WINDOW // 2
    g = np.exp(-(r * r) / (2 * SIGMA * SIGMA))
    return g / g.sum()


def _filter(x: np.ndarray) -> np.ndarray:
    """Separable 'valid' Gaussian filtering over axes 1 and 2 of (n, H, W, C)."""
    g = _gauss()
    h = sum(g[i] * x[:, i : x.shape[1] - WINDOW + 1 + i] for i in range(WINDOW))
    return sum(g[i] * h[:, :, i : h.shape[2] - WINDOW + 1 + i] for i in range(WINDOW))


def ssim(a: np.ndarray, b: np.ndarray, peak: float) -> np.ndarray | None:
    """Per-image SSIM of (n, H, W[, C]) images (mean over channels); None when smaller than the window."""
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.ndim == 3:
        x, y = x[..., None], y[..., None]
    if x.ndim != 4 or x.shape[1] < WINDOW or x.shape[2] < WINDOW:
        return None
    c1, c2 = (K1 * peak) ** 2, (K2 * peak) ** 2
    mx, my = _filter(x), _filter(y)
    vx, vy = _filter(x * x) - mx * mx, _filter(y * y) - my * my
    cov = _filter(x * y) - mx * my
    s = ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return s.mean(axis=(1, 2, 3))


class _Pair(Accumulator):
    """Mean per-image PSNR / SSIM and mean absolute error of ``out`` against ``truth`` (labels or the reference)."""

    def __init__(self, ctx: TaskContext, against_reference: bool):
        self.ctx, self.ref_side = ctx, against_reference
        self.peak, self.psnr, self.ssim, self.ssim_n, self.abs, self.size, self.n = None, 0.0, 0.0, 0, 0.0, 0, 0

    def update(self, ref, out, labels) -> None:
        """Fold one batch of images in."""
        got = np.asarray(out[self.ctx.primary], np.float64)
        truth = np.asarray(ref[self.ctx.primary] if self.ref_side else labels, np.float64).reshape(got.shape)
        if not len(got):
            return
        if self.peak is None:
            self.peak = data_range(truth)
        self.psnr += float(psnr(got, truth, self.peak).sum())
        s = ssim(got, truth, self.peak)
        if s is not None:
            self.ssim += float(s.sum())
            self.ssim_n += len(s)
        self.abs += float(np.abs(got - truth).sum())
        self.size += got.size
        self.n += len(got)

    def result(self) -> dict:
        """psnr, ssim, mae, data_range (prefixed for drift)."""
        ssim_v = self.ssim / self.ssim_n if self.ssim_n else None
        if self.ref_side:
            return {"psnr_to_reference": self.psnr / self.n if self.n else None, "ssim_to_reference": ssim_v}
        return {
            "psnr": self.psnr / self.n if self.n else None,
            "ssim": ssim_v,
            "mae": self.abs / self.size if self.size else None,
            "data_range": self.peak,
        }


def check_same_shape(task: str, labels: np.ndarray, ref: dict, ctx: TaskContext, data: Path) -> np.ndarray:
    """Finite numeric targets of the output's per-sample shape (a missing last axis of 1 is added)."""
    want = tuple(np.shape(ref[ctx.primary])[1:])
    if labels.dtype.kind not in "iuf":
        raise label_error(data, f"hold {labels.dtype} values", f"{task} targets must be numbers")
    if labels.shape[1:] != want and labels.shape[1:] + (1,) == want:
        labels = labels[..., None]
    if labels.shape[1:] != want:
        raise label_error(
            data,
            f"have shape {shape_text(labels)}",
            f"{task} output {ctx.primary!r} gives {shape_text(ref[ctx.primary])}, so y must hold one target of "
            "that shape per sample",
        )
    if not np.all(np.isfinite(labels)):
        raise label_error(data, "hold NaN or Inf", f"{task} targets must be finite numbers")
    return labels.astype(np.float32)


class Image(Task):
    """Image out per image in; ``--max-drop`` gates mean PSNR in dB (absolute: 0.5 = half a dB)."""

    name = "image"
    qat_head = True
    main_unit = "dB"
    value_outputs = True
    main_metric = "psnr"
    metric_keys = ("psnr", "ssim", "mae", "data_range")
    drift_keys = ("psnr_to_reference", "ssim_to_reference")
    agreement_label = "PSNR to ref"

    def labels(self, labels: np.ndarray, ref: dict, ctx: TaskContext, data: Path) -> np.ndarray:
        """Target images of the output's shape."""
        return check_same_shape("image", labels, ref, ctx, data)

    def drift(self, ctx: TaskContext) -> Accumulator:
        """PSNR and SSIM of the artefact's images against the reference's."""
        return _Pair(ctx, against_reference=True)

    def scores(self, ctx: TaskContext) -> Accumulator:
        """psnr, ssim and mae against the target images."""
        return _Pair(ctx, against_reference=False)

    def agreement(self, drift: dict) -> float | None:
        """PSNR (dB) of the artefact's images against the reference's."""
        return drift["psnr_to_reference"]


TASK = TASKS.register(Image())
