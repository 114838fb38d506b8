"""Demo-site figures in real headless Chromium: MobileNetV2-224 per backend against native LiteRT fp32, and the
digits model's site size, load-to-ready and per-backend latency.

MobileNetV2-224 (seeded random weights; SavedModel, TFJS and fp32 .tflite cached under benchmarks/.cache/): for each
backend configuration a fresh browser context opens the site served by ``edge_tool.demo.serve.start_server`` with
``?backend=NAME[&threads=N]`` and measures cold start (navigation start -> first prediction resolved), then the
steady ``window.edgetool.predict`` latency (tensor upload + inference + readback) and the inference-only latency
(``window.edgetool.timeInference``). Native LiteRT fp32 at 1 and N (= cores) threads is timed in fresh processes
before, between and after the browser rounds (medians). ``auto`` is the bare URL: the page's own backend pick
(time-bounded in-page micro-benchmark) and default thread count. About 3 minutes with the defaults once the
MobileNetV2 artefacts are cached (first run: +1-2 min to build them).

Usage: .venv/bin/python benchmarks/bench_browser.py [--runs 30] [--rounds 2] [--skip-digits] [--skip-mobilenet]
Writes the 'browser' section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from edge_tool.demo.config import DemoConfig
from edge_tool.demo.site import build_site
from edge_tool.demo.vendor import pinned_versions
from edge_tool.evaluate.latency import measure_tflite_subprocess
from edge_tool.litert.runtime import load_interpreter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._browser_common import CHROMIUM, FLAGS, served
from benchmarks._browser_digits import digits
from benchmarks._browser_models import mobilenet_artefacts
from benchmarks._browser_report import BUDGET_S, limits, mobilenet_body
from benchmarks._results import machine, write_section

MIN_RUNS = 5

# Injected before the page's scripts: as soon as edgetool.ready resolves, predict one 224x224x3 input, so the cold
# start is page open -> first prediction resolved, without the round trip of a driver call in between.
FIRST_PREDICTION = """
(() => {
  const inputs = (n) => { let s = 12345; const make = () => Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648; return (s / 1073741824) - 1; }); return [make(), make()]; };
  document.addEventListener('DOMContentLoaded', () => {
    const et = window.edgetool;
    window.__bench = et.ready.then(async (info) => {
      const ready = performance.now();
      const n = et.config.input.shape.slice(1).reduce((a, b) => a * b, 1);
      window.__inputs = inputs(n);
      const r = await et.predict(window.__inputs[0]);
      return { ready, first: performance.now(), firstMs: r.ms, backend: r.backend, info,
               timings: et.timings, runtime: et.runtime };
    });
  });
})();
"""
STEADY = """
async ({ runs, budgetMs, minRuns }) => {
  const et = window.edgetool, xs = window.__inputs, ms = [], wall = [];
  const end = performance.now() + budgetMs;
  for (let i = 0; i < runs && (i < minRuns || performance.now() < end); i++) {
    const t = performance.now();
    ms.push((await et.predict(xs[i % 2])).ms);
    wall.push(performance.now() - t);
  }
  return { ms, wall };
}
"""


# ---------------------------------------------------------------- MobileNetV2-224


def native_p50(tflite: Path, threads: int, runs: int) -> float:
    """LiteRT fp32 p50 (ms; set_tensor + invoke + get_tensor, batch 1) in a fresh process."""
    interp = load_interpreter(tflite, 1)
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    x = np.random.default_rng(0).uniform(-1, 1, inp["shape"]).astype(np.float32)
    stats, _ = measure_tflite_subprocess(tflite, {inp["index"]: x}, [out["index"]], threads, 5, runs, None)
    return stats.p50


def browser_run(browser, url: str, query: str, runs: int) -> dict:
    """One configuration in a fresh context: cold start, steady predict and inference-only latencies (ms)."""
    ctx = browser.new_context()
    try:
        ctx.add_init_script(FIRST_PREDICTION)
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url + query)
        first = page.evaluate("window.__bench")
        steady = page.evaluate(STEADY, {"runs": runs, "budgetMs": BUDGET_S * 1e3, "minRuns": MIN_RUNS})
        p50 = statistics.median(steady["ms"])
        n_inf = max(MIN_RUNS, min(runs, int(BUDGET_S * 1e3 / max(p50, 1e-3))))
        inference = page.evaluate("(n) => window.edgetool.timeInference(n, 1)", n_inf)["times"]
        if errors:
            raise RuntimeError(f"page errors with {query!r}: {errors}")
        return {
            "cold": first["first"],
            "ready": first["ready"],
            "first_ms": first["firstMs"],
            "backend": first["backend"],
            "runtime": first["runtime"],
            "timings": first["timings"],
            "engine": first["info"].get("engine"),
            "litert": first["info"].get("litert"),
            "bench": first["info"]["benchmark"],
            "predict": steady["ms"],
            "wall": steady["wall"],
            "inference": inference,
        }
    finally:
        ctx.close()


def mobilenet(runs: int, rounds: int) -> dict:
    """Build/serve the MobileNetV2 site; alternate native and browser measurements; return raw results."""
    from playwright.sync_api import sync_playwright

    _, tfjs, tflite = mobilenet_artefacts()
    cores = os.cpu_count() or 1
    configs = [  # label, query, threads (None: not a CPU-threaded runtime)
        (f"wasm, {cores} threads", f"?backend=wasm&threads={cores}", cores),
        ("wasm, 1 thread", "?backend=wasm&threads=1", 1),
        ("webgl (software)", "?backend=webgl", None),
        ("cpu (plain JS)", "?backend=cpu", None),
        ("auto (page's pick)", "", None),
    ]
    thread_counts = sorted({1, cores})
    native: dict[int, list[float]] = {t: [] for t in thread_counts}
    browser_res: dict[str, list[dict]] = {label: [] for label, _, _ in configs}
    with tempfile.TemporaryDirectory(prefix="bench-browser-mnv2-") as tmp:
        site = Path(tmp) / "site"
        build_site(DemoConfig(model=tfjs, output=site, title="MobileNetV2-224"))
        with served(site) as url:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
                version = browser.version
                for r in range(rounds):
                    for t in thread_counts:
                        native[t].append(native_p50(tflite, t, runs))
                    for label, query, _ in configs:
                        t0 = time.perf_counter()
                        res = browser_run(browser, url, query, runs)
                        browser_res[label].append(res)
                        print(
                            f"[round {r + 1}] {label}: cold {res['cold']:.0f} ms, predict p50 "
                            f"{statistics.median(res['predict']):.1f} ms, inference p50 "
                            f"{statistics.median(res['inference']):.1f} ms ({time.perf_counter() - t0:.0f} s)",
                            flush=True,
                        )
                browser.close()
            for t in thread_counts:
                native[t].append(native_p50(tflite, t, runs))
    return {
        "configs": configs,
        "native": native,
        "browser": browser_res,
        "chromium": version,
        "tfjs": pinned_versions()["@tensorflow/tfjs"],
        "model_mb": sum(p.stat().st_size for p in tfjs.iterdir()) / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="digits SavedModel dir with eval.npz (default: train one)")
    parser.add_argument("--runs", type=int, default=30, help="MobileNetV2 predictions per configuration")
    parser.add_argument("--rounds", type=int, default=2, help="MobileNetV2 rounds over all configurations")
    parser.add_argument("--digits-runs", type=int, default=50, help="digits predictions per backend")
    parser.add_argument("--skip-digits", action="store_true")
    parser.add_argument("--skip-mobilenet", action="store_true")
    args = parser.parse_args()
    parts = [
        "## Browser demo (`benchmarks/bench_browser.py`, headless Chromium)",
        f"Machine: {machine()}; no GPU (webgl is software-rendered by SwiftShader)",
    ]
    if not args.skip_mobilenet:
        parts.append(mobilenet_body(mobilenet(args.runs, args.rounds), args.runs, args.rounds))
        parts.append(limits())
    if not args.skip_digits:
        parts.append(digits(args.model, args.digits_runs))
    body = "\n\n".join(parts)
    print(body)
    write_section("browser", body)


if __name__ == "__main__":
    main()
