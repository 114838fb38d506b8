"""One runner process on the device: started over the device's SSH connection, sent its program, then spoken to
in frames (``board_runner.read_frame`` / ``write_frame``) with a deadline on every answer."""

from __future__ import annotations

import inspect
import io
import os
import select
import subprocess
import tempfile
import time
from pathlib import Path

from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate import latency
from edge_tool.evaluate.device import board_model, board_runner, board_tflm
from edge_tool.evaluate.device.transport import SshDevice
from edge_tool.litert.isolated import last_message, request_timeout

_FUTURE = "from __future__ import annotations"


def runner_source() -> str:
    """The program sent to the device: board_runner + board_model + board_tflm + the host's own latency loop + main()."""
    parts = [
        inspect.getsource(board_runner),
        inspect.getsource(board_model).replace(_FUTURE, ""),
        inspect.getsource(board_tflm).replace(_FUTURE, ""),
        "from typing import Callable\n",
        *(inspect.getsource(f) for f in (latency.time_loop, latency.tflite_step, latency.fit_inputs)),
        # os._exit: the temp dir is gone and every answer flushed by then; skipping the interpreter's finalization
        # (a daemon reader thread blocked on its queue) avoids a deadlock seen in qemu-arm's Python 3.9 at exit
        "_code = main()\nsys.stderr.flush()\nos._exit(_code)\n",
    ]
    return "\n".join(parts)


class _TimedReader:
    """``read(n)`` on a pipe that gives up after ``timeout`` seconds without data (RuntimeFailure)."""

    def __init__(self, fd: int, timeout: float, what: str):
        self.fd, self.timeout, self.what = fd, timeout, what

    def read(self, n: int) -> bytes:
        chunks, got = [], 0
        deadline = time.monotonic() + self.timeout
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise RuntimeFailure(f"{self.what} did not answer within {self.timeout:g} s (EDGETOOL_EVAL_TIMEOUT)")
            chunk = os.read(self.fd, min(n - got, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)


class RunnerSession:
    """A runner on ``device``: ``hello`` (its facts) on start, then ``request`` / ``send`` / ``receive``."""

    def __init__(self, device: SshDevice):
        self.device = device
        self.died = False
        self._err = tempfile.TemporaryFile()
        self.proc: subprocess.Popen | None = device.session(self._err)
        src = runner_source().encode("utf-8")
        self._reader = _TimedReader(self.proc.stdout.fileno(), request_timeout(), f"the runner on {device.url.name}")
        self.send_raw(str(len(src)).encode() + b"\n" + src)
        self._sync()
        self.hello = self.receive()

    def _sync(self) -> None:
        """Skip what the device's login scripts print before the runner's first frame (up to 64 KiB)."""
        seen = b""
        while not seen.endswith(board_runner.MAGIC):
            byte = self._reader.read(1)
            if not byte or len(seen) > 65536:
                raise RuntimeFailure(self.lost() + (f" (it printed {seen[-200:]!r})" if seen.strip() else ""))
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

    def receive(self) -> tuple[dict, dict]:
        """The next answer (header, arrays); RuntimeFailure for a ``failed`` answer or a lost connection."""
        try:
            header, arrays = board_runner.read_frame(self._reader)
        except (EOFError, ValueError, UnicodeDecodeError):
            raise RuntimeFailure(self.lost()) from None
        if "failed" in header:
            raise RuntimeFailure(header["failed"])
        return header, arrays

    def lost(self) -> str:
        """Why the runner stopped answering: its exit and last message, or the connection's end."""
        self.died, code = True, None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._err.seek(0)
        last = last_message(self._err.read().decode("utf-8", "replace"))
        name = self.device.url.name
        deadline = time.monotonic() + (3 if code == 255 else 0)  # ssh's own failure code: did the connection end?
        while self.device.alive and time.monotonic() < deadline:
            time.sleep(0.1)
        if not self.device.alive:
            return f"lost the connection to {name} mid-run: {self.device.master_error()}"
        if code in (137, 255, -9) and not last or "Killed" in last or "MemoryError" in last:
            return (
                f"the runner on {name} was killed by a signal{': ' + last if last else ''} (on a device, "
                "usually the kernel's out-of-memory killer: the model and its arena do not fit the free memory)"
            )
        return f"the runner on {name} stopped (exit {code}){': ' + last if last else ''}"

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
        self._err.close()


def model_bytes(path: Path) -> bytes:
    """The artefact's bytes, sent to the device in the ``load`` frame."""
    return Path(path).read_bytes()


def sweep(device: SshDevice, session: RunnerSession) -> None:
    """After ``session``'s runner died without cleaning up (SIGKILL), a new runner removes its temp dir (the path
    travels in the protocol; the runner only removes an ``edgetool-device-*`` dir in its own temp dir)."""
    left = session.hello[0].get("tmp") if getattr(session, "hello", None) else None
    if not (left and session.died and device.alive):
        return
    try:
        cleaner = RunnerSession(device)
        cleaner.send({"op": "sweep", "path": left})
        cleaner.receive()
        cleaner.close()
    except RuntimeFailure:
        pass
