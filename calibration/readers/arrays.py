"""NumPy sources: ``.npy`` (one input, memory-mapped) and ``.npz`` (arrays read in row chunks from the zip)."""

from __future__ import annotations

import math
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Sequence

import numpy as np

from calibration.readers.base import Reader, index_chunks
from calibration.types import InputSpec, LoadOptions

CHUNK_BYTES = 4 * 1024 * 1024


class NpyReader(Reader):
    """A single ``.npy`` array feeding a single-input model.

    The header is read through ``np.load(mmap_mode="r")`` (shape, dtype; no data touched); rows are then read
    with ordinary file reads, a batch at a time, so the process never keeps file pages mapped: a memory map that
    had been read end to end would count the whole file in the process's resident set.
    """

    format = "npy"

    def __init__(self, path: Path, specs: Sequence[InputSpec], options: LoadOptions) -> None:
        super().__init__(path, specs, options)
        self.array = None
        self._offset: int | None = None
        if len(self.specs) > 1:
            names = ", ".join(s.name for s in self.specs)
            self.problems.append(f"a .npy file holds one array but the model has {len(self.specs)} inputs ({names}); "
                                 "use an .npz with one array per input, named after the inputs")
            return
        try:
            self.array = np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError as exc:
            self.problems.append(f"cannot read {path.name} as a numeric .npy array: {exc}")
            return
        if self.array.ndim == 0:
            self.problems.append(f"{path.name} holds a scalar, not an array of samples")
            self.array = None
        elif isinstance(self.array, np.memmap) and self.array.flags.c_contiguous:
            self._offset = int(self.array.offset)
        if options.label_key:
            self.warnings.append(f"label key {options.label_key!r} ignored: a .npy file has no labels (use .npz 'y')")

    def count(self) -> int:
        """Length of the array's first dim (0 when unreadable)."""
        return 0 if self.array is None else int(self.array.shape[0])

    def batches(self, indices, batch_size) -> Iterator[dict[str, np.ndarray]]:
        """The selected rows, a batch at a time (file reads; Fortran-ordered files fall back to the map)."""
        if self.array is None:
            return
        name = self.specs[0].name
        if self._offset is None:
            for chunk in index_chunks(indices, self.count(), batch_size):
                yield {name: np.asarray(self.array[chunk])}
            return
        row_shape, dtype = self.array.shape[1:], self.array.dtype
        row_bytes = dtype.itemsize * math.prod(row_shape)
        with open(self.path, "rb") as f:
            for chunk in index_chunks(indices, self.count(), batch_size):
                yield {name: read_rows(f, self._offset, row_bytes, chunk, dtype, row_shape)}


def read_rows(f, offset: int, row_bytes: int, rows: np.ndarray, dtype: np.dtype, row_shape: tuple) -> np.ndarray:
    """Rows ``rows`` (sorted) of a C-ordered array stored at ``offset`` in open file ``f``; one read per run of
    consecutive rows."""
    out = np.empty((len(rows), *row_shape), dtype=dtype)
    if not len(rows) or not row_bytes:
        return out
    starts = np.flatnonzero(np.diff(rows) != 1) + 1
    for lo, hi in zip([0, *starts.tolist()], [*starts.tolist(), len(rows)]):
        f.seek(offset + int(rows[lo]) * row_bytes)
        view = memoryview(out[lo:hi].reshape(-1).view(np.uint8))
        got = f.readinto(view)
        if got != len(view):
            raise ValueError(f"{getattr(f, 'name', 'file')} is truncated: rows {rows[lo]}..{rows[hi - 1]} missing")
    return out


