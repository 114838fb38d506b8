"""LiteRT.js builds x {fp32, int8} x {1, 2 threads} and tfjs wasm in headless Chromium, against native LiteRT.

MobileNetV2-224 (seeded random weights), fixed batch 1 (``edgetool convert --batch 1``, see _litertjs_models.py).
The demo site (``edge_tool.demo.site.build_site`` with ``--litert --tflite`` int8) is served cross-origin isolated by
``edge_tool.serve.start_server``; a profiling page (benchmarks/litertjs_harness/) is added under ``bench/`` with every
@litertjs/core wasm build from web_demo/node_modules. Each configuration is a fresh browser context: LiteRT.js rows
time every step of the demo engine's runOne (slice, toInput, Tensor upload, model.run, toTypedArray, dequantize,
delete) and model.run alone; tfjs rows open the demo page with ``?backend=wasm&threads=N`` (fp32 graph model);
*page* rows open ``?engine=litert`` (the build the page itself picks). Native LiteRT (ai_edge_litert, same .tflite,
same thread count, fresh process) is timed before, between and after the browser rounds; configurations alternate
(the order reverses every round). About 4 minutes with the defaults once the models are cached.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_litertjs.py [--runs 30] [--rounds 2] [--builds ...]
Writes the 'litertjs' section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._browser_common import CHROMIUM, FLAGS, pct, served  # noqa: E402
from benchmarks._results import machine, table, write_section  # noqa: E402

GOAL_RATIO = 2.0
BUILDS = ("compat", "default", "threaded", "jspi")
THREADED = {"threaded"}
WASM = {"compat": "litert_wasm_compat_internal.wasm", "default": "litert_wasm_internal.wasm",
        "threaded": "litert_wasm_threaded_internal.wasm", "jspi": "litert_wasm_jspi_internal.wasm"}  # builds with a wasm thread pool (the others always run one thread)
HARNESS = Path(__file__).with_name("litertjs_harness")
STEPS = ("slice", "toInput", "tensor", "run", "read", "fromOutput", "delete")


def add_harness(site: Path, tflites: dict[str, Path]) -> None:
    """site/bench/: the profiling page, LiteRT.js's ES modules, every wasm build, and the fp32/int8 .tflite."""
    from edge_tool.demo.vendor import web_demo_dir

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


def native_p50(tflite: Path, threads: int, runs: int) -> float:
    """ai_edge_litert p50 (ms; set_tensor + invoke + get_tensor, batch 1) in a fresh process."""
    from benchmarks.bench_browser import native_p50 as measure

    return measure(tflite, threads, runs)


def harness_run(browser, url: str, build: str, mode: str, threads: int | None, runs: int,
                profile: bool = False) -> dict:
    """One LiteRT.js configuration of the profiling page in a fresh context (plus a CPU profile with ``profile``)."""
    from benchmarks._litertjs_profile import cpu_profile

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
    from benchmarks.bench_browser import browser_run

    return browser_run(browser, url, query, runs)


def cold_starts(browser, url: str, query: str) -> dict:
    """Open -> first prediction (ms) on a first visit, then again once the service worker has cached the site."""
    from benchmarks.bench_browser import FIRST_PREDICTION

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
            page.evaluate("navigator.serviceWorker.ready.then((r) => new Promise((ok) => { const w = r.active; "
                          "if (w.state === 'activated') ok(); else w.addEventListener('statechange', () => "
                          "w.state === 'activated' && ok()); }))")
            page.close()
        return out
    finally:
        ctx.close()


def configs(builds: tuple[str, ...], cores: int) -> list[tuple]:
    """(label, kind, build-or-query, mode, threads) in the order of one round."""
    out = []
    for mode in ("fp32", "int8"):
        for build in builds:
            for t in (sorted({1, cores}) if build in THREADED else [1]):
                out.append((f"LiteRT.js {build}, {mode}, {t} thr", "harness", build, mode, t))
    for t in sorted({1, cores}):
        out.append((f"tfjs wasm, fp32, {t} thr", "page", f"?backend=wasm&threads={t}", "fp32", t))
    out.append(("page, ?engine=litert (int8)", "page", "?engine=litert", "int8", None))
    return out


