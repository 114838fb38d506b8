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
THREADED = {"threaded"}  # builds with a wasm thread pool (the others always run one thread)
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


def harness_run(browser, url: str, build: str, mode: str, threads: int | None, runs: int) -> dict:
    """One LiteRT.js configuration of the profiling page in a fresh context."""
    ctx = browser.new_context()
    try:
        page = ctx.new_page()
        query = f"?build={build}&model={mode}&runs={runs}" + (f"&threads={threads}" if threads else "")
        page.goto(f"{url}bench/index.html{query}")
        res = page.evaluate("window.__bench")
        if "error" in res:
            raise RuntimeError(f"{build} {mode} threads={threads}: {res['error']}")
        return res
    finally:
        ctx.close()


def page_run(browser, url: str, query: str, runs: int) -> dict:
    """The demo page (tfjs or its own LiteRT.js pick): bench_browser's cold start + steady predict + inference."""
    from benchmarks.bench_browser import browser_run

    return browser_run(browser, url, query, runs)


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


def measure(runs: int, rounds: int, builds: tuple[str, ...]) -> dict:
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
            browser.close()
        for (m, t), xs in native.items():
            xs.append(native_p50(tflites[m], t, runs))
    return {"plan": plan, "native": {k: statistics.median(v) for k, v in native.items()}, "res": res,
            "chromium": version, "cores": cores}


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
    return "\n\n".join([head, table(cols, rows), breakdown(data, best)])


def breakdown(data: dict, best: dict) -> str:
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
    args = parser.parse_args()
    builds = tuple(b for b in args.builds.split(",") if b)
    unknown = set(builds) - set(BUILDS)
    if unknown:
        sys.exit(f"--builds: unknown {', '.join(sorted(unknown))}; choose from {', '.join(BUILDS)}")
    data = measure(args.runs, args.rounds, builds)
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
