"""LiteRT.js builds x {fp32, int8} x {1, 2 threads} and tfjs wasm in headless Chromium, against native LiteRT.

MobileNetV2-224 (seeded random weights), fixed batch 1 (``edgetool convert --batch 1``, see _litertjs_models.py).
The demo site (``edge_tool.demo.site.build_site`` with ``--litert --tflite`` int8) is served cross-origin isolated by
``edge_tool.demo.serve.start_server``; a profiling page (benchmarks/litertjs_harness/) is added under ``bench/`` with every
@litertjs/core wasm build from web_demo/node_modules. Each configuration is a fresh browser context: LiteRT.js rows
time every step of the demo engine's runOne (slice, toInput, Tensor upload, model.run, toTypedArray, dequantize,
delete) and model.run alone; tfjs rows open the demo page with ``?backend=wasm&threads=N`` (fp32 graph model);
*page* rows open ``?engine=litert`` (the build the page itself picks). Native LiteRT (ai_edge_litert, same .tflite,
same thread count, fresh process) is timed right after each browser configuration, and each ratio is the median over
rounds of browser p50 / that native p50 (the load of a shared machine drifts); configurations alternate (the order
reverses every round). About 7 minutes with the defaults once the models are cached.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_litertjs.py [--runs 30] [--rounds 2] [--builds ...]
Writes the 'litertjs' section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from edge_tool.core.webdemo import web_demo_dir
from edge_tool.demo import litert_spec as litert_mod
from edge_tool.demo.config import DemoConfig
from edge_tool.demo.litert_site import _litert_model
from edge_tool.demo.site import CONFIG_NAME, build_site, write_service_worker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._browser_common import CHROMIUM, FLAGS, served
from benchmarks._browser_models import mobilenet_artefacts
from benchmarks._litertjs_models import b1_tflites
from benchmarks._litertjs_profile import cpu_profile, simd_census
from benchmarks._litertjs_report import report
from benchmarks._results import machine, write_section
from benchmarks.bench_browser import FIRST_PREDICTION, browser_run
from benchmarks.bench_browser import native_p50 as browser_native_p50

BUILDS = ("compat", "default", "threaded", "jspi")
THREADED = {"threaded"}
WASM = {
    "compat": "litert_wasm_compat_internal.wasm",
    "default": "litert_wasm_internal.wasm",
    "threaded": "litert_wasm_threaded_internal.wasm",
    "jspi": "litert_wasm_jspi_internal.wasm",
}  # builds with a wasm thread pool (the others always run one thread)
HARNESS = Path(__file__).with_name("litertjs_harness")


def add_harness(site: Path, tflites: dict[str, Path]) -> None:
    """site/bench/: the profiling page, LiteRT.js's ES modules, every wasm build, and the fp32/int8 .tflite."""
    nm = web_demo_dir() / "node_modules" / "@litertjs"
    bench = site / "bench"
    (bench / "litert").mkdir(parents=True)
    for f in HARNESS.iterdir():
        shutil.copyfile(f, bench / f.name)
    shutil.copyfile(nm / "core/dist/index.js", bench / "litert/core.js")
    shutil.copyfile(nm / "wasm-utils/dist/index.js", bench / "litert/wasm-utils.js")
    for f in (nm / "core/wasm").iterdir():
        shutil.copyfile(f, bench / "litert" / f.name)
    for mode, path in tflites.items():
        shutil.copyfile(path, bench / f"{mode}.tflite")


def engine_mode(engine: str | None) -> str:
    """The .tflite mode a page engine runs: LiteRT.js engines are int8 unless named fp32; tfjs runs the fp32 graph."""
    return "int8" if (engine or "").startswith("litert") and "fp32" not in engine else "fp32"


def engine_threads(run: dict) -> int:
    """wasm threads of a page run's engine: ``litert…-xN`` runs on N, the others on the page's LiteRT.js setting."""
    pooled = re.search(r"-x(\d+)$", run.get("engine") or "")
    return int(pooled.group(1)) if pooled else (run.get("litert") or {}).get("threads") or 1


