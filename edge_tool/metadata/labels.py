"""Class labels: one per line in a UTF-8 text file; read with size and encoding checks."""

from __future__ import annotations

from pathlib import Path

from edge_tool.errors import UsageError

MAX_LABELS_BYTES = 4 * 1024 * 1024
MAX_LABEL_CHARS = 1024


def parse_labels(data: bytes, origin: str) -> list[str]:
    """Non-empty stripped lines of ``data``; UsageError naming ``origin`` for invalid UTF-8 or an absurd label."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{origin} is not valid UTF-8 text (byte {exc.start}); expected one label per line.") from None
    labels = [line.strip() for line in text.splitlines() if line.strip()]
    long = [i for i, label in enumerate(labels) if len(label) > MAX_LABEL_CHARS]
    if long:
        raise UsageError(f"{origin}: label {long[0]} is {len(labels[long[0]])} characters long; "
                         f"expected at most {MAX_LABEL_CHARS} per label.")
    return labels


def read_labels_file(path: Path, classes: int | None) -> list[str]:
    """Labels from ``path``, checked against the model's class count when it is known."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"Labels file {path} does not exist (expected one label per line).")
    size = path.stat().st_size
    if size > MAX_LABELS_BYTES:
        raise UsageError(f"Labels file {path} is {size:,} bytes; expected a text file of at most "
                         f"{MAX_LABELS_BYTES:,} bytes with one label per line.")
    labels = parse_labels(path.read_bytes(), f"Labels file {path}")
    if classes is not None and len(labels) != classes:
        raise UsageError(f"{path} has {len(labels)} labels but the model outputs {classes} classes.")
    return labels
