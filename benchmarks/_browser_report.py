"""The MobileNetV2 part of bench_browser.py's 'browser' section: the per-backend table against native LiteRT, the
auto-pick breakdown, the goal's verdict, and what limits each backend."""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks._browser_common import pct
from benchmarks._results import table

GOAL_RATIO = 2.0  # best backend's p50 <= 2x native fp32 p50 at equal threads
BUDGET_S = 12.0  # per configuration and loop: slow backends (cpu) stop early, after at least bench_browser.MIN_RUNS


def _median_of(results: list[dict], key: str, q: float = 50) -> float:
    return statistics.median(pct(r[key], q) for r in results)


def mobilenet_body(res: dict, runs: int, rounds: int) -> str:
    """Markdown of the MobileNetV2 part: table, auto-pick, verdict and limits."""
    native = {t: statistics.median(v) for t, v in res["native"].items()}
    rows, ratios = [], {}
    for label, _, threads in res["configs"]:
        rs = res["browser"][label]
        cold = statistics.median(r["cold"] for r in rs)
        p50, p90, inf50 = _median_of(rs, "predict"), _median_of(rs, "predict", 90), _median_of(rs, "inference")
        eff_threads = threads
        if threads is None and rs[0]["backend"] == "wasm":
            eff_threads = rs[0]["runtime"]["wasmThreads"]
        if eff_threads in native:
            ratio = f"{p50 / native[eff_threads]:.2f}× / {inf50 / native[eff_threads]:.2f}× (vs {eff_threads} thr)"
            ratios[label] = (p50 / native[eff_threads], inf50 / native[eff_threads], eff_threads)
        else:
            ratio = f"{p50 / native[1]:.0f}× (vs 1 thr)"
        shown = label if not label.startswith("auto") else f"auto → {rs[0]['backend']}"
        threads_txt = rs[0]["runtime"]["wasmThreads"] if rs[0]["backend"] == "wasm" else "—"
        rows.append([shown, threads_txt, f"{cold:.0f} ms", f"{p50:.1f} ms", f"{p90:.1f} ms", f"{inf50:.1f} ms", ratio])
    auto = res["browser"][res["configs"][-1][0]][0]
    t = auto["timings"]
    bench = ", ".join(f"{k} {v:.1f} ms" for k, v in auto["bench"].items())
    native_txt = ", ".join(f"{t_} thread{'s' if t_ > 1 else ''} **{p:.1f} ms**" for t_, p in native.items())
    best = min(ratios.items(), key=lambda kv: kv[1][0]) if ratios else None
    rt = auto["runtime"]
    lines = [
        f"### MobileNetV2-224, batch 1 (random weights, TFJS graph model {res['model_mb']:.1f} MB fp32)",
        "",
        f"Chromium {res['chromium']}, tfjs {res['tfjs']}; `crossOriginIsolated` = {rt['crossOriginIsolated']}, "
        f"`navigator.hardwareConcurrency` = {rt['hardwareConcurrency']}. {runs} predictions per configuration "
        f"(fewer when a loop passes {BUDGET_S:.0f} s), {rounds} round(s), medians; each configuration is a fresh "
        "browser context (cold caches) opening `?backend=NAME&threads=N`; *auto* opens the bare URL (the page's "
        "default: its own backend pick, one wasm thread per two logical cores). Native: LiteRT fp32 .tflite of the "
        f"same SavedModel, set_tensor+invoke+get_tensor p50, fresh process, measured before, between and after the "
        f"browser rounds: "
        f"{native_txt}.",
        "",
        table(
            [
                "configuration",
                "wasm threads",
                "cold start (open → 1st prediction)",
                "predict p50",
                "predict p90",
                "inference-only p50",
                "÷ native fp32 p50 (predict / inference-only)",
            ],
            rows,
        ),
        "",
        "*predict* = `edgetool.predict(Float32Array)`: input tensor upload + `model.execute` + output readback; "
        "*inference-only* = `edgetool.timeInference`: input tensor already on the backend, execute + 4 kB readback "
        "(needed to synchronise). Cold start includes fetching the runtime and weights over loopback, the wasm "
        "compile, the backend micro-benchmark/warm-up and the first prediction.",
        "",
        f"Auto-pick cold start breakdown (ms since navigation): config {t.get('config', 0):.0f}, first backend "
        f"initialised + weights fetched {t.get('backendInit', 0):.0f}, model built {t.get('model', 0):.0f}, "
        f"micro-benchmark + warm-up done {t.get('warm', 0):.0f}, ready {t.get('ready', 0):.0f}; micro-benchmark: "
        f"{bench}.",
    ]
    wasm = {
        thr: _median_of(res["browser"][label], "inference")
        for label, _, thr in res["configs"]
        if label.startswith("wasm")
    }
    if len(wasm) > 1 and wasm[max(wasm)] > wasm[1]:
        lines += [
            "",
            f"Here wasm with {max(wasm)} threads was **slower** than with 1 ({wasm[max(wasm)]:.1f} vs "
            f"{wasm[1]:.1f} ms inference-only; native {max(wasm)} vs 1 threads: {native[max(wasm)]:.1f} vs "
            f"{native[1]:.1f} ms): the wasm thread pool synchronises every operator through shared memory, "
            "and the page's main thread spin-waits for its workers, so any other load on the cores (other "
            "processes, the browser's own threads) makes operators wait for a descheduled worker. That is why "
            "the page keeps tfjs's default of one wasm thread per two logical cores; `?threads=N` (or the "
            "page's threads menu) sets up to one per core.",
        ]
    if best:
        label, (r_pred, r_inf, thr) = best
        met = "met" if r_pred <= GOAL_RATIO else "not met"
        lines += [
            "",
            f"**Goal (best backend ≤ {GOAL_RATIO:.0f}× native fp32 p50 at equal threads): {met}** — "
            f"best is {label}: {r_pred:.2f}× native at {thr} thread(s) end to end, {r_inf:.2f}× "
            "inference-only.",
        ]
    return "\n".join(lines)