def add_fp32_variant(site: Path, fp32: Path) -> None:
    """Give the site's LiteRT.js engine the fp32 .tflite too, as ``edgetool demo --litert`` does from a SavedModel
    (the site is built from the cached TFJS model + int8 .tflite to skip a second conversion)."""
    data = fp32.read_bytes()
    (site / "model" / litert_mod.FP32_NAME).write_bytes(data)
    config = json.loads((site / CONFIG_NAME).read_text())
    spec = litert_mod.tflite_spec(site / "model" / litert_mod.FP32_NAME, None)
    config["litert"]["variants"] = [_litert_model("litert-fp32", "LiteRT.js fp32", litert_mod.FP32_NAME, spec, data)]
    (site / CONFIG_NAME).write_text(json.dumps(config, indent=2) + "\n")
    write_service_worker(site)


def native_p50(tflite: Path, threads: int, runs: int) -> float:
    """ai_edge_litert p50 (ms; set_tensor + invoke + get_tensor, batch 1) in a fresh process."""
    return browser_native_p50(tflite, threads, runs)


def harness_run(
    browser, url: str, build: str, mode: str, threads: int | None, runs: int, profile: bool = False
) -> dict:
    """One LiteRT.js configuration of the profiling page in a fresh context (plus a CPU profile with ``profile``)."""
    ctx = browser.new_context()
    try:
        page = ctx.new_page()
        query = f"?build={build}&model={mode}&runs={runs}" + (f"&threads={threads}" if threads else "")
        page.goto(f"{url}bench/index.html{query}")
        res = page.evaluate("window.__bench")
        if "error" in res:
            raise RuntimeError(f"{build} {mode} threads={threads}: {res['error']}")
        if profile:
            res["profile"] = cpu_profile(ctx, page)
        return res
    finally:
        ctx.close()


def page_run(browser, url: str, query: str, runs: int) -> dict:
    """The demo page (tfjs or its own LiteRT.js pick): bench_browser's cold start + steady predict + inference."""
    return browser_run(browser, url, query, runs)


def cold_starts(browser, url: str, query: str) -> dict:
    """Open -> first prediction (ms) on a first visit, then again once the service worker has cached the site."""
    ctx = browser.new_context()
    try:
        ctx.add_init_script(FIRST_PREDICTION)
        out = {}
        for visit in ("first visit", "service-worker cache"):
            page = ctx.new_page()
            page.goto(url + query)
            res = page.evaluate("window.__bench")
            if visit == "service-worker cache" and not page.evaluate("navigator.serviceWorker.controller !== null"):
                raise RuntimeError("the second visit was not served by the service worker")
            out[visit] = {"first": res["first"], "engine": res["info"]["engine"], "litert": res["info"].get("litert")}
            page.evaluate(
                "navigator.serviceWorker.ready.then((r) => new Promise((ok) => { const w = r.active; "
                "if (w.state === 'activated') ok(); else w.addEventListener('statechange', () => "
                "w.state === 'activated' && ok()); }))"
            )
            page.close()
        return out
    finally:
        ctx.close()


def configs(builds: tuple[str, ...], cores: int) -> list[tuple]:
    """(label, kind, build-or-query, mode, threads) in the order of one round."""
    out = []
    for mode in ("fp32", "int8"):
        for build in builds:
            for t in sorted({1, cores}) if build in THREADED else [1]:
                out.append((f"LiteRT.js {build}, {mode}, {t} thr", "harness", build, mode, t))
    for t in sorted({1, cores}):
        out.append((f"tfjs wasm, fp32, {t} thr", "page", f"?backend=wasm&threads={t}", "fp32", t))
    out.append(("page, ?engine=litert (int8)", "page", "?engine=litert", "int8", None))
    out.append(("page, ?engine=litert-fp32", "page", "?engine=litert-fp32", "fp32", None))
    out.append(("page, auto-pick (bare URL)", "page", "", None, None))
    return out


