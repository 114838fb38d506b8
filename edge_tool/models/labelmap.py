"""Labels that follow the data: a model's own labels (--labels, labels.txt inside or beside it) and the mapping of an
image folder's class names onto the model's output indices, by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.errors import DataError
from edge_tool.metadata.labels import read_labels_file

LABELS_FILE = "labels.txt"


def labels_file_for(model: Path) -> Path | None:
    """labels.txt inside a model directory, else beside the model (file or directory), else None."""
    model = Path(model)
    for candidate in ((model / LABELS_FILE) if model.is_dir() else None, model.parent / LABELS_FILE):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def model_labels(model: Path, given: Path | None) -> tuple[list[str] | None, str]:
    """(labels, where they came from): --labels, else labels.txt inside/beside the model; (None, "") otherwise."""
    path = Path(given) if given is not None else labels_file_for(model)
    if path is None:
        return None, ""
    return read_labels_file(path, None), str(path)


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
