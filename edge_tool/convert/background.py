"""Run one conversion in a second process, started early so its TensorFlow import overlaps the parent's work.

``TFLiteConverter.convert`` and the TFJS writer (grappler, then tfjs in Node) are CPU-bound and mostly hold the GIL, so two
conversions overlap only in two processes. ``BackgroundCall`` spawns a fresh interpreter (spawn, not fork:
the parent may already hold TensorFlow's threads), lets it import the heavy modules at once, and later hands
it a function and arguments; ``result()`` returns the value or re-raises the child's error in the parent.

The child is an isolated interpreter (``edge_tool.core.childproc``), not a ``multiprocessing`` spawn child: spawn
starts ``python -c`` without ``-I`` (the current directory first on ``sys.path``), copies the parent's
``sys.path`` (PYTHONPATH included) and re-imports the parent's ``__main__``. The two processes talk over a
socket pair through ``multiprocessing.connection.Connection`` (pickled messages), as spawn's pipe did.
"""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection

from edge_tool.core.childproc import module_command
from edge_tool.core.env import configure_tf_env
from edge_tool.errors import ConversionError, EdgeToolError


def usable_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _serve(conn, warm_modules: tuple[str, ...]) -> None:
    """Child: import ``warm_modules``, then run the one (function, args) sent, send back ("ok"|"error", value)."""
    try:
        configure_tf_env()
        for name in warm_modules:
            importlib.import_module(name)
        try:
            job = conn.recv()
        except EOFError:  # the parent went away before handing over a call
            return
        if job is None:
            return
        fn, args = job
        conn.send(("ok", fn(*args)))
    except EdgeToolError as exc:
        conn.send(("error", (type(exc), str(exc))))
    except BaseException as exc:
        conn.send(("error", (ConversionError, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}")))
    finally:
        conn.close()


class BackgroundCall:
    """A worker process (an isolated child interpreter) that runs exactly one call."""

    def __init__(self, warm_modules: tuple[str, ...] = ()) -> None:
        """Start the worker now; it imports ``warm_modules`` while the parent goes on."""
        mine, theirs = socket.socketpair()
        with mine, theirs:
            self._proc = subprocess.Popen(
                module_command("edge_tool.convert.background", theirs.fileno(), *warm_modules),
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
            self._conn = Connection(mine.detach())
        self._finished = False

    def submit(self, fn: Callable, *args) -> None:
        """Hand the worker its call (``fn`` must be importable by name, ``args`` picklable)."""
        self._conn.send((fn, args))

    def result(self):
        """Wait for the call; return its value or raise its error (an EdgeToolError subclass)."""
        try:
            status, value = self._conn.recv()
            self._finished = True  # only now may close() let it exit by itself; an interrupted wait stops it
        except EOFError:
            self._proc.wait()
            raise ConversionError(
                f"the background conversion process died (exit code {self._proc.returncode}) before reporting a result."
            ) from None
        finally:
            self.close()
        if status == "error":
            cls, message = value
            raise cls(message)
        return value

    def close(self) -> None:
        """Release the worker: let it exit after a finished call, stop it otherwise (idle or abandoned)."""
        if self._proc.poll() is None and not self._finished:
            self._proc.terminate()  # idle (only importing) or working for a run that has already failed
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._conn.close()


if __name__ == "__main__":  # the worker: python -I ... edge_tool.convert.background FD [WARM_MODULE ...]
    _serve(Connection(int(sys.argv[1])), tuple(sys.argv[2:]))