def profiles(browser, url: str, builds: tuple[str, ...]) -> dict:
    """{(build, mode): (category shares, hottest wasm functions, their SIMD census)} for compat and default."""
    from benchmarks._litertjs_profile import simd_census
    from edge_tool.demo.vendor import web_demo_dir

    out = {}
    for build in [b for b in ("compat", "default") if b in builds]:
        wasm = web_demo_dir() / "node_modules/@litertjs/core/wasm" / WASM[build]
        for mode in ("fp32", "int8"):
            cats, top = harness_run(browser, url, build, mode, 1, 5, profile=True)["profile"]
            out[(build, mode)] = (cats, top, simd_census(wasm, [f for f, _ in top]))
    return out


def measure(runs: int, rounds: int, builds: tuple[str, ...], profile: bool) -> dict:
    """Build and serve the site; alternate native and browser rounds; return raw results."""
    import os

    from playwright.sync_api import sync_playwright

    from benchmarks._browser_models import mobilenet_artefacts
    from benchmarks._litertjs_models import b1_tflites
    from edge_tool.demo.site import DemoConfig, build_site

    _, tfjs, _ = mobilenet_artefacts()
    tflites = b1_tflites()
    cores = os.cpu_count() or 1
    plan = configs(builds, cores)
    native = {(m, t): [] for m in tflites for t in sorted({1, cores})}
    res: dict[str, list[dict]] = {c[0]: [] for c in plan}
    with tempfile.TemporaryDirectory(prefix="bench-litertjs-") as tmp:
        site = Path(tmp) / "site"
        build_site(DemoConfig(model=tfjs, output=site, title="MobileNetV2-224", litert=True, tflite=tflites["int8"]))
        add_harness(site, tflites)
        with served(site) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            version = browser.version
            for r in range(rounds):
                for (m, t), xs in native.items():
                    xs.append(native_p50(tflites[m], t, runs))
                for label, kind, what, mode, t in (plan if r % 2 == 0 else plan[::-1]):
                    one = (harness_run(browser, url, what, mode, t, runs) if kind == "harness"
                           else page_run(browser, url, what, runs))
                    res[label].append(one)
                    key = "total" if kind == "harness" else "predict"
                    print(f"[round {r + 1}] {label}: p50 {statistics.median(one[key]):.2f} ms", flush=True)
            prof = profiles(browser, url, builds) if profile else {}
            cold = {q: [cold_starts(browser, url, q) for _ in range(rounds)] for q in ("", "?engine=litert")}
            browser.close()
        for (m, t), xs in native.items():
            xs.append(native_p50(tflites[m], t, runs))
    return {"plan": plan, "native": {k: statistics.median(v) for k, v in native.items()}, "res": res,
            "chromium": version, "cores": cores, "profiles": prof, "cold": cold}


def _med(rs: list[dict], key: str, q: float = 50) -> float:
    return statistics.median(pct(r[key], q) for r in rs)


def report(data: dict, runs: int, rounds: int) -> str:
    """Markdown: the configuration table, the target verdict per mode, and the step breakdown of the best rows."""
    native, rows, best = data["native"], [], {}
    for label, kind, _, mode, t in data["plan"]:
        rs = data["res"][label]
        if kind == "harness":
            p50, p90, run = _med(rs, "total"), _med(rs, "total", 90), _med(rs, "runOnly")
            start = statistics.median(r["loadMs"] + r["compileMs"] for r in rs)
            thr = t
        else:
            p50, p90, run = _med(rs, "predict"), _med(rs, "predict", 90), _med(rs, "inference")
            start = statistics.median(r["cold"] for r in rs)
            thr = t or 1  # the page's LiteRT.js engine: its build's default thread count is reported in the docs
        ratio = p50 / native[(mode, thr)]
        if kind == "harness" or label.startswith("tfjs"):
            best[mode] = min(best.get(mode, (label, ratio, p50)), (label, ratio, p50), key=lambda x: x[1])
        rows.append([label, f"{start:.0f} ms", f"{p50:.2f} ms", f"{p90:.2f} ms", f"{run:.2f} ms",
                     f"{native[(mode, thr)]:.2f} ms", f"**{ratio:.2f}×**"])
    for mode, (label, ratio, p50) in best.items():
        verdict = "met" if ratio <= GOAL_RATIO else "not met"
        rows.append([f"target ≤ {GOAL_RATIO:.0f}× native ({mode}): {verdict}", "", f"best {p50:.2f} ms", "", "",
                     "", f"{ratio:.2f}× ({label})"])
    native_txt = ", ".join(f"{m} {t} thr {v:.2f} ms" for (m, t), v in native.items())
    head = (f"Chromium {data['chromium']}, @litertjs/core builds from web_demo/node_modules; cross-origin isolated "
            f"(`edgetool serve`), {data['cores']} cores. {runs} runs per configuration after 2 warm-up runs, "
            f"{rounds} round(s) alternating (order reversed every round), medians of the per-round percentiles. "
            f"Native LiteRT (ai_edge_litert, same .tflite, same thread count, fresh process, before/between/after "
            f"the browser rounds): {native_txt}.")
    cols = ["configuration", "load + compile (tfjs/page: open → 1st prediction)", "p50 (engine step / predict)",
            "p90", "model.run / inference-only p50", "native p50 (same mode, threads)", "÷ native"]
    parts = [head, table(cols, rows), cold_table(data["cold"]), breakdown(data)]
    if data["profiles"]:
        parts.append(profile_table(data["profiles"]))
    return "\n\n".join(parts)


