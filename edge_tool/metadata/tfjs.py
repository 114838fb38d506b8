"""Labels carried in a TFJS model.json (``userDefinedMetadata.labels``), read as hostile input."""

from __future__ import annotations

from edge_tool.errors import ModelError
from edge_tool.metadata.labels import MAX_LABEL_CHARS

MAX_LABELS = 100_000


def labels_from_model_json(doc: dict, origin: str) -> list[str] | None:
    """``userDefinedMetadata.labels`` of a parsed model.json; None when absent, ModelError when malformed."""
    meta = doc.get("userDefinedMetadata")
    if not isinstance(meta, dict) or "labels" not in meta:
        return None
    labels = meta["labels"]
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise ModelError(
            f"{origin}: userDefinedMetadata.labels must be a list of strings, found "
            f"{type(labels).__name__}; pass --labels to override."
        )
    if len(labels) > MAX_LABELS or any(len(x) > MAX_LABEL_CHARS or not x.strip() for x in labels):
        raise ModelError(
            f"{origin}: userDefinedMetadata.labels holds an empty label, a label over "
            f"{MAX_LABEL_CHARS} characters or more than {MAX_LABELS} labels; pass --labels to override."
        )
    return [x.strip() for x in labels] or None
