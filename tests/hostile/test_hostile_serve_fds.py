"""serve out of file descriptors and under idle-connection floods, with real sockets on 127.0.0.1.

Out of descriptors (a child ``edgetool serve`` under a low RLIMIT_NOFILE), accept() must back off instead of
spinning: the server's CPU time over one second stays under SPIN_BOUND_S (a spinning accept loop uses the whole
second). Idle connections (fresh or keep-alive) never lock a real request out: the oldest idle one is evicted
for it, and keep-alive connections wait in the selector, not in a worker thread.
"""

from __future__ import annotations

import contextlib
import resource
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

import psutil
import pytest

from edge_tool.webserver.server import MAX_WORKERS
from tests.edgetool_runs import REPO
from tests.hostile.test_hostile_serve import _until, running
from tests.test_serve import SITE_FILES, raw_request, site  # noqa: F401 (fixture)

FD_LIMIT = 64
SPIN_BOUND_S = 0.15  # CPU seconds the server may use in one wall second while out of descriptors (spinning: ~1.0)
ANSWER_BOUND_S = 6.0  # a real request must be answered within this; the failure mode waits the 10 s idle timeout


def _keep_alive_request(sock: socket.socket) -> bool:
    """One keep-alive GET on ``sock``, its whole answer read; False when the server closed the connection."""
    try:
        sock.sendall(b"GET /app.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while not data.endswith(SITE_FILES["app.js"].encode()):
            chunk = sock.recv(65536)
            if not chunk:
                return False
            data += chunk
        return True
    except OSError:
        return False


def test_1000_idle_keep_alive_connections_do_not_lock_out_a_real_request(site):
    with running(site) as srv:
        port = srv.server_address[1]
        threads = threading.active_count()
        socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(1000)]
        try:
            kept = sum(_keep_alive_request(s) for s in socks)  # each is now an idle keep-alive connection
            assert kept >= MAX_WORKERS * 4, kept  # far more than the worker threads
            assert threading.active_count() <= threads + MAX_WORKERS
            t0 = time.monotonic()
            status, _, body = raw_request(port, "/index.html")
            took = time.monotonic() - t0
            assert (status, body) == (200, SITE_FILES["index.html"].encode())
            assert took < ANSWER_BOUND_S, f"a real request waited {took:.1f} s behind 1000 idle connections"
        finally:
            for s in socks:
                s.close()


@contextlib.contextmanager
def serve_child(site_dir, fd_limit: int):
    """``edgetool serve`` in a child whose RLIMIT_NOFILE soft limit is ``fd_limit``; yield (process, port)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a runner started as a background job ignores SIGINT

    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_tool", "serve", str(site_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        preexec_fn=limit,
    )
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line
        yield proc, int(line.split("http://127.0.0.1:")[1].split("/")[0])
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


def _cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def test_out_of_file_descriptors_backs_off_instead_of_spinning(site):
    """Busy connections (requests still arriving) fill the descriptors: nothing to evict, accept() must wait."""
    with serve_child(site, FD_LIMIT) as (proc, port):
        socks = []
        try:
            for _ in range(2 * FD_LIMIT):
                s = socket.create_connection(("127.0.0.1", port), timeout=30)
                s.sendall(b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # headers never finished
                socks.append(s)
            time.sleep(1.0)  # let it reach the limit
            before = _cpu(proc.pid)
            time.sleep(1.0)
            used = _cpu(proc.pid) - before
            assert used < SPIN_BOUND_S, f"serve used {used:.2f} s of CPU in 1 s while out of file descriptors"
        finally:
            for s in socks:
                s.close()
        _until(lambda: raw_request(port, "/index.html")[0] == 200, "served again once descriptors are free")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.count("out of file descriptors") == 1, err  # said once, not once per attempt


def test_out_of_file_descriptors_an_idle_connection_is_evicted_for_a_real_request(site):
    with serve_child(site, FD_LIMIT) as (proc, port):
        socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(2 * FD_LIMIT)]
        try:
            time.sleep(1.0)  # idle: accepted until the limit, then the oldest evicted for newer ones
            t0 = time.monotonic()
            status, _, _ = raw_request(port, "/index.html")
            took = time.monotonic() - t0
            assert status == 200 and took < ANSWER_BOUND_S, (status, took)
        finally:
            for s in socks:
                s.close()


@pytest.mark.parametrize("connections", [40])
def test_idle_keep_alive_connections_hold_no_worker(site, connections):
    """More keep-alive connections than workers, all idle: a new request is answered at once (not after 10 s)."""
    with running(site, idle_timeout=30) as srv:
        port = srv.server_address[1]
        socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(connections)]
        try:
            assert all(_keep_alive_request(s) for s in socks)
            t0 = time.monotonic()
            assert raw_request(port, "/index.html")[0] == 200
            assert time.monotonic() - t0 < ANSWER_BOUND_S
            assert all(_keep_alive_request(s) for s in socks)  # and each can still send its next request
        finally:
            for s in socks:
                s.close()


def _accepted_pair(listener: socket.socket) -> tuple[socket.socket, socket.socket]:
    client = socket.create_connection(listener.getsockname(), timeout=10)
    server_side, _ = listener.accept()
    return client, server_side


def test_eviction_closes_a_closed_connection_first_then_the_oldest_idle_never_a_waiting_request(site):
    """Out of descriptors, the connection to close is chosen by what its client did, not only by age."""
    with running(site) as srv, socket.create_server(("127.0.0.1", 0)) as listener:
        port = srv.server_address[1]
        pairs = {name: _accepted_pair(listener) for name in ("request", "idle", "closed")}  # oldest first
        pairs["request"][0].sendall(b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port)
        pairs["closed"][0].close()
        time.sleep(0.2)  # the bytes and the FIN have arrived
        with srv._lock:  # the selector thread cannot hand the request to a worker meanwhile
            for age, (_, conn) in enumerate(pairs.values()):
                srv._waiting[conn] = (float(age), ("127.0.0.1", 0))
                srv._selector.register(conn, selectors.EVENT_READ)
            chosen = [srv._pop_evictable() for _ in range(3)]
        assert chosen == [pairs["closed"][1], pairs["idle"][1], None]
        answer = pairs["request"][0].recv(65536)  # the one left in the set is served
        assert answer.startswith(b"HTTP/1.1 200"), answer[:80]
        for client, conn in pairs.values():
            client.close()
            conn.close()
