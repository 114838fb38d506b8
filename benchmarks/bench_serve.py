"""`edgetool serve` under load: server memory while clients download a big file, and CPU per GET of big files.

Starts the real CLI (`python -m edge_tool serve SITE --port 0`) from each checkout given (this one, and with
`--compare DIR` another, e.g. the main checkout before the streaming change), then
- memory: N clients download a 256 MB file at once; the server's peak RSS over its RSS before (psutil, 20 ms);
- CPU: the server's CPU seconds (user + system) per GET of an 80 MB .tflite (float weights, gzip accepted), of a
  LiteRT.js wasm build (first GET and the ones after: compressed once?), and the gzip ratio each got.
Prints a table and writes the `serve` section of benchmarks/RESULTS.md (machine, CPU model and SIMD flags).
Usage: .venv/bin/python benchmarks/bench_serve.py [--compare /work/main] [--clients 6] [--mb 256]
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
from _results import machine, table, write_section

HERE = Path(__file__).resolve().parents[1]
SIMD = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "amx_tile", "asimd", "sve")


def simd_flags() -> str:
    """The SIMD extensions /proc/cpuinfo lists (of those that matter for gzip and the runtimes)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    found = re.search(r"^(flags|Features)\s*:(.*)$", text, re.M)
    have = set(found.group(2).split()) if found else set()
    return ", ".join(f for f in SIMD if f in have) or "none listed"


def build_site(root: Path, mb: int) -> Path:
    """A demo-site layout with a big binary, an 80 MB float .tflite and a real wasm build when one is vendored."""
    site = root / "site"
    site.mkdir()
    for name in ("index.html", "demo-config.json", "manifest.webmanifest", "sw.js"):
        (site / name).write_text("{}" if name.endswith("json") else "x")
    with open(site / "big.bin", "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(mb):
            f.write(block)
    weights = np.random.default_rng(0).normal(0, 0.05, size=20_000_000).astype(np.float32)  # trained-like floats
    (site / "model.tflite").write_bytes(b"\0\0\0\0TFL3" + weights.tobytes())
    (site / "small.tflite").write_bytes(b"\0\0\0\0TFL3" + weights[:3_000_000].tobytes())  # under the gzip limit
    wasm = HERE / "web_demo" / "vendor" / "litert" / "litert_wasm_internal.wasm"
    if wasm.is_file():
        (site / "litert.wasm").write_bytes(wasm.read_bytes())
    return site


def start(source: Path, site: Path) -> tuple[subprocess.Popen, int]:
    """The serve CLI of the checkout ``source``, and its port."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_tool", "serve", str(site), "--port", "0"],
        cwd=source,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(source)},
    )
    line = proc.stdout.readline()
    return proc, int(line.split("http://127.0.0.1:")[1].split("/")[0])


def get(port: int, path: str, gzip: bool = False) -> tuple[int, str | None]:
    """Download ``path`` whole (discarding it in 1 MiB reads); (bytes on the wire, Content-Encoding)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("GET", path, headers={"Accept-Encoding": "gzip"} if gzip else {})
    resp = conn.getresponse()
    n = 0
    while chunk := resp.read(1 << 20):
        n += len(chunk)
    conn.close()
    return n, resp.getheader("Content-Encoding")


def memory(port: int, pid: int, clients: int) -> tuple[float, float]:
    """(RSS before, peak RSS while ``clients`` download big.bin at once), in MB."""
    proc = psutil.Process(pid)
    before = proc.memory_info().rss
    peak, done = before, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, proc.memory_info().rss)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    workers = [threading.Thread(target=get, args=(port, "/big.bin")) for _ in range(clients)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    done.set()
    sampler.join()
    return before / 1e6, peak / 1e6


def cpu_per_get(port: int, pid: int, path: str, runs: int) -> tuple[list[float], int, str | None]:
    """Server CPU seconds of each of ``runs`` gzip-accepting GETs of ``path``; bytes sent and encoding."""
    proc = psutil.Process(pid)
    seconds, sent, encoding = [], 0, None
    for _ in range(runs):
        t = proc.cpu_times()
        sent, encoding = get(port, path, gzip=True)
        u = proc.cpu_times()
        seconds.append(u.user + u.system - t.user - t.system)
    return seconds, sent, encoding


def measure(source: Path, site: Path, clients: int, mb: int) -> list[list[str]]:
    """The table rows of one checkout."""
    proc, port = start(source, site)
    try:
        get(port, "/index.html")
        before, peak = memory(port, proc.pid, clients)
        rows = [[source.name, f"{clients} × GET {mb} MB binary", f"RSS {before:.0f} → peak {peak:.0f} MB", "–"]]
        for name in ("model.tflite", "small.tflite", "litert.wasm"):
            if not (site / name).is_file():
                continue
            seconds, sent, encoding = cpu_per_get(port, proc.pid, f"/{name}", 3)
            size = (site / name).stat().st_size
            rows.append(
                [
                    source.name,
                    f"3 × GET {name} ({size / 1e6:.1f} MB, gzip accepted)",
                    " / ".join(f"{max(s, 0):.2f}" for s in seconds) + " CPU-s",
                    f"{encoding or 'identity'}, {sent / size:.0%} of the file",
                ]
            )
        return rows
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    """Measure each checkout, print and record."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", type=Path, help="another checkout to measure first (e.g. /work/main)")
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--mb", type=int, default=256)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        site = build_site(Path(tmp), args.mb)
        for source in [args.compare, HERE] if args.compare else [HERE]:
            rows += measure(source.resolve(), site, args.clients, args.mb)
    body = (
        "## serve: memory and CPU under load (`benchmarks/bench_serve.py`)\n\n"
        f"Machine: {machine()}; SIMD: {simd_flags()}\n\n"
        + table(["checkout", "what", "server", "sent"], rows)
        + "\n\nMemory: the server's resident set while the clients download (a file read whole per request "
        "grows it by the file size per client; streamed with sendfile it stays flat). CPU: the server's own "
        "CPU seconds for each GET (gzip once per file and kept; files over 16 MiB, or that gzip shrinks by "
        "less than a tenth, go as they are).\n"
    )
    print(body)
    write_section("serve", body)


if __name__ == "__main__":
    main()
