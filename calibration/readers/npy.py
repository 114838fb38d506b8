"""NumPy ``.npy`` sources: one input, rows read by file reads (or memory-mapped); what the header declares is
parsed and checked in ``npy_format``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..errors import CalibrationError
from ..spec import TensorSpec
from ..types import LoadOptions
from .base import Reader, index_chunks, reason
from .npy_format import NpyHeader, header_problem, read_npy_header, read_rows


class NpyReader(Reader):
    """A single ``.npy`` array feeding a single-input model.

    The header is parsed and checked against the file size first (no data touched); rows are then read with
    ordinary file reads, a batch at a time, so the process never keeps file pages mapped: a memory map that
    had been read end to end would count the whole file in the process's resident set. Fortran-ordered files
    (rare) are read through a read-only memory map.
    """

    format = "npy"
    suffixes = (".npy",)

    def __init__(self, path: Path, specs: Sequence[TensorSpec], options: LoadOptions) -> None:
        super().__init__(path, specs, options)
        self.header: NpyHeader | None = None
        if len(self.specs) > 1:
            names = ", ".join(s.name for s in self.specs)
            self.problems.append(
                f"a .npy file holds one array but the model has {len(self.specs)} inputs ({names}); "
                "use an .npz with one array per input, named after the inputs"
            )
            return
        try:
            with open(path, "rb") as f:
                header = read_npy_header(f)
        except (ValueError, EOFError) as exc:
            self.problems.append(f"cannot read {path.name} as a .npy array: {reason(exc)}")
            return
        problem = header_problem(header, path.stat().st_size - header.offset, path.name)
        if problem:
            self.problems.append(problem)
            return
        self.header = header
        if options.label_key:
            self.warnings.append(f"label key {options.label_key!r} ignored: a .npy file has no labels (use .npz 'y')")

    def count(self) -> int:
        """Length of the array's first dim (0 when unreadable)."""
        return 0 if self.header is None else int(self.header.shape[0])

    def batches(self, indices, batch_size) -> Iterator[dict[str, np.ndarray]]:
        """The selected rows, a batch at a time (file reads; Fortran-ordered files through a read-only map)."""
        h = self.header
        if h is None:
            return
        name = self.specs[0].name
        if h.fortran:
            arr = np.memmap(self.path, dtype=h.dtype, mode="r", offset=h.offset, shape=h.shape, order="F")
            for chunk in index_chunks(indices, self.count(), batch_size):
                yield {name: np.asarray(arr[chunk])}
            return
        with open(self.path, "rb") as f:
            for chunk in index_chunks(indices, self.count(), batch_size):
                rows = read_rows(f, h.offset, h.row_bytes, chunk, h.dtype, h.shape[1:])
                if rows is None:
                    raise CalibrationError(
                        f"{self.path} is truncated: rows {int(chunk[0])}..{int(chunk[-1])} are "
                        "missing (the file shrank while it was read?)"
                    )
                yield {name: rows}
