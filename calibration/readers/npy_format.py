"""The .npy format, read defensively: the header parsed and checked against the bytes that follow it before
anything is allocated, and rows of a C-ordered array read straight from an open file."""

from __future__ import annotations

import io
import math
import struct
import tokenize
from dataclasses import dataclass

import numpy as np

from .base import reason

MAX_HEADER_BYTES = 10_000  # numpy's own default for untrusted headers


@dataclass(frozen=True)
class NpyHeader:
    """What an .npy header declares (nothing of the data is read): shape, dtype, order, where the data starts."""

    shape: tuple
    fortran: bool
    dtype: np.dtype
    offset: int

    @property
    def row_bytes(self) -> int:
        """Bytes of one sample (one index along the first dim)."""
        return self.dtype.itemsize * math.prod(self.shape[1:])

    @property
    def nbytes(self) -> int:
        """Bytes the declared array takes (Python ints: no overflow whatever the header claims)."""
        return self.dtype.itemsize * math.prod(self.shape)


def read_npy_header(f) -> NpyHeader:
    """Parse the .npy header at the start of open binary file ``f``; ValueError (or a zip error from a damaged
    archive member) when it is malformed.

    The header's length field is checked before the header is read: numpy would first read (and allocate) as
    many bytes as a hostile length field claims.
    """
    magic = f.read(8)
    if len(magic) < 8 or not magic.startswith(b"\x93NUMPY"):
        raise ValueError("not an .npy array (its first bytes are not the .npy magic string)")
    version = (magic[6], magic[7])
    if version not in ((1, 0), (2, 0), (3, 0)):
        raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}")
    size_field = f.read(2 if version == (1, 0) else 4)
    if len(size_field) < (2 if version == (1, 0) else 4):
        raise ValueError("the header ends early")
    length = struct.unpack("<H" if version == (1, 0) else "<I", size_field)[0]
    if length > MAX_HEADER_BYTES:
        raise ValueError(f"its header claims {length:,} bytes, over numpy's limit of {MAX_HEADER_BYTES:,}")
    header = f.read(length)
    if len(header) < length:
        raise ValueError("the header ends early")
    raw = io.BytesIO(magic + size_field + header)
    np.lib.format.read_magic(raw)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    try:
        shape, fortran, dtype = read(raw, max_header_size=MAX_HEADER_BYTES)
    except (tokenize.TokenError, SyntaxError) as exc:  # numpy tokenizes old-style headers and lets these escape
        raise ValueError(f"malformed header ({reason(exc)})") from None
    return NpyHeader(tuple(shape), bool(fortran), np.dtype(dtype), len(magic) + len(size_field) + length)


def header_problem(h: NpyHeader, data_bytes: int, what: str) -> str | None:
    """Why the declared array cannot be read (objects, scalar, empty samples, more bytes than stored), or None.

    Checked before anything is allocated: a header may claim 10^12 rows in a 100-byte file.
    """
    if h.dtype.hasobject:
        return f"{what} holds Python objects (dtype {h.dtype}), not numbers; pickled arrays are never loaded"
    if not h.shape:
        return f"{what} is a scalar, not an array of samples"
    if any(d < 0 for d in h.shape):
        return f"{what} declares a negative dimension in shape {h.shape}"
    if h.shape[0] and h.row_bytes == 0:
        return f"{what} has empty samples (shape {h.shape}, dtype {h.dtype}): nothing to feed a model"
    if h.nbytes > data_bytes:
        return (
            f"{what} declares shape {h.shape} of {h.dtype} = {h.nbytes:,} bytes, but only {data_bytes:,} bytes "
            "follow its header: the file is truncated or its header is wrong"
        )
    return None


def read_rows(f, offset: int, row_bytes: int, rows: np.ndarray, dtype: np.dtype, row_shape: tuple) -> np.ndarray | None:
    """Rows ``rows`` (sorted) of a C-ordered array stored at ``offset`` in open file ``f``; one read per run of
    consecutive rows. None when the file ends before the last of them."""
    out = np.empty((len(rows), *row_shape), dtype=dtype)
    if not len(rows) or not row_bytes:
        return out
    starts = np.flatnonzero(np.diff(rows) != 1) + 1
    for lo, hi in zip([0, *starts.tolist()], [*starts.tolist(), len(rows)]):
        f.seek(offset + int(rows[lo]) * row_bytes)
        view = memoryview(out[lo:hi].reshape(-1).view(np.uint8))
        if f.readinto(view) != len(view):
            return None
    return out
