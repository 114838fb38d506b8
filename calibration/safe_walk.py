"""Walk a folder without leaving it through symbolic links (the one rule every directory walker follows).

A class folder that is a link to ``/`` used to be walked through the whole file system. Here a link (to a folder
or a file) is followed only when its target resolves inside the root that was passed; a link whose target lies
outside is refused naming the link, before anything behind it is listed; a link to a folder already being walked
(an ancestor: a loop) is refused too. Links inside the root keep working (a class folder linked to another
place in the data folder, an image linked from a shared folder inside it). Dangling links and entries that are
neither folders nor regular files (FIFOs, devices) are skipped, as a reader that looks for files skips them.
This module lives in ``calibration`` so that package needs nothing from edge_tool.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import CalibrationError, EdgeToolError


def _real(path: Path | str) -> str:
    return os.path.realpath(path)


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _refuse_out(link: Path, target: str, root: Path, what: str, error: type[EdgeToolError]) -> EdgeToolError:
    return error(
        f"{link} is a symbolic link to {target}, which is outside the {what} {root}; edgetool reads only what is "
        "inside the folder it is given and does not follow links out of it (one link to / would walk the whole "
        f"file system). Copy or move the files into {root}, or pass the link's target folder itself."
    )


def _refuse_loop(link: Path, target: str, what: str, error: type[EdgeToolError]) -> EdgeToolError:
    return error(
        f"{link} is a symbolic link to {target}, a folder that contains the link itself, so walking the {what} "
        "would loop forever; remove the link or point it at a folder that is not one of its own parents."
    )


def checked_entry(
    path: Path, root: Path, what: str = "data folder", error: type[EdgeToolError] = CalibrationError
) -> str:
    """The resolved target of ``path`` (an entry found under ``root``); ``error`` naming it when it is a link
    whose target resolves outside ``root``."""
    real = _real(path)
    if path.is_symlink() and not _inside(real, _real(root)):
        raise _refuse_out(path, real, root, what, error)
    return real


def list_dir(
    folder: Path,
    root: Path | None = None,
    what: str = "data folder",
    error: type[EdgeToolError] = CalibrationError,
    hidden: bool = False,
) -> list[Path]:
    """The entries of ``folder`` (sorted by name; dot-names only with ``hidden``), every link among them checked
    against ``root`` (default: ``folder``) before the list is returned."""
    root = folder if root is None else root
    try:
        with os.scandir(folder) as it:
            listed = sorted((e.name, e.is_symlink()) for e in it if hidden or not e.name.startswith("."))
    except OSError as exc:
        raise error(f"cannot list {folder} ({what}): {exc.strerror or exc}") from None
    root_real = _real(root)
    for name, is_link in listed:  # only a link can lead out (the folder itself is inside): one realpath per link
        if is_link and not _inside(real := _real(folder / name), root_real):
            raise _refuse_out(folder / name, real, root, what, error)
    return [folder / name for name, _ in listed]


def walk_files(
    folder: Path,
    root: Path | None = None,
    what: str = "data folder",
    error: type[EdgeToolError] = CalibrationError,
    hidden: bool = False,
) -> list[Path]:
    """Every regular file under ``folder`` (as paths under it, in sorted walk order), following links only inside
    ``root`` (default: ``folder``); ``error`` naming the first link out of it or into a folder being walked."""
    root = folder if root is None else root
    found: list[Path] = []
    _walk(folder, root, (_real(root), _real(folder)), found, what, error, hidden)
    return found


def _walk(folder, root, stack, found, what, error, hidden) -> None:
    for entry in list_dir(folder, root, what, error, hidden):
        if entry.is_dir():
            real = _real(entry)
            if entry.is_symlink() and real in stack:
                raise _refuse_loop(entry, real, what, error)
            _walk(entry, root, (*stack, real), found, what, error, hidden)
        elif entry.is_file():
            found.append(entry)