def native_simd() -> str:
    """Widest x86 vector extension of this CPU that XNNPACK uses natively (from /proc/cpuinfo)."""
    try:
        flags = set(
            next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
            .split(":", 1)[1]
            .split()
        )
    except (OSError, StopIteration):
        return "the host's native SIMD"
    if "avx512f" in flags:
        return "AVX-512 with FMA (512-bit: 4x the lanes of SIMD128)"
    if "avx2" in flags and "fma" in flags:
        return "AVX2 with FMA (256-bit: 2x the lanes of SIMD128)"
    return "SSE (128-bit)"


def limits() -> str:
    """What keeps each backend from native speed (MobileNetV2)."""
    return f"""What limits the browser (MobileNetV2):
- **wasm** runs the same XNNPACK kernels as LiteRT, but compiled to WebAssembly SIMD128 (128-bit lanes, no fused
  multiply-add; tfjs 4.22 ships no relaxed-SIMD build) where native LiteRT uses {native_simd()}, plus wasm bounds
  checks and one JS-to-wasm call per operator. Threads come from a pool of Web Workers sharing memory
  (SharedArrayBuffer), available only when the page is cross-origin isolated, which `edgetool serve` arranges
  (COOP `same-origin` + COEP `require-corp`); a host without those headers gets the single-threaded SIMD binary.
- **webgl** here is SwiftShader (CPU emulation of a GPU), an order of magnitude slower than wasm and seconds of shader
  compilation at start; the page skips benchmarking a software renderer. With a real GPU it can win, and the page's
  micro-benchmark then picks it.
- **cpu** is tfjs's plain-JavaScript reference backend; the page only benchmarks it when nothing else works.
- *predict* adds the 602 kB input upload (typed array → tensor) and the 4 kB readback to the inference time."""
