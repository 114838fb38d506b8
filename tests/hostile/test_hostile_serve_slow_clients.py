"""``edgetool serve`` under slow clients (issue 40, item 6): a real ``edgetool serve`` on 127.0.0.1, 500 connections
trickling their request one byte at a time (and 32 that finished their headers but trickle a chunked body), while a
normal client GETs the site. The normal GETs are answered within a second each (before: 12 s, every request head
held one of 16 workers until a 15 s cut-off); the trickling clients are cut when their request deadline ends.
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import time

import pytest

from tests.edgetool_runs import REPO

SLOW = 500
SLOW_BODY = 32
REQUEST = b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: trickle\r\n\r\n"


@pytest.fixture
def serve(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<!doctype html><title>t</title>")
    (site / "demo-config.json").write_text("{}")
    (site / "sw.js").write_text("")
    (site / "manifest.webmanifest").write_text("{}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_tool", "serve", str(site), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "serve.log").open("w"),  # the request log: a pipe nobody reads would fill and block it
        text=True,
        cwd=REPO,
    )
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line + (tmp_path / "serve.log").read_text()
        yield int(line.split("http://127.0.0.1:")[1].split("/")[0])
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _get(port: int) -> float:
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"<title>t</title>"), data[:200]
    return time.monotonic() - t0


def _closed_by_server(s: socket.socket) -> bool:
    s.settimeout(5)
    try:
        while s.recv(65536):  # a slow-body client got its answer first
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        return False
    return True


def test_a_normal_get_is_served_within_a_second_under_500_trickling_clients(serve):
    port = serve
    slow = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(SLOW)]
    bodies = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(SLOW_BODY)]
    for s in bodies:  # complete headers, then a chunked body that never ends
        s.sendall(b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n")
    times = []
    try:
        for i in range(12):  # ~3 s of trickling: one byte per connection per round
            for s in slow:
                try:
                    s.send(REQUEST[i : i + 1])
                except OSError:
                    pass
            times.append(_get(port))
            time.sleep(0.25)
        time.sleep(6)  # past the 5 s request deadline: every trickler is cut
        cut = sum(_closed_by_server(s) for s in slow + bodies)
    finally:
        for s in slow + bodies:
            s.close()
    print(
        f"normal GET under {SLOW} trickling + {SLOW_BODY} slow-body clients: median {statistics.median(times):.3f} s, "
        f"max {max(times):.3f} s"
    )
    assert max(times) < 1.0, times
    assert cut == SLOW + SLOW_BODY
