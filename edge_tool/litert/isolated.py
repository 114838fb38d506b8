"""One artefact, one process: a worker fed JSON-line requests whose death (signal, exit, error) becomes a reason.

Every artefact eval runs (LiteRT accuracy pass, LiteRT latency loop, tfjs in Node) lives in a process of its own,
so a model that aborts or segfaults the runtime takes down only its own worker. The parent turns that death into
:class:`RuntimeFailure` with a one-line reason ("killed by SIGABRT (Aborted) …") and eval makes it a row.
Requests and answers are one JSON object per line on the worker's stdin / stdout; bulk arrays travel as files.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from edge_tool.core.signals import deferred
from edge_tool.errors import DataError, ModelError, RuntimeFailure, UsageError

# Typed errors a worker may report (bad input on the user's side, exit 2), by name.
TYPED_ERRORS = {"DataError": DataError, "ModelError": ModelError, "UsageError": UsageError}
_NOISE = ("INFO: Created TensorFlow Lite", "INFO: Initialized TensorFlow Lite")
MAX_REASON = 400
TIMEOUT_ENV = "EDGETOOL_EVAL_TIMEOUT"
DEFAULT_TIMEOUT = 1800.0  # seconds one request (a whole accuracy pass, a latency loop) may take
MAX_TIMEOUT = 1e7  # ~116 days: the largest wait accepted


def request_timeout() -> float:
    """Seconds a worker may take to answer one request (``EDGETOOL_EVAL_TIMEOUT``, default 1800)."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT))
    except ValueError:
        raise UsageError(
            f"{TIMEOUT_ENV} must be a number of seconds, but it is {os.environ.get(TIMEOUT_ENV)!r}."
        ) from None
    if not 0 < value < MAX_TIMEOUT:  # NaN fails too; inf would overflow the watchdog's wait
        raise UsageError(
            f"{TIMEOUT_ENV} must be a positive number of seconds below {MAX_TIMEOUT:g}, but it is {value:g}."
        )
    return value


def death_reason(returncode: int, stderr_text: str, runtime: str) -> str:
    """One line: which signal killed the ``runtime`` process (or its exit code) and its last meaningful message."""
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
            what = f"the {runtime} process was killed by {sig.name} ({signal.strsignal(sig) or sig.name})"
        except ValueError:
            what = f"the {runtime} process was killed by signal {-returncode}"
    else:
        what = f"the {runtime} process exited with code {returncode}"
    last = last_message(stderr_text)
    return f"{what}: {last}" if last else what


def last_message(stderr_text: str) -> str:
    """The last non-noise stderr line (an error message rather than a log banner), shortened."""
    lines = [ln.strip() for ln in stderr_text.splitlines() if ln.strip() and not ln.strip().startswith(_NOISE)]
    if not lines:
        return ""
    # a JS / Python stack ends with frames; the message is the line that names the error
    for ln in reversed(lines):
        if "Error" in ln.split(":", 1)[0] or ln.startswith(("Error", "RuntimeError", "ValueError")):
            return ln[:MAX_REASON]
    return lines[-1][:MAX_REASON]


SHM_MIN_FREE = 1 << 30  # a container's small /dev/shm (often 64 MB) would fill up: use the temp dir then


def scratch_dir(prefix: str) -> tempfile.TemporaryDirectory:
    """A private temp dir for arrays passed between processes: in /dev/shm (memory) when it has room, unless the
    user chose a temp dir with TMPDIR (then there, like every other temp file of edgetool)."""
    shm = Path("/dev/shm")
    base = None
    if not os.environ.get("TMPDIR") and shm.is_dir() and os.access(shm, os.W_OK):
        try:
            base = str(shm) if shutil.disk_usage(shm).free >= SHM_MIN_FREE else None
        except OSError:
            base = None
    return tempfile.TemporaryDirectory(prefix=prefix, dir=base)


class WorkerProcess:
    """A child process speaking JSON lines; stderr goes to a file so a chatty runtime cannot block it."""

    def __init__(self, argv: list[str], runtime: str, scratch: Path, env: dict | None = None):
        self.runtime = runtime
        self._timeout = request_timeout()  # a bad EDGETOOL_EVAL_TIMEOUT is refused before any process starts
        self._stderr = open(Path(scratch) / f"stderr-{os.getpid()}-{id(self)}.txt", "w+b")
        with deferred():  # a stop signal cannot fall between starting the child and owning it
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1, env=env
            )
        self.failure: str | None = None
        self._expired = False

    def _expire(self) -> None:
        self._expired = True
        if self._proc.poll() is None:
            self._proc.kill()

    def send(self, request: dict) -> None:
        """Write one request line (a dead process is noticed by the next ``receive``)."""
        try:
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def receive(self) -> dict:
        """The next answer; RuntimeFailure if the process died, hung past the timeout or reported a failure."""
        limit = self._timeout
        watchdog = threading.Timer(limit, self._expire)  # a runtime that hangs is stopped, not waited for forever
        watchdog.daemon = True
        watchdog.start()
        try:
            line = self._proc.stdout.readline()
        finally:
            watchdog.cancel()
        if not line:
            self._proc.wait()
            if self._expired:
                raise RuntimeFailure(
                    f"{self.runtime} did not answer within {limit:g} s and was stopped (a hang in "
                    f"the runtime; allow longer with {TIMEOUT_ENV}=SECONDS)"
                )
            raise RuntimeFailure(death_reason(self._proc.returncode, self.stderr_text(), self.runtime))
        doc = json.loads(line)
        if "error" in doc:
            raise TYPED_ERRORS.get(doc["error"], ModelError)(doc["message"])
        if "failed" in doc:
            raise RuntimeFailure(str(doc["failed"])[:MAX_REASON])
        return doc

    def ask(self, request: dict) -> dict:
        """send + receive."""
        self.send(request)
        return self.receive()

    def stderr_text(self) -> str:
        """What the process wrote to stderr so far."""
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def close(self, abort: bool = False) -> None:
        """Ask the process to stop (kill it if it does not, or at once when ``abort``), then release the pipes."""
        if abort and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write(json.dumps({"op": "close"}) + "\n")
                self._proc.stdin.close()
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        for f in (self._proc.stdin, self._proc.stdout, self._stderr):
            try:
                f.close()
            except OSError:
                pass
