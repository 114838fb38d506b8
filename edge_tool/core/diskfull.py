"""A full file system is named: which output file was being written, and how much room that file system has.

``write(2)`` failing with ENOSPC/EDQUOT carries no file name, so the atomic writers (``fsutil.atomic_dir`` /
``atomic_file``) translate it: the error gets the final path of the file that was being written (the newest file
in the temp dir, mapped to where it would have been installed) before the temp output is removed. The CLI edge
then adds the free space of that file system (``free_space``), measured after the partial output was removed.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _newest_file(tmp: Path) -> Path | None:
    newest, when = None, -1
    for root, _, files in os.walk(tmp):
        for name in files:
            try:
                mtime = os.lstat(os.path.join(root, name)).st_mtime_ns
            except OSError:
                continue
            if mtime > when:
                newest, when = Path(root, name), mtime
    return newest


def named(exc: BaseException, tmp: Path, final: Path) -> BaseException:
    """``exc`` itself, or — for a disk-full OSError without a file name — the same error naming the output file
    that was being written (inside ``tmp``, reported at its place under ``final``)."""
    if not isinstance(exc, OSError) or exc.errno not in FULL or exc.filename is not None:
        return exc
    where = final
    if tmp.is_dir():
        newest = _newest_file(tmp)
        where = final / newest.relative_to(tmp) if newest is not None else final
    return OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(where))


def free_space(path: str | Path) -> str:
    """'N MiB free of M MiB on the file system holding PATH' for the nearest existing ancestor of ``path``."""
    probe = Path(os.path.abspath(path))
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        st = os.statvfs(probe)
    except OSError:
        return ""
    free, total = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
    return f"{_size(free)} free of {_size(total)} on the file system holding {probe}"


def _size(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,} bytes"
