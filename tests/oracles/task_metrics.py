"""Task metrics in plain numpy, written from their textbook definitions (not from edgetool's evaluate/tasks), so a
test or the zoo can check what edgetool reports: R²/MAE, per-label accuracy and F1, pixel accuracy and mIoU, box IoU.

Every function takes whole arrays (n samples first) and returns floats; ``agreement`` functions compare two runs of
one model (reference vs. artefact) the way the task decides (arg-max, threshold, per pixel, box overlap)."""

from __future__ import annotations

import numpy as np


def r2(pred: np.ndarray, y: np.ndarray) -> float:
    """Coefficient of determination, averaged over output columns (1 - SS_res / SS_tot per column)."""
    p, t = np.asarray(pred, np.float64).reshape(len(pred), -1), np.asarray(y, np.float64).reshape(len(y), -1)
    ss_res = ((t - p) ** 2).sum(axis=0)
    ss_tot = ((t - t.mean(axis=0)) ** 2).sum(axis=0)
    return float(np.mean(1.0 - ss_res / np.where(ss_tot > 0, ss_tot, 1.0)))


def mae(pred: np.ndarray, y: np.ndarray) -> float:
    """Mean absolute error over every value."""
    return float(
        np.mean(
            np.abs(np.asarray(pred, np.float64).reshape(len(pred), -1) - np.asarray(y, np.float64).reshape(len(y), -1))
        )
    )


def multilabel_f1_macro(scores: np.ndarray, y: np.ndarray, threshold: float = 0.5) -> float:
    """Mean over labels of F1 = 2TP / (2TP + FP + FN) at ``threshold`` (a label never predicted nor present: 1)."""
    p, t = np.asarray(scores) >= threshold, np.asarray(y).astype(bool)
    tp = (p & t).sum(axis=0)
    denom = 2 * tp + (p & ~t).sum(axis=0) + (~p & t).sum(axis=0)
    return float(np.mean(np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 1.0)))


def per_label_accuracy(scores: np.ndarray, y: np.ndarray, threshold: float = 0.5) -> float:
    """Fraction of (sample, label) decisions at ``threshold`` equal to the multi-hot labels."""
    return float(np.mean((np.asarray(scores) >= threshold) == np.asarray(y).astype(bool)))


def label_agreement(a: np.ndarray, b: np.ndarray, threshold: float = 0.5) -> float:
    """Fraction of (sample, label) yes/no decisions two runs share."""
    return float(np.mean((np.asarray(a) >= threshold) == (np.asarray(b) >= threshold)))


def pixel_classes(scores: np.ndarray) -> np.ndarray:
    """Per-pixel class: arg-max over the last axis (0.5 threshold for a one-channel mask)."""
    s = np.asarray(scores)
    return (s[..., 0] >= 0.5).astype(np.int64) if s.shape[-1] == 1 else s.argmax(-1)


def pixel_accuracy(scores: np.ndarray, masks: np.ndarray) -> float:
    """Fraction of pixels whose class equals the integer mask."""
    return float(np.mean(pixel_classes(scores) == np.asarray(masks).reshape(pixel_classes(scores).shape)))


def mean_iou(scores: np.ndarray, masks: np.ndarray) -> float:
    """Mean over classes present in the masks or the prediction of |pred ∩ true| / |pred ∪ true|."""
    pred = pixel_classes(scores)
    true = np.asarray(masks).reshape(pred.shape)
    ious = []
    for c in np.union1d(np.unique(pred), np.unique(true)):
        union = np.sum((pred == c) | (true == c))
        ious.append(np.sum((pred == c) & (true == c)) / union)
    return float(np.mean(ious))


def pixel_agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Fraction of pixels two runs give the same class."""
    return float(np.mean(pixel_classes(a) == pixel_classes(b)))


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of corresponding boxes given as (y0, x0, y1, x1) or (x0, y0, x1, y1) corner pairs (order-free)."""
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)
    lo_a, hi_a = np.minimum(a[:, :2], a[:, 2:]), np.maximum(a[:, :2], a[:, 2:])
    lo_b, hi_b = np.minimum(b[:, :2], b[:, 2:]), np.maximum(b[:, :2], b[:, 2:])
    inter = np.prod(np.clip(np.minimum(hi_a, hi_b) - np.maximum(lo_a, lo_b), 0, None), axis=1)
    union = np.prod(hi_a - lo_a, axis=1) + np.prod(hi_b - lo_b, axis=1) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), np.all(a == b, axis=1).astype(np.float64))


def argmax_agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Fraction of samples whose arg-max over the last axis two runs share."""
    return float(np.mean(np.asarray(a).argmax(-1) == np.asarray(b).argmax(-1)))


def regression_agreement(ref: np.ndarray, got: np.ndarray, rel: float = 0.05) -> float:
    """Fraction of samples whose every value is within ``rel`` × the reference's value range of the reference."""
    r, g = np.asarray(ref, np.float64).reshape(len(ref), -1), np.asarray(got, np.float64).reshape(len(got), -1)
    span = max(float(r.max() - r.min()), 1e-12)
    return float(np.mean(np.all(np.abs(r - g) <= rel * span, axis=1)))
