"""What every eval task provides: label validation, streaming drift (artefact vs reference) and streaming task
metrics (outputs vs labels), and its main metric for ``--max-drop``.

Outputs arrive as ``{reference output name: (n, ...) float array}`` holding the outputs ``Task.wanted`` named; the
accumulators keep running totals only (memory O(batch) whatever the data size).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.errors import DataError


@dataclass(frozen=True)
class TaskContext:
    """What a task's metrics need besides the outputs: the primary output, every output name, top-k, the
    multi-label / binary threshold, the class names (None when nobody named the classes), the model input's
    (H, W) (None without an image input) and the keypoint labels' coordinate order (``xy`` or ``yx``)."""

    primary: str
    outputs: tuple[str, ...]
    top_k: int = 5
    threshold: float = 0.5
    class_names: tuple[str, ...] | None = None
    input_size: tuple[int, int] | None = None
    keypoint_order: str = "xy"


@dataclass(frozen=True)
class TaskChoice:
    """The task eval measures, why, and whether that was an assumption (``assumed``) rather than read off the
    model or the labels."""

    name: str
    reason: str
    assumed: bool = False
    overridden: bool = False

    def to_dict(self, task: Task) -> dict:
        """The report's ``task`` object."""
        return {
            "name": self.name,
            "reason": self.reason,
            "assumed": self.assumed,
            "given": self.overridden,
            "main_metric": task.main_metric,
            "higher_is_better": task.higher_is_better,
        }


class Accumulator:
    """Running totals of a group of metrics: ``update`` per batch, ``result`` at the end (a dict)."""

    def update(self, ref: dict[str, np.ndarray] | None, out: dict[str, np.ndarray], labels) -> None:
        """Fold one batch in."""
        raise NotImplementedError

    def result(self) -> dict:
        """The metrics over every batch so far."""
        raise NotImplementedError


class Task:
    """One kind of model output (stateless). Subclasses fill the class attributes and the methods."""

    name = ""
    main_metric = ""
    higher_is_better = True
    metric_keys: tuple[str, ...] = ()
    drift_keys: tuple[str, ...] = ()
    percent: frozenset = frozenset()  # metric keys shown as percentages
    agreement_label = "agreement"  # the table column of the row's top1_agreement
    main_unit = ""  # the main metric's unit when it is not a fraction (psnr: dB)
    value_outputs = False  # its outputs are numbers compared as numbers (distances, pixels), never decisions
    qat_head = False  # --quant qat can fine-tune an output of this task (qat.heads has its loss, targets and score)

    def wanted(self, ctx: TaskContext) -> tuple[str, ...]:
        """Reference output names the artefacts must return (the primary one unless the task needs more)."""
        return (ctx.primary,)

    def labels(self, labels: np.ndarray, ref: dict[str, np.ndarray], ctx: TaskContext, data: Path) -> np.ndarray:
        """``labels`` checked against the reference's first outputs and normalised; DataError naming both sides."""
        raise NotImplementedError

    def drift(self, ctx: TaskContext) -> Accumulator:
        """Streaming drift of an artefact's outputs against the reference's (keys ``drift_keys``)."""
        raise NotImplementedError

    def scores(self, ctx: TaskContext) -> Accumulator:
        """Streaming task metrics of outputs against labels (keys ``metric_keys``)."""
        raise NotImplementedError

    def agreement(self, drift: dict) -> float | None:
        """The value of the row's legacy ``top1_agreement`` field (the task's decision agreement, or None)."""
        return None

    def uses_labels(self) -> bool:
        """False for tasks measured against the reference only (their metrics need no labels)."""
        return True


def label_error(data: Path, found: str, expected: str) -> DataError:
    """One paragraph: what the labels hold, what this task needs, how to choose another task (``detail``: the
    first two without the eval-specific parts)."""
    exc = DataError(
        f"--data {data}: the labels (y) {found}; {expected}. If the model is not what eval took it "
        "for, say which task it is with --task classification|multilabel|regression|segmentation|"
        "detection|embedding|image|heatmap|keypoints."
    )
    exc.detail = f"{found}; {expected}"
    return exc


def per_sample(a: np.ndarray) -> np.ndarray:
    """(n, ...) as float64 (n, m)."""
    return np.asarray(a, dtype=np.float64).reshape(len(a), -1)


def whole(labels: np.ndarray) -> bool:
    """True when every label is a finite whole number."""
    if labels.dtype.kind in "iub":
        return True
    if labels.dtype.kind != "f":
        return False
    return bool(np.all(np.isfinite(labels)) and np.all(labels == np.round(labels)))


def shape_text(a) -> str:
    """(n, d1, ...) with None for the sample count."""
    return "(" + ", ".join(["n", *(str(d) for d in np.shape(a)[1:])]) + ")"


class ErrorTotals:
    """max / mean |artefact - reference| over every element of one output, running."""

    def __init__(self):
        self.max, self.sum, self.count, self.ref_abs = None, 0.0, 0, 0.0

    def update(self, ref: np.ndarray, out: np.ndarray) -> None:
        """Fold a batch of one output in."""
        if not np.size(out):
            return
        d = np.abs(per_sample(out) - per_sample(ref))
        m = float(d.max())
        self.max = m if self.max is None else max(self.max, m)
        self.sum += float(d.sum())
        self.count += d.size
        self.ref_abs += float(np.abs(per_sample(ref)).sum())

    @property
    def mean(self) -> float | None:
        """Mean absolute error."""
        return self.sum / self.count if self.count else None

    @property
    def relative(self) -> float | None:
        """Mean absolute error over the mean |reference| (None when the reference is all zeros)."""
        return self.sum / self.ref_abs if self.count and self.ref_abs > 0 else None


class Confusion:
    """A running confusion matrix over ``classes`` classes (rows: truth, columns: prediction)."""

    def __init__(self, classes: int):
        self.m = np.zeros((classes, classes), dtype=np.int64)

    def update(self, truth: np.ndarray, pred: np.ndarray) -> None:
        """Count (truth, prediction) pairs (flattened)."""
        k = len(self.m)
        t, p = np.asarray(truth, dtype=np.int64).reshape(-1), np.asarray(pred, dtype=np.int64).reshape(-1)
        self.m += np.bincount(t * k + p, minlength=k * k).reshape(k, k)

    def accuracy(self) -> float | None:
        """Trace over total."""
        total = int(self.m.sum())
        return float(np.trace(self.m)) / total if total else None

    def mean_iou(self) -> float | None:
        """Mean IoU over the classes present in the truth or the predictions."""
        inter = np.diag(self.m).astype(np.float64)
        union = self.m.sum(axis=0) + self.m.sum(axis=1) - inter
        seen = union > 0
        return float(np.mean(inter[seen] / union[seen])) if seen.any() else None
