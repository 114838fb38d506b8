"""The manifest entry of a single-file artefact, as the per-mode builders (tflite, onnx) make it."""

from __future__ import annotations

import hashlib
from pathlib import Path

from edge_tool.schemas.manifest import ManifestArtifact


def file_entry(path: Path, fmt: str, quant: str, data: bytes, seconds: float, **fields) -> ManifestArtifact:
    """The manifest entry of a single-file artefact written to ``path``: its name, format, mode, size, sha256 and
    build seconds, plus the format's own ``fields``."""
    return ManifestArtifact(
        path.name, fmt, quant, len(data), sha256=hashlib.sha256(data).hexdigest(), seconds=round(seconds, 3), **fields
    )
