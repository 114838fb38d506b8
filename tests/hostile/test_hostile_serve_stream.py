"""serve streams files (bounded memory per connection) and compresses each file once (issue 34).

The real CLI serves a site in a child process; clients download a big file at once while its resident set is
sampled. A whole-file read per request would grow it by the file size per client (the reported 6 × 256 MB took
the server to 1.6 GB); streamed it stays within a few MB. The gzip rules are tested in process against the real
handler: one compression per file whatever the concurrency, nothing over the size limit, nothing that gzip does
not shrink by a tenth (float weights), and the bodies still exact (Content-Length, HEAD, gzip round trip).
"""

from __future__ import annotations

import gzip
import http.client
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from edge_tool.demo.serve import start_server
from edge_tool.webserver import compress
from tests.edgetool_runs import REPO

MB = 1 << 20
MARKERS = ("index.html", "demo-config.json", "manifest.webmanifest", "sw.js")


def _site(root: Path) -> Path:
    site = root / "site"
    site.mkdir()
    for name in MARKERS:
        (site / name).write_text("{}" if name.endswith("json") else "x")
    return site


def _get(port: int, path: str, method: str = "GET", gzip_ok: bool = False) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(method, path, headers={"Accept-Encoding": "gzip"} if gzip_ok else {})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body


def _drain(port: int, path: str, counts: list[int]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("GET", path)
    resp = conn.getresponse()
    n = 0
    while chunk := resp.read(MB):
        n += len(chunk)
        time.sleep(0.001)  # a slow-ish reader: the server holds the connection while sending
    counts.append(n)
    conn.close()


@pytest.mark.slow
def test_memory_stays_bounded_while_clients_download_a_big_file(tmp_path):
    site = _site(tmp_path)
    size = 96 * MB
    with open(site / "big.bin", "wb") as f:
        f.write(os.urandom(MB) * (size // MB))
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_tool", "serve", str(site), "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = int(proc.stdout.readline().split("http://127.0.0.1:")[1].split("/")[0])
        assert _get(port, "/index.html")[0] == 200
        server = psutil.Process(proc.pid)
        before, peak, counts = server.memory_info().rss, 0, []
        clients = [threading.Thread(target=_drain, args=(port, "/big.bin", counts)) for _ in range(4)]
        for c in clients:
            c.start()
        while any(c.is_alive() for c in clients):
            peak = max(peak, server.memory_info().rss)
            time.sleep(0.01)
        for c in clients:
            c.join()
    finally:
        proc.terminate()
        proc.wait(30)
    assert counts == [size] * 4
    # 4 whole-file reads would add 384 MB; one would add 96 MB. Streaming adds buffers of a few MB at most.
    assert peak - before < 32 * MB, f"server RSS grew by {(peak - before) / MB:.0f} MB"


@pytest.fixture
def served(tmp_path, monkeypatch):
    site = _site(tmp_path)
    rng = np.random.default_rng(0)
    (site / "app.js").write_text("const answer = 42;\n" * 20000)  # compresses very well
    (site / "weights.tflite").write_bytes(rng.normal(0, 0.05, 500_000).astype(np.float32).tobytes())
    (site / "huge.wasm").write_bytes(b"\0asm" + bytes(compress.MAX_SOURCE_BYTES))  # over the limit, compressible
    calls: list[int] = []
    real = gzip.compress
    monkeypatch.setattr(compress.gzip, "compress", lambda data, *a, **k: calls.append(len(data)) or real(data, *a, **k))
    monkeypatch.setattr(compress, "_cache", type(compress._cache)())
    server, thread, url = start_server(site, "127.0.0.1", 0)
    yield site, server.server_address[1], calls
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_a_file_is_compressed_once_whatever_the_concurrency(served):
    site, port, calls = served
    results: list[bytes] = []
    threads = [
        threading.Thread(target=lambda: results.append(_get(port, "/app.js", gzip_ok=True)[2])) for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and {gzip.decompress(r) for r in results} == {(site / "app.js").read_bytes()}
    assert calls == [(site / "app.js").stat().st_size]
    _get(port, "/app.js", gzip_ok=True)
    assert len(calls) == 1


def test_float_weights_are_not_worth_gzip_and_are_not_retried(served):
    site, port, calls = served
    for _ in range(3):
        status, headers, body = _get(port, "/weights.tflite", gzip_ok=True)
        assert status == 200 and "content-encoding" not in headers
        assert body == (site / "weights.tflite").read_bytes()
    assert len(calls) == 1  # tried once, remembered as not worth it


def test_files_over_the_limit_are_streamed_as_they_are(served):
    site, port, calls = served
    status, headers, body = _get(port, "/huge.wasm", gzip_ok=True)
    assert status == 200 and "content-encoding" not in headers and len(body) == (site / "huge.wasm").stat().st_size
    assert int(headers["content-length"]) == len(body) and calls == []


def test_head_and_identity_answers_keep_their_length(served):
    site, port, _ = served
    status, headers, body = _get(port, "/app.js", method="HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) == (site / "app.js").stat().st_size
    status, headers, body = _get(port, "/app.js", method="HEAD", gzip_ok=True)
    assert headers["content-encoding"] == "gzip" and body == b"" and int(headers["content-length"]) > 0
    assert _get(port, "/app.js")[2] == (site / "app.js").read_bytes()


def test_a_fifo_swapped_in_is_not_served(served):
    site, port, _ = served
    os.mkfifo(site / "pipe.js")
    assert _get(port, "/pipe.js")[0] == 404
    assert _get(port, "/app.js")[0] == 200  # the worker was not blocked
