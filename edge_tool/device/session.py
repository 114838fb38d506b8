"""One runner process on the device: started over the device's SSH connection, sent its program, then spoken to
in frames (``board_runner.write_frame`` out, ``answers.read_answer`` in: bounded, checked) with a deadline on the
first answer (``hello``: HELLO_TIMEOUT_S) and on every other (EDGETOOL_EVAL_TIMEOUT), and a progress line on
stderr while a long request runs."""

from __future__ import annotations

import io
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

from edge_tool.core.textsafe import visible
from edge_tool.device import answers, board_runner
from edge_tool.device.runner_program import runner_source
from edge_tool.device.transport import TOO_OLD, SshDevice
from edge_tool.errors import RuntimeFailure
from edge_tool.litert.isolated import last_message, request_timeout

HELLO_ENV, HELLO_TIMEOUT_S = "EDGETOOL_DEVICE_HELLO_TIMEOUT", 60.0
HELLO_MARGIN = 4.0  # a board's next hello may take this many times its slowest hello of this run
_HELLO_TOOK: dict[str, float] = {}  # device name -> its slowest hello of this run, in seconds
PROGRESS_ENV, PROGRESS_S = "EDGETOOL_DEVICE_PROGRESS_S", 30.0
STDERR_TAIL = 1 << 16  # bytes kept of what the runner writes on stderr (the rest is read and dropped)
_CLOSED = answers.done("closed")
_FATAL = re.compile(r"Fatal Python error: (Segmentation fault|Bus error|Aborted|Floating point exception|Illegal)")


def _seconds(env: str, default: float) -> float:
    try:
        value = float(os.environ.get(env, default))
    except ValueError:
        return default
    return value if value > 0 else default


def hello_deadline(name: str) -> tuple[float, str]:
    """Seconds the runner on the device ``name`` has to say hello, and why: ``EDGETOOL_DEVICE_HELLO_TIMEOUT``, or
    HELLO_MARGIN times the slowest hello this board already gave in this run when that is longer (a board on a
    loaded machine that answered once is slow, not broken: its next runner gets the time it has shown it needs,
    and a line on stderr says so)."""
    base = _seconds(HELLO_ENV, HELLO_TIMEOUT_S)
    took = _HELLO_TOOK.get(name)
    if took is None or took * HELLO_MARGIN <= base:
        return base, HELLO_ENV
    scaled = took * HELLO_MARGIN
    why = f"{HELLO_ENV}={base:g} s, scaled to {HELLO_MARGIN:g}× the {took:.1f} s this board's slowest hello took"
    print(visible(f"… {name}: hello deadline {scaled:.0f} s ({why})"), file=sys.stderr)
    return scaled, why