class _Member:
    """One array inside an .npz: header read eagerly, rows streamed in chunks (no full load)."""

    def __init__(self, path: Path, key: str) -> None:
        self.path, self.key = path, key
        with zipfile.ZipFile(path) as zf, zf.open(key + ".npy") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                self.shape, self.fortran, self.dtype = np.lib.format.read_array_header_1_0(f)
            else:
                self.shape, self.fortran, self.dtype = np.lib.format.read_array_header_2_0(f)

    def load(self) -> np.ndarray:
        """The whole array (for labels, which are small)."""
        with zipfile.ZipFile(self.path) as zf, zf.open(self.key + ".npy") as f:
            return np.lib.format.read_array(f, allow_pickle=False)

    def batches(self, indices: np.ndarray | None, batch_size: int) -> Iterator[np.ndarray]:
        """Rows at sorted ``indices`` (None = all), read sequentially in ~4 MB blocks."""
        n = self.shape[0]
        if self.fortran:  # rare: column-major cannot be read by rows; load it whole
            arr = self.load()
            for chunk in index_chunks(indices, n, batch_size):
                yield arr[chunk]
            return
        row_shape = self.shape[1:]
        row_bytes = max(1, self.dtype.itemsize * math.prod(row_shape))
        block = max(1, CHUNK_BYTES // row_bytes)  # rows read per zip read: ~4 MB, whatever the batch size
        idx = np.arange(n) if indices is None else np.asarray(indices)
        pending: list[np.ndarray] = []
        n_pending = 0
        with zipfile.ZipFile(self.path) as zf, zf.open(self.key + ".npy") as f:
            version = np.lib.format.read_magic(f)
            (np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0)(f)
            for start in range(0, n, block):
                stop = min(n, start + block)
                lo, hi = np.searchsorted(idx, [start, stop])
                if lo == len(idx):
                    break
                raw = f.read((stop - start) * row_bytes)
                if hi == lo:
                    continue
                rows = np.frombuffer(raw, dtype=self.dtype).reshape((stop - start, *row_shape))
                pending.append(rows[idx[lo:hi] - start] if hi - lo < stop - start else rows)
                n_pending += hi - lo
                if n_pending < batch_size:
                    continue
                buf = np.concatenate(pending) if len(pending) > 1 else pending[0]
                full = n_pending - n_pending % batch_size
                for b in range(0, full, batch_size):
                    yield buf[b:b + batch_size].copy()
                pending = [buf[full:].copy()] if full < n_pending else []
                n_pending -= full
        if n_pending:
            yield np.concatenate(pending) if len(pending) > 1 else pending[0].copy()


class NpzReader(Reader):
    """An ``.npz``: key ``x`` (or the input's name) for one input, keys named after the inputs for several;
    labels from ``y`` (or ``label_key``)."""

    format = "npz"

    def __init__(self, path: Path, specs: Sequence[InputSpec], options: LoadOptions) -> None:
        super().__init__(path, specs, options)
        self.members: dict[str, _Member] = {}
        self.label_member: _Member | None = None
        try:
            with zipfile.ZipFile(path) as zf:
                keys = sorted(m[:-4] for m in zf.namelist() if m.endswith(".npy"))
        except (zipfile.BadZipFile, OSError) as exc:
            self.problems.append(f"cannot read {path.name} as an .npz archive: {exc}")
            return
        self._resolve_inputs(keys)
        label_key = options.label_key or "y"
        if label_key in keys:
            self.label_member = self._member(label_key)
        elif options.label_key:
            self.problems.append(f"label key {label_key!r} not found in {path.name}; keys found: {_list(keys)}")
        self._check_lengths()

    def _member(self, key: str) -> _Member | None:
        try:
            member = _Member(self.path, key)
        except ValueError as exc:
            self.problems.append(f"array {key!r} in {self.path.name} is unreadable: {exc}")
            return None
        if member.dtype.hasobject:
            self.problems.append(f"array {key!r} in {self.path.name} holds Python objects, not numbers")
            return None
        if not member.shape:
            self.problems.append(f"array {key!r} in {self.path.name} is a scalar, not an array of samples")
            return None
        return member

    def _resolve_inputs(self, keys: list[str]) -> None:
        fk = self.options.feature_key
        if len(self.specs) == 1:
            spec = self.specs[0]
            candidates = [fk] if fk else [spec.name, "x"]
            found = next((c for c in candidates if c in keys), None)
            if found is None:
                self.problems.append(f"{self.path.name} has no input array: expected key "
                                     f"{' or '.join(repr(c) for c in candidates)}; keys found: {_list(keys)}")
            elif (m := self._member(found)) is not None:
                self.members[spec.name] = m
            return
        if fk:
            self.problems.append(f"feature key {fk!r} names one array but the model has {len(self.specs)} inputs; "
                                 "name the .npz arrays after the inputs instead")
        missing = [s.name for s in self.specs if s.name not in keys]
        if missing:
            expected = ", ".join(repr(s.name) for s in self.specs)
            self.problems.append(f"{self.path.name} is missing arrays for inputs {_list(missing)}: expected keys "
                                 f"{expected} (one per model input); keys found: {_list(keys)}")
        for spec in self.specs:
            if spec.name in keys and (m := self._member(spec.name)) is not None:
                self.members[spec.name] = m

    def _check_lengths(self) -> None:
        lengths = {k: m.shape[0] for k, m in self.members.items()}
        if len(set(lengths.values())) > 1:
            shown = ", ".join(f"{k} has {v}" for k, v in lengths.items())
            self.problems.append(f"input arrays in {self.path.name} differ in length: {shown}")

    def count(self) -> int:
        """Samples in the shortest input array (0 when none was found)."""
        return min((m.shape[0] for m in self.members.values()), default=0)

    def labels(self) -> np.ndarray | None:
        """The label array, loaded whole."""
        return None if self.label_member is None else self.label_member.load()

    def batches(self, indices, batch_size) -> Iterator[dict[str, np.ndarray]]:
        """Stream every found input's rows in step."""
        if not self.members:
            return
        n = self.count()
        if indices is None:
            indices = np.arange(n)
        streams = {k: m.batches(indices, batch_size) for k, m in self.members.items()}
        for parts in zip(*streams.values()):
            yield dict(zip(streams.keys(), parts))


def _list(keys: list[str]) -> str:
    return ", ".join(repr(k) for k in keys) if keys else "(none)"
