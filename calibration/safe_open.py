"""Open only regular files, and only as many bytes as a reader accepts (the one rule every reader of a user's file
follows; ``edge_tool.userfiles`` adds edgetool's limits on top).

A FIFO named ``x.tflite`` would block a read forever, ``/dev/zero`` would never end, a directory is no file.
``require_regular`` checks the path (for a library that opens it itself: TensorFlow, LiteRT, h5py);
``open_regular`` opens it without blocking (``O_NONBLOCK``) and checks the opened descriptor with ``fstat``, so a
file swapped for a FIFO between the check and the open is refused too; ``read_regular`` reads at most ``limit``
bytes, checking the size before reading and the count while reading (a file that grows is refused, not slurped).
This module lives in ``calibration`` so that package needs nothing from edge_tool (as ``calibration.errors``).
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

from .errors import EdgeToolError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """What a ``st_mode`` is, in words ("a regular file", "a FIFO (named pipe)", ...)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: Path | str, what: str, found: str, error: type[EdgeToolError]) -> EdgeToolError:
    return error(
        f"Expected {what} at {path}, but it is {found}; edgetool reads only regular files there "
        "(a FIFO or device would block or never end). Pass the file itself."
    )


def not_a_file(path: Path | str) -> str | None:
    """Why ``path`` is no regular file ("does not exist", "is a FIFO (named pipe), not a regular file"), or None
    (also for no path at all: an option left unset)."""
    if path is None:
        return None
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None if stat.S_ISREG(mode) else f"is {kind_of(mode)}, not a regular file"


def require_regular(path: Path | str, what: str, error: type[EdgeToolError]) -> os.stat_result:
    """The ``stat`` of ``path`` (symlinks followed); ``error`` naming it when it is missing or not a regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"Expected {what} at {path}, but nothing is there.") from None
    except OSError as exc:
        raise error(f"Expected {what} at {path}, but it cannot be read: {exc.strerror or exc}.") from None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, what, kind_of(st.st_mode), error)
    return st


def too_big(
    path: Path | str, what: str, size: int, limit: int, error: type[EdgeToolError], why: str = ""
) -> EdgeToolError:
    """The error for ``what`` at ``path`` being ``size`` bytes, over ``limit``."""
    return error(
        f"{path} ({what}) is {size:,} bytes, over the {limit:,}-byte limit for it{'; ' + why if why else ''}. "
        "Refusing to read it."
    )


def open_regular(
    path: Path | str, what: str, error: type[EdgeToolError], limit: int | None = None, why: str = ""
) -> BinaryIO:
    """``path`` opened for binary reading, after checking (on the opened descriptor) that it is a regular file of
    at most ``limit`` bytes; ``error`` naming it otherwise."""
    require_regular(path, what, error)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"Expected {what} at {path}, but it cannot be opened: {exc.strerror or exc}.") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, what, kind_of(st.st_mode), error)
        if limit is not None and st.st_size > limit:
            raise too_big(path, what, st.st_size, limit, error, why)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path | str, what: str, error: type[EdgeToolError], limit: int, why: str = "") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (checked before and while reading)."""
    with open_regular(path, what, error, limit, why) as f:
        # read what the file holds, not `limit` bytes at once (read(n) allocates n bytes up front), and keep
        # reading while it grows, up to one byte past the limit
        chunks = [f.read(min(limit, os.fstat(f.fileno()).st_size) + 1)]
        total = len(chunks[0])
        while chunks[-1] and total <= limit:
            chunks.append(f.read(min(1 << 20, limit + 1 - total)))
            total += len(chunks[-1])
        data = b"".join(chunks)
    if len(data) > limit:
        raise too_big(path, what, len(data), limit, error, why)
    return data