def cold_table(cold: dict) -> str:
    """Open -> first prediction on a first visit and from the service-worker cache (medians over rounds)."""
    rows = []
    for query, runs in cold.items():
        info = runs[0]["service-worker cache"]
        what = info["engine"] + (f" ({info['litert']['build']} build)" if info["engine"] == "litert" else "")
        rows.append([f"`{query or '(bare URL)'}` → {what}",
                     *(f"{statistics.median(r[v]['first'] for r in runs):.0f} ms"
                       for v in ("first visit", "service-worker cache"))])
    return ("Cold start of the demo page, open → first prediction resolved (a fresh browser context; the second "
            "visit is served by the service worker, the tfjs backend pick remembered):\n\n"
            + table(["page", "first visit (loopback network)", "from the service-worker cache"], rows))


def profile_table(profiles: dict) -> str:
    """The CPU-profile split of model.run and the SIMD instructions of its hottest wasm functions."""
    rows, dots = [], {}
    for (build, mode), (cats, top, (census, dot)) in profiles.items():
        dots[build] = dot
        hot = "; ".join(f"#{f} {share:.0%}: " + (", ".join(f"{op} ×{n}" for op, n in census.get(f, {}).items()) or "—")
                        for f, share in top)
        rows.append([f"{build}, {mode}", f"{cats.get('wasm', 0):.1%}", f"{cats.get('JavaScript', 0):.1%}",
                     f"{1 - cats.get('wasm', 0) - cats.get('JavaScript', 0):.1%}", hot])
    dot_txt = ", ".join(f"{b} {n}" for b, n in dots.items())
    return (f"Functions using the relaxed int8 dot product in each build's .wasm: {dot_txt}.\n\n"
            "CPU profile of 40 `model.run` calls (1 thread, V8 sampling profiler every 100 µs), and the SIMD "
            "instructions in the three hottest wasm functions (share of wasm samples; counted in the build's .wasm "
            "code section):\n\n"
            + table(["build, model", "wasm", "JavaScript", "GC / idle / other", "hottest wasm functions"], rows))


def breakdown(data: dict) -> str:
    """Median ms of each step of the engine's runOne for every LiteRT.js configuration."""
    rows = []
    for label, kind, _, mode, t in data["plan"]:
        if kind != "harness":
            continue
        rs = data["res"][label]
        steps = [statistics.median(statistics.median(r["steps"][s]) for r in rs) for s in STEPS]
        js = sum(steps) - steps[STEPS.index("run")]
        rows.append([label, *(f"{v:.2f}" for v in steps), f"{js:.2f}",
                     f"{statistics.median(r['firstMs'] for r in rs):.0f}"])
    return ("Per step of the page's LiteRT.js engine (`engines/litert.js` runOne), median ms: *slice* copies the "
            "sample out of the batch, *toInput* converts/quantizes it (a no-op for float32 I/O), *tensor* is "
            "`new Tensor` (copy into wasm memory), *run* is `model.run`, *read* `toTypedArray`, *fromOutput* the "
            "float32 copy/dequantization, *delete* frees the tensors; *JS* = everything but run; *first* = the first "
            "run after compile.\n\n"
            + table(["configuration", *STEPS, "JS (all but run)", "first run"], rows))


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
    body = "\n\n".join([
        "## LiteRT.js builds vs native (`benchmarks/bench_litertjs.py`, headless Chromium)",
        f"Machine: {machine()}. MobileNetV2-224, batch 1, random weights; fp32 and int8 (float32 I/O) .tflite from "
        "`edgetool convert --batch 1`.",
        report(data, args.runs, args.rounds),
    ])
    print(body)
    write_section("litertjs", body)


if __name__ == "__main__":
    main()
