"""CSV for tabular inputs: a header row; every column except ``label_key`` is a feature, in order.

Feature columns are split across the inputs in spec order (each takes as many as its sample shape holds) and
reshaped to the spec's shape.
"""

from __future__ import annotations

import codecs
import csv
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..errors import CalibrationError
from ..spec import TensorSpec, show_shape
from ..types import LoadOptions
from ..validate import reshape_flat
from .base import MAX_LABEL_CHARS, Reader, reason, selected_rows

MAX_LINE_CHARS = 32 << 20  # one physical line; a CSV of numbers has no reason to come near it


def _lines(f, path: Path) -> Iterator[str]:
    """The file's lines, refusing one longer than MAX_LINE_CHARS instead of reading it whole into memory."""
    number = 0
    while line := f.readline(MAX_LINE_CHARS + 1):
        number += 1
        if len(line) > MAX_LINE_CHARS and not line.endswith(("\n", "\r")):
            raise CalibrationError(
                f"cannot read {path} as CSV: line {number} is longer than {MAX_LINE_CHARS:,} characters"
            )
        yield line


def _first_invalid_utf8(path: Path) -> tuple[int, int]:
    """(line number, byte value) of the first byte of ``path`` that is not valid UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    line = 1
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                pos = max(0, exc.start - (len(exc.object) - len(chunk)))
                return line + chunk[:pos].count(b"\n"), chunk[min(pos, len(chunk) - 1)]
            line += chunk.count(b"\n")
    return line, 0


def records(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of every record of a UTF-8 CSV, header included; CalibrationError naming the file
    and the line for text that is not UTF-8, a field over the csv module's limit (128 KiB) or a malformed line."""
    line = 0
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(_lines(f, path))
            for row in reader:
                line = reader.line_num
                yield line, row
    except UnicodeDecodeError:
        bad_line, byte = _first_invalid_utf8(path)
        raise CalibrationError(
            f"cannot read {path} as CSV: it is not UTF-8 text (byte 0x{byte:02x} on line {bad_line}); save it as UTF-8"
        ) from None
    except csv.Error as exc:
        raise CalibrationError(f"cannot read {path} as CSV: line {line + 1}: {reason(exc)}") from None


def _rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of the data rows: header and blank lines skipped."""
    body = records(path)
    next(body, None)
    for line, row in body:
        if row and any(cell.strip() for cell in row):
            yield line, row


def _parse_labels(raw: list[str]) -> np.ndarray:
    for kind in (int, float):
        try:
            return np.array([kind(v) for v in raw])
        except (ValueError, OverflowError):
            continue
    return np.array(raw, dtype=str)


class CsvReader(Reader):
    """A CSV file with a header; numeric feature columns, optional label column."""

    format = "csv"
    suffixes = (".csv",)

    def __init__(self, path: Path, specs: Sequence[TensorSpec], options: LoadOptions) -> None:
        super().__init__(path, specs, options)
        self.n = 0
        self._labels: np.ndarray | None = None
        first = next(records(path), None)
        self.header = [] if first is None else [h.strip() for h in first[1]]
        if not self.header:
            self.problems.append(f"{path.name} is empty: expected a header row and one row per sample")
            return
        if options.feature_key:
            self.warnings.append(
                f"feature key {options.feature_key!r} ignored for CSV: every non-label column is a feature"
            )
        self.label_col = None
        if options.label_key:
            if options.label_key in self.header:
                self.label_col = self.header.index(options.label_key)
            else:
                self.problems.append(
                    f"label column {options.label_key!r} not in {path.name}; columns found: "
                    f"{', '.join(self.header[:20])}{' ...' if len(self.header) > 20 else ''}"
                )
        self.feature_cols = [i for i in range(len(self.header)) if i != self.label_col]
        self.layout = self._layout()
        self._scan()

    def _layout(self) -> list[tuple[TensorSpec, int, int]]:
        n_cols = len(self.feature_cols)
        if len(self.specs) == 1:
            return [(self.specs[0], 0, n_cols)]
        sizes = [math.prod(s.sample_shape) if None not in s.sample_shape else None for s in self.specs]
        if None in sizes or sum(sizes) != n_cols:
            need = ", ".join(
                f"{s.name} {show_shape(s.shape)} = {z if z is not None else 'unknown'}"
                for s, z in zip(self.specs, sizes)
            )
            self.problems.append(
                f"{self.path.name} has {n_cols} feature columns; the inputs need "
                f"{'a fixed number' if None in sizes else sum(sizes)} in spec order ({need})"
            )
            return []
        starts = np.cumsum([0, *sizes])
        return [(s, int(a), int(b)) for s, a, b in zip(self.specs, starts[:-1], starts[1:])]

    def _scan(self) -> None:
        """One pass over the rows: count, check widths and numbers, keep labels."""
        width, bad_width, bad_value, labels = len(self.header), [], [], []
        long_label = None
        for line, row in _rows(self.path):
            self.n += 1
            if len(row) != width:
                bad_width.append(f"line {line} has {len(row)}")
                continue
            for c in self.feature_cols:
                try:
                    float(row[c])
                except ValueError:
                    bad_value.append(f"line {line}, column {self.header[c]!r}: {row[c]!r}")
                    break
            if self.label_col is not None:
                labels.append(row[self.label_col].strip())
                if len(labels[-1]) > MAX_LABEL_CHARS and long_label is None:
                    long_label = (
                        f"line {line}: a label of {len(labels[-1]):,} characters (the limit is {MAX_LABEL_CHARS})"
                    )
        if bad_width:
            self.problems.append(
                f"{len(bad_width)} rows of {self.path.name} do not have the header's {width} "
                f"columns ({'; '.join(bad_width[:5])})"
            )
        if bad_value:
            self.problems.append(
                f"{len(bad_value)} rows of {self.path.name} have non-numeric features ({'; '.join(bad_value[:5])})"
            )
        if long_label:
            self.problems.append(f"{self.path.name} {long_label}")
        self._rows_ok = not bad_width and not bad_value
        if self.label_col is not None and not bad_width and not long_label:
            self._labels = _parse_labels(labels)
        # reshape problems are known from the header alone; report them once, here
        for spec, a, b in self.layout:
            _, problem = reshape_flat(spec.name, np.zeros((0, b - a)), spec, f"{b - a} CSV feature columns")
            if problem:
                self.problems.append(problem)
                self.layout = []

    def count(self) -> int:
        """Number of data rows."""
        return self.n

    def labels(self) -> np.ndarray | None:
        """The label column (int, float or string values), or None without ``label_key``."""
        return self._labels

    def batches(self, indices, batch_size) -> Iterator[dict[str, np.ndarray]]:
        """Parse the selected rows to float64 and split/reshape them per input."""
        if not self.layout or not self._rows_ok:
            return
        cols = self.feature_cols
        for rows in selected_rows((row for _, row in _rows(self.path)), indices, batch_size):
            flat = np.array([[float(r[c]) for c in cols] for r in rows], dtype=np.float64)
            out = {}
            for spec, a, b in self.layout:
                out[spec.name], _ = reshape_flat(spec.name, flat[:, a:b], spec, "CSV")
            yield out
