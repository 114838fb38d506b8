"""The last step of every output: put a finished temp dir or file at its place, atomically and only if allowed.

The rules of ``--force`` (docs/hardening.md) are checked again at the moment of the swap, not only before the
work: something that appeared at the output path while the run worked (a user's folder, another run's output)
is never moved aside or deleted unless ``--force`` was given and it carries edgetool's marker. The swap itself is
``renameat2`` (Linux >= 3.15) through libc: ``RENAME_NOREPLACE`` when nothing is there (fails if something
appeared), ``RENAME_EXCHANGE`` to replace (the old one is then checked, and swapped back if it is not edgetool's).
Where renameat2 is missing, plain rename() (which never replaces a non-empty directory) with a check after it.
Swaps into one directory are serialized between edgetool runs with flock() on that directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from edge_tool.errors import UsageError

try:
    import fcntl
except ImportError:  # not on POSIX: swaps are not serialized between runs (the checks still hold)
    fcntl = None

RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
_AT_FDCWD = -100
PAUSE_ENV = "EDGETOOL_TEST_PAUSE_BEFORE_SWAP"  # tests only: wait for this file before the swap (see pause_hook)
PAUSE_LIMIT_S = 600.0


class _Unsupported(Exception):
    """renameat2 (or the flag) is not available here."""


def _load_renameat2():
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _load_renameat2()


def renameat2(src: Path, dst: Path, flags: int) -> None:
    """rename(2) with ``flags``; OSError as the kernel says; _Unsupported when libc/kernel/file system lack it."""
    if _RENAMEAT2 is None:
        raise _Unsupported
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        raise _Unsupported
    raise OSError(err, os.strerror(err), str(dst))


def pause_hook(path: Path) -> None:
    """Tests only: with $EDGETOOL_TEST_PAUSE_BEFORE_SWAP=F, create F.waiting and wait (bounded) until F exists."""
    gate = os.environ.get(PAUSE_ENV)
    if not gate:
        return
    Path(gate + ".waiting").write_text(f"{os.getpid()} {path}\n")
    deadline = time.monotonic() + PAUSE_LIMIT_S
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.05)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """flock() the directory itself (no lock file left behind); a no-op where it cannot be opened or locked."""
    try:
        if fcntl is None:
            raise OSError
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _appeared(path: Path, what: str) -> UsageError:
    return UsageError(
        f"Output {path} {what} while this run was working; nothing of it was touched and this "
        "run's result was discarded. Choose another -o, or move it away and run again (--force "
        "replaces only edgetool's own output)."
    )


def _is_empty_dir(path: Path) -> bool:
    with os.scandir(path) as it:
        return next(it, None) is None


def _replace_dir(tmp: Path, path: Path, is_ours: Callable[[Path], bool]) -> Path:
    """Swap ``tmp`` in for the existing ``path``; return where the old one now is (to delete)."""
    try:
        renameat2(tmp, path, RENAME_EXCHANGE)
        old = tmp
    except _Unsupported:
        old = tmp.with_name(tmp.name.replace(".tmp-", ".old-", 1))
        os.rename(path, old)
        if not is_ours(old):
            os.rename(old, path)
            raise _appeared(path, "was replaced by a directory edgetool did not write") from None
        try:
            os.rename(tmp, path)  # never replaces a non-empty directory
        except OSError:
            with contextlib.suppress(OSError):
                os.rename(old, path)  # put the previous output back where it was
            raise _appeared(path, "appeared again") from None
        return old
    if not is_ours(old):  # replaced between the check and the exchange: swap back, untouched
        renameat2(tmp, path, RENAME_EXCHANGE)
        raise _appeared(path, "was replaced by a directory edgetool did not write")
    return old


def install_dir(tmp: Path, path: Path, force: bool, is_ours: Callable[[Path], bool]) -> None:
    """Move the finished ``tmp`` to ``path``: only into nothing, an empty dir, or (``force``) edgetool's own output."""
    pause_hook(path)
    with _locked(path.parent):
        for _ in range(3):
            if not os.path.lexists(path):
                try:
                    renameat2(tmp, path, RENAME_NOREPLACE)
                except _Unsupported:
                    try:
                        os.rename(tmp, path)  # replaces at most an empty directory that appeared meanwhile
                    except OSError as exc:
                        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                            raise
                        continue
                except FileExistsError:
                    continue
                return
            if path.is_symlink() or not path.is_dir():
                raise _appeared(path, "appeared (a file or a link)")
            if _is_empty_dir(path):
                try:
                    os.rename(tmp, path)  # the kernel refuses if it is no longer empty
                    return
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                        raise
                    continue
            if not force:
                raise _appeared(path, "appeared and is not empty (without --force)")
            if not is_ours(path):
                raise _appeared(path, "appeared without the .edgetool-output marker")
            old = _replace_dir(tmp, path, is_ours)
            shutil.rmtree(old, ignore_errors=True)
            return
    raise _appeared(path, "kept changing")


def install_file(tmp: Path, path: Path, force: bool) -> None:
    """Move the finished file ``tmp`` to ``path``: never over a directory, over an existing file only with force."""
    pause_hook(path)
    with _locked(path.parent):
        if os.path.isdir(path) and not os.path.islink(path):
            raise _appeared(path, "appeared as a directory")
        if force:
            os.replace(tmp, path)
            return
        try:
            renameat2(tmp, path, RENAME_NOREPLACE)
            return
        except _Unsupported:
            pass
        except FileExistsError:
            raise _appeared(path, "appeared (without --force)") from None
        try:
            os.link(tmp, path)  # atomic and never replaces
        except FileExistsError:
            raise _appeared(path, "appeared (without --force)") from None
        except OSError:  # no hard links on this file system: checked under the lock, then renamed
            if os.path.lexists(path):
                raise _appeared(path, "appeared (without --force)") from None
            os.replace(tmp, path)
            return
        os.unlink(tmp)
