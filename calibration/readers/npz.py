"""NumPy ``.npz`` sources: arrays read in row chunks from the zip (never loaded whole), each member's .npy header
parsed and checked in ``npy_format``, compression methods and zip bombs refused before a byte is inflated."""

from __future__ import annotations

import lzma
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..errors import CalibrationError
from ..spec import TensorSpec
from ..types import LoadOptions
from .base import Reader, index_chunks, reason, unreadable
from .npy_format import header_problem, read_npy_header

CHUNK_BYTES = 4 * 1024 * 1024
MAX_LABEL_BYTES = 1 << 30  # labels are loaded whole: more than 1 GiB of them is not a label array
BOMB_RATIO = 500  # an .npz member expanding more than 500x ...
BOMB_FROM_BYTES = 256 << 20  # ... to over 256 MiB is refused as a likely zip bomb
ZIP_METHODS = {
    zipfile.ZIP_STORED: "stored",
    zipfile.ZIP_DEFLATED: "deflate",
    zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "lzma",
}
# What zipfile / zlib / bz2 / lzma raise on a damaged archive while it is opened or a member streamed
# (NotImplementedError: a "zip file version" or flag bits zipfile does not implement).
ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    NotImplementedError,
)


class _Member:
    """One array inside an .npz: header read and checked eagerly, rows streamed in chunks (no full load)."""

    def __init__(self, path: Path, info: zipfile.ZipInfo) -> None:
        self.path, self.info, self.key = path, info, info.filename[:-4]
        with zipfile.ZipFile(path) as zf, zf.open(info) as f:
            self.header = read_npy_header(f)
        self.shape, self.fortran, self.dtype = self.header.shape, self.header.fortran, self.header.dtype

    def problem(self, what: str) -> str | None:
        """Why this member cannot be read (see header_problem), judged on the zip directory's sizes."""
        return header_problem(self.header, self.info.file_size - self.header.offset, what)

    def _open(self, zf: zipfile.ZipFile):
        f = zf.open(self.info)
        read_npy_header(f)
        return f

    def _failed(self, exc: BaseException) -> CalibrationError:
        return unreadable(self.path, f"an .npz archive (array {self.key!r})", exc)

    def load(self) -> np.ndarray:
        """The whole array (for labels, which are small; its size was checked against the archive)."""
        try:
            with zipfile.ZipFile(self.path) as zf, self._open(zf) as f:
                raw = f.read(self.header.nbytes)
        except ZIP_ERRORS as exc:
            raise self._failed(exc) from None
        if len(raw) != self.header.nbytes:
            raise self._failed(f"the array's data ends after {len(raw):,} of {self.header.nbytes:,} bytes")
        arr = np.frombuffer(raw, dtype=self.dtype)
        return arr.reshape(self.shape, order="F" if self.fortran else "C")

    def batches(self, indices: np.ndarray | None, batch_size: int) -> Iterator[np.ndarray]:
        """Rows at sorted ``indices`` (None = all), read sequentially in ~4 MB blocks; damage found on the way
        raises CalibrationError naming the archive and the array."""
        try:
            yield from self._batches(indices, batch_size)
        except ZIP_ERRORS as exc:
            raise self._failed(exc) from None

    def _batches(self, indices: np.ndarray | None, batch_size: int) -> Iterator[np.ndarray]:
        n = self.shape[0]
        if self.fortran:  # rare: column-major cannot be read by rows; load it whole
            arr = self.load()
            for chunk in index_chunks(indices, n, batch_size):
                yield arr[chunk]
            return
        row_shape = self.shape[1:]
        row_bytes = self.header.row_bytes
        block = max(1, CHUNK_BYTES // row_bytes)  # rows read per zip read: ~4 MB, whatever the batch size
        idx = None if indices is None else np.asarray(indices)
        pending: list[np.ndarray] = []
        n_pending = 0
        with zipfile.ZipFile(self.path) as zf, self._open(zf) as f:
            for start in range(0, n, block):
                stop = min(n, start + block)
                lo, hi = (start, stop) if idx is None else np.searchsorted(idx, [start, stop])
                if idx is not None and lo == len(idx):
                    break
                raw = f.read((stop - start) * row_bytes)
                if len(raw) != (stop - start) * row_bytes:
                    raise self._failed(f"the array's data ends before row {stop - 1}")
                if hi == lo:
                    continue
                rows = np.frombuffer(raw, dtype=self.dtype).reshape((stop - start, *row_shape))
                pending.append(rows if idx is None or hi - lo == stop - start else rows[idx[lo:hi] - start])
                n_pending += hi - lo
                if n_pending < batch_size:
                    continue
                buf = np.concatenate(pending) if len(pending) > 1 else pending[0]
                full = n_pending - n_pending % batch_size
                for b in range(0, full, batch_size):
                    yield buf[b : b + batch_size].copy()
                pending = [buf[full:].copy()] if full < n_pending else []
                n_pending -= full
        if n_pending:
            yield np.concatenate(pending) if len(pending) > 1 else pending[0].copy()


class NpzReader(Reader):
    """An ``.npz``: key ``x`` (or the input's name) for one input, keys named after the inputs for several;
    labels from ``y`` (or ``label_key``)."""

    format = "npz"
    suffixes = (".npz",)

    def __init__(self, path: Path, specs: Sequence[TensorSpec], options: LoadOptions) -> None:
        super().__init__(path, specs, options)
        self.members: dict[str, _Member] = {}
        self.label_member: _Member | None = None
        try:
            with zipfile.ZipFile(path) as zf:
                self.infos = {i.filename[:-4]: i for i in zf.infolist() if i.filename.endswith(".npy")}
        except (*ZIP_ERRORS, ValueError) as exc:
            self.problems.append(f"cannot read {path.name} as an .npz archive: {reason(exc)}")
            return
        keys = sorted(self.infos)
        self._resolve_inputs(keys)
        label_key = options.label_key or "y"
        if label_key in keys:
            self.label_member = self._label_member(label_key)
        elif options.label_key:
            self.problems.append(f"label key {label_key!r} not found in {path.name}; keys found: {_list(keys)}")
        self._check_lengths()

    def _member(self, key: str) -> _Member | None:
        what = f"array {key!r} in {self.path.name}"
        info = self.infos[key]
        problem = None
        if info.flag_bits & 0x1:
            problem = f"{what} is encrypted; edgetool reads unencrypted .npz files only"
        elif info.compress_type not in ZIP_METHODS:
            problem = (
                f"{what} uses zip compression method {info.compress_type}; supported: {', '.join(ZIP_METHODS.values())}"
            )
        elif info.file_size > BOMB_FROM_BYTES and info.file_size > BOMB_RATIO * max(1, info.compress_size):
            problem = (
                f"{what} expands from {info.compress_size:,} to {info.file_size:,} bytes (over {BOMB_RATIO}x): "
                "refused as a likely zip bomb; save it with np.savez (uncompressed) if it is real"
            )
        if problem is None:
            try:
                member = _Member(self.path, info)
            except (*ZIP_ERRORS, ValueError) as exc:
                problem = f"{what} is unreadable: {reason(exc)}"
            else:
                problem = member.problem(what)
        if problem:
            self.problems.append(problem)
            return None
        return member

    def _label_member(self, key: str) -> _Member | None:
        member = self._member(key)
        if member is None:
            return None
        n = self.count()
        if self.members and member.shape[0] != n:
            self.problems.append(
                f"labels: {member.shape[0]:,} labels for {n:,} input samples (array {key!r} in "
                f"{self.path.name}); they must match one to one"
            )
            return None
        if member.header.nbytes > MAX_LABEL_BYTES:
            self.problems.append(
                f"labels: array {key!r} in {self.path.name} takes {member.header.nbytes:,} bytes; "
                f"labels are loaded whole and are limited to {MAX_LABEL_BYTES:,} bytes"
            )
            return None
        return member

    def _resolve_inputs(self, keys: list[str]) -> None:
        for name, key in self.match_keys(keys, ["x"]).items():
            if (m := self._member(key)) is not None:
                self.members[name] = m

    def no_key(self, spec: TensorSpec, expected: str, available: Sequence[str]) -> str:
        """No array for the single input."""
        return f"{self.path.name} has no input array: expected key {expected}; keys found: {_list(available)}"

    def one_key_for_many(self, feature_key: str) -> str:
        """A feature key given for several inputs."""
        return (
            f"feature key {feature_key!r} names one array but the model has {len(self.specs)} inputs; "
            "name the .npz arrays after the inputs instead"
        )

    def missing_keys(self, missing: list[str], available: Sequence[str]) -> str:
        """Inputs without an array named after them."""
        expected = ", ".join(repr(s.name) for s in self.specs)
        return (
            f"{self.path.name} is missing arrays for inputs {_list(missing)}: expected keys {expected} (one per "
            f"model input); keys found: {_list(available)}"
        )

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
        streams = {k: m.batches(indices, batch_size) for k, m in self.members.items()}
        for parts in zip(*streams.values()):
            yield dict(zip(streams.keys(), parts))


def _list(keys: Sequence[str]) -> str:
    return ", ".join(repr(k) for k in keys) if keys else "(none)"
