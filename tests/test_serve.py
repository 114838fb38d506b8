"""edgetool serve: confinement to the site dir, MIME types, cross-origin isolation headers, loopback default."""

from __future__ import annotations

import gzip
import os
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest
from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.demo.serve import make_server, start_server
from edge_tool.errors import UsageError
from tests.edgetool_runs import REPO

SECRET = "TOP-SECRET-OUTSIDE-THE-SITE"
SITE_FILES = {
    "index.html": "<!doctype html><title>x</title>",
    "app.js": "console.log(1);",
    "app.css": "body{}",
    "demo-config.json": "{}",
    "manifest.webmanifest": "{}",
    "sw.js": "self.addEventListener('fetch', () => {});",
    "model/model.json": "{}",
    "model/group1-shard1of1.bin": "\x00\x01",
    "vendor/tfjs-backend-wasm.wasm": "\x00asm",
    "icons/icon-192.png": "png",
}


@pytest.fixture()
def site(tmp_path):
    """A minimal demo-site layout plus a secret file beside it and symlinks pointing out of it."""
    root = tmp_path / "site"
    for rel, text in SITE_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(SECRET)
    os.symlink(tmp_path / "secret.txt", root / "leak.txt")
    os.symlink(tmp_path / "outside", root / "linkdir")
    return root


@pytest.fixture()
def server(site):
    srv, thread, url = start_server(site, "127.0.0.1", 0)
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def raw_request(port: int, target: str, method: str = "GET") -> tuple[int, dict, bytes]:
    """Send the request target byte-for-byte (no client-side normalisation); return (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode("latin-1"))
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    return status, headers, body


@pytest.mark.parametrize(
    "target",
    [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E/secret.txt",
        "/.%2e/secret.txt",
        "/model/../../secret.txt",
        "/model/%2e%2e/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/%2e%2e%2fsecret.txt",
        "/model%2f..%2f..%2fsecret.txt",
        "/..%5csecret.txt",
        "/..\\secret.txt",
        "//etc/passwd",
        "/%2fetc/passwd",
        "/etc/passwd",
        "http://127.0.0.1/../secret.txt",
        "/leak.txt",
        "/linkdir/secret.txt",
        "/linkdir/",
        "/%00index.html",
    ],
)
def test_traversal_attempts_are_refused(server, target):
    status, _, body = raw_request(server.server_address[1], target)
    assert status in (400, 403, 404), (target, status)
    assert SECRET.encode() not in body


@pytest.mark.parametrize(
    "rel, mime",
    [
        ("index.html", "text/html; charset=utf-8"),
        ("app.js", "text/javascript; charset=utf-8"),
        ("app.css", "text/css; charset=utf-8"),
        ("demo-config.json", "application/json"),
        ("manifest.webmanifest", "application/manifest+json"),
        ("model/model.json", "application/json"),
        ("model/group1-shard1of1.bin", "application/octet-stream"),
        ("vendor/tfjs-backend-wasm.wasm", "application/wasm"),
        ("icons/icon-192.png", "image/png"),
    ],
)
def test_mime_types_and_isolation_headers(server, site, rel, mime):
    status, headers, body = raw_request(server.server_address[1], "/" + rel)
    assert status == 200
    assert headers["content-type"] == mime
    assert body == (site / rel).read_bytes()
    assert int(headers["content-length"]) == len(body)
    assert headers["cross-origin-opener-policy"] == "same-origin"
    assert headers["cross-origin-embedder-policy"] == "require-corp"
    assert headers["cross-origin-resource-policy"] == "same-origin"


@pytest.mark.parametrize(
    ("accept", "gzipped"),
    [
        ("gzip, deflate, br", True),
        ("br;q=1, gzip;q=0.5", True),
        ("*", True),
        (None, False),
        ("identity", False),
        ("gzip;q=0", False),
        ("br", False),
    ],
)
def test_large_text_and_wasm_go_gzipped_to_clients_that_accept_it(server, site, accept, gzipped):
    """A wasm build is ~3x smaller gzipped (a --litert site's first visit); the body always decodes to the file."""
    wasm = bytes(range(256)) * 64 + b"\x00asm" * 4096  # 32 kB, compressible like a real build
    (site / "vendor/big.wasm").write_bytes(wasm)
    req = urllib.request.Request(
        f"http://127.0.0.1:{server.server_address[1]}/vendor/big.wasm",
        headers={"Accept-Encoding": accept} if accept else {},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        body, headers = resp.read(), resp.headers
    assert headers.get("Vary") == "Accept-Encoding" and int(headers["Content-Length"]) == len(body)
    assert (headers.get("Content-Encoding") == "gzip") is gzipped
    assert (gzip.decompress(body) if gzipped else body) == wasm
    assert len(body) < len(wasm) // 3 if gzipped else len(body) == len(wasm)
    status, headers, body = raw_request(server.server_address[1], "/app.js")  # tiny: never worth it
    assert "content-encoding" not in headers and body == (site / "app.js").read_bytes()


def test_root_serves_index_and_directories_redirect(server, site):
    port = server.server_address[1]
    status, headers, body = raw_request(port, "/?v=1")
    assert (status, body) == (200, (site / "index.html").read_bytes())
    status, headers, _ = raw_request(port, "/model")
    assert status == 301 and headers["location"] == "/model/"
    assert raw_request(port, "/model/")[0] == 404  # no listings
    assert raw_request(port, "/missing.js")[0] == 404


def test_head_has_headers_but_no_body(server):
    status, headers, body = raw_request(server.server_address[1], "/app.js", method="HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) == len(SITE_FILES["app.js"])


def test_default_bind_is_loopback_and_port_zero_picks_a_port(site):
    srv = make_server(site, port=0, quiet=True)
    try:
        host, port = srv.server_address[:2]
        assert host == "127.0.0.1" and port > 0
        assert srv.url == f"http://127.0.0.1:{port}/"
    finally:
        srv.server_close()


def test_cli_prints_url_serves_and_stops_cleanly_on_ctrl_c(site):
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_tool", "serve", str(site), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line + proc.stderr.read()
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        assert raw_request(port, "/")[0] == 200
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err  # 128 + SIGINT, after closing the server (edge_tool/core/signals.py)
    assert "stopped: SIGINT received" in err and "Traceback" not in err


@pytest.mark.parametrize("which", ["missing", "not-a-site", "file"])
def test_cli_refuses_what_is_not_a_demo_site(tmp_path, which):
    target = tmp_path / "x"
    if which == "not-a-site":
        target.mkdir()
        (target / "index.html").write_text("hi")
    elif which == "file":
        target.write_text("hi")
    result = CliRunner().invoke(app, ["serve", str(target), "--port", "0"])
    assert result.exit_code == 2
    assert "demo site" in result.output and "edgetool demo" in result.output


def test_port_in_use_is_a_usage_error(site):
    srv = make_server(site, port=0, quiet=True)
    try:
        with pytest.raises(UsageError, match="Cannot listen"):
            make_server(site, port=srv.server_address[1], quiet=True)
    finally:
        srv.server_close()
