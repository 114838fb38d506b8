"""Safe output: refuse to clobber without --force, build in a temp path, rename when complete."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from edge_tool.errors import UsageError


def check_output_dir(path: Path, force: bool) -> None:
    """Raise UsageError if ``path`` exists as a file, or as a non-empty dir without ``force``."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"Output path {path} exists and is a file; expected a directory path (new, empty, or --force).")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise UsageError(
            f"Output directory {path} already exists and is not empty; pass --force to replace it, or choose another -o."
        )


def check_output_file(path: Path, force: bool) -> None:
    """Raise UsageError if ``path`` exists and ``force`` is not set."""
    if path.exists() and not force:
        raise UsageError(f"Output file {path} already exists; pass --force to overwrite it.")
    if path.exists() and path.is_dir():
        raise UsageError(f"Output path {path} is a directory; expected a file path.")


@contextlib.contextmanager
def atomic_dir(path: Path, force: bool = False) -> Iterator[Path]:
    """Yield a temp dir beside ``path``; on success it replaces ``path``, on error it is removed."""
    path = Path(path)
    check_output_dir(path, force)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if path.exists():
        old = path.with_name(f".{path.name}.old-{os.getpid()}")
        os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, path)
    os.chmod(path, 0o755)


@contextlib.contextmanager
def atomic_file(path: Path, force: bool = False) -> Iterator[Path]:
    """Yield a temp file path beside ``path``; renamed onto ``path`` only if the block succeeds."""
    path = Path(path)
    check_output_file(path, force)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    os.chmod(path, 0o644)
