"""Class labels: one per line in a UTF-8 text file; read with size and encoding checks (the one reader for labels
files and for labels embedded in a model)."""

from __future__ import annotations

from pathlib import Path

from edge_tool.calibration.safe_open import read_regular
from edge_tool.errors import UsageError

MAX_LABELS_BYTES = 1 << 20  # 1 MiB: ~50,000 labels of 20 characters
MAX_LABEL_CHARS = 200  # one label, as shown in the page and in metadata


def parse_labels(data: bytes, origin: str) -> list[str]:
    """Non-empty stripped lines of ``data``; UsageError naming ``origin`` for invalid UTF-8 or an overlong label."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UsageError(
            f"{origin} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); expected one "
            "label per line, saved as UTF-8."
        ) from None
    labels = [line.strip() for line in text.splitlines() if line.strip()]
    long = [i for i, label in enumerate(labels) if len(label) > MAX_LABEL_CHARS]
    if long:
        raise UsageError(
            f"{origin}: label {long[0] + 1} is {len(labels[long[0]]):,} characters long; labels are "
            f"limited to {MAX_LABEL_CHARS}."
        )
    return labels


def read_labels_file(path: Path, classes: int | None) -> list[str]:
    """Labels from ``path`` (missing, too large, not UTF-8, empty, or a count other than ``classes`` refused)."""
    path = Path(path)
    raw = read_regular(
        path, "a labels file (one label per line)", UsageError, MAX_LABELS_BYTES, "expected one label per line"
    )
    labels = parse_labels(raw, f"Labels file {path}")
    if not labels:
        raise UsageError(
            f"Labels file {path} holds no labels; expected one label per line"
            + (f" ({classes} for this model)." if classes is not None else ".")
        )
    if classes is not None and len(labels) != classes:
        raise UsageError(f"{path} has {len(labels)} labels but the model outputs {classes} classes.")
    return labels
