"""Metrics of embedding, image, heatmap and keypoint models in plain numpy, from their textbook definitions (not from
edgetool's tasks): mean cosine, leave-one-out recall@1, PSNR, PCK (of target maps or of coordinates) and peak agreement. Whole arrays in, floats out."""

from __future__ import annotations

import numpy as np


def mean_cosine(ref: np.ndarray, got: np.ndarray) -> float:
    """Mean over samples of cos(ref_i, got_i)."""
    a, b = np.asarray(ref, np.float64).reshape(len(ref), -1), np.asarray(got, np.float64).reshape(len(got), -1)
    return float(np.mean(np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))))


def recall_at_1(emb: np.ndarray, ids: np.ndarray) -> float:
    """Leave-one-out recall@1: each sample whose identity occurs again, hit when its most cosine-similar other
    sample shares it."""
    e = np.asarray(emb, np.float64).reshape(len(emb), -1)
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    ids = np.asarray(ids).reshape(-1)
    sim = e @ e.T
    np.fill_diagonal(sim, -np.inf)
    counted = np.array([np.count_nonzero(ids == i) > 1 for i in ids])
    return float(np.mean((ids[sim.argmax(axis=1)] == ids)[counted]))


def psnr(pred: np.ndarray, y: np.ndarray) -> float:
    """Mean per-image PSNR in dB, peak 1 for targets in [0, 1] (else 255), capped at 100 dB."""
    p, t = np.asarray(pred, np.float64).reshape(len(pred), -1), np.asarray(y, np.float64).reshape(len(y), -1)
    peak = 1.0 if t.min() >= 0 and t.max() <= 1 else 255.0
    mse = np.mean((p - t) ** 2, axis=1)
    return float(np.mean([min(100.0, 10 * np.log10(peak**2 / m)) if m > 0 else 100.0 for m in mse]))


def _peaks(maps: np.ndarray) -> np.ndarray:
    m = np.asarray(maps)
    i = m.reshape(len(m), -1, m.shape[-1]).argmax(axis=1)
    return np.stack([i // m.shape[2], i % m.shape[2]], axis=-1)


def pck(pred: np.ndarray, y: np.ndarray, alpha: float = 0.1) -> float:
    """Share of visible keypoints (non-zero target map) whose predicted peak lies within alpha × max(H, W) of the
    target's peak."""
    p, t = np.asarray(pred), np.asarray(y).reshape(np.shape(pred))
    d = np.linalg.norm(_peaks(p) - _peaks(t), axis=-1)
    visible = np.abs(t).reshape(len(t), -1, t.shape[-1]).max(axis=1) > 0
    return float(np.mean(d[visible] <= alpha * max(p.shape[1:3])))


def peak_agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Share of (sample, keypoint) maps whose peak is the same pixel in two runs."""
    return float(np.mean(np.all(_peaks(a) == _peaks(b), axis=-1)))


def coordinate_pck(maps: np.ndarray, xy: np.ndarray, input_hw: tuple[int, int], alpha: float = 0.1) -> float:
    """Share of keypoints whose heatmap arg-max, its pixel centre scaled onto the input's, lies within alpha ×
    max(input H, W) of the label's (x, y) input pixels; one map at a time."""
    m, xy = np.asarray(maps, np.float64), np.asarray(xy, np.float64)
    n, h, w, k = m.shape
    hits = []
    for i in range(n):
        for j in range(k):
            r, c = np.unravel_index(np.argmax(m[i, :, :, j]), (h, w))
            px, py = (c + 0.5) * input_hw[1] / w - 0.5, (r + 0.5) * input_hw[0] / h - 0.5
            hits.append(np.hypot(px - xy[i, j, 0], py - xy[i, j, 1]) <= alpha * max(input_hw))
    return float(np.mean(hits))
