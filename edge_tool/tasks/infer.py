"""Which task a model performs, read from what it says: output names and shapes, the final activation in its
graph, and the labels' dtype and shape. Every rule says why; a guess says that it is one (``assumed``)."""

from __future__ import annotations

import numpy as np

from edge_tool.tasks.base import TaskChoice, whole
from edge_tool.tasks.detection import is_box_output


def infer_task(
    outputs: dict[str, tuple], primary: str, activations: dict[str, str], labels: np.ndarray | None
) -> TaskChoice:
    """The task for reference outputs ``{name: shape (n, ...)}`` with the primary output's final activation and
    the labels (None without)."""
    boxes = [n for n, s in outputs.items() if is_box_output(n, s)]
    if len(outputs) > 1 and boxes:
        return TaskChoice("detection", f"{len(outputs)} outputs, {', '.join(map(repr, boxes))} holding boxes")
    shape, act = tuple(outputs[primary]), activations.get(primary, "unknown")
    said = f"output {primary!r} {_shape(shape)}" + ("" if act == "unknown" else f", {act} activation")
    if len(outputs) > 1:
        extra = f"; the other outputs ({', '.join(sorted(set(outputs) - {primary}))}) are not measured"
    else:
        extra = ""
    if len(shape) >= 3:  # (n, H, W, C), (n, T, C): a class (or value) per position, never one arg-max of it all
        return _spatial(shape, act, said, labels, extra)
    return _vector(shape, act, said, labels, extra)


def _spatial(shape: tuple, act: str, said: str, labels, extra: str) -> TaskChoice:
    """(n, H, W, C) or (n, T, C) outputs: per-position classes, unless linear with real-valued targets."""
    if act in ("softmax", "sigmoid"):
        return TaskChoice("segmentation", f"{said}: per-pixel class scores{extra}")
    if labels is not None and labels.shape[1:] == shape[1:] and not whole(labels):
        return TaskChoice("regression", f"{said}: real-valued targets of the output's shape{extra}")
    if labels is not None and labels.shape[1:] in (shape[1:-1], (*shape[1:-1], 1)) and whole(labels):
        return TaskChoice("segmentation", f"{said}; labels are integer masks {_shape(labels.shape)}{extra}")
    return TaskChoice(
        "segmentation", f"{said}: assumed per-pixel class scores (logits) over the last axis{extra}", assumed=True
    )


def _vector(shape: tuple, act: str, said: str, labels, extra: str) -> TaskChoice:
    """(n, k) outputs (or (n,)): classification, multi-label or regression."""
    k = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    kind = _label_kind(labels, k)
    if act == "softmax":
        return TaskChoice("classification", f"{said}{extra}")
    if act == "sigmoid":
        if kind == "one-hot" and k > 1:
            return TaskChoice("classification", f"{said}; labels are one-hot (one class per sample){extra}")
        what = "independent yes/no per label" if k > 1 else "one yes/no score"
        return TaskChoice("multilabel", f"{said}: {what}{extra}")
    if kind == "real":
        return TaskChoice("regression", f"{said}; labels are real numbers{extra}")
    if kind == "multi-hot":
        return TaskChoice(
            "multilabel",
            f"{said}; labels are multi-hot rows; outputs without a sigmoid may be "
            f"logits, decided at --threshold (give --threshold 0 for logits){extra}",
            assumed=True,
        )
    if kind in ("index", "one-hot") and k > 1:
        return TaskChoice(
            "classification",
            f"{said}; labels are class indices (outputs taken as logits){extra}",
            assumed=act != "linear",
        )
    if k == 1:
        return TaskChoice("regression", f"{said}: one value per sample{extra}", assumed=act == "unknown")
    if act in ("relu", "tanh"):
        return TaskChoice("regression", f"{said}: non-probability outputs{extra}", assumed=True)
    return TaskChoice(
        "classification", f"{said}: assumed class scores (logits), arg-max is the class{extra}", assumed=True
    )


def _label_kind(labels: np.ndarray | None, k: int) -> str | None:
    """index | one-hot | multi-hot | real | None (no labels, or nothing to learn from them)."""
    if labels is None or not len(labels) or labels.dtype.kind not in "iufb":
        return None
    if not whole(labels):
        return "real"
    flat = labels.reshape(len(labels), -1)
    if flat.shape[1] == 1:
        return "index" if flat.min() >= 0 and flat.max() < max(k, 2) else ("real" if k == 1 else None)
    if flat.shape[1] == k and np.all((flat == 0) | (flat == 1)):
        return "one-hot" if np.all(flat.sum(axis=1) == 1) else "multi-hot"
    return None


def _shape(shape) -> str:
    return "(" + ", ".join(["n", *(str(d) for d in tuple(shape)[1:])]) + ")"
