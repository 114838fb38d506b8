"""TFRecord files of tf.train.Example (optionally GZIP-compressed); TensorFlow is imported only here, lazily.

Per input, a feature holds either a float_list / int64_list (flattened, reshaped to the spec's shape) or a
bytes_list with one encoded image (PNG/JPEG/GIF/BMP, decoded with Pillow like image folders) or raw tensor bytes
(in the spec's dtype, or uint8).
"""

from __future__ import annotations

import bisect
import gzip
import math
import re
import struct
import zlib
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from ..contract import for_input
from ..errors import CalibrationError
from ..spec import TensorSpec, show_shape
from ..tfenv import import_tf
from ..types import LoadOptions
from ..validate import reshape_flat
from .base import MAX_LABEL_CHARS, Reader, reason, selected_rows
from .images import decode_image, image_layout, looks_like_image, to_model_input

SUFFIXES = (".tfrecord", ".tfrecords", ".tfr")
MAX_RECORD_BYTES = 1 << 30   # one record is read whole; a GZIP file could declare any length


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
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
            offset = 0
            while head := f.read(12):
                n = len(offsets)
                if len(head) < 12:
                    raise _truncated(path, n, offset, "in its length header")
                length, crc = struct.unpack("<QI", head)
                if masked_crc32c(head[:8]) != crc:
                    raise CalibrationError(f"{path} is not a TFRecord file: the length field of record {n} (at byte "
                                           f"{offset}) fails its checksum" if n == 0 else
                                           f"{path} is corrupt at record {n} (byte {offset}): its length field fails "
                                           "its checksum")
                if length > MAX_RECORD_BYTES:
                    raise CalibrationError(f"{path}: record {n} (at byte {offset}) declares {length:,} bytes; records "
                                           f"over {MAX_RECORD_BYTES:,} bytes are refused (each is read whole)")
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
        raise CalibrationError(f"{path}: its GZIP stream is truncated or corrupt after record {len(offsets)} "
                               f"({reason(exc)})") from None
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
    return CalibrationError(f"{path} is truncated: record {index} (at byte {offset}) is incomplete {detail}; "
                            f"{index} complete records precede it. Re-create or re-copy the file.")


def _examples(path: Path, offsets: array) -> Iterator:
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
                raise CalibrationError(f"{path}: record {index} is not a tf.train.Example (TFRecord files must hold "
                                       "serialized tf.train.Example protos)") from None
            yield ex
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as exc:
        at = re.search(r"record at (\d+)", exc.message)
        where = f"record {bisect.bisect_right(offsets, int(at[1])) - 1}" if at else f"after record {index}"
        raise CalibrationError(f"{path} is corrupt at {where}: {_tf_reason(exc.message)}") from None


def _tf_reason(message: str) -> str:
    """TensorFlow's error text without its op/device decorations."""
    text = re.sub(r"\{\{[^}]*\}\}|\[Op:[^\]]*\]|name:\s*$", "", message.splitlines()[0]).strip()
    return text or "unreadable record"


def _values(feature) -> tuple[str | None, list]:
    kind = feature.WhichOneof("kind")
    return kind, (list(getattr(feature, kind).value) if kind else [])


