"""The TFRecord file itself: its framing walked and checked without TensorFlow (every length field's masked
CRC-32C, every record complete, GZIP streams too), then its records parsed as tf.train.Example protos by
TensorFlow (imported only here, lazily), each failure naming the record."""

from __future__ import annotations

import bisect
import gzip
import re
import struct
import zlib
from array import array
from collections.abc import Iterator
from pathlib import Path

from google.protobuf.message import DecodeError

from ..errors import CalibrationError
from ..tfenv import import_tf
from .base import reason

MAX_RECORD_BYTES = 1 << 30  # one record is read whole; a GZIP file could declare any length


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_CRC32C = _crc32c_table()


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data`` (used here on the 8-byte length fields only: pure Python is slow)."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def is_gzip(path: Path) -> bool:
    """True when the file starts with the GZIP magic bytes."""
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def record_offsets(path: Path) -> array:
    """Byte offset (in the uncompressed stream) of every record, from a walk over the framing alone.

    Each record is ``uint64 length, uint32 masked crc of length, data, uint32 masked crc of data``. The walk
    checks every length field's CRC and that every record is complete, so a truncated file or garbage is
    reported (naming the record) before TensorFlow reads it; data CRCs are left to TensorFlow.
    """
    gz = is_gzip(path)
    offsets = array("q")
    size = None if gz else path.stat().st_size
    try:
        with gzip.open(path, "rb") if gz else open(path, "rb") as f:
            offset = 0
            while head := f.read(12):
                n = len(offsets)
                if len(head) < 12:
                    raise _truncated(path, n, offset, "in its length header")
                length, crc = struct.unpack("<QI", head)
                if masked_crc32c(head[:8]) != crc:
                    raise CalibrationError(
                        f"{path} is not a TFRecord file: the length field of record {n} (at byte "
                        f"{offset}) fails its checksum"
                        if n == 0
                        else f"{path} is corrupt at record {n} (byte {offset}): its length field fails its checksum"
                    )
                if length > MAX_RECORD_BYTES:
                    raise CalibrationError(
                        f"{path}: record {n} (at byte {offset}) declares {length:,} bytes; records "
                        f"over {MAX_RECORD_BYTES:,} bytes are refused (each is read whole)"
                    )
                end = offset + 16 + length
                if size is not None:
                    if end > size:
                        raise _truncated(path, n, offset, f"({length:,} bytes declared, the file ends at {size:,})")
                    f.seek(end)
                elif not _skip(f, length + 4):
                    raise _truncated(path, n, offset, f"({length:,} bytes declared)")
                offsets.append(offset)
                offset = end
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise CalibrationError(
            f"{path}: its GZIP stream is truncated or corrupt after record {len(offsets)} ({reason(exc)})"
        ) from None
    return offsets


def _skip(f, n: int) -> bool:
    """Read and drop ``n`` bytes of a stream in bounded chunks; False when it ends first."""
    while n > 0:
        got = len(f.read(min(n, 1 << 20)))
        if not got:
            return False
        n -= got
    return True


def _truncated(path: Path, index: int, offset: int, detail: str) -> CalibrationError:
    return CalibrationError(
        f"{path} is truncated: record {index} (at byte {offset}) is incomplete {detail}; "
        f"{index} complete records precede it. Re-create or re-copy the file."
    )


def examples(path: Path, offsets: array) -> Iterator:
    """Parsed tf.train.Example protos of the file, in order; CalibrationError naming the record otherwise."""
    tf = import_tf()
    from tensorflow.python.util import deprecation

    index = 0
    options = tf.io.TFRecordOptions(compression_type="GZIP" if is_gzip(path) else "")
    try:
        with deprecation.silence():  # the record iterator: ~1000x less per-file overhead than tf.data
            records = tf.compat.v1.io.tf_record_iterator(str(path), options)
        for index, raw in enumerate(records):
            try:
                ex = tf.train.Example.FromString(raw)
            except DecodeError:
                raise CalibrationError(
                    f"{path}: record {index} is not a tf.train.Example (TFRecord files must hold "
                    "serialized tf.train.Example protos)"
                ) from None
            yield ex
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as exc:
        at = re.search(r"record at (\d+)", exc.message)
        where = f"record {bisect.bisect_right(offsets, int(at[1])) - 1}" if at else f"after record {index}"
        raise CalibrationError(f"{path} is corrupt at {where}: {_tf_reason(exc.message)}") from None


def _tf_reason(message: str) -> str:
    """TensorFlow's error text without its op/device decorations."""
    text = re.sub(r"\{\{[^}]*\}\}|\[Op:[^\]]*\]|name:\s*$", "", message.splitlines()[0]).strip()
    return text or "unreadable record"
