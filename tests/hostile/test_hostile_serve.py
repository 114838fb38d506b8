"""serve under hostile clients, with real sockets on 127.0.0.1 and bounded loops (no wall-clock asserts).

Idle and half-open connections cost no thread; a slowloris client is cut off; the pending queue is bounded;
a burst is served; every 127.0.0.0/8 address and ::1 count as loopback. Hypothesis fuzzes the URL handling:
no request target ever serves a file outside the site root, and none gets a 500 or a traceback.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import socket
import threading
import time
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_tool.demo import serve
from edge_tool.demo.serve import is_loopback
from edge_tool.webserver.files import resolve_target
from edge_tool.webserver.server import LISTEN_BACKLOG, MAX_WORKERS, SiteServer
from tests.test_serve import SECRET, SITE_FILES, raw_request, site  # noqa: F401 (fixture)

BOUND_S = 30.0  # upper bound for a condition to become true (a hang guard, not a timing assert)


@contextlib.contextmanager
def running(site_dir: Path, address: tuple[str, int] = ("127.0.0.1", 0), **limits):
    srv = SiteServer(site_dir, address, quiet=True, **limits)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(10)


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def _closed_by_server(sock: socket.socket) -> bool:
    """Block (up to the socket's timeout) until the server closes ``sock``; True when it did."""
    try:
        return sock.recv(1024) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def test_300_idle_connections_hold_no_threads_and_a_real_request_still_gets_through(site):
    proc = psutil.Process()
    with running(site) as srv:
        port = srv.server_address[1]
        assert raw_request(port, "/index.html")[0] == 200  # warm: the pool has started its first thread
        threads, rss = threading.active_count(), proc.memory_info().rss
        socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(300)]
        try:
            _until(lambda: srv.open_connections >= 300, "300 connections accepted")
            assert threading.active_count() <= threads + MAX_WORKERS
            assert threading.active_count() <= threads + 1  # idle sockets wait in the selector, not in threads
            status, _, body = raw_request(port, "/index.html")
            assert status == 200 and body == (site / "index.html").read_bytes()
            assert proc.memory_info().rss - rss < 32 * 1024 * 1024  # 300 threads with stacks would not fit
        finally:
            for s in socks:
                s.close()


def test_idle_connection_is_closed_after_the_idle_timeout(site):
    with running(site, idle_timeout=0.3) as srv:
        with socket.create_connection(("127.0.0.1", srv.server_address[1]), timeout=BOUND_S) as sock:
            assert _closed_by_server(sock)
        _until(lambda: srv.open_connections == 0, "the idle connection forgotten")


