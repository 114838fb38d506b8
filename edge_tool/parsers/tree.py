"""The files of a model directory, walked without leaving it through links (``calibration.safe_walk``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from edge_tool.calibration.safe_walk import walk_files
from edge_tool.errors import ModelError


def model_files(path: Path | str) -> list[Path]:
    """Every regular file under the model directory ``path`` (dot-files included), sorted; ModelError naming a
    link that leads out of it or loops."""
    return sorted(walk_files(Path(path), what="model directory", error=ModelError, hidden=True))


def tree_bytes(path: Path | str) -> int:
    """Bytes of every file under the directory ``path`` (``model_files``); 0 when it is no directory."""
    path = Path(path)
    return sum(p.stat().st_size for p in model_files(path)) if path.is_dir() else 0


def content_hash(path: Path) -> str:
    """sha256 over a file, or over every file of a directory (relative names + bytes, sorted)."""
    h = hashlib.sha256()
    path = Path(path)
    files = [path] if path.is_file() else model_files(path)
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()
