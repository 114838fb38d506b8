"""Format registry: which reader opens which path. Add a format by adding a reader module (its class names the
suffixes it reads) and its class to ``READERS``; ``BY_SUFFIX`` is derived from them."""

from __future__ import annotations

from pathlib import Path

from ..errors import CalibrationError
from .base import Reader
from .images import IMAGE_SUFFIXES, ImageFolderReader
from .npy import NpyReader
from .npz import NpzReader
from .table import CsvReader
from .tfrecord import TFRecordReader

# every file reader, in the order SUPPORTED names them (a directory is always an image folder)
READERS: tuple[type[Reader], ...] = (NpzReader, NpyReader, CsvReader, TFRecordReader)
BY_SUFFIX: dict[str, type[Reader]] = {s: cls for cls in READERS for s in cls.suffixes}

SUPPORTED = (
    ", ".join("/".join(cls.suffixes) + (f" ({cls.detail})" if cls.detail else "") for cls in READERS)
    + ", or a folder of images ("
    + ", ".join(s.lstrip(".") for s in IMAGE_SUFFIXES)
    + ", flat or in class sub-folders)"
)


def reader_for(path: Path) -> type[Reader]:
    """The reader class for ``path`` (a directory means an image folder); CalibrationError if none fits."""
    if not path.exists():
        raise CalibrationError(f"calibration data not found: {path} (expected {SUPPORTED})")
    if path.is_dir():
        return ImageFolderReader
    if not path.is_file():  # a FIFO would block the read forever, /dev/zero would never end
        raise CalibrationError(
            f"calibration data {path} is not a regular file (a device, FIFO or socket); expected {SUPPORTED}"
        )
    cls = BY_SUFFIX.get(path.suffix.lower())
    if cls is None:
        kind = f"extension {path.suffix!r}" if path.suffix else "a file without extension"
        raise CalibrationError(f"unsupported data format for {path.name} ({kind}); supported: {SUPPORTED}")
    return cls


__all__ = ["BY_SUFFIX", "READERS", "SUPPORTED", "Reader", "reader_for"]