class TFRecordReader(Reader):
    """TFRecord of tf.train.Example; inputs from ``feature_key`` (one input) or features named after the inputs."""

    format = "tfrecord"

    def __init__(self, path: Path, specs: Sequence[TensorSpec], options: LoadOptions) -> None:
        super().__init__(path, specs, options)
        self.keys: dict[str, str] = {}
        self.modes: dict[str, tuple] = {}
        self.n = 0
        self._labels: np.ndarray | None = None
        self._scan()

    def no_key(self, spec: TensorSpec, expected: str, available: Sequence[str]) -> str:
        """No feature for the single input."""
        return (f"{self.path.name} has no feature for input {spec.name!r}: expected {expected}; features found: "
                f"{', '.join(available)}")

    def one_key_for_many(self, feature_key: str) -> str:
        """A feature key given for several inputs."""
        return (f"feature key {feature_key!r} names one feature but the model has {len(self.specs)} inputs; "
                "name the features after the inputs instead")

    def missing_keys(self, missing: list[str], available: Sequence[str]) -> str:
        """Inputs without a feature named after them."""
        return (f"{self.path.name} has no features for inputs {', '.join(map(repr, missing))}; "
                f"features found: {', '.join(available)}")

    def _scan(self) -> None:
        """Count records and check every record's features agree (kind, length); collect labels."""
        seen: dict[str, Counter] = {}
        missing: Counter = Counter()
        labels, label_missing = [], 0
        lk = self.options.label_key
        self._offsets = record_offsets(self.path)
        for ex in _examples(self.path, self._offsets):
            feats = ex.features.feature
            if self.n == 0:
                self.keys = self.match_keys(sorted(feats.keys()), ["x", "image", "image/encoded"])
                seen = {name: Counter() for name in self.keys}
            self.n += 1
            for name, key in self.keys.items():
                if key not in feats:
                    missing[key] += 1
                    continue
                kind, vals = _values(feats[key])
                if kind == "bytes_list":
                    sig = ("bytes_multi", len(vals)) if len(vals) != 1 else \
                        ("image", 0) if looks_like_image(vals[0]) else (kind, len(vals[0]))
                else:
                    sig = (kind, len(vals))
                seen[name][sig] += 1
            if lk:
                if lk in feats and _values(feats[lk])[1]:
                    v = _values(feats[lk])[1][0]
                    labels.append(v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
                else:
                    label_missing += 1
        for key, count in missing.items():
            self.problems.append(f"feature {key!r} is missing from {count} of {self.n} records in {self.path.name}")
        for name, sigs in seen.items():
            self._decide_mode(name, sigs)
        if lk and label_missing:
            self.problems.append(f"label feature {lk!r} is missing from {label_missing} of {self.n} records in "
                                 f"{self.path.name}")
        elif lk:
            longest = max((len(v) for v in labels if isinstance(v, str)), default=0)
            if longest > MAX_LABEL_CHARS:
                self.problems.append(f"label feature {lk!r} in {self.path.name} holds a label of {longest:,} "
                                     f"characters (the limit is {MAX_LABEL_CHARS})")
            else:
                self._labels = np.array(labels)

    def _decide_mode(self, name: str, sigs: Counter) -> None:
        spec = next(s for s in self.specs if s.name == name)
        key = self.keys[name]
        if len(sigs) > 1:
            shown = ", ".join(f"{k} x{v}" if k != "image" else f"image x{c}" for (k, v), c in sigs.items())
            self.problems.append(f"feature {key!r} differs between records ({shown}); every record must hold the "
                                 "same kind and number of values")
            return
        (kind, length), = sigs
        if kind == "image":
            _, _, problem = image_layout(spec, for_input(self.options.images, spec.name))
            if problem:
                self.problems.append(problem)
            else:
                self.modes[name] = ("image",)
            return
        if kind == "bytes_list":
            size = math.prod(d for d in spec.sample_shape if d is not None)
            itemsize = np.dtype(spec.dtype).itemsize
            dtype = spec.dtype if length == size * itemsize else "uint8" if length == size else None
            if dtype is None or None in spec.sample_shape:
                self.problems.append(f"input {name!r}: feature {key!r} holds {length} raw bytes per record, not an "
                                     f"image nor {size} x {spec.dtype} / uint8 values for shape {show_shape(spec.shape)}")
                return
            self.modes[name] = ("raw", np.dtype(dtype))
            return
        if kind == "bytes_multi":
            self.problems.append(f"input {name!r}: feature {key!r} holds {length} byte strings per record; "
                                 "expected one (an encoded image or raw tensor bytes)")
            return
        if kind is None:
            self.problems.append(f"feature {key!r} is empty in {self.path.name}")
            return
        _, problem = reshape_flat(name, np.zeros((0, length)), spec, f"feature {key!r} ({kind})")
        if problem:
            self.problems.append(problem)
        else:
            self.modes[name] = ("list", np.float32 if kind == "float_list" else np.int64)

    def count(self) -> int:
        """Number of records."""
        return self.n

    def labels(self) -> np.ndarray | None:
        """Label feature values of every record, or None without ``label_key``."""
        return self._labels

    def _convert(self, name: str, features: list) -> np.ndarray:
        spec = next(s for s in self.specs if s.name == name)
        mode = self.modes[name]
        if mode[0] == "image":
            contract = for_input(self.options.images, spec.name)
            return to_model_input([decode_image(_values(f)[1][0], spec, f"in {self.path} (feature "
                                                f"{self.keys[name]!r})", contract) for f in features], contract)
        if mode[0] == "raw":
            flat = np.stack([np.frombuffer(_values(f)[1][0], dtype=mode[1]) for f in features])
        else:
            flat = np.array([_values(f)[1] for f in features], dtype=mode[1])
        return reshape_flat(name, flat, spec, "TFRecord")[0]

    def batches(self, indices, batch_size) -> Iterator[dict[str, np.ndarray]]:
        """Second pass over the file: convert the selected records' features."""
        if not self.modes:
            return
        for exs in selected_rows(_examples(self.path, self._offsets), indices, batch_size):
            yield {name: self._convert(name, [ex.features.feature[self.keys[name]] for ex in exs])
                   for name in self.modes}
