"""The request handler behind ``edgetool serve``: one GET/HEAD per call, Host and body framing checked first
(``webserver.guard``), files mapped by ``webserver.files``, cross-origin isolation headers on every answer."""

from __future__ import annotations

import errno
import http.server
import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO

from edge_tool.core.textsafe import visible
from edge_tool.webserver.compress import accepts_gzip, gzipped
from edge_tool.webserver.files import content_type, resolve_target
from edge_tool.webserver.guard import BadBody, body_framing, check_host, discard_body
from edge_tool.webserver.heads import Prefixed

NO_FDS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}  # out of file descriptors / kernel memory
SECURITY_HEADERS = {
    # cross-origin isolation: SharedArrayBuffer for the threaded wasm backend
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened without blocking (a FIFO swapped in after the path check would hang the worker), checked
    to be a regular file on the opened descriptor; OSError (a 404) otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.ENOENT, "not a regular file", str(path))
    return os.fdopen(fd, "rb")


class SiteRequestHandler(http.server.BaseHTTPRequestHandler):
    """GET/HEAD of files under ``server.root``; no directory listings. One request per handler (see handle)."""

    server_version = "edgetool-serve"
    protocol_version = "HTTP/1.1"
    rbufsize = 0  # unbuffered: no bytes of a next request hide in a buffer when the connection goes back to wait

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout  # StreamRequestHandler sets it on the socket: reads/writes time out
        super().setup()
        self.rfile = Prefixed(self.server.take_head(self.connection), self.rfile)  # gathered by the selector

    def handle(self) -> None:
        """Serve one request; a keep-alive connection goes back to the selector (server._work), not a loop here.

        A body the request announced is read and dropped after the answer (so a client that announced more than
        it sends still gets its answer at once); one that turns out malformed or short closes the connection.
        """
        self.close_connection, self.body_framing = True, 0
        self.handle_one_request()
        if self.body_framing and not self.close_connection:
            self.rfile.from_socket = False  # only what arrived with the head: a slow body holds no worker
            self.server.reading(self.connection, True)
            try:
                discard_body(self.rfile, self.body_framing)
            except (BadBody, OSError):
                self.close_connection = True
            finally:
                self.server.reading(self.connection, False)

    def handle_one_request(self) -> None:
        self.server.reading(self.connection, True)  # the request line and headers must arrive in time
        try:
            super().handle_one_request()
        finally:
            self.server.reading(self.connection, False)

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if ok and self.request_version == "HTTP/0.9":
            # no HTTP version: http.server would answer HTTP/0.9 style, a bare body without a status line. A target
            # holding a control character str.split() takes for a space (\x1c-\x1f, \x0b, \x0c) gets here too.
            self.request_version = "HTTP/1.0"
            self.send_error(400, "request line without an HTTP version")
            ok = False
        ok = ok and self._checked()
        self.server.reading(self.connection, False)  # request complete: the response may take as long as it takes
        return ok

    def _checked(self) -> bool:
        """Host allowed (else 403/400) and the body framing acceptable (else 400/413); refusals close."""
        problem = check_host(
            self.headers.get_all("Host") or [],
            str(self.server.server_address[0]),
            self.server.server_address[1],
            self.request_version >= "HTTP/1.1",
        )
        if self.headers.defects or any("\r" in v or "\n" in v for v in self.headers.values()):
            problem = (400, "malformed or folded header line")  # read one way here, another way by a proxy
        if problem is None and self.command not in ("GET", "HEAD"):
            self._not_allowed()
            return False
        if problem is None:
            try:
                self.body_framing = body_framing(
                    self.headers.get_all("Content-Length") or [], self.headers.get_all("Transfer-Encoding") or []
                )
                return True
            except BadBody as exc:
                problem = (exc.status, str(exc))
        self.close_connection = True
        self.send_error(*problem)
        return False

    def _not_allowed(self) -> None:
        """405 for every method but GET and HEAD (not http.server's 501: nothing here is unimplemented)."""
        body = b"405 Method Not Allowed: this server answers GET and HEAD only.\n"
        self.close_connection = True
        self.send_response(405)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def end_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
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
            f = self._open(found)
        except OSError as exc:
            self.send_error(503 if exc.errno in NO_FDS else 404)  # out of descriptors: try again, not "missing"
            return
        with f:
            size = os.fstat(f.fileno()).st_size
            packed = gzipped(found, f) if accepts_gzip(self.headers.get("Accept-Encoding")) else None
            self.send_response(200)
            self.send_header("Content-Type", content_type(found))
            if packed is not None:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
            self.send_header("Content-Length", str(size if packed is None else len(packed)))
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            if not body:
                return
            if packed is not None:
                self.wfile.write(packed)
            elif self.connection.sendfile(f, 0, size) < size:
                self.close_connection = True  # the file shrank meanwhile: the client sees a short body, then EOF

    def _open(self, path: Path) -> BinaryIO:
        """The file opened for streaming (never read whole: memory per connection stays bounded, whatever its
        size); out of file descriptors, idle connections are closed to make room (a few tries)."""
        for _ in range(3):
            try:
                return _open_regular(path)
            except OSError as exc:
                if exc.errno not in NO_FDS or not self.server.evict_idle():
                    raise
        return _open_regular(path)

    def log_message(self, format: str, *args) -> None:
        if not self.server.quiet:
            # the request line and headers are the client's text: shown, never obeyed by the terminal
            sys.stderr.write(visible(f"{self.address_string()} - {format % args}") + "\n")