class _TimedReader:
    """``read(n)`` on a pipe that gives up after ``timeout`` seconds without data (RuntimeFailure), and says on
    stderr every PROGRESS_S seconds that ``activity`` is still running."""

    def __init__(self, fd: int, timeout: float, what: str, why: str):
        self.fd, self.timeout, self.what, self.why = fd, timeout, what, why
        self.activity: str | None = None
        self.until: float | None = None  # an absolute deadline over several reads (the hello's)
        self.progress = _seconds(PROGRESS_ENV, PROGRESS_S)

    def read(self, n: int) -> bytes:
        chunks, got = [], 0
        start = time.monotonic()
        deadline, said = min(start + self.timeout, self.until or float("inf")), start
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeFailure(f"{self.what} did not answer within {self.timeout:g} s ({self.why})")
            if not select.select([self.fd], [], [], min(left, self.progress))[0]:
                if self.activity and time.monotonic() - said >= self.progress:
                    said = time.monotonic()
                    print(visible(f"… {self.activity}: still running ({said - start:.0f} s)"), file=sys.stderr)
                continue
            chunk = os.read(self.fd, min(n - got, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)


class _Tail(threading.Thread):
    """Reads a pipe to its end, keeping only its last STDERR_TAIL bytes (a flood costs no memory)."""

    def __init__(self, fd: int):
        super().__init__(daemon=True)
        self.fd, self.kept, self.size = fd, deque(), 0
        self.start()

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self.kept.append(chunk)
                self.size += len(chunk)
                while self.size - len(self.kept[0]) >= STDERR_TAIL:
                    self.size -= len(self.kept.popleft())
        finally:
            os.close(self.fd)

    def text(self) -> str:
        """What was kept, decoded."""
        self.join(timeout=2)
        return b"".join(list(self.kept))[-STDERR_TAIL:].decode("utf-8", "replace")


class RunnerSession:
    """A runner on ``device``: ``hello`` (its checked facts) on start, then ``request`` / ``send`` / ``receive``."""

    def __init__(self, device: SshDevice):
        self.device = device
        self.died = False
        err_read, err_write = os.pipe()
        try:
            self.proc: subprocess.Popen | None = device.session(err_write)
        finally:
            os.close(err_write)
        self._err = _Tail(err_read)
        src = runner_source().encode("utf-8")
        name = device.url.name
        hello_s, why = hello_deadline(name)
        self._reader = _TimedReader(self.proc.stdout.fileno(), hello_s, f"the runner on {name}", why)
        started = time.monotonic()
        self._reader.until = started + hello_s  # the whole hello, however it trickles in
        self.send_raw(str(len(src)).encode() + b"\n" + src)
        self._sync()
        self.hello = (self.receive(answers.hello), {})
        _HELLO_TOOK[name] = max(_HELLO_TOOK.get(name, 0.0), time.monotonic() - started)
        self._reader.timeout, self._reader.why, self._reader.until = request_timeout(), "EDGETOOL_EVAL_TIMEOUT", None

    def _sync(self) -> None:
        """Skip what the device's login scripts print before the runner's first frame (up to 64 KiB)."""
        seen = b""
        while not seen.endswith(board_runner.MAGIC):
            byte = self._reader.read(1)
            if not byte or len(seen) > 65536:
                raise RuntimeFailure(self.lost() + (f" (it printed {visible(seen[-200:])})" if seen.strip() else ""))
            seen += byte

    def send_raw(self, data: bytes) -> None:
        """Write bytes to the runner; RuntimeFailure when the connection is gone."""
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise RuntimeFailure(self.lost()) from None

    def send(self, header: dict, arrays: dict | None = None, blob: bytes | None = None) -> None:
        """One frame: ``header`` then ``arrays`` (or one ``blob``)."""
        if blob is not None:
            import json  # noqa: PLC0415
            import struct  # noqa: PLC0415

            raw = json.dumps(dict(header, blob=len(blob))).encode()
            self.send_raw(struct.pack(">I", len(raw)) + raw + blob)
            return

        buf = io.BytesIO()
        board_runner.write_frame(buf, header, arrays)
        self.send_raw(buf.getvalue())

    def receive(self, check=None, arrays=None, activity: str | None = None):
        """The next answer checked by ``check`` (and its arrays by ``arrays``): the checked header, or (header,
        arrays) when ``arrays`` is given; RuntimeFailure for a ``failed`` answer, a lost connection or an answer
        the protocol does not allow (``answers.BadAnswer``)."""
        self._reader.activity = activity
        try:
            header, got = answers.read_answer(self._reader, arrays)
        except (EOFError, OSError):
            raise RuntimeFailure(self.lost()) from None
        finally:
            self._reader.activity = None
        reason = answers.failed_reason(header)
        if reason is not None:
            raise RuntimeFailure(reason)
        header = (check or _CLOSED)(header)
        return (header, got) if arrays is not None else header

    def lost(self) -> str:
        """Why the runner stopped answering: its exit and last message, or the connection's end."""
        self.died, code = True, None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        said = visible(self._err.text())
        last = last_message(said)
        name = self.device.url.name
        deadline = time.monotonic() + (3 if code == 255 else 0)  # ssh's own failure code: did the connection end?
        while self.device.alive and time.monotonic() < deadline:
            time.sleep(0.1)
        if not self.device.alive:
            return f"lost the connection to {name} mid-run: {self.device.master_error()}"
        if TOO_OLD in said:
            return (
                f"{self.device.url.python} on {name}: {answers.text(last.split(TOO_OLD, 1)[1], 80).strip('; ')}, "
                f"edgetool's device runner needs Python ≥ 3.8 (name a newer one with ?python=PATH)"
            )
        return crash_reason(name, code, said, last, getattr(self, "hello", ({},))[0])

    def close(self, abort: bool = False) -> None:
        """Ask the runner to end (it removes its temp dir) and wait; at once when ``abort`` (idempotent)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if not abort and proc.poll() is None:
            try:
                self.proc = proc
                self.send({"op": "close"})
                self.receive()
            except RuntimeFailure:
                pass
            self.proc = None
        for step in ("close", "terminate", "kill"):
            try:
                if step == "close":
                    proc.stdin.close()
                else:
                    getattr(proc, step)()
                proc.wait(timeout=10)
                break
            except (OSError, subprocess.TimeoutExpired):
                continue
        proc.stdout.close()


def crash_reason(name: str, code: int | None, said: str, last: str, hello: dict) -> str:
    """Why a runner died: a runtime crash named by its signal (faulthandler's report), a kill without a word
    (the out-of-memory killer, with the device's memory when it is known), or its exit and last message."""
    fatal = _FATAL.search(said)
    if fatal:
        return (
            f"the TFLite runtime on {name} crashed ({fatal.group(1)}) running the model: a fault in the device's "
            "runtime (an op or model it mishandles), not a lack of memory"
        )
    if code in (137, 255, -9) and not last or "Killed" in last or "MemoryError" in last:
        mem, free = hello.get("memory_bytes"), hello.get("memory_available_bytes")
        known = (
            f"the device has {mem / 2**30:.1f} GiB, {free / 2**30:.1f} GiB of it available at start"
            if mem and free
            else "the device's memory is unknown"
        )
        return (
            f"the runner on {name} was killed by a signal{': ' + last if last else ''} without a word (on a device "
            f"usually the kernel's out-of-memory killer: {known}; the model and its arena may not fit)"
        )
    return f"the runner on {name} stopped (exit {code}){': ' + last if last else ''}"


def model_bytes(path: Path) -> bytes:
    """The artefact's bytes, sent to the device in the ``load`` frame."""
    return Path(path).read_bytes()


def sweep(device: SshDevice, session: RunnerSession) -> None:
    """After ``session``'s runner died without cleaning up (SIGKILL, a crash), a new runner removes its temp dir (the
    path travels in the protocol; the runner only removes an ``edgetool-device-*`` dir in its own temp dir)."""
    left = session.hello[0].get("tmp") if getattr(session, "hello", None) else None
    if not (left and session.died and device.alive):
        return
    try:
        cleaner = RunnerSession(device)
        cleaner.send({"op": "sweep", "path": left})
        cleaner.receive(answers.done("swept"))
        cleaner.close()
    except RuntimeFailure:
        pass
