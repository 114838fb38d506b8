"""Demo-site figures in real Chromium: site size, load-to-ready (cold and from the service-worker cache),
and per-backend inference latency of the digits model through ``window.edgetool.predict``.

Usage: .venv/bin/python benchmarks/bench_browser.py [--model SAVED_MODEL_DIR] [--runs 50]
(without --model it trains a small digits model first). Writes the 'browser' section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._results import machine, table, write_section  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def edgetool(*args) -> None:
    """Run the CLI; exit with its output on failure."""
    proc = subprocess.run([sys.executable, "-m", "edge_tool", *map(str, args)], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(proc.stdout + proc.stderr)


def site_sizes(site: Path) -> dict[str, int]:
    """Bytes of the whole site, of vendor/ (tfjs runtime) and of model/."""
    sizes = {"total": 0, "vendor": 0, "model": 0}
    for p in site.rglob("*"):
        if p.is_file():
            n = p.stat().st_size
            sizes["total"] += n
            top = p.relative_to(site).parts[0]
            if top in sizes:
                sizes[top] += n
    return sizes


def measure(site: Path, x: np.ndarray, runs: int, profile: Path) -> dict:
    """Load times and per-backend latencies (ms) in one Chromium profile."""
    from playwright.sync_api import sync_playwright

    from edge_tool.serve import start_server

    server, thread, url = start_server(site, "127.0.0.1", 0)
    out: dict = {"latency": {}}
    try:
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, args=FLAGS)
            page = ctx.new_page()
            t0 = time.perf_counter()
            page.goto(url)
            info = page.evaluate("window.edgetool.ready")
            out["cold_ms"] = (time.perf_counter() - t0) * 1e3
            out["auto"] = info["backend"]
            page.evaluate("navigator.serviceWorker.ready.then(() => true)")
            t0 = time.perf_counter()
            page.reload()
            page.evaluate("window.edgetool.ready")
            out["warm_ms"] = (time.perf_counter() - t0) * 1e3
            samples = [x[i % len(x)].ravel().tolist() for i in range(runs)]
            for backend in page.evaluate("window.edgetool.backends"):
                page.evaluate("(b) => window.edgetool.setBackend(b)", backend)
                ms = page.evaluate(
                    "async (xs) => { const t = []; for (const v of xs) t.push((await window.edgetool.predict(v)).ms); return t; }",
                    samples,
                )
                out["latency"][backend] = ms
            ctx.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="SavedModel dir with eval.npz (default: train one)")
    parser.add_argument("--runs", type=int, default=50, help="predictions per backend")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = args.model
        if model is None:
            model = tmp / "model"
            edgetool("train", "--strategy", "default", "--epochs", "4", "-o", model)
        edgetool("demo", model, "-o", tmp / "site")
        x = np.load(model / "eval.npz")["x"].astype(np.float64)
        res = measure(tmp / "site", x, args.runs, tmp / "profile")
        sizes = site_sizes(tmp / "site")
    rows = []
    for backend, ms in res["latency"].items():
        ms = sorted(ms)
        rows.append([backend + (" (auto-picked)" if backend == res["auto"] else ""),
                     f"{statistics.median(ms):.2f} ms", f"{ms[int(0.9 * (len(ms) - 1))]:.2f} ms"])
    body = "\n\n".join([
        f"## Browser demo (`benchmarks/bench_browser.py`, headless Chromium, {args.runs} predictions per backend)",
        f"Machine: {machine()}; no GPU (webgl, when present, is software-rendered)",
        table(["backend", "median latency (batch 1, incl. readback)", "p90"], rows),
        table(["load", "time to `edgetool.ready`"], [
            ["cold (network, backend micro-benchmark included)", f"{res['cold_ms']:.0f} ms"],
            ["reload (service-worker cache)", f"{res['warm_ms']:.0f} ms"],
        ]),
        f"Site size: {sizes['total'] / 1e6:.2f} MB, of which tfjs runtime {sizes['vendor'] / 1e6:.2f} MB "
        f"and model {sizes['model'] / 1e3:.0f} kB.",
    ])
    print(body)
    write_section("browser", body)


if __name__ == "__main__":
    main()
