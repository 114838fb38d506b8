"""A small static server for demo sites: loopback by default, right MIME types, cross-origin isolation headers.

Only files inside the site directory are ever served (``webserver.files``); the server's resource limits are
``webserver.server``'s (docs/hardening.md). Here: the site and address checks, and starting/stopping the server.
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Callable
from pathlib import Path

from edge_tool.demo.site import MARKER_FILES, is_demo_site
from edge_tool.errors import UsageError
from edge_tool.webserver.server import SiteServer

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def is_loopback(host: str) -> bool:
    """True for every 127.0.0.0/8 address, ::1 (and IPv4-mapped loopback) and 'localhost'."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def check_site(site: Path) -> Path:
    """Return ``site`` resolved; UsageError unless it is a directory built by ``edgetool demo``."""
    site = Path(site)
    if not site.is_dir():
        raise UsageError(
            f"Expected a demo site directory at {site}, but {'it is a file' if site.exists() else 'nothing is there'}. "
            f"Build one with `edgetool demo MODEL -o {site}`."
        )
    if not is_demo_site(site):
        missing = [n for n in MARKER_FILES if not (site / n).is_file()]
        raise UsageError(
            f"{site} is not an edgetool demo site (missing {', '.join(missing)}). "
            f"Build one with `edgetool demo MODEL -o {site}`."
        )
    return site.resolve()


def make_server(site: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, quiet: bool = False) -> SiteServer:
    """Bind a SiteServer for ``site`` (port 0 picks a free port); UsageError when the site or the address is bad."""
    if not host.strip():
        raise UsageError(
            "--host is empty; give an address to bind: 127.0.0.1 (this machine only, the default), "
            "or 0.0.0.0 / :: to accept connections from other machines."
        )
    root = check_site(site)
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {port}.")
    try:
        return SiteServer(root, (host, port), quiet=quiet)
    except (OSError, UnicodeError) as exc:
        raise UsageError(
            f"Cannot listen on {host!r} port {port}: {getattr(exc, 'strerror', None) or exc}. Check "
            "--host, or try another --port (0 picks a free one)."
        ) from None


def start_server(site: Path, host: str = DEFAULT_HOST, port: int = 0, quiet: bool = True):
    """Serve ``site`` from a daemon thread; return (server, thread, url). Stop with server.shutdown(); server.server_close()."""
    server = make_server(site, host, port, quiet=quiet)
    thread = threading.Thread(target=server.serve_forever, name="edgetool-serve", daemon=True)
    thread.start()
    return server, thread, server.url


def serve_until_interrupted(
    site: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, echo: Callable[[str], None] = print
) -> None:
    """Serve in the foreground, printing the URL, until a signal (Ctrl-C, SIGTERM, SIGHUP) stops it.

    The KeyboardInterrupt (``signals.Terminated``) propagates after the server is closed; the CLI edge prints
    one line and exits 130/143/129.
    """
    server = make_server(site, host, port)
    echo(f"serving {server.root} at {server.url}  (Ctrl-C to stop)")
    bound = str(server.server_address[0])
    if not is_loopback(bound):
        echo(
            f"note: bound to {bound}, so other machines can reach it; browsers allow service workers only on "
            f"localhost or HTTPS. Requests must name it by an IP address or localhost: other host names get 403 "
            f"(DNS-rebinding protection)."
        )
    try:
        server.serve_forever()
    finally:
        server.server_close()
