"""What an ARTIFACT is: the format readers of ``models.readers`` recognise it and read its facts (format,
quantization mode, size on disk); the reference SavedModel's size for the report."""

from __future__ import annotations

from pathlib import Path

from edge_tool.parsers.tree import tree_bytes


def saved_model_size(path: Path) -> int:
    """Bytes of a SavedModel proper (saved_model.pb, fingerprint, variables), ignoring sidecar files."""
    path = Path(path)
    total = 0
    for name in ("saved_model.pb", "saved_model.pbtxt", "fingerprint.pb", "keras_metadata.pb"):
        if (path / name).is_file():
            total += (path / name).stat().st_size
    variables = path / "variables"
    if variables.is_dir():
        total += tree_bytes(variables)
    return total
