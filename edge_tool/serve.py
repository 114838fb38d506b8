"""A small static server for demo sites: loopback by default, right MIME types, cross-origin isolation headers.

Only files inside the site directory are ever served: dot-dot segments, encoded separators, absolute-form targets
and symlinks that resolve outside the site are refused.
"""

from __future__ import annotations

import http.server
import os
import re
import socket
import sys
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from edge_tool.errors import UsageError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
MIME_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".webmanifest": "application/manifest+json",
    ".wasm": "application/wasm",
    ".bin": "application/octet-stream",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
}
SECURITY_HEADERS = {
    # cross-origin isolation: SharedArrayBuffer for the threaded wasm backend
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_ENCODED_SEPARATOR = re.compile(r"%(2f|5c|00)", re.IGNORECASE)


def content_type(path: Path) -> str:
    """MIME type the server sends for ``path``."""
    return MIME_TYPES.get(Path(path).suffix.lower(), "application/octet-stream")


def resolve_target(root: Path, target: str) -> tuple[int, Path | str | None]:
    """Map a request target to (200, file), (301, location) or (status, None) for 400/403/404; never leaves root."""
    if not target.startswith("/") or target.startswith("//"):
        return 404, None  # absolute-form (http://...) or network-path targets never name a site file
    path = target.split("?", 1)[0].split("#", 1)[0]
    if _ENCODED_SEPARATOR.search(path):
        return 404, None
    try:
        decoded = urllib.parse.unquote(path, errors="strict")
    except UnicodeDecodeError:
        return 404, None
    parts = decoded.split("/")[1:]
    if "\\" in decoded or "\x00" in decoded or any(p in (".", "..") for p in parts):
        return 403, None
    if any(p.startswith(".") for p in parts if p):
        return 404, None
    real_root = os.path.realpath(root)
    candidate = os.path.realpath(os.path.join(real_root, *[p for p in parts if p]))
    if candidate != real_root and not candidate.startswith(real_root + os.sep):
        return 403, None  # a symlink pointing out of the site
    if os.path.isdir(candidate):
        if not decoded.endswith("/"):
            return 301, path + "/"
        index = os.path.realpath(os.path.join(candidate, "index.html"))
        if not index.startswith(real_root + os.sep):
            return 403, None
        candidate = index
    if not os.path.isfile(candidate):
        return 404, None
    return 200, Path(candidate)


class SiteRequestHandler(http.server.BaseHTTPRequestHandler):
    """GET/HEAD of files under ``server.root``; no directory listings."""

    server_version = "edgetool-serve"
    protocol_version = "HTTP/1.1"

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


class SiteServer(http.server.ThreadingHTTPServer):
    """ThreadingHTTPServer bound to one site directory."""

    daemon_threads = True

    def __init__(self, root: Path, address: tuple[str, int], quiet: bool = False):
        self.root = Path(root).resolve()
        self.quiet = quiet
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, SiteRequestHandler)

    @property
    def url(self) -> str:
        """http URL of the site root, with the port actually bound."""
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"


def check_site(site: Path) -> Path:
    """Return ``site`` resolved; UsageError unless it is a directory built by ``edgetool demo``."""
    from edge_tool.demo.site import MARKER_FILES, is_demo_site  # noqa: PLC0415

    site = Path(site)
    if not site.is_dir():
        raise UsageError(f"Expected a demo site directory at {site}, but {'it is a file' if site.exists() else 'nothing is there'}. "
                         f"Build one with `edgetool demo MODEL -o {site}`.")
    if not is_demo_site(site):
        missing = [n for n in MARKER_FILES if not (site / n).is_file()]
        raise UsageError(f"{site} is not an edgetool demo site (missing {', '.join(missing)}). "
                         f"Build one with `edgetool demo MODEL -o {site}`.")
    return site.resolve()


def make_server(site: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, quiet: bool = False) -> SiteServer:
    """Bind a SiteServer for ``site`` (port 0 picks a free port); UsageError when the site or the address is bad."""
    root = check_site(site)
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {port}.")
    try:
        return SiteServer(root, (host, port), quiet=quiet)
    except OSError as exc:
        raise UsageError(f"Cannot listen on {host}:{port}: {exc.strerror or exc}. Try another --port (0 picks a free one).") from None


def start_server(site: Path, host: str = DEFAULT_HOST, port: int = 0, quiet: bool = True):
    """Serve ``site`` from a daemon thread; return (server, thread, url). Stop with server.shutdown(); server.server_close()."""
    server = make_server(site, host, port, quiet=quiet)
    thread = threading.Thread(target=server.serve_forever, name="edgetool-serve", daemon=True)
    thread.start()
    return server, thread, server.url


def serve_until_interrupted(site: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                            echo: Callable[[str], None] = print) -> None:
    """Serve in the foreground, printing the URL; return cleanly on Ctrl-C."""
    server = make_server(site, host, port)
    echo(f"serving {server.root} at {server.url}  (Ctrl-C to stop)")
    if host not in ("127.0.0.1", "localhost", "::1"):
        echo(f"note: bound to {host}, so other machines can reach it; browsers allow service workers only on "
             f"localhost or HTTPS.")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        echo("stopped")
    finally:
        server.server_close()
