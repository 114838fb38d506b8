"""The digits part of bench_browser.py: a small digits model's demo site (size, cold and service-worker load time,
per-backend latency) in one persistent Chromium profile."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._browser_common import CHROMIUM, FLAGS, pct, served
from benchmarks._results import table


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

    out: dict = {"latency": {}}
    with served(site) as url, sync_playwright() as pw:
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
    return out


def digits(model: Path | None, runs: int) -> str:
    """Markdown of the digits part (trains a small model when ``model`` is None)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if model is None:
            model = tmp / "model"
            edgetool("train", "--strategy", "default", "--epochs", "4", "-o", model)
        edgetool("demo", model, "-o", tmp / "site")
        x = np.load(model / "eval.npz")["x"].astype(np.float64)
        res = measure(tmp / "site", x, runs, tmp / "profile")
        sizes = site_sizes(tmp / "site")
    rows = []
    for backend, ms in res["latency"].items():
        rows.append(
            [
                backend + (" (auto-picked)" if backend == res["auto"] else ""),
                f"{pct(ms, 50):.2f} ms",
                f"{pct(ms, 90):.2f} ms",
            ]
        )
    return "\n\n".join(
        [
            f"### Digits model ({runs} predictions per backend)",
            table(["backend", "median latency (batch 1, incl. upload + readback)", "p90"], rows),
            table(
                ["load", "time to `edgetool.ready`"],
                [
                    ["cold (network, backend micro-benchmark + warm-up included)", f"{res['cold_ms']:.0f} ms"],
                    ["reload (service-worker cache)", f"{res['warm_ms']:.0f} ms"],
                ],
            ),
            f"Site size: {sizes['total'] / 1e6:.2f} MB, of which tfjs runtime {sizes['vendor'] / 1e6:.2f} MB "
            f"and model {sizes['model'] / 1e3:.0f} kB.",
        ]
    )
