"""One signal rule for every command: SIGTERM and SIGHUP stop edgetool the way Ctrl-C (SIGINT) does.

``stop_like_interrupt`` makes each of the three signals raise ``Terminated`` (a ``KeyboardInterrupt``) in the
main thread, so every ``with`` block and ``finally`` on the way out runs: child processes are ended (TFJS
worker, latency workers, export and training processes), temp paths are removed (``.OUT.tmp-*``,
``edgetool-*`` in the temp dir). Further signals during that cleanup are ignored so it can finish. The CLI edge
then prints one line and exits with 128 + the signal number: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# main-thread only: depth of deferred() blocks, a signal held back, the stop signal raised (until the block ends)
_state = {"defer": 0, "pending": None, "stopping": None}


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when a stop signal arrives; ``signum`` says which."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)


def exit_code(exc: BaseException) -> int:
    """Shell convention for a run stopped by a signal: 128 + its number (plain KeyboardInterrupt = SIGINT)."""
    return 128 + getattr(exc, "signum", int(signal.SIGINT))


def signal_name(exc: BaseException) -> str:
    """SIGINT / SIGTERM / SIGHUP for a Terminated (SIGINT for a plain KeyboardInterrupt)."""
    return signal.Signals(getattr(exc, "signum", int(signal.SIGINT))).name


def _inside_import(frame) -> bool:
    """True when the interrupted code runs inside the import machinery (often called from C: a compiled extension
    importing a module), where an exception raised by a signal handler comes out as a SystemError or is lost."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _raise_terminated(signum: int, frame) -> None:
    if _inside_import(frame):  # deliver it again in a moment, once the import is done (a lost stop ran to exit 0)
        threading.Timer(0.05, signal.pthread_kill, (threading.main_thread().ident, signum)).start()
        return
    for s in STOP_SIGNALS:  # the first signal starts the cleanup; let it finish
        signal.signal(s, signal.SIG_IGN)
    _state["stopping"] = signum
    if _state["defer"]:
        _state["pending"] = signum  # raised when the deferred() block ends
        return
    raise Terminated(signum)


def is_stop(exc: BaseException) -> bool:
    """True when ``exc`` is a real stop (a Terminated, or Ctrl-C outside ``stop_like_interrupt``), which must go on
    up; False for a KeyboardInterrupt or other BaseException that code raised on its own while a handler is set."""
    if isinstance(exc, Terminated) or _state["stopping"] is not None:
        return True
    handled = (
        signal.getsignal(signal.SIGINT) is _raise_terminated
        if threading.current_thread() is threading.main_thread()
        else False
    )
    return isinstance(exc, KeyboardInterrupt) and not handled


def raise_if_stopping() -> None:
    """Raise Terminated again when a stop signal was raised: for handlers of errors that come out of compiled code,
    where pybind11 can replace a Terminated raised inside a Python callback by an error of its own (a lost stop)."""
    if _state["stopping"] is not None:
        raise Terminated(_state["stopping"])


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold a stop signal back until the block ends: for "start a child process and record it" steps, so a
    signal can never land between the two and leave an unrecorded (unkillable) child behind."""
    _state["defer"] += 1
    try:
        yield
    finally:
        _state["defer"] -= 1
        if not _state["defer"] and _state["pending"] is not None:
            signum, _state["pending"] = _state["pending"], None
            raise Terminated(signum)


@contextlib.contextmanager
def stop_like_interrupt() -> Iterator[None]:
    """While inside, SIGINT/SIGTERM/SIGHUP raise Terminated in the main thread; previous handlers are restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for s in STOP_SIGNALS:
        if signal.getsignal(s) is signal.SIG_IGN:
            continue  # nohup, or a background job of a non-interactive shell: an ignored signal stays ignored
        previous[s] = signal.signal(s, _raise_terminated)
    try:
        yield
    finally:
        _state["stopping"] = None
        for s, handler in previous.items():
            signal.signal(s, handler)
