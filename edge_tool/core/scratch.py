"""Temp paths a killed run cannot leave behind forever (docs/hardening.md, "Outputs and races").

Every temp name edgetool makes carries its run's token, ``PID-STARTTIME-BOOTID`` (the process start time in
clock ticks since boot and the first 8 hex digits of the kernel's boot id, so a reused PID or a reboot does not
pass for the old run). Each command works inside its own ``$TMPDIR/edgetool-run-TOKEN/`` (Python's temp dir
while it runs, removed at the end), and builds its output beside ``-o`` as ``.NAME.tmp-TOKEN-*``. The next run
sweeps such names whose run is dead: the PID is gone or belongs to a process started at another time. A name
from another boot is swept only once it is a day old (another boot may be another machine sharing the disk).
A live run's names are never touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

RUN_PREFIX = "edgetool-run-"
TOKEN = r"(\d+)-(\d+)-([0-9a-f]{8})"
RUN_NAME = re.compile(re.escape(RUN_PREFIX) + TOKEN)
BESIDE_NAME = re.compile(r"\..+\.(?:tmp|old)-" + TOKEN + r"(?:-[A-Za-z0-9_]+)?")  # .NAME.tmp-TOKEN-xxxx
OTHER_BOOT_STALE_S = 24 * 3600


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")[:8]
    except OSError:
        return "0" * 8


def _start_ticks(pid: int) -> int | None:
    """The start time of process ``pid`` (clock ticks since boot), or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])  # field 22; fields after the ")" start at field 3
    except (OSError, IndexError, ValueError):
        pass
    try:
        import psutil  # noqa: PLC0415 (only where /proc is missing)

        return int(psutil.Process(pid).create_time() * 100)
    except Exception:
        return None


_BOOT = _boot_id()


def run_token(pid: int | None = None) -> str:
    """This process's token (or ``pid``'s): ``PID-STARTTIME-BOOTID``."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{_start_ticks(pid) or 0}-{_BOOT}"


def _dead(match: re.Match, path: Path) -> bool:
    pid, start, boot = int(match.group(1)), int(match.group(2)), match.group(3)
    if boot != _BOOT:
        try:
            return time.time() - path.lstat().st_mtime > OTHER_BOOT_STALE_S
        except OSError:
            return False
    return _start_ticks(pid) != start  # gone, or the PID now belongs to a process started at another time


def _owned(entry: os.DirEntry) -> bool:
    try:
        return entry.stat(follow_symlinks=False).st_uid == os.getuid()
    except OSError:
        return False


def sweep(directory: Path | str, pattern: re.Pattern = BESIDE_NAME) -> list[Path]:
    """Remove the entries of ``directory`` named by ``pattern`` whose run is dead; return what was removed."""
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        path = Path(entry.path)
        if match is None or entry.is_symlink() or not _owned(entry) or not _dead(match, path):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                path.unlink()
        removed.append(path)
    return removed


@contextlib.contextmanager
def run_tempdir() -> Iterator[Path | None]:
    """Sweep dead runs' dirs from $TMPDIR, then make this run's ``edgetool-run-TOKEN`` Python's temp dir for the
    block and remove it after. Yields None (and changes nothing) when $TMPDIR cannot be written."""
    base = Path(tempfile.gettempdir())
    if RUN_NAME.fullmatch(base.name):  # already inside a run's dir (a nested command)
        yield base
        return
    sweep(base, RUN_NAME)
    mine = base / f"{RUN_PREFIX}{run_token()}"
    try:
        mine.mkdir(mode=0o700)
    except OSError:
        yield None
        return
    saved, tempfile.tempdir = tempfile.tempdir, str(mine)
    try:
        yield mine
    finally:
        tempfile.tempdir = saved
        shutil.rmtree(mine, ignore_errors=True)
