"""The HTTP server behind ``edgetool serve``, with bounded resources and cross-origin isolation headers.

Limits (docs/hardening.md): a connection waits in one selector thread until its request's line, headers and small
body have all arrived (``webserver.heads``; an idle, half-open, trickling or idle keep-alive socket costs a file
descriptor, not a thread; at most MAX_PENDING wait, and a new one evicts the oldest idle one), then a fixed pool of
MAX_WORKERS threads serves that one request and hands the connection back; a connection silent for IDLE_TIMEOUT_S is
closed, a request not complete REQUEST_TIMEOUT_S after its first byte is cut off (slowloris, per connection), and
the listen backlog is LISTEN_BACKLOG. Out of file descriptors,
accept() first evicts a connection its client closed or the oldest idle one (never one whose request has
arrived), else backs off (up to ACCEPT_BACKOFF_MAX_S) instead of spinning.
Host and body-framing checks: ``webserver.guard``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import http.server
import selectors
import socket
import sys
import threading
import time
from pathlib import Path

from edge_tool.webserver.conns import cut, first_evictable
from edge_tool.webserver.handler import NO_FDS, SiteRequestHandler
from edge_tool.webserver.heads import gather

MAX_WORKERS = 16  # connections served at once (a fixed thread pool, not a thread per connection)
MAX_PENDING = 512  # connections waiting for a request's first bytes; a new one evicts the oldest
LISTEN_BACKLOG = 128  # connections the kernel queues before accept()
IDLE_TIMEOUT_S = 10.0  # a connection silent this long (before a request, or in a read/write) is closed
REQUEST_TIMEOUT_S = 5.0  # request line, headers and body must have arrived within this from the first byte
JANITOR_PERIOD_S = 0.25  # how often idle and late connections are looked for
LINGER_S = 2.0  # after our last answer, unread client bytes are drained this long before the close
ACCEPT_BACKOFF_MAX_S = 1.0  # longest pause between accept() attempts while out of file descriptors


class SiteServer(http.server.HTTPServer):
    """HTTP server for one site directory with bounded resources (see the module doc).

    Accepted connections wait in one selector thread until they have bytes to read (an idle or half-open socket
    costs a file descriptor, not a thread); only then does one of MAX_WORKERS pool threads serve them.
    """

    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        root: Path,
        address: tuple[str, int],
        quiet: bool = False,
        *,
        idle_timeout: float = IDLE_TIMEOUT_S,
        request_timeout: float = REQUEST_TIMEOUT_S,
        max_workers: int = MAX_WORKERS,
        max_pending: int = MAX_PENDING,
    ):
        self.root = Path(root).resolve()
        self.quiet = quiet
        self.idle_timeout, self.request_timeout, self.max_pending = idle_timeout, request_timeout, max_pending
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self._lock = threading.Lock()
        self._waiting: dict[socket.socket, tuple[float, tuple]] = {}  # idle sockets -> (since, client address)
        self._reading: dict[socket.socket, float | None] = {}  # sockets in a worker -> when its request began
        self._draining: dict[socket.socket, float] = {}  # answered, closing sockets -> when to close them anyway
        self._heads: dict[socket.socket, tuple[bytearray, float]] = {}  # selector thread only: request so far, t0
        self._ready: dict[socket.socket, bytes] = {}  # complete requests handed to a worker (``take_head``)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers, thread_name_prefix="edgetool-serve")
        self._stop = threading.Event()
        self._backoff, self._fd_warned = 0.0, False
        self._waiter = threading.Thread(target=self._wait_loop, name="edgetool-serve-waiter", daemon=True)
        super().__init__(address, SiteRequestHandler)  # binds; on failure it calls server_close()
        self._waiter.start()

    # -- accepted connections wait for their first bytes without a thread
    def get_request(self):
        """accept(); out of file descriptors, evict a closed or idle connection or back off, never spin."""
        try:
            accepted = super().get_request()
        except OSError as exc:
            if exc.errno not in NO_FDS:
                raise
            if not self.evict_idle():  # nothing closed or idle to close: wait before the next attempt
                self._backoff = min(max(2 * self._backoff, 0.05), ACCEPT_BACKOFF_MAX_S)
                time.sleep(self._backoff)
            if not self.quiet and not self._fd_warned:
                self._fd_warned = True
                sys.stderr.write(
                    f"serve: out of file descriptors ({exc.strerror}); closing the oldest idle "
                    "connections and slowing accept() down\n"
                )
            raise
        self._backoff = 0.0
        return accepted

    def process_request(self, request, client_address) -> None:
        """Park the new connection in the selector; when max_pending already wait, one of them is evicted."""
        self._park(request, client_address)

    def _park(self, conn: socket.socket, client_address) -> None:
        evicted = None
        with self._lock:
            if self._stop.is_set():
                evicted = conn  # closing down: nothing waits any more
            else:
                if len(self._waiting) >= self.max_pending:
                    evicted = self._pop_evictable()
                self._waiting[conn] = (time.monotonic(), client_address)
                self._selector.register(conn, selectors.EVENT_READ)
        if evicted is not None:
            self.shutdown_request(evicted)
        self._wake()

    def _pop_evictable(self) -> socket.socket | None:
        """Remove (under the lock) the waiting connection to close first: one its client already closed, else
        the one idle longest. A connection whose request has arrived (not yet handed to a worker) is not idle
        and is never chosen. None when no connection qualifies."""
        chosen = first_evictable(self._waiting)  # oldest first: _park inserts each wait anew
        if chosen is not None:
            del self._waiting[chosen]
            self._selector.unregister(chosen)
        return chosen

    def evict_idle(self) -> bool:
        """Close one waiting connection its client closed or left idle (``_pop_evictable``), freeing a file
        descriptor; False when there is none."""
        with self._lock:
            chosen = self._pop_evictable()
        if chosen is not None:
            self.shutdown_request(chosen)
        return chosen is not None

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # buffer full (already woken) or closed
            self._wake_w.send(b"\0")

    def _wait_loop(self) -> None:
        while not self._stop.is_set():
            events = self._selector.select(timeout=JANITOR_PERIOD_S)
            for key, _ in events:
                if key.fileobj is self._wake_r:
                    with contextlib.suppress(OSError):
                        while self._wake_r.recv(4096):
                            pass
                    continue
                self._dispatch(key.fileobj)
            self._expire()

    def _dispatch(self, conn: socket.socket) -> None:
        if conn in self._draining:
            self._drain(conn)
            return
        with self._lock:  # (gather never blocks) under the lock, so eviction never sees a request half taken
            if conn not in self._waiting:
                return
            head = self._heads.setdefault(conn, (bytearray(), time.monotonic()))[0]
            state = gather(conn, head)  # the request arrives here, not in a worker (slow clients hold no thread)
            if state == "more":
                return
            self._heads.pop(conn, None)
            entry = self._waiting.pop(conn)
            self._selector.unregister(conn)
            if state == "done":
                self._reading[conn], self._ready[conn] = None, bytes(head)  # its deadline starts in the worker
        if state == "done":
            self._pool.submit(self._work, conn, entry[1])
        else:
            self.shutdown_request(conn)

    def take_head(self, conn: socket.socket) -> bytes:
        """The request bytes the selector gathered for ``conn`` (the worker reads them first)."""
        with self._lock:
            return self._ready.pop(conn, b"")

    def _expire(self) -> None:
        """Close sockets idle for idle_timeout, and those whose request is not complete request_timeout after its
        first byte (gathering, or its body in a worker)."""
        now = time.monotonic()
        with self._lock:
            idle = [c for c, (since, _) in self._waiting.items() if now - since > self.idle_timeout]
            for conn in idle:
                self._waiting.pop(conn)
                self._selector.unregister(conn)
            late = [c for c, t0 in self._reading.items() if t0 is not None and now - t0 > self.request_timeout]
            slow = [c for c, (_, t0) in self._heads.items() if c in self._waiting and now - t0 > self.request_timeout]
            for conn in slow:
                self._waiting.pop(conn)
                self._selector.unregister(conn)
            for conn in [c for c in self._heads if c not in self._waiting] + slow:
                self._heads.pop(conn, None)
            drained = [c for c, until in self._draining.items() if now > until]
        for conn in idle + slow:
            self.shutdown_request(conn)
        for conn in drained:
            self._drain(conn, final=True)
        for conn in late:
            cut(conn)

    # -- a worker serves one request with socket timeouts; a keep-alive connection then waits again without a thread
    def _work(self, request, client_address) -> None:
        keep = False
        try:
            if not self._stop.is_set():
                keep = not self.RequestHandlerClass(request, client_address, self).close_connection
        except Exception:
            self.handle_error(request, client_address)
            keep = False
        finally:
            with self._lock:
                self._reading.pop(request, None)
                self._ready.pop(request, None)
        if keep:
            self._park(request, client_address)
        else:
            self._linger(request)

    # -- closing after an answer: send FIN, drain what the client still sends (a refused request's body, a
    #    pipelined request), then close; closing with unread bytes would send a RST that can destroy our answer
    def _linger(self, conn: socket.socket) -> None:
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        with self._lock:
            if not self._stop.is_set():
                self._draining[conn] = time.monotonic() + LINGER_S
                self._selector.register(conn, selectors.EVENT_READ)
                conn = None
        if conn is None:
            self._wake()
        else:
            conn.close()

    def _drain(self, conn: socket.socket, final: bool = False) -> None:
        try:
            done = final or not conn.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:
            done = final
        except OSError:
            done = True
        if done:
            with self._lock:
                if self._draining.pop(conn, None) is not None:
                    self._selector.unregister(conn)
            conn.close()

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
            waiting, busy = list(self._waiting) + list(self._draining), list(self._reading)
            self._waiting.clear()
            self._draining.clear()
        for conn in waiting:
            self.shutdown_request(conn)
        for conn in busy:
            cut(conn)
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
