"""A fork server for the tests' edgetool runs: TensorFlow is imported once, and every run is a fork of that process.

A fresh ``python -m edge_tool`` pays TensorFlow's import (4-5 s of CPU on the CI machine) before it looks at its
arguments; the hostile-input cases alone start hundreds of them. This server imports the heavy libraries once —
with the settings edgetool itself applies before importing them — and forks a child per run. The child restores
what a fresh process would have (the run's environment, working directory, argv, ``sys.path[0]``, standard
streams, tempfile's directory), runs ``edge_tool`` as ``__main__`` exactly as ``python -m`` does, and its exit
status is handed back. None of edgetool's own modules are imported before the fork: every run imports them anew,
so no edgetool state crosses runs, and the child's view of the libraries is that of a fresh process that has just
imported them and run nothing.

What a fork cannot give, the caller must not ask of it (``tests.edgetool_runs`` falls back to a real process for
these): environment variables TensorFlow, Keras or Python read at import (``READ_AT_IMPORT``, also the list that
keeps such a variable out of an in-process run), and anything about the import itself (its log lines, which modules
a command imports). ``tests/test_run_contract.py`` checks that a fork and a fresh process give the same exit code,
output and files. Used as a script: ``python tests/zygote.py SOCKET`` serves until the client (its parent) goes away.
"""

from __future__ import annotations

import array
import atexit
import json
import os
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

import numpy

REPO = Path(__file__).resolve().parents[1]

# Environment variables read once, at import or at process start, by TensorFlow, Keras, numpy's BLAS, the loader,
# glibc or Python itself (HOME: Keras reads ~/.keras/keras.json when it is imported; EDGETOOL_VERBOSE: calibration's
# tfenv sets TensorFlow's log level from it before the import). A run whose value differs from the server's gets a
# fresh process; an in-process run refuses it (tests/edgetool_runs.py). The one list of both.
READ_AT_IMPORT = (
    "TF_",
    "KERAS",
    "CUDA",
    "OMP_",
    "OPENBLAS",
    "MKL_",
    "PYTHON",
    "XLA_",
    "TFDF_",
    "LD_",
    "HOME",
    "EDGETOOL_VERBOSE",
    "MALLOC",
)


def agrees_at_import(env: dict[str, str], base: dict[str, str]) -> bool:
    """True when ``env`` and ``base`` hold the same value (or both none) for every variable read at import."""
    return not differs_at_import(env, base)


def differs_at_import(env: dict[str, str], base: dict[str, str]) -> list[str]:
    """The variables read at import on which ``env`` and ``base`` differ, sorted.

    LD_LIBRARY_PATH is compared without the directories that do not exist, which cannot change what the loader
    finds: OpenCV's import (Keras imports it) prepends its missing ``cv2/../../lib64`` to the test process's
    own environment, and that alone must not turn every later run into a fresh interpreter.
    """
    keys = {k for k in env.keys() | base.keys() if k.startswith(READ_AT_IMPORT)}
    return sorted(k for k in keys if _effective(k, env.get(k)) != _effective(k, base.get(k)))


def _effective(key: str, value: str | None) -> str | None:
    if key != "LD_LIBRARY_PATH" or value is None:
        return value
    return ":".join(p for p in value.split(":") if p == "" or os.path.isdir(p)) or None


_HEAVY = ("numpy", "tensorflow", "tf_keras")  # imported before the first fork (in this order)
_MAX_HEADER = 1 << 20


# ---------------------------------------------------------------------------------------------------- server side


