"""Which task a model performs, read from what it says: output names and shapes, the final activation in its
graph, and the labels' dtype and shape. Every rule says why; a guess says that it is one (``assumed``)."""

from __future__ import annotations

import numpy as np

from edge_tool.tasks.base import TaskChoice, whole
from edge_tool.tasks.detection import is_box_output
from edge_tool.tasks.keypoints import keypoint_labels


def infer_task(
    outputs: dict[str, tuple],
    primary: str,
    activations: dict[str, str],
    labels: np.ndarray | None,
    unit_norm: bool = False,
) -> TaskChoice:
    """The task for reference outputs ``{name: shape (n, ...)}`` with the primary output's final activation, the
    labels (None without) and whether the primary output's rows were measured to have unit L2 norm."""
    boxes = [n for n, s in outputs.items() if is_box_output(n, s)]
    if len(outputs) > 1 and boxes:
        return TaskChoice("detection", f"{len(outputs)} outputs, {', '.join(map(repr, boxes))} holding boxes")
    shape, act = tuple(outputs[primary]), activations.get(primary, "unknown")
    said = f"output {primary!r} {_shape(shape)}" + ("" if act == "unknown" else f", {act} activation")
    if len(outputs) > 1:
        extra = f"; the other outputs ({', '.join(sorted(set(outputs) - {primary}))}) are not measured"
    else:
        extra = ""
    if labels is not None and keypoint_labels(labels, shape):
        return TaskChoice(
            "keypoints",
            f"{said}: {shape[-1]} maps; labels {_shape(labels.shape)} are each keypoint's coordinates "
            f"(--keypoint-order says x, y or row, column){extra}",
        )
    if len(shape) >= 3:  # (n, H, W, C), (n, T, C): a class (or value) per position, never one arg-max of it all
        return _spatial(shape, act, said, labels, extra)
    if act == "l2norm" or (unit_norm and act not in ("softmax", "sigmoid")):
        found = _embedding(shape, act, said, labels, extra)
        if found is not None:
            return found
    return _vector(shape, act, said, labels, extra)


def _embedding(shape: tuple, act: str, said: str, labels, extra: str) -> TaskChoice | None:
    """Unit-length rows (an L2 normalisation in the graph, or measured): an embedding unless the labels are real
    vectors of the output's width (unit direction vectors are regression)."""
    how = "ends in an L2 normalisation" if act == "l2norm" else "rows of unit L2 norm"
    if len(shape) != 2 or shape[1] < 2:
        return None
    if labels is None:
        return TaskChoice("embedding", f"{said}: {how}, compared by cosine similarity{extra}")
    flat = labels.reshape(len(labels), -1) if labels.ndim else labels
    if flat.ndim == 2 and flat.shape[1] == 1 and (labels.dtype.kind in "USO" or whole(labels)):
        return TaskChoice("embedding", f"{said}: {how}; labels are identities (one per sample){extra}")
    return None


def _spatial(shape: tuple, act: str, said: str, labels, extra: str) -> TaskChoice:
    """(n, H, W, C) or (n, T, C) outputs: per-position classes, unless the labels are values no mask can hold."""
    if act == "softmax" and shape[-1] > 1:
        return TaskChoice("segmentation", f"{said}: per-pixel class scores{extra}")
    valued = _per_pixel_values(shape, labels)
    if valued is not None:
        return _pixel_regression(shape, said, labels, valued, extra)
    if act in ("softmax", "sigmoid"):
        hint = "" if labels is not None else f" ({_NOT_MASKS})"
        return TaskChoice("segmentation", f"{said}: per-pixel class scores{hint}{extra}")
    if labels is not None and labels.shape[1:] in (shape[1:-1], (*shape[1:-1], 1)) and whole(labels):
        return TaskChoice("segmentation", f"{said}; labels are integer masks {_shape(labels.shape)}{extra}")
    return TaskChoice(
        "segmentation",
        f"{said}: assumed per-pixel class scores (logits) over the last axis ({_NOT_MASKS}){extra}",
        assumed=True,
    )


_NOT_MASKS = "--task image for images out, --task heatmap for keypoint maps"


def _per_pixel_values(shape: tuple, labels) -> str | None:
    """Why the labels cannot be masks (targets of the output's own shape holding fractions, or whole values
    beyond its class indices), else None."""
    if labels is None or labels.dtype.kind not in "iuf" or not labels.size:
        return None
    same = labels.shape[1:] == shape[1:] or labels.shape[1:] + (1,) == shape[1:]
    if not same:
        return None
    if not whole(labels):
        return "real-valued targets of the output's shape"
    if shape[-1] == 1 and (labels.min() < 0 or labels.max() > 1):
        return f"targets of the output's shape holding {labels.min():g}..{labels.max():g}, not 0/1 masks"
    if shape[-1] > 1 and labels.shape[1:] == shape[1:]:
        onehot = np.all((labels == 0) | (labels == 1)) and np.all(labels.sum(axis=-1) == 1)
        if not onehot:
            return "whole-valued targets of the output's shape that are not one-hot masks"
    return None


def _pixel_regression(shape: tuple, said: str, labels: np.ndarray, why: str, extra: str) -> TaskChoice:
    """Per-pixel values: keypoint heatmaps when every target map is one sparse peak, else images."""
    if len(shape) != 4:
        return TaskChoice("regression", f"{said}: {why}{extra}")
    if _sparse_peaks(labels.reshape(len(labels), *shape[1:])):
        return TaskChoice(
            "heatmap",
            f"{said}: {why}, each target map one sparse peak (at most {PEAK_AREA:.0%} of its pixels above half its "
            f"maximum): keypoint heatmaps (--task image if these are images){extra}",
            assumed=True,
        )
    return TaskChoice("image", f"{said}: {why}: images out (--task heatmap for keypoint maps){extra}")


PEAK_AREA = 0.1


def _sparse_peaks(maps: np.ndarray) -> bool:
    """True when every non-empty (H, W) target map has at most PEAK_AREA of its pixels above half its maximum."""
    m = np.asarray(maps[:256], np.float64)
    top = m.max(axis=(1, 2), keepdims=True)
    if np.any(m.min(axis=(1, 2)) < 0):
        return False
    lit = (m > 0.5 * top) & (top > 0)
    share = lit.mean(axis=(1, 2))
    shown = top[:, 0, 0, :] > 0
    return bool(shown.any() and np.all(share[shown] <= PEAK_AREA))


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
