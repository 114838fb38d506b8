"""The Markdown of bench_litertjs.py: configuration table with the target verdicts, cold starts, the per-step
breakdown of the page's LiteRT.js engine and the CPU profile of model.run."""

from __future__ import annotations

import statistics

from benchmarks._browser_common import pct
from benchmarks._results import table

GOAL_RATIO = 2.0  # best browser p50 <= 2x native LiteRT p50 at the same mode and thread count
STEPS = ("slice", "toInput", "tensor", "run", "read", "fromOutput", "delete")


def _med(rs: list[dict], key: str, q: float = 50) -> float:
    return statistics.median(pct(r[key], q) for r in rs)


def report(data: dict, runs: int, rounds: int) -> str:
    """Markdown: the configuration table with the target verdicts, cold starts, the step breakdown, the profile."""
    native, rows, best, auto = data["native"], [], {}, None
    for label, kind, _, _, _ in data["plan"]:
        rs = data["res"][label]
        if kind == "harness":
            p50, p90, run = _med(rs, "total"), _med(rs, "total", 90), _med(rs, "runOnly")
            start = statistics.median(r["loadMs"] + r["compileMs"] for r in rs)
            key = "total"
        else:
            p50, p90, run = _med(rs, "predict"), _med(rs, "predict", 90), _med(rs, "inference")
            start = statistics.median(r["cold"] for r in rs)
            key = "predict"
            if not label.startswith(("tfjs", "page, ?")):  # the auto-pick: what it chose (first round)
                label = f"{label} → {rs[0]['engine']}" + (f" ({rs[0]['litert']['build']})" if rs[0]["litert"] else "")
                auto = (label, p50, run)
        mode, thr = rs[0]["mode"], rs[0]["threads"]
        ratio = statistics.median(pct(r[key], 50) / r["native"] for r in rs)
        nat = statistics.median(r["native"] for r in rs)
        if kind == "harness" or label.startswith("tfjs"):
            best[mode] = min(best.get(mode, (label, ratio, p50)), (label, ratio, p50), key=lambda x: x[1])
        rows.append(
            [
                label,
                f"{start:.0f} ms",
                f"{p50:.2f} ms",
                f"{p90:.2f} ms",
                f"{run:.2f} ms",
                f"{nat:.2f} ms ({mode}, {thr} thr)",
                f"**{ratio:.2f}×**",
            ]
        )
    for mode, (label, ratio, p50) in best.items():
        verdict = "met" if ratio <= GOAL_RATIO else "not met"
        rows.append(
            [
                f"target ≤ {GOAL_RATIO:.0f}× native ({mode}): {verdict}",
                "",
                f"best {p50:.2f} ms",
                "",
                "",
                "",
                f"{ratio:.2f}× ({label})",
            ]
        )
    if auto:
        # like with like: a harness row's p50 is one engine step (runOne); the page's is timeInference (the same
        # runOne of its engine), while its predict also draws the input and the results on the page
        fastest = min((r for r in rows if r[0].startswith(("LiteRT.js", "tfjs"))), key=lambda r: float(r[2].split()[0]))
        base = float(fastest[2].split()[0])
        gap, ui_gap = auto[2] / base - 1, auto[1] / base - 1
        rows.append(
            [
                f"auto-pick within 10 % of the fastest measured (engine step): {'met' if gap <= 0.10 else 'not met'}",
                "",
                f"{auto[2]:.2f} ms (predict {auto[1]:.2f} ms)",
                "",
                "",
                "",
                f"{gap:+.0%} vs {fastest[0]} (predict, with the page's drawing: {ui_gap:+.0%})",
            ]
        )
    native_txt = ", ".join(f"{m} {t} thr {v:.2f} ms" for (m, t), v in sorted(native.items()))
    head = (
        f"Chromium {data['chromium']}, @litertjs/core builds from web_demo/node_modules; cross-origin isolated "
        f"(`edgetool serve`), {data['cores']} cores. {runs} runs per configuration after 2 warm-up runs, "
        f"{rounds} round(s) alternating (order reversed every round), medians of the per-round percentiles. "
        f"Native LiteRT (ai_edge_litert, same .tflite, same thread count, fresh process) is timed right after "
        f"each browser configuration; ÷ native is the median over rounds of browser p50 / that native p50 "
        f"(medians of all native runs: {native_txt})."
    )
    cols = [
        "configuration",
        "load + compile (tfjs/page: open → 1st prediction)",
        "p50 (engine step / predict)",
        "p90",
        "model.run / inference-only p50",
        "native p50 (paired)",
        "÷ native",
    ]
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
        rows.append(
            [
                f"`{query or '(bare URL)'}` → {what}",
                *(
                    f"{statistics.median(r[v]['first'] for r in runs):.0f} ms"
                    for v in ("first visit", "service-worker cache")
                ),
            ]
        )
    return (
        "Cold start of the demo page, open → first prediction resolved (a fresh browser context; the second "
        "visit is served by the service worker, the tfjs backend pick remembered):\n\n"
        + table(["page", "first visit (loopback network)", "from the service-worker cache"], rows)
    )


def profile_table(profiles: dict) -> str:
    """The CPU-profile split of model.run and the SIMD instructions of its hottest wasm functions."""
    rows, dots = [], {}
    for (build, mode), (cats, top, (census, dot)) in profiles.items():
        dots[build] = dot
        hot = "; ".join(
            f"#{f} {share:.0%}: " + (", ".join(f"{op} ×{n}" for op, n in census.get(f, {}).items()) or "—")
            for f, share in top
        )
        rows.append(
            [
                f"{build}, {mode}",
                f"{cats.get('wasm', 0):.1%}",
                f"{cats.get('JavaScript', 0):.1%}",
                f"{1 - cats.get('wasm', 0) - cats.get('JavaScript', 0):.1%}",
                hot,
            ]
        )
    dot_txt = ", ".join(f"{b} {n}" for b, n in dots.items())
    return (
        f"Functions using the relaxed int8 dot product in each build's .wasm: {dot_txt}.\n\n"
        "CPU profile of 40 `model.run` calls (1 thread, V8 sampling profiler every 100 µs), and the SIMD "
        "instructions in the three hottest wasm functions (share of wasm samples; counted in the build's .wasm "
        "code section):\n\n"
        + table(["build, model", "wasm", "JavaScript", "GC / idle / other", "hottest wasm functions"], rows)
    )


def breakdown(data: dict) -> str:
    """Median ms of each step of the engine's runOne for every LiteRT.js configuration."""
    rows = []
    for label, kind, _, _mode, _t in data["plan"]:
        if kind != "harness":
            continue
        rs = data["res"][label]
        steps = [statistics.median(statistics.median(r["steps"][s]) for r in rs) for s in STEPS]
        js = sum(steps) - steps[STEPS.index("run")]
        rows.append(
            [label, *(f"{v:.2f}" for v in steps), f"{js:.2f}", f"{statistics.median(r['firstMs'] for r in rs):.0f}"]
        )
    return (
        "Per step of the page's LiteRT.js engine (`engines/litert.js` runOne), median ms: *slice* views the "
        "sample out of the batch, *toInput* converts/quantizes it (a no-op for float32 I/O), *tensor* is "
        "`new Tensor` (copy into wasm memory), *run* is `model.run`, *read* `toTypedArray`, *fromOutput* the "
        "float32 copy/dequantization, *delete* frees the tensors; *JS* = everything but run; *first* = the first "
        "run after compile.\n\n" + table(["configuration", *STEPS, "JS (all but run)", "first run"], rows)
    )
