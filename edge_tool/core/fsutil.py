"""Safe file-system use: paths read from files stay inside their dir, outputs never touch inputs, writes are atomic.

The rules (docs/hardening.md):

- ``resolve_inside``: a path read from a file (model.json shards, manifests) resolves, symlinks included, inside
  the directory it belongs to; anything else is refused naming the offending path.
- ``check_output_dir`` / ``check_output_file``: the output location is writable (not under /proc, /sys or /dev,
  not below a regular file, not read-only), never equals, contains or sits inside an input, and an existing
  non-empty directory is replaced (``--force``) only when it carries the ``.edgetool-output`` marker that
  ``atomic_dir`` writes into every directory edgetool creates.
- ``atomic_dir`` / ``atomic_file``: build in a temp path beside the output (named with the run's token,
  ``scratch``), then swap it in with the rules checked again at that moment (``outswap``). An output path that
  is a symbolic link is followed: the link stays, its target is replaced (same rules); a dangling link is refused.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from edge_tool.calibration.safe_open import kind_of
from edge_tool.core import diskfull
from edge_tool.core.outswap import install_dir, install_file
from edge_tool.core.scratch import run_token, sweep
from edge_tool.errors import EdgeToolError, ModelError, UsageError

MARKER = ".edgetool-output"  # written into every output directory edgetool creates
MARKER_TEXT = "This directory was written by edgetool; `--force` may replace it.\n"
MAX_REL_PATH = 1024
MAX_SEGMENT = 255
PSEUDO_FS = ("/proc", "/sys", "/dev")  # kernel / device file systems (/dev/shm, a plain tmpfs, is allowed)
ALLOWED_UNDER_PSEUDO = ("/dev/shm",)
_BAD_CHARS = {"\\": "a backslash", "%": "a percent-escape", "?": "a '?'", "#": "a '#'"}

Inputs = Iterable[tuple[str, "Path | str | None"]]


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(os.fspath(path)))


def is_within(path: Path | str, base: Path | str) -> bool:
    """True when ``path`` equals ``base`` or lies below it, both with symlinks resolved (the one containment test)."""
    p, b = _real(path), _real(base)
    return p == b or b in p.parents


# --- paths read from files ------------------------------------------------------------------------------------


def _rel_path_problem(rel: object) -> str | None:
    """Why ``rel`` is not a plain relative path (None when it is)."""
    if not isinstance(rel, str) or not rel:
        return "is not a non-empty string"
    if len(rel) > MAX_REL_PATH:
        return f"is {len(rel)} characters long (at most {MAX_REL_PATH})"
    if any(ord(c) < 32 or ord(c) == 127 for c in rel):
        return "contains a NUL or control character"
    for char, what in _BAD_CHARS.items():
        if char in rel:
            return f"contains {what}"
    if rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        return "is absolute"
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' segment"
    if any(len(p.encode("utf-8", "surrogateescape")) > MAX_SEGMENT for p in parts):
        return f"has a segment longer than {MAX_SEGMENT} bytes"
    return None


def resolve_inside(base: Path, rel: object, source: Path | str, error: type[EdgeToolError] = ModelError) -> Path:
    """Resolve ``rel``, a path read from the file ``source``, inside ``base``; raise ``error`` naming it otherwise.

    Refused: non-strings, absolute paths, '..' / '.' / empty segments, NUL and control characters, backslashes,
    percent-escapes, '?' and '#' (a browser would read those differently), overlong paths, and any path whose
    real location (symlinks resolved) is outside ``base``. Returns the path as ``base / rel`` (not resolved).
    """
    problem = _rel_path_problem(rel)
    shown = repr(rel) if not isinstance(rel, str) else repr(rel[:200])
    if problem is None:
        real_base = _real(base)
        real = _real(real_base / rel)
        if real != real_base and is_within(real, real_base):
            return Path(base) / rel
        problem = f"resolves to {real}, which is not inside {real_base}"
    raise error(
        f"{source} lists the path {shown}, which {problem}; every path listed there must stay inside "
        f"{base}. Refusing to read it."
    )


# --- output locations -------------------------------------------------------------------------------------------


def check_location_writable(path: Path, kind: str = "output") -> None:
    """UsageError unless ``path`` can be created: not on a pseudo file system, not below a file, parent writable."""
    path = Path(path)
    real = _real(path)
    allowed = any(real == Path(a) or Path(a) in real.parents for a in ALLOWED_UNDER_PSEUDO)
    for root in () if allowed else PSEUDO_FS:
        if real == Path(root) or Path(root) in real.parents:
            raise UsageError(
                f"The {kind} path {path} is under {root}, a virtual file system edgetool does not write "
                "to; choose a path in a normal directory."
            )
    ancestor = path.absolute().parent
    while not ancestor.exists() and not ancestor.is_symlink():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UsageError(
            f"The {kind} path {path} is below {ancestor}, which is a file (or a broken link), not a "
            "directory; choose another path."
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".edgetool-probe-", dir=ancestor)
    except OSError as exc:
        raise UsageError(
            f"The {kind} path {path} cannot be written: {ancestor} is not writable "
            f"({exc.strerror or exc}). Choose another path."
        ) from None
    os.close(fd)
    os.unlink(probe)


def _named_inputs(inputs: Inputs) -> list[tuple[str, Path]]:
    return [(name, Path(p)) for name, p in inputs if p is not None and str(p) != ""]


def check_not_input(output: Path, inputs: Inputs, is_dir: bool = True) -> None:
    """UsageError when ``output`` equals, contains or sits inside an input (files: equals or sits inside)."""
    out = _real(output)
    for name, given in _named_inputs(inputs):
        src = _real(given)
        if out == src:
            how = "is"
        elif is_dir and out in src.parents:
            how = "contains"
        elif src in out.parents:
            how = "is inside"
        else:
            continue
        raise UsageError(
            f"The output {output} {how} the {name} {given}; edgetool never writes over, into or around "
            "its inputs (whatever --force says). Choose an output path outside every input."
        )


def has_marker(path: Path) -> bool:
    """True when ``path`` is a directory edgetool wrote (it holds the marker file)."""
    return (Path(path) / MARKER).is_file()


def _check_link(path: Path, kind: str) -> None:
    """A link at the output path is followed only to something that exists (its target gets replaced)."""
    if path.is_symlink() and not path.exists():
        raise UsageError(
            f"Output path {path} is a symbolic link to {os.readlink(path)}, which does not exist; "
            f"edgetool follows a link at -o only to an existing {kind}. Remove the link or choose "
            "another path."
        )


def _followed(path: Path) -> Path:
    """``path``, or where it leads when it is a symbolic link (the link stays; its target is the output)."""
    return _real(path) if path.is_symlink() else path


def check_output_dir(path: Path, force: bool, inputs: Inputs = ()) -> None:
    """Refuse an output directory that cannot or must not be (re)placed; raise UsageError saying why.

    Writable location; not an input (nor around or inside one); an existing file is refused; an existing
    non-empty directory needs ``force`` and the marker of a previous edgetool run.
    """
    path = Path(path)
    check_location_writable(path, "output directory")
    check_not_input(path, inputs, is_dir=True)
    _check_link(path, "directory")
    if path.exists() and not path.is_dir():
        raise UsageError(
            f"Output path {path} exists and is a file; expected a directory path (new, empty, or --force)."
        )
    if path.is_dir() and any(path.iterdir()):
        if not force:
            raise UsageError(
                f"Output directory {path} already exists and is not empty; pass --force to replace it, or choose "
                "another -o."
            )
        if not has_marker(path):
            raise UsageError(
                f"Output directory {path} is not empty and was not written by edgetool (it has no {MARKER} marker); "
                "--force only replaces edgetool's own output. Move or delete its contents yourself, or choose "
                "another -o."
            )


def check_output_file(path: Path, force: bool, inputs: Inputs = ()) -> None:
    """Refuse an output file that cannot be written, is an input, or exists without ``force``."""
    path = Path(path)
    check_location_writable(path, "output file")
    check_not_input(path, inputs, is_dir=False)
    _check_link(path, "file")
    if path.exists() and path.is_dir():
        raise UsageError(f"Output path {path} is a directory; expected a file path.")
    if path.exists() and not path.is_file():  # --force replaces a regular file only, never a FIFO/socket/device
        raise UsageError(
            f"Output path {path} is {kind_of(path.stat().st_mode)}, not a regular file; edgetool writes report "
            "files as regular files and never replaces anything else, even with --force. Choose another path."
        )
    if path.exists() and not force:
        raise UsageError(f"Output file {path} already exists; pass --force to overwrite it.")


# --- atomic writes ----------------------------------------------------------------------------------------------


@contextlib.contextmanager
def atomic_dir(path: Path, force: bool = False, inputs: Inputs = ()) -> Iterator[Path]:
    """Yield a temp dir beside ``path``; on success it gets the marker and is swapped in (``outswap.install_dir``,
    the rules checked again at that moment); on any error it is removed and ``path`` is untouched."""
    path = Path(path)
    check_output_dir(path, force, inputs)
    path = _followed(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep(path.parent)  # temp dirs of dead runs beside the output
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-{run_token()}-", dir=path.parent))
    try:
        yield tmp
        (tmp / MARKER).write_text(MARKER_TEXT)
        os.chmod(tmp, 0o755)
        install_dir(tmp, path, force, has_marker)
    except BaseException as exc:
        named = diskfull.named(exc, tmp, path)
        shutil.rmtree(tmp, ignore_errors=True)
        if named is not exc:
            raise named from exc
        raise


@contextlib.contextmanager
def atomic_file(path: Path, force: bool = False, inputs: Inputs = ()) -> Iterator[Path]:
    """Yield a temp file path beside ``path``; swapped in (``outswap.install_file``) only if the block succeeds."""
    path = Path(path)
    check_output_file(path, force, inputs)
    path = _followed(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep(path.parent)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.tmp-{run_token()}-", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        install_file(tmp, path, force)
    except BaseException as exc:
        named = diskfull.named(exc, tmp, path)
        tmp.unlink(missing_ok=True)
        if named is not exc:
            raise named from exc
        raise
