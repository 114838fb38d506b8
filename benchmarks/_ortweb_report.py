"""The Markdown of bench_ortweb.py: configuration table with paired ratios, the ≤ 1.0× target rows, the output check
and the CPU profiles / SIMD census of ORT Web's and LiteRT.js's hottest wasm functions."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

from benchmarks._browser_common import pct
from benchmarks._litertjs_report import profile_table
from benchmarks._results import table

GOAL_RATIO = 1.0  # edgetool's best page configuration p50 <= ORT Web's best p50, per mode
PACKAGE = Path(__file__).with_name("ortweb") / "package.json"


def _series(data: dict, label: str, kind: str) -> list[float]:
    """Per-round p50 (ms) of one configuration."""
    return [pct(r["predict"] if kind == "page" else r["total"], 50) for r in data["res"][label]]


def _p90(data: dict, label: str, kind: str) -> float:
    return statistics.median(pct(r["predict"] if kind == "page" else r["total"], 90) for r in data["res"][label])


def _start(kind: str, r: dict) -> float:
    return r["createMs"] if kind == "ort" else r["loadMs"] + r["compileMs"] if kind == "harness" else r["cold"]


def _round_best(data: dict, series: dict, mode: str, side: str, r: int) -> float:
    """The lowest p50 of one side ('ort' or 'edgetool') at ``mode`` in round ``r``."""
    return min(
        series[label][r] for label, kind, _, m, _ in data["plan"] if m == mode and (kind == "ort") == (side == "ort")
    )


def _scalar_share(top: list[tuple[int, float]], census: dict[int, dict[str, int]]) -> float:
    """Share of wasm samples in the hottest functions whose census found no SIMD arithmetic."""
    return sum(share for f, share in top if not census.get(f))


def report(data: dict, runs: int, rounds: int) -> str:
    """Markdown: the head, the table with target rows, the output check, the profile."""
    series = {label: _series(data, label, kind) for label, kind, *_ in data["plan"]}
    ort_of = {(m, t): label for label, kind, _, m, t in data["plan"] if kind == "ort"}
    rows, best = [], {}
    for label, kind, _, mode, t in data["plan"]:
        p50 = statistics.median(series[label])
        ref = series[ort_of[(mode, t)]]
        paired = statistics.median(a / b for a, b in zip(series[label], ref))
        start = statistics.median(_start(kind, r) for r in data["res"][label])
        rows.append(
            [
                label,
                f"{start:.0f} ms",
                f"{p50:.2f} ms",
                f"{_p90(data, label, kind):.2f} ms",
                "—" if kind == "ort" else f"{paired:.2f}×",
            ]
        )
        side = "ort" if kind == "ort" else "edgetool"
        if (side, mode) not in best or p50 < best[(side, mode)][1]:
            best[(side, mode)] = (label, p50)
    for mode in ("fp32", "int8"):
        (et, et_p50), (ort, ort_p50) = best[("edgetool", mode)], best[("ort", mode)]
        ratio = statistics.median(a / b for a, b in zip(series[et], series[ort]))
        fastest = statistics.median(
            _round_best(data, series, mode, "edgetool", r) / _round_best(data, series, mode, "ort", r)
            for r in range(len(series[et]))
        )
        verdict = "met" if ratio <= GOAL_RATIO else "not met"
        target = f"edgetool best page config ÷ ORT Web best ≤ {GOAL_RATIO:.1f}× ({mode})"
        rows.append(
            [
                f"**target: {target}: {verdict}**",
                "",
                f"{et_p50:.2f} / {ort_p50:.2f} ms",
                "",
                f"**{ratio:.2f}×** ({et} ÷ {ort}); each round's fastest of each side: {fastest:.2f}×",
            ]
        )
    version = json.loads(PACKAGE.read_text())["dependencies"]["onnxruntime-web"]
    load = ", ".join(f"{v:.1f}" for v in data["load"])
    cores = os.cpu_count() or 1
    state = (
        "a loaded machine: absolute numbers are indicative, the paired ratios are the result"
        if max(data["load"]) > cores / 2
        else "a quiet machine"
    )
    head = (
        f"Chromium {data['chromium']}, onnxruntime-web {version} (benchmarks/ortweb, `ort.wasm.min.mjs` + "
        f"`ort-wasm-simd-threaded.wasm`, executionProviders `['wasm']`, `numThreads` = threads), @litertjs/core "
        f"and tfjs from web_demo; one site served cross-origin isolated (`edgetool serve`). {runs} timed runs per "
        f"configuration after 2 warm-up runs, {rounds} round(s), configurations of equal mode and thread count "
        f"adjacent, order reversed every round, each a fresh browser context; p50/p90 are medians of the "
        f"per-round percentiles. Per prediction: LiteRT.js = the demo engine's runOne steps (`new Tensor`, "
        f"`model.run`, output copy), tfjs = `edgetool.predict` on the demo page, ORT Web = `new ort.Tensor` + "
        f"`session.run` + output copy. *÷ ORT Web* is the median over rounds of this row's p50 / ORT Web's p50 "
        f"at the same mode and threads in the same round; the target ratio pairs the best (lowest median p50) "
        f"configuration of each side the same way. Load average (1 min) at the start of each round and at the "
        f"end: {load} on {cores} cores — {state}."
    )
    cols = [
        "configuration",
        "start (ORT: session create; LiteRT.js: load + compile; tfjs: open → 1st prediction)",
        "p50",
        "p90",
        "÷ ORT Web (paired, same mode + threads)",
    ]
    check = ", ".join(f"{m} {v:.1e}" for m, v in data["check"].items())
    parts = [
        head,
        table(cols, rows),
        f"Output check: ORT Web's first output vs native onnxruntime on the same seeded input, max abs "
        f"difference: {check} (random weights: outputs are near-uniform around 1e-3).",
    ]
    ops = "; ".join(f"{m}: " + ", ".join(f"{k} ×{v}" for k, v in c.items()) for m, c in data["ops"].items())
    parts.append(f"Operators ORT runs after its graph optimizations (native onnxruntime, level *extended*): {ops}.")
    if data["hot"]:
        hot = "; ".join(
            f"{m}: " + ", ".join(f"#{f} {n} SIMD-prefix bytes in {size} B" for f, (n, size) in h.items())
            for m, h in data["hot"].items()
        )
        parts.append(
            f"ORT Web's three hottest wasm functions, any SIMD instruction (a count of 0xFD prefix bytes "
            f"in the body, an upper bound; 0 = purely scalar code): {hot}."
        )
    if data["profiles"]:
        scalar = ", ".join(
            f"{b} {m} {_scalar_share(top, census):.0%}" for (b, m), (_, top, (census, _)) in data["profiles"].items()
        )
        parts.append(
            f"Why (measured): share of wasm samples spent in hot functions that use none of the counted SIMD "
            f"instructions (float mul/add/FMA, int8 dot products), i.e. scalar kernels: {scalar}."
        )
        parts.append(
            "For the ORT Web rows of the profile below the calls are `session.run` (with the tensor "
            "creation and output copy) and the census reads `ort-wasm-simd-threaded.wasm`; the LiteRT.js "
            "rows are the `default` build's `model.run`.\n\n" + profile_table(data["profiles"])
        )
    return "\n\n".join(parts)
