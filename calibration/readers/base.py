"""The reader contract every format implements, plus small shared helpers."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..errors import CalibrationError
from ..spec import TensorSpec
from ..types import LoadOptions

# One text label (CSV cell, TFRecord bytes): labels become a fixed-width string array, so one huge label would
# be multiplied by the number of samples.
MAX_LABEL_CHARS = 1000


class Reader:
    """One data source opened for a model's inputs.

    Opening checks the structure (keys, columns, files) and records problems instead of raising, so they can be
    reported together with data problems. ``batches`` yields raw (uncast) sample-shaped arrays for the inputs that
    were found; labels are read once, in full, through ``labels`` (they are small).
    """

    format = "?"
    suffixes: tuple[str, ...] = ()  # the file suffixes it reads (lower case); () for a directory reader
    detail = ""  # what such a file must hold, when its suffix does not say (for the list of supported formats)

    def __init__(self, path: Path, specs: Sequence[TensorSpec], options: LoadOptions) -> None:
        self.path = path
        self.specs = tuple(specs)
        self.options = options
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.class_names: tuple[str, ...] | None = None

    def count(self) -> int:
        """Number of samples the source holds."""
        raise NotImplementedError

    def labels(self) -> np.ndarray | None:
        """All labels in source order (raw, 1-D or one-hot), or None when the source has none."""
        return None

    def batches(self, indices: np.ndarray | None, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
        """Yield {input name: raw array} for the given sorted indices (None = all), ``batch_size`` at a time."""
        raise NotImplementedError

    def close(self) -> None:
        """Release open files (no-op unless the reader keeps one open)."""

    def match_keys(self, available: Sequence[str], defaults: Sequence[str]) -> dict[str, str]:
        """{input name: the source's key (array, feature) holding it}, for the keys ``available``.

        One input: ``feature_key``, else the first present of the input's name and ``defaults``. Several inputs:
        keys named after the inputs (``feature_key`` cannot name several). What is missing is recorded in
        ``problems``, worded by the reader's ``no_key`` / ``one_key_for_many`` / ``missing_keys``.
        """
        fk = self.options.feature_key
        if len(self.specs) == 1:
            spec = self.specs[0]
            candidates = [fk] if fk else [spec.name, *defaults]
            key = next((c for c in candidates if c in available), None)
            if key is None:
                self.problems.append(self.no_key(spec, " or ".join(repr(c) for c in candidates), available))
                return {}
            return {spec.name: key}
        if fk:
            self.problems.append(self.one_key_for_many(fk))
        missing = [s.name for s in self.specs if s.name not in available]
        if missing:
            self.problems.append(self.missing_keys(missing, available))
        return {s.name: s.name for s in self.specs if s.name in available}

    def no_key(self, spec: TensorSpec, expected: str, available: Sequence[str]) -> str:
        """The problem when no key holds the single input (``expected``: the keys tried, "'a' or 'b'")."""
        raise NotImplementedError

    def one_key_for_many(self, feature_key: str) -> str:
        """The problem when ``feature_key`` is given for a model with several inputs."""
        raise NotImplementedError

    def missing_keys(self, missing: list[str], available: Sequence[str]) -> str:
        """The problem when inputs of a multi-input model have no key named after them."""
        raise NotImplementedError


def index_chunks(indices: np.ndarray | None, n: int, batch_size: int) -> Iterator[np.ndarray]:
    """Split sorted indices (None = 0..n-1) into consecutive chunks of ``batch_size``."""
    if indices is None:  # lazily: n may be large, an index array of all rows is not needed
        for start in range(0, n, batch_size):
            yield np.arange(start, min(n, start + batch_size))
        return
    idx = np.asarray(indices)
    for start in range(0, len(idx), batch_size):
        yield idx[start : start + batch_size]


def selected_rows(rows: Iterator, indices: np.ndarray | None, batch_size: int) -> Iterator[list]:
    """From a sequential row iterator, keep rows at the sorted ``indices`` (None = all) and group them in batches."""
    wanted = None if indices is None else iter(np.asarray(indices).tolist())
    nxt = None if wanted is None else next(wanted, None)
    batch = []
    for i, row in enumerate(rows):
        if wanted is not None:
            if nxt is None:
                break
            if i != nxt:
                continue
            nxt = next(wanted, None)
        batch.append(row)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def reason(exc: BaseException) -> str:
    """A library error as one short line: its message's first line (or its type when it has none)."""
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def unreadable(path: Path, what: str, exc: BaseException | str) -> CalibrationError:
    """The one error for a file a library could not read: which file, what it should have been, why not."""
    why = exc if isinstance(exc, str) else reason(exc)
    return CalibrationError(f"cannot read {path} as {what}: {why}")