def profiles(browser, url: str, builds: tuple[str, ...]) -> dict:
    """{(build, mode): (category shares, hottest wasm functions, their SIMD census)} for compat and default."""
    out = {}
    for build in [b for b in ("compat", "default") if b in builds]:
        wasm = web_demo_dir() / "node_modules/@litertjs/core/wasm" / WASM[build]
        for mode in ("fp32", "int8"):
            cats, top = harness_run(browser, url, build, mode, 1, 5, profile=True)["profile"]
            out[(build, mode)] = (cats, top, simd_census(wasm, [f for f, _ in top]))
    return out


def measure(runs: int, rounds: int, builds: tuple[str, ...], profile: bool) -> dict:
    """Build and serve the site; run every configuration per round (order reversed every other round), each followed by
    native LiteRT at its mode and thread count; return raw results."""
    from playwright.sync_api import sync_playwright

    _, tfjs, _ = mobilenet_artefacts()
    tflites = b1_tflites()
    cores = os.cpu_count() or 1
    plan = configs(builds, cores)
    native: dict[tuple[str, int], list[float]] = {}
    res: dict[str, list[dict]] = {c[0]: [] for c in plan}
    with tempfile.TemporaryDirectory(prefix="bench-litertjs-") as tmp:
        site = Path(tmp) / "site"
        build_site(DemoConfig(model=tfjs, output=site, title="MobileNetV2-224", litert=True, tflite=tflites["int8"]))
        add_fp32_variant(site, tflites["fp32"])
        add_harness(site, tflites)
        with served(site) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            version = browser.version
            for r in range(rounds):
                for label, kind, what, mode, t in plan if r % 2 == 0 else plan[::-1]:
                    one = (
                        harness_run(browser, url, what, mode, t, runs)
                        if kind == "harness"
                        else page_run(browser, url, what, runs)
                    )
                    # native right after, same .tflite and threads: the load on a shared machine drifts
                    m, thr = mode or engine_mode(one.get("engine")), t or engine_threads(one)
                    one["native"], one["mode"], one["threads"] = native_p50(tflites[m], thr, runs), m, thr
                    native.setdefault((m, thr), []).append(one["native"])
                    res[label].append(one)
                    key = "total" if kind == "harness" else "predict"
                    print(
                        f"[round {r + 1}] {label}: p50 {statistics.median(one[key]):.2f} ms, native "
                        f"{one['native']:.2f} ms",
                        flush=True,
                    )
            prof = profiles(browser, url, builds) if profile else {}
            cold = {q: [cold_starts(browser, url, q) for _ in range(rounds)] for q in ("", "?engine=litert")}
            browser.close()
    return {
        "plan": plan,
        "native": {k: statistics.median(v) for k, v in native.items()},
        "res": res,
        "chromium": version,
        "cores": cores,
        "profiles": prof,
        "cold": cold,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs per configuration and round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over all configurations (more: steadier)")
    parser.add_argument("--builds", default=",".join(BUILDS), help="comma list of LiteRT.js builds to measure")
    parser.add_argument("--no-profile", action="store_true", help="skip the CPU profile of model.run")
    args = parser.parse_args()
    builds = tuple(b for b in args.builds.split(",") if b)
    unknown = set(builds) - set(BUILDS)
    if unknown:
        sys.exit(f"--builds: unknown {', '.join(sorted(unknown))}; choose from {', '.join(BUILDS)}")
    data = measure(args.runs, args.rounds, builds, not args.no_profile)
    body = "\n\n".join(
        [
            "## LiteRT.js builds vs native (`benchmarks/bench_litertjs.py`, headless Chromium)",
            f"Machine: {machine()}. MobileNetV2-224, batch 1, random weights; fp32 and int8 (float32 I/O) .tflite from "
            "`edgetool convert --batch 1`.",
            report(data, args.runs, args.rounds),
        ]
    )
    print(body)
    write_section("litertjs", body)


if __name__ == "__main__":
    main()