def test_slowloris_headers_are_cut_off(site):
    """One header line every 50 ms, never finishing: the request deadline (0.5 s) cuts the connection."""
    with running(site, request_timeout=0.5, idle_timeout=5) as srv:
        sock = socket.create_connection(("127.0.0.1", srv.server_address[1]), timeout=BOUND_S)
        sent = 0
        try:
            sock.sendall(b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            for sent in range(1, 2000):
                sock.sendall(f"X-Slow-{sent}: a\r\n".encode())
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            sock.close()
        assert sent < 1999, "the server never cut the slow request"
        _until(lambda: srv.open_connections == 0, "the slow connection forgotten")


def test_pending_connections_are_bounded_and_the_oldest_idle_one_is_evicted(site):
    with running(site, max_pending=5, idle_timeout=30) as srv:
        socks = [socket.create_connection(("127.0.0.1", srv.server_address[1]), timeout=BOUND_S) for _ in range(12)]
        try:
            _until(lambda: srv.open_connections == 5, "five connections kept")
            for s in socks[:7]:
                assert _closed_by_server(s)  # a new connection evicts the oldest idle one, not itself
            for s in socks[7:]:
                s.sendall(b"GET /app.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert s.recv(64).startswith(b"HTTP/1.1 200")  # the newest five are still served
        finally:
            for s in socks:
                s.close()


def test_a_burst_of_500_requests_20_at_a_time_is_all_served(site):
    assert SiteServer.request_queue_size == LISTEN_BACKLOG >= 128
    with running(site) as srv:
        port = srv.server_address[1]
        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            statuses = list(pool.map(lambda _: raw_request(port, "/app.js")[0], range(500)))
    assert statuses == [200] * 500


@pytest.mark.parametrize(
    "host,loopback",
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("127.255.255.254", True),
        ("::1", True),
        ("::ffff:127.0.0.9", True),
        ("localhost", True),
        ("LOCALHOST.", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("192.168.1.1", False),
        ("example.com", False),
        ("", False),
    ],
)
def test_loopback_addresses(host, loopback):
    assert is_loopback(host) is loopback


def test_127_0_0_2_gets_no_public_exposure_note(site, monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(
        serve.SiteServer, "serve_forever", lambda self, *a, **k: (_ for _ in ()).throw(KeyboardInterrupt)
    )
    with pytest.raises(KeyboardInterrupt):
        serve.serve_until_interrupted(site, "127.0.0.2", 0, echo=lines.append)
    assert lines and "http://127.0.0.2:" in lines[0]
    assert not any(line.startswith("note:") for line in lines), lines


# ------------------------------------------------------------------ property: URL handling

SEGMENTS = [
    "index.html",
    "app.js",
    "model",
    "model.json",
    "leak.txt",
    "linkdir",
    "secret.txt",
    "..",
    ".",
    "",
    "%2e%2e",
    "%2E",
    "%2f",
    "%5c",
    "%00",
    "%",
    "%zz",
    "%c3%a9",
    "%ff",
    "\\",
    "?",
    "#",
    "..;",
    "~",
    "//",
    "a b",
]


def _target():
    seg = st.sampled_from(SEGMENTS) | st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=5)
    return st.lists(seg, max_size=6).map(lambda parts: "/" + "/".join(parts)) | st.text(max_size=20)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=_target())
def test_resolve_target_never_leaves_the_site(site, target):
    status, found = resolve_target(site, target)
    assert status in (200, 301, 400, 403, 404)
    if status == 200:
        real, root = Path(os.path.realpath(found)), Path(os.path.realpath(site))
        assert root in real.parents and SECRET not in real.read_text(errors="replace")


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory):
    top = tmp_path_factory.mktemp("fuzz")
    root = top / "site"
    for rel, text in SITE_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (top / "secret.txt").write_text(SECRET)
    os.symlink(top / "secret.txt", root / "leak.txt")
    os.symlink(top, root / "linkdir")
    with running(root) as srv:
        yield srv


@pytest.mark.parametrize("request_line", [b"GET \x1f HTTP/1.1", b"GET \x1c\x0b HTTP/1.1", b"GET /"])
def test_a_request_line_without_a_version_gets_a_400_with_a_status_line(fuzz_server, request_line):
    """A target of control characters that str.split() takes for spaces leaves two words: http.server reads an
    HTTP/0.9 request, whose reply would be a bare body. It gets a 400 with a status line and headers instead."""
    with socket.create_connection(("127.0.0.1", fuzz_server.server_address[1]), timeout=10) as sock:
        sock.sendall(request_line + b"\r\nHost: 127.0.0.1\r\n\r\n")
        reply = b"".join(iter(lambda: sock.recv(65536), b""))
    head = reply.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    assert head[0].split()[:2] == ["HTTP/1.1", "400"], reply[:80]
    assert "X-Content-Type-Options: nosniff" in head


@settings(max_examples=120, deadline=None)
@given(target=_target().filter(lambda t: t and not any(c in t for c in " \r\n\t") and t.isascii()))
def test_random_request_targets_never_500_and_never_leak(fuzz_server, target):
    status, _, body = raw_request(fuzz_server.server_address[1], target)
    assert status in (200, 301, 400, 403, 404), (target, status)
    assert SECRET.encode() not in body