def _preload() -> None:
    """Import the heavy libraries as edgetool's ``import_tf`` would (its environment defaults, quiet C++ logs)."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TFDF_DISABLE_WELCOME_MESSAGE", "1")
    for name in _HEAVY:
        __import__(name)


def _child(header: dict, fds: list[int]) -> None:
    """In the forked child: become a fresh ``python -m edge_tool ARGS`` run and never return."""
    status = 70
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(header["cwd"])
        os.environ.clear()
        os.environ.update(header["env"])
        tempfile.tempdir = None  # re-read TMPDIR, as a fresh process would
        sys.stdin = open(0, closefd=False)  # the standard streams live as long as the process
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False, buffering=1)
        sys.path.insert(0, os.getcwd())  # what ``python -m`` puts first
        numpy.random.seed()  # a fresh process seeds numpy's global generator from the OS, not the server's state
        sys.argv = ["-m", *header["args"]]
        try:
            runpy.run_module("edge_tool", run_name="__main__", alter_sys=True)
            status = 0
        except SystemExit as exc:
            code = exc.code
            if code is None:
                status = 0
            elif isinstance(code, int):
                status = code & 0xFF
            else:
                print(code, file=sys.stderr)
                status = 1
        except KeyboardInterrupt:
            status = 128 + signal.SIGINT
        except BaseException:  # what Python prints for an uncaught exception, and its status
            traceback.print_exc()
            status = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed pipe: nothing more to say
                pass
    finally:
        os._exit(status)


def _recv_run(conn: socket.socket) -> tuple[dict, list[int]]:
    """Read one run request: a length-prefixed JSON header with the three standard-stream descriptors attached."""
    fds = array.array("i")
    msg, anc, _flags, _addr = conn.recvmsg(8, socket.CMSG_LEN(3 * fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    size = int.from_bytes(msg, "big")
    if not 0 < size < _MAX_HEADER or len(fds) != 3:
        raise ValueError("bad run request")
    body = b""
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ValueError("short run request")
        body += chunk
    return json.loads(body), list(fds)


def serve(path: str) -> None:
    """Preload, listen on the Unix socket ``path``, fork a child per request and send back its pid and status."""
    _preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    parent = os.getppid()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    waiting: dict[int, socket.socket] = {}  # pidfd -> the client's connection
    while os.getppid() == parent:
        for key, _ in sel.select(timeout=1.0):
            if key.data is None:
                conn, _ = listener.accept()
                try:
                    header, fds = _recv_run(conn)
                except (OSError, ValueError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    conn.close()
                    _child(header, fds)
                for fd in fds:
                    os.close(fd)
                conn.sendall(f"{pid}\n".encode())
                pidfd = os.pidfd_open(pid)
                waiting[pidfd] = conn
                sel.register(pidfd, selectors.EVENT_READ, pid)
            else:
                pidfd, pid = key.fd, key.data
                sel.unregister(pidfd)
                os.close(pidfd)
                _, wstatus = os.waitpid(pid, 0)
                conn = waiting.pop(pidfd)
                try:
                    conn.sendall(f"{os.waitstatus_to_exitcode(wstatus)}\n".encode())
                except OSError:
                    pass
                conn.close()


# ---------------------------------------------------------------------------------------------------- client side


class Zygote:
    """The client: starts the server on first use and runs ``edge_tool`` arguments in forks of it."""

    def __init__(self, sock_dir: Path, env: dict[str, str] | None = None):
        """``env``: the server's environment (default: this process's, when the server starts)."""
        self._sock = str(sock_dir / f"zygote-{os.getpid()}-{id(self):x}.sock")
        self._proc: subprocess.Popen | None = None
        self._env: dict[str, str] = dict(env or {})
        self._lock = threading.Lock()

    def usable_for(self, env: dict[str, str]) -> bool:
        """True when ``env`` agrees with the server's on every variable read at import. When this process's own
        environment has moved on such a variable since the server started (a test or a library set it), the server
        is restarted with it, so forking follows the test process instead of silently stopping for every run."""
        own = dict(os.environ)
        if self._env and differs_at_import(own, self._env):
            with self._lock:
                self.close()
                self._env = own
        return agrees_at_import(env, self._env or own)

    def _start(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return
            if os.path.exists(self._sock):
                os.unlink(self._sock)
            self._env = self._env or dict(os.environ)
            self._proc = subprocess.Popen(
                [sys.executable, str(Path(__file__)), self._sock],
                cwd=REPO,
                env=self._env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                text=True,
            )
            if self._proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the test fork server did not start (exit {self._proc.wait()})")

    def close(self) -> None:
        """Stop the server."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(30)
        if os.path.exists(self._sock):
            os.unlink(self._sock)

    def run(self, args: list[str], env: dict[str, str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
        """Run ``python -m edge_tool ARGS`` as a fork of the server; same result as ``subprocess.run``'s."""
        self._start()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self._sock)
            body = json.dumps({"args": list(args), "env": env, "cwd": str(cwd)}).encode()
            conn.sendmsg(
                [len(body).to_bytes(8, "big")],
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, out_w, err_w]))],
            )
            conn.sendall(body)
        finally:
            os.close(out_w)
            os.close(err_w)
        reader = conn.makefile("r")
        pid = int(reader.readline())
        chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        for fd in chunks:
            sel.register(fd, selectors.EVENT_READ)
        try:
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    os.kill(pid, signal.SIGKILL)
                    raise subprocess.TimeoutExpired(["edgetool", *args], timeout)
                for key, _ in sel.select(timeout=min(left, 5.0)):
                    data = os.read(key.fd, 1 << 16)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        sel.unregister(key.fd)
            line = reader.readline()
        finally:
            sel.close()
            os.close(out_r)
            os.close(err_r)
            reader.close()
            conn.close()
        if not line.strip():
            raise RuntimeError("the test fork server went away during a run")

        def decode(fd: int) -> str:  # as subprocess.run(text=True): universal newlines
            return b"".join(chunks[fd]).decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")

        return subprocess.CompletedProcess(
            [sys.executable, "-m", "edge_tool", *args], int(line), decode(out_r), decode(err_r)
        )


_SHARED: list[Zygote] = []


def shared() -> Zygote:
    """The one client of this test process, started on first use and stopped when the process exits."""
    if not _SHARED:
        _SHARED.append(Zygote(Path(tempfile.gettempdir())))
        atexit.register(_SHARED[0].close)
    return _SHARED[0]


if __name__ == "__main__":
    # tests/ -> the checkout this file lies in: every run imports that checkout's edge_tool (after its own cwd, as
    # conftest's PYTHONPATH gives a fresh process), never the one an editable install of another checkout points at
    sys.path[0] = str(REPO)
    serve(sys.argv[1])
