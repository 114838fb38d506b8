"""Metrics by name: drift (reference outputs vs artefact outputs) and task accuracy (outputs vs labels)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DriftMetric:
    """A named comparison of reference outputs with artefact outputs, both (n, ...) float arrays."""

    name: str
    description: str
    fn: Callable[[np.ndarray, np.ndarray], float]


def _flat(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).reshape(len(a), -1)


def top1_agreement(ref: np.ndarray, out: np.ndarray) -> float:
    """Fraction of samples where the artefact's arg-max class equals the reference's."""
    return float(np.mean(_flat(ref).argmax(axis=1) == _flat(out).argmax(axis=1)))


def max_abs_error(ref: np.ndarray, out: np.ndarray) -> float:
    """Largest |reference - artefact| over every output element."""
    return float(np.max(np.abs(_flat(ref) - _flat(out))))


def mean_abs_error(ref: np.ndarray, out: np.ndarray) -> float:
    """Mean |reference - artefact| over every output element."""
    return float(np.mean(np.abs(_flat(ref) - _flat(out))))


def cosine(ref: np.ndarray, out: np.ndarray) -> float:
    """Mean over samples of the cosine similarity of the two output vectors (1.0 when both are zero)."""
    a, b = _flat(ref), _flat(out)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    dot = np.sum(a * b, axis=1)
    both_zero = (na == 0) & (nb == 0)
    cos = np.where(both_zero, 1.0, dot / np.maximum(na * nb, np.finfo(np.float64).tiny))
    return float(np.mean(cos))


DRIFT_METRICS: dict[str, DriftMetric] = {
    m.name: m
    for m in (
        DriftMetric("top1_agreement", "share of samples with the same arg-max class as the reference", top1_agreement),
        DriftMetric("max_abs_error", "largest absolute difference of any output element", max_abs_error),
        DriftMetric("mean_abs_error", "mean absolute difference of the output elements", mean_abs_error),
        DriftMetric("cosine", "mean per-sample cosine similarity of the output vectors", cosine),
    )
}


def drift(ref: np.ndarray, out: np.ndarray) -> dict[str, float]:
    """Every registered drift metric of ``out`` against ``ref``."""
    if np.shape(ref) != np.shape(out):
        raise ValueError(f"output shapes differ: reference {np.shape(ref)}, artefact {np.shape(out)}")
    return {name: m.fn(ref, out) for name, m in DRIFT_METRICS.items()}


def num_classes(out: np.ndarray) -> int:
    """Classes in a classifier output (its last dimension)."""
    return int(np.shape(out)[-1]) if np.ndim(out) >= 2 else 1


def topk_accuracy(out: np.ndarray, labels: np.ndarray, k: int = 1) -> float:
    """Fraction of samples whose label is among the ``k`` highest outputs (ties broken by index)."""
    scores = _flat(out)
    if k == 1:
        return float(np.mean(scores.argmax(axis=1) == labels))
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return float(np.mean(np.any(top == labels[:, None], axis=1)))


def task_metrics(out: np.ndarray, labels: np.ndarray | None, top_k: int) -> dict[str, float | None]:
    """accuracy (top-1) and top_k_accuracy (only when there are more than k classes); None without labels."""
    if labels is None:
        return {"accuracy": None, "top_k_accuracy": None}
    topk = topk_accuracy(out, labels, top_k) if num_classes(out) > top_k else None
    return {"accuracy": topk_accuracy(out, labels, 1), "top_k_accuracy": topk}
