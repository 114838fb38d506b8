"""Metrics by name: drift (reference outputs vs artefact outputs) and task accuracy (outputs vs labels).

Each metric exists twice: as a function of whole (n, ...) arrays (the definition, used on small data and in tests)
and as a streaming accumulator with ``update(ref_batch, out_batch, labels_batch)`` / ``result()`` that gives the
same number batch by batch (counts are exact; sums are float64, so means agree to float rounding). The eval
pipeline uses the accumulators, so its memory does not grow with the data.
"""

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
    accumulator: Callable[[], Accumulator]


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


def _cosines(ref: np.ndarray, out: np.ndarray) -> np.ndarray:
    a, b = _flat(ref), _flat(out)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    dot = np.sum(a * b, axis=1)
    both_zero = (na == 0) & (nb == 0)
    return np.where(both_zero, 1.0, dot / np.maximum(na * nb, np.finfo(np.float64).tiny))


def cosine(ref: np.ndarray, out: np.ndarray) -> float:
    """Mean over samples of the cosine similarity of the two output vectors (1.0 when both are zero)."""
    return float(np.mean(_cosines(ref, out)))


class Accumulator:
    """A metric computed batch by batch: ``update`` with each batch, ``result`` at the end (None before any)."""

    def update(self, ref: np.ndarray | None, out: np.ndarray, labels: np.ndarray | None) -> None:
        """Fold one batch in (``ref``/``labels`` may be None for metrics that do not need them)."""
        raise NotImplementedError

    def result(self) -> float | None:
        """The metric over every batch so far."""
        raise NotImplementedError


class _Mean(Accumulator):
    """Mean of a per-sample (or per-element) quantity: float64 running sum and count."""

    def __init__(self, per_item: Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray]):
        self._per_item, self._sum, self._count = per_item, 0.0, 0

    def update(self, ref, out, labels) -> None:
        """Add the batch's items to the running sum."""
        items = np.asarray(self._per_item(ref, out, labels), dtype=np.float64)
        self._sum += float(np.sum(items))
        self._count += items.size

    def result(self) -> float | None:
        """Running sum / count."""
        return self._sum / self._count if self._count else None


class _Max(Accumulator):
    """Largest |reference - artefact| element seen so far."""

    def __init__(self):
        self._max: float | None = None

    def update(self, ref, out, labels) -> None:
        """Compare the batch's largest error with the running maximum."""
        if np.size(out):
            m = float(np.max(np.abs(_flat(ref) - _flat(out))))
            self._max = m if self._max is None else max(self._max, m)

    def result(self) -> float | None:
        """The running maximum."""
        return self._max


def _agree(ref, out, labels) -> np.ndarray:
    return _flat(ref).argmax(axis=1) == _flat(out).argmax(axis=1)


def _abs_err(ref, out, labels) -> np.ndarray:
    return np.abs(_flat(ref) - _flat(out))


def _hits(k: int) -> Callable:
    def hits(ref, out, labels) -> np.ndarray:
        scores = _flat(out)
        if k == 1:
            return scores.argmax(axis=1) == labels
        top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return np.any(top == np.asarray(labels)[:, None], axis=1)

    return hits


DRIFT_METRICS: dict[str, DriftMetric] = {
    m.name: m
    for m in (
        DriftMetric(
            "top1_agreement",
            "share of samples with the same arg-max class as the reference",
            top1_agreement,
            lambda: _Mean(_agree),
        ),
        DriftMetric("max_abs_error", "largest absolute difference of any output element", max_abs_error, _Max),
        DriftMetric(
            "mean_abs_error", "mean absolute difference of the output elements", mean_abs_error, lambda: _Mean(_abs_err)
        ),
        DriftMetric(
            "cosine",
            "mean per-sample cosine similarity of the output vectors",
            cosine,
            lambda: _Mean(lambda r, o, _: _cosines(r, o)),
        ),
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


class TaskAccumulator:
    """accuracy and top_k_accuracy of one model's outputs against labels, batch by batch (see task_metrics)."""

    def __init__(self, top_k: int):
        self.top_k = top_k
        self._top1, self._topk = _Mean(_hits(1)), _Mean(_hits(top_k))
        self._classes: int | None = None
        self._labelled = True

    def update(self, out: np.ndarray, labels: np.ndarray | None) -> None:
        """Fold one batch of outputs (and its labels; None means the data has no labels) in."""
        self._classes = num_classes(out)
        if labels is None:
            self._labelled = False
            return
        self._top1.update(None, out, labels)
        if self._classes > self.top_k:
            self._topk.update(None, out, labels)

    def result(self) -> dict[str, float | None]:
        """Same keys and values as task_metrics on all the batches at once."""
        if not self._labelled or self._classes is None:
            return {"accuracy": None, "top_k_accuracy": None}
        return {
            "accuracy": self._top1.result(),
            "top_k_accuracy": self._topk.result() if self._classes > self.top_k else None,
        }


class DriftAccumulator:
    """Every registered drift metric plus the task metrics of one artefact, updated batch by batch."""

    def __init__(self, top_k: int):
        self._drift = {name: m.accumulator() for name, m in DRIFT_METRICS.items()}
        self.task = TaskAccumulator(top_k)
        self.count = 0

    def update(self, ref: np.ndarray, out: np.ndarray, labels: np.ndarray | None) -> None:
        """Fold one batch in: reference outputs, this artefact's outputs (same shape), labels or None."""
        if np.shape(ref) != np.shape(out):
            raise ValueError(f"output shapes differ: reference {np.shape(ref)}, artefact {np.shape(out)}")
        if not len(out):
            return
        for acc in self._drift.values():
            acc.update(ref, out, labels)
        self.task.update(out, labels)
        self.count += len(out)

    def drift(self) -> dict[str, float]:
        """Same keys and values as ``drift(all_ref, all_out)``."""
        return {name: acc.result() for name, acc in self._drift.items()}
