"""The HTTP server behind ``edgetool serve``, with bounded resources and cross-origin isolation headers.

Limits (docs/hardening.md): a connection waits for its first bytes in one selector thread (an idle or half-open
socket costs a file descriptor, not a thread; at most MAX_PENDING wait, more are closed at once), then a fixed pool
of MAX_WORKERS threads serves it; a connection silent for IDLE_TIMEOUT_S is closed, a request whose line and
headers take longer than REQUEST_TIMEOUT_S is cut off (slowloris), and the listen backlog is LISTEN_BACKLOG.
"""

from __future__ import annotations

import concurrent.futures
import http.server
import selectors
import socket
import sys
import threading
import time
from pathlib import Path

from edge_tool.site_files import content_type, resolve_target

MAX_WORKERS = 16           # connections served at once (a fixed thread pool, not a thread per connection)
MAX_PENDING = 512          # accepted connections waiting for their first bytes; more are closed at once
LISTEN_BACKLOG = 128       # connections the kernel queues before accept()
IDLE_TIMEOUT_S = 10.0      # a connection silent this long (before a request, or in a read/write) is closed
REQUEST_TIMEOUT_S = 15.0   # request line + headers must have arrived within this (slowloris)
JANITOR_PERIOD_S = 0.25   # how often idle and late connections are looked for
SECURITY_HEADERS = {
    # cross-origin isolation: SharedArrayBuffer for the threaded wasm backend
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class SiteRequestHandler(http.server.BaseHTTPRequestHandler):
    """GET/HEAD of files under ``server.root``; no directory listings."""

    server_version = "edgetool-serve"
    protocol_version = "HTTP/1.1"
    def setup(self) -> None:
        self.timeout = self.server.idle_timeout  # StreamRequestHandler sets it on the socket: reads/writes time out
        super().setup()

    def handle_one_request(self) -> None:
        self.server.reading(self.connection, True)  # the request line and headers must arrive in time
        try:
            super().handle_one_request()
        finally:
            self.server.reading(self.connection, False)

    def parse_request(self) -> bool:
        ok = super().parse_request()
        self.server.reading(self.connection, False)  # headers complete: the response may take as long as it takes
        if ok and self.request_version == "HTTP/0.9":
            # no HTTP version: http.server would answer HTTP/0.9 style, a bare body without a status line. A target
            # holding a control character str.split() takes for a space (\x1c-\x1f, \x0b, \x0c) gets here too.
            self.request_version = "HTTP/1.0"
            self.send_error(400, "request line without an HTTP version")
            return False
        return ok

    def end_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        self._serve(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(body=False)

    def _serve(self, body: bool) -> None:
        status, found = resolve_target(self.server.root, self.path)
        if status == 301:
            self.send_response(301)
            self.send_header("Location", str(found))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if status != 200:
            self.send_error(status)
            return
        try:
            data = found.read_bytes()
        except OSError:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", content_type(found))
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (signature of the base class)
        if not self.server.quiet:
            sys.stderr.write(f"{self.address_string()} - {format % args}\n")


class SiteServer(http.server.HTTPServer):
    """HTTP server for one site directory with bounded resources (see the module doc).

    Accepted connections wait in one selector thread until they have bytes to read (an idle or half-open socket
    costs a file descriptor, not a thread); only then does one of MAX_WORKERS pool threads serve them.
    """

    request_queue_size = LISTEN_BACKLOG

    def __init__(self, root: Path, address: tuple[str, int], quiet: bool = False, *,
                 idle_timeout: float = IDLE_TIMEOUT_S, request_timeout: float = REQUEST_TIMEOUT_S,
                 max_workers: int = MAX_WORKERS, max_pending: int = MAX_PENDING):
        self.root = Path(root).resolve()
        self.quiet = quiet
        self.idle_timeout, self.request_timeout, self.max_pending = idle_timeout, request_timeout, max_pending
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self._lock = threading.Lock()
        self._waiting: dict[socket.socket, tuple[float, tuple]] = {}  # idle sockets -> (since, client address)
        self._reading: dict[socket.socket, float | None] = {}  # sockets in a worker -> when its request began
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers, thread_name_prefix="edgetool-serve")
        self._stop = threading.Event()
        self._waiter = threading.Thread(target=self._wait_loop, name="edgetool-serve-waiter", daemon=True)
        super().__init__(address, SiteRequestHandler)  # binds; on failure it calls server_close()
        self._waiter.start()

    # -- accepted connections wait for their first bytes without a thread
    def process_request(self, request, client_address) -> None:
        """Park the new connection in the selector (closed at once when max_pending already wait)."""
        with self._lock:
            full = len(self._waiting) >= self.max_pending
            if not full:
                self._waiting[request] = (time.monotonic(), client_address)
                self._selector.register(request, selectors.EVENT_READ)
        if full:
            self.shutdown_request(request)
            return
        self._wake()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:  # buffer full (already woken) or closed
            pass

    def _wait_loop(self) -> None:
        while not self._stop.is_set():
            events = self._selector.select(timeout=JANITOR_PERIOD_S)
            for key, _ in events:
                if key.fileobj is self._wake_r:
                    try:
                        while self._wake_r.recv(4096):
                            pass
                    except OSError:
                        pass
                    continue
                self._dispatch(key.fileobj)
            self._expire()

    def _dispatch(self, conn: socket.socket) -> None:
        with self._lock:
            entry = self._waiting.pop(conn, None)
            if entry is None:
                return
            self._selector.unregister(conn)
            self._reading[conn] = time.monotonic()  # the request deadline starts with its first bytes
        self._pool.submit(self._work, conn, entry[1])

    def _expire(self) -> None:
        """Close sockets idle for idle_timeout; cut requests whose line and headers exceed request_timeout."""
        now = time.monotonic()
        with self._lock:
            idle = [c for c, (since, _) in self._waiting.items() if now - since > self.idle_timeout]
            for conn in idle:
                self._waiting.pop(conn)
                self._selector.unregister(conn)
            late = [c for c, t0 in self._reading.items() if t0 is not None and now - t0 > self.request_timeout]
        for conn in idle:
            self.shutdown_request(conn)
        for conn in late:
            _cut(conn)

    # -- a worker serves one connection (keep-alive requests included) with socket timeouts
    def _work(self, request, client_address) -> None:
        try:
            if not self._stop.is_set():
                self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - a broken connection is the client's problem; log it like socketserver
            self.handle_error(request, client_address)
        finally:
            with self._lock:
                self._reading.pop(request, None)
            self.shutdown_request(request)

    def reading(self, conn: socket.socket, started: bool) -> None:
        """Mark ``conn`` as reading a request (its deadline runs) or as done reading."""
        with self._lock:
            if conn in self._reading:
                if not started:
                    self._reading[conn] = None
                elif self._reading[conn] is None:
                    self._reading[conn] = time.monotonic()

    def handle_error(self, request, client_address) -> None:
        """One line per broken connection (none when quiet), never a traceback."""
        if not self.quiet:
            sys.stderr.write(f"{client_address[0]} - connection error: {sys.exc_info()[1]!r}\n")

    def server_close(self) -> None:
        """Close the listening socket and every connection, stop the selector thread and the workers."""
        self._stop.set()
        super().server_close()
        self._wake()
        if self._waiter.is_alive():
            self._waiter.join(timeout=5)
        with self._lock:
            waiting, busy = list(self._waiting), list(self._reading)
            self._waiting.clear()
        for conn in waiting:
            self.shutdown_request(conn)
        for conn in busy:
            _cut(conn)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    @property
    def open_connections(self) -> int:
        """Connections accepted and not yet closed (waiting for bytes or being served)."""
        with self._lock:
            return len(self._waiting) + len(self._reading)

    @property
    def url(self) -> str:
        """http URL of the site root, with the port actually bound."""
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"


def _cut(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)  # wakes the worker blocked on it; the worker closes it
    except OSError:
        pass
