"""TFRecord files of tf.train.Example (optionally GZIP-compressed), read through ``tfrecord_file`` (framing checked
without TensorFlow, records parsed by it, imported lazily).

Per input, a feature holds either a float_list / int64_list (flattened, reshaped to the spec's shape) or a
bytes_list with one encoded image (PNG/JPEG/GIF/BMP, decoded with Pillow like image folders) or raw tensor bytes
(in the spec's dtype, or uint8).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..contract import for_input
from ..spec import TensorSpec, show_shape
from ..types import LoadOptions
from ..validate import reshape_flat
from .base import MAX_LABEL_CHARS, Reader, selected_rows
from .images import decode_image, image_layout, looks_like_image, to_model_input
from .tfrecord_file import examples, record_offsets

SUFFIXES = (".tfrecord", ".tfrecords", ".tfr")


def _values(feature) -> tuple[str | None, list]:
    kind = feature.WhichOneof("kind")
    return kind, (list(getattr(feature, kind).value) if kind else [])


class TFRecordReader(Reader):
    """TFRecord of tf.train.Example; inputs from ``feature_key`` (one input) or features named after the inputs."""

    format = "tfrecord"
    suffixes = SUFFIXES
    detail = "tf.train.Example"

    def __init__(self, path: Path, specs: Sequence[TensorSpec], options: LoadOptions) -> None:
        super().__init__(path, specs, options)
        self.keys: dict[str, str] = {}
        self.modes: dict[str, tuple] = {}
        self.n = 0
        self._labels: np.ndarray | None = None
        self._scan()

    def no_key(self, spec: TensorSpec, expected: str, available: Sequence[str]) -> str:
        """No feature for the single input."""
        return (
            f"{self.path.name} has no feature for input {spec.name!r}: expected {expected}; features found: "
            f"{', '.join(available)}"
        )

    def one_key_for_many(self, feature_key: str) -> str:
        """A feature key given for several inputs."""
        return (
            f"feature key {feature_key!r} names one feature but the model has {len(self.specs)} inputs; "
            "name the features after the inputs instead"
        )

    def missing_keys(self, missing: list[str], available: Sequence[str]) -> str:
        """Inputs without a feature named after them."""
        return (
            f"{self.path.name} has no features for inputs {', '.join(map(repr, missing))}; "
            f"features found: {', '.join(available)}"
        )

    def _scan(self) -> None:
        """Count records and check every record's features agree (kind, length); collect labels."""
        seen: dict[str, Counter] = {}
        missing: Counter = Counter()
        labels, label_missing = [], 0
        lk = self.options.label_key
        self._offsets = record_offsets(self.path)
        for ex in examples(self.path, self._offsets):
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
                    sig = (
                        ("bytes_multi", len(vals))
                        if len(vals) != 1
                        else ("image", 0)
                        if looks_like_image(vals[0])
                        else (kind, len(vals[0]))
                    )
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
            self.problems.append(
                f"label feature {lk!r} is missing from {label_missing} of {self.n} records in {self.path.name}"
            )
        elif lk:
            longest = max((len(v) for v in labels if isinstance(v, str)), default=0)
            if longest > MAX_LABEL_CHARS:
                self.problems.append(
                    f"label feature {lk!r} in {self.path.name} holds a label of {longest:,} "
                    f"characters (the limit is {MAX_LABEL_CHARS})"
                )
            else:
                self._labels = np.array(labels)

    def _decide_mode(self, name: str, sigs: Counter) -> None:
        spec = next(s for s in self.specs if s.name == name)
        key = self.keys[name]
        if len(sigs) > 1:
            shown = ", ".join(f"{k} x{v}" if k != "image" else f"image x{c}" for (k, v), c in sigs.items())
            self.problems.append(
                f"feature {key!r} differs between records ({shown}); every record must hold the "
                "same kind and number of values"
            )
            return
        ((kind, length),) = sigs
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
                self.problems.append(
                    f"input {name!r}: feature {key!r} holds {length} raw bytes per record, not an "
                    f"image nor {size} x {spec.dtype} / uint8 values for shape {show_shape(spec.shape)}"
                )
                return
            self.modes[name] = ("raw", np.dtype(dtype))
            return
        if kind == "bytes_multi":
            self.problems.append(
                f"input {name!r}: feature {key!r} holds {length} byte strings per record; "
                "expected one (an encoded image or raw tensor bytes)"
            )
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
            return to_model_input(
                [
                    decode_image(_values(f)[1][0], spec, f"in {self.path} (feature {self.keys[name]!r})", contract)
                    for f in features
                ],
                contract,
            )
        if mode[0] == "raw":
            flat = np.stack([np.frombuffer(_values(f)[1][0], dtype=mode[1]) for f in features])
        else:
            flat = np.array([_values(f)[1] for f in features], dtype=mode[1])
        return reshape_flat(name, flat, spec, "TFRecord")[0]

    def batches(self, indices, batch_size) -> Iterator[dict[str, np.ndarray]]:
        """Second pass over the file: convert the selected records' features."""
        if not self.modes:
            return
        for exs in selected_rows(examples(self.path, self._offsets), indices, batch_size):
            yield {
                name: self._convert(name, [ex.features.feature[self.keys[name]] for ex in exs]) for name in self.modes
            }
