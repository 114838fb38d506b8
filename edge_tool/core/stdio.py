"""The process's standard streams at the CLI edge: closed ones are /dev/null, a reader that left is exit 141.

- ``edgetool convert … <&- >&-`` starts with file descriptors 0/1/2 closed (``sys.stdout`` is None): the first
  file edgetool opened would get descriptor 1, and a progress line would land in it. ``reopen_closed`` puts
  /dev/null there first, so what would have been printed goes nowhere (as with ``>/dev/null``) and the command
  ends as it would have.
- rich's ``Console`` ends the process with status 1 when its output pipe breaks (``on_broken_pipe``), which is
  the budget code; ``raise_broken_pipe`` makes every console raise ``BrokenPipeError`` instead, which the CLI
  edge turns into the documented 141 (``cli.guard_command``).
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

STREAMS = ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w"))


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def reopen_closed() -> None:
    """Point every closed standard descriptor (0, 1, 2) at /dev/null, and its ``sys`` stream at that."""
    for fd, name, mode in STREAMS:
        if not _closed(fd):
            continue
        devnull = os.open(os.devnull, os.O_RDWR)
        if devnull != fd:
            os.dup2(devnull, fd)
            os.close(devnull)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False, encoding="utf-8", errors="backslashreplace"))


def _raise(console) -> None:
    console.quiet = True
    raise BrokenPipeError(32, "Broken pipe")


def raise_broken_pipe() -> None:
    """Make every rich Console raise BrokenPipeError when its reader leaves, rather than exit with status 1."""
    Console.on_broken_pipe = _raise


def click_saw_broken_pipe() -> bool:
    """True when Typer's click layer met a closed pipe outside a command (``--help``, ``--version``): it then wraps
    ``sys.stdout`` in ``PacifyFlushWrapper`` and exits 1, which should be 141 like any other closed pipe."""
    return type(sys.stdout).__name__ == "PacifyFlushWrapper"


def silence(*streams) -> None:
    """Point the descriptors of ``streams`` at /dev/null so the exit-time flush cannot raise BrokenPipeError again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in streams:
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError, AttributeError):  # not a real file (captured by a test runner), or None
                pass
    finally:
        os.close(devnull)
