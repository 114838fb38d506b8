"""Labels that follow the data: a model's own labels (--labels, labels.txt inside or beside it) and the mapping of an
image folder's class names onto the model's output indices, by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.errors import DataError
from edge_tool.metadata.labels import read_labels_file

LABELS_FILE = "labels.txt"


def labels_file_for(model: Path) -> Path | None:
    """labels.txt inside a model directory, or beside a model file (``models/m.keras`` → ``models/labels.txt``);
    never the parent of a directory model (``models/labels.txt`` belongs to no one of ``models/a/``, ``models/b/``)."""
    model = Path(model)
    candidate = model / LABELS_FILE if model.is_dir() else model.parent / LABELS_FILE
    return candidate if candidate.is_file() else None


def model_labels(model: Path, given: Path | None) -> tuple[list[str] | None, str]:
    """(labels, where they came from): --labels, else labels.txt inside/beside the model; (None, "") otherwise."""
    path = Path(given) if given is not None else labels_file_for(model)
    if path is None:
        return None, ""
    return read_labels_file(path, None), str(path)


def classes_outputs(signature, count: int) -> list:
    """The signature outputs with one score per label on their last axis: [N, count] (a class or tag per sample),
    [N, H, W, count] or [N, T, count] (a class per pixel or step: segmentation, tagging); for two labels, a binary
    head's single score [N, 1] when no output has two."""
    found = [t for t in signature.outputs if t.shape is not None and len(t.shape) >= 2 and t.shape[-1] == count]
    if not found and count == 2:  # a binary head: one sigmoid score [N, 1], of the second label (the first below 0.5)
        found = [t for t in signature.outputs if t.shape is not None and len(t.shape) == 2 and t.shape[-1] == 1]
    return found


def unfit_labels(labels, origin: str, signature) -> str | None:
    """Why ``labels`` (from ``origin``) fit none of the signature's outputs, else None."""
    if not labels or classes_outputs(signature, len(labels)):
        return None
    shapes = ", ".join(f"{t.name} {list(t.shape) if t.shape is not None else '?'}" for t in signature.outputs)
    return (
        f"{origin} has {len(labels)} labels, but no output has {len(labels)} scores on its last axis "
        f"([N, {len(labels)}], or [N, H, W, {len(labels)}] per pixel; outputs: {shapes})"
    )


def guessed_labels_note(origin: str, why: str) -> str:
    """The note for a labels file found by looking beside the model that does not fit it: ignored, never fatal."""
    return f"{why}; it was found beside the model, not given, so it is ignored (pass --labels FILE to use labels)."


def class_width(signature) -> int | None:
    """K of the first (by name) [N, K] output with K >= 2: the class scores labels name; None without one."""
    for t in sorted(signature.outputs, key=lambda t: t.name):
        if t.shape is not None and len(t.shape) == 2 and t.shape[-1] is not None and t.shape[-1] >= 2:
            return int(t.shape[-1])
    return None


def _show(names) -> str:
    names = list(names)
    return ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")


def folder_index_map(
    class_names: tuple[str, ...], labels: list[str] | None, width: int | None, data: Path, labels_origin: str
) -> tuple[np.ndarray | None, str]:
    """Folder class i → the model's output index, and a note for the report.

    With labels, every folder name must be one of them (matched by name, case-sensitive after stripping) and the
    folder must have as many classes as the model outputs; without labels, folder order is used (the order
    ``image_dataset_from_directory`` gives) and the class count must equal the output width. DataError naming
    both sides otherwise.
    """
    names = list(class_names)
    if labels is not None:
        missing = [n for n in names if n.strip() not in labels]
        if missing or (width is not None and len(names) != width):
            why = (
                f"folder(s) {_show(missing)} match no label"
                if missing
                else f"it has {len(names)} class folders for a model with {width} outputs"
            )
            raise DataError(
                f"{data} does not fit the model's labels: {why}. Folders: {_show(names)}; labels "
                f"({labels_origin}): {_show(labels)}. Name the class folders after the labels (one per "
                "label), or pass the labels file that belongs to this model with --labels."
            )
        index = np.array([labels.index(n.strip()) for n in names], dtype=np.int64)
        same = bool(np.array_equal(index, np.arange(len(names))))
        return index, (
            f"class folders matched to the model's labels ({labels_origin}) by name"
            + ("" if same else "; their order differs from the folder order")
        )
    if width is not None and len(names) != width:
        raise DataError(
            f"{data} has {len(names)} class folders ({_show(names)}) but the model outputs {width} "
            f"classes; pass a folder with one sub-folder per class (e.g. the test split, not its parent), "
            "or --labels to match folders by name."
        )
    return None, (
        "no labels to compare with: class folders taken in folder order (sorted, as "
        "image_dataset_from_directory does) as output indices 0.." + str(len(names) - 1)
    )
