"""edgetool's best browser page configuration against onnxruntime-web's best (wasm SIMD + threads), headless Chromium.

MobileNetV2-224 (tf_keras, weights=None, seed 0: the SavedModel of _browser_models.py, shared with bench_litertjs.py
and bench_peer.py). edgetool side: the LiteRT.js builds (fp32 / int8 .tflite from ``edgetool convert --batch 1``,
float32 I/O) on bench_litertjs.py's profiling page, and the demo page's tfjs wasm backend (fp32), at 1 and 2 threads.
ORT side: bench_peer.py's ONNX models (tf2onnx opset 17 fp32; ``quantize_static`` QDQ per-channel U8S8 on its 64
calibration samples), run by onnxruntime-web (pinned in benchmarks/ortweb/package.json, installed there with
``npm ci`` on first use; never part of the demo) on a small page (benchmarks/ortweb_harness/) with the SIMD +
threads wasm build, ``executionProviders: ['wasm']``, ``numThreads`` 1 and 2. One site, served cross-origin isolated
by ``edge_tool.demo.serve``; each configuration a fresh browser context; configurations of equal mode and thread count sit
next to each other and the order reverses every round. Each timed call: input tensor + run + float32 output copy.
The ratio is the median over rounds of (edgetool's best configuration p50 / ORT Web's best p50) in that round.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_ortweb.py [--rounds 5] [--runs 40] [--builds default,threaded]
Writes the 'ortweb' section of benchmarks/RESULTS.md (about 4-5 minutes with the defaults once models are cached).
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from edge_tool.demo.config import DemoConfig
from edge_tool.demo.site import build_site

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._browser_common import CHROMIUM, FLAGS, pct, served
from benchmarks._browser_models import CACHE, INPUT, _cached, mobilenet_artefacts
from benchmarks._litertjs_models import b1_tflites
from benchmarks._litertjs_profile import _bodies, cpu_profile, simd_census
from benchmarks._ortweb_report import report
from benchmarks._results import machine, write_section
from benchmarks.bench_litertjs import THREADED, add_fp32_variant, add_harness, harness_run, page_run, profiles
from benchmarks.bench_peer import CAL_SAMPLES, ort_models

ORTWEB = Path(__file__).with_name("ortweb")
HARNESS = Path(__file__).with_name("ortweb_harness")
DIST = ORTWEB / "node_modules" / "onnxruntime-web" / "dist"
ORT_FILES = ("ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")
BUILDS = ("compat", "default", "threaded", "jspi")


def ortweb_dist() -> Path:
    """onnxruntime-web's dist/ directory, installed by ``npm ci`` from the pinned lock file when missing."""
    if not all((DIST / f).exists() for f in ORT_FILES):
        npm = shutil.which("npm")
        if npm is None:
            sys.exit("bench_ortweb: npm is needed to install onnxruntime-web into benchmarks/ortweb/node_modules")
        proc = subprocess.run(
            [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=ORTWEB, capture_output=True, text=True
        )
        if proc.returncode != 0:
            sys.exit(f"bench_ortweb: `npm ci` in {ORTWEB} failed (it needs the npm registry):\n{proc.stderr}")
    return DIST


def _build_onnx(saved: Path):
    def build(out: Path) -> None:
        out.mkdir()
        cal = out / "cal.npz"  # bench_peer.build's calibration set: 64 seeded uniform [-1, 1] inputs
        np.savez(cal, x=np.random.default_rng(0).uniform(-1, 1, (CAL_SAMPLES, *INPUT)).astype(np.float32))
        fp32, int8, *_ = ort_models(saved, cal, out / "work")
        fp32.rename(out / "fp32.onnx")
        int8.rename(out / "int8.onnx")

    return build


def onnx_models(cache: Path = CACHE) -> dict[str, Path]:
    """{'fp32': path, 'int8': path}: bench_peer.py's ONNX models of the cached SavedModel, built on first use."""
    saved, _, _ = mobilenet_artefacts(cache)
    root = _cached(cache / "onnx", _build_onnx(saved))
    return {mode: root / f"{mode}.onnx" for mode in ("fp32", "int8")}


def add_ortweb(site: Path, onnx: dict[str, Path]) -> None:
    """site/ortbench/: the ORT Web page, its runtime files (one wasm build) and the two .onnx models."""
    dist, dst = ortweb_dist(), site / "ortbench"
    (dst / "ort").mkdir(parents=True)
    for f in HARNESS.iterdir():
        shutil.copyfile(f, dst / f.name)
    for name in ORT_FILES:
        shutil.copyfile(dist / name, dst / "ort" / name)
    for mode, path in onnx.items():
        shutil.copyfile(path, dst / f"{mode}.onnx")


def ort_run(browser, url: str, mode: str, threads: int, runs: int, profile: bool = False) -> dict:
    """One ORT Web configuration in a fresh context (plus a CPU profile of session.run with ``profile``)."""
    ctx = browser.new_context()
    try:
        page = ctx.new_page()
        page.goto(f"{url}ortbench/index.html?model={mode}&threads={threads}&runs={runs}")
        res = page.evaluate("window.__bench")
        if "error" in res:
            raise RuntimeError(f"ORT Web {mode} threads={threads}: {res['error']}")
        if not res["crossOriginIsolated"]:
            raise RuntimeError("the ORT Web page is not cross-origin isolated: no wasm threads")
        if profile:
            res["profile"] = cpu_profile(ctx, page)
        return res
    finally:
        ctx.close()


def plan(builds: tuple[str, ...], cores: int) -> list[tuple]:
    """(label, kind, what, mode, threads) for one round; equal mode and threads next to each other."""
    out = []
    for mode in ("fp32", "int8"):
        for t in sorted({1, min(2, cores)}):
            out.append((f"ORT Web wasm (SIMD, threaded build), {mode}, {t} thr", "ort", None, mode, t))
            for build in builds:
                if t == 1 or build in THREADED:
                    out.append((f"LiteRT.js {build}, {mode}, {t} thr", "harness", build, mode, t))
            if mode == "fp32":
                out.append((f"tfjs wasm (demo page), fp32, {t} thr", "page", f"?backend=wasm&threads={t}", mode, t))
    return out


def p50_of(kind: str, res: dict) -> float:
    """The per-prediction p50 (ms) of one result: LiteRT.js engine step, tfjs predict, ORT Web tensor+run+copy."""
    return pct(res["predict"] if kind == "page" else res["total"], 50)


def output_check(onnx: dict[str, Path], res: dict[str, list[dict]], steps: list[tuple]) -> dict[str, float]:
    """Max |browser - native onnxruntime| of the first output (same seeded input) for each ORT Web mode."""
    import onnxruntime as ort

    s, xs = 12345, []
    for _ in range(int(np.prod(INPUT))):
        s = (s * 1103515245 + 12345) % 2147483648
        xs.append(s / 1073741824 - 1)
    x = np.asarray(xs, np.float32).reshape(1, *INPUT)
    out = {}
    for label, kind, _, mode, _ in steps:
        if kind == "ort" and mode not in out:
            sess = ort.InferenceSession(str(onnx[mode]), providers=["CPUExecutionProvider"])
            ref = sess.run(None, {sess.get_inputs()[0].name: x})[0][0]
            out[mode] = float(np.abs(np.asarray(res[label][0]["output0"], np.float32) - ref).max())
    return out


def simd_any(wasm: Path, indices: list[int]) -> dict[int, tuple[int, int]]:
    """{function index: (0xFD-prefixed (SIMD) instruction bytes, an upper bound; body size in bytes)}."""
    bodies = _bodies(wasm)
    return {i: (bodies[i].count(0xFD), len(bodies[i])) for i in indices if i in bodies}


def optimized_ops(onnx: dict[str, Path]) -> dict[str, dict[str, int]]:
    """Operator counts of each model after ORT's graph optimizations (native onnxruntime, level 'extended': the
    QDQ fusions the wasm EP also applies, without the x86-only NCHWc layout pass)."""
    import onnx as onnx_lib
    import onnxruntime as ort

    out = {}
    with tempfile.TemporaryDirectory(prefix="ortweb-opt-") as tmp:
        for mode, path in onnx.items():
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
            so.optimized_model_filepath = str(Path(tmp) / f"{mode}.onnx")
            ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
            graph = onnx_lib.load(so.optimized_model_filepath).graph
            out[mode] = dict(collections.Counter(n.op_type for n in graph.node).most_common())
    return out


def measure(runs: int, rounds: int, builds: tuple[str, ...], profile: bool) -> dict:
    """Build and serve one site with all three runtimes; run every configuration per round; return raw results."""
    from playwright.sync_api import sync_playwright

    _, tfjs, _ = mobilenet_artefacts()
    tflites, onnx = b1_tflites(), onnx_models()
    steps = plan(builds, os.cpu_count() or 1)
    res: dict[str, list[dict]] = {c[0]: [] for c in steps}
    load = []
    with tempfile.TemporaryDirectory(prefix="bench-ortweb-") as tmp:
        site = Path(tmp) / "site"
        build_site(DemoConfig(model=tfjs, output=site, title="MobileNetV2-224", litert=True, tflite=tflites["int8"]))
        add_fp32_variant(site, tflites["fp32"])
        add_harness(site, tflites)
        add_ortweb(site, onnx)
        with served(site) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            for r in range(rounds):
                load.append(os.getloadavg()[0])
                for label, kind, what, mode, t in steps if r % 2 == 0 else steps[::-1]:
                    one = (
                        ort_run(browser, url, mode, t, runs)
                        if kind == "ort"
                        else harness_run(browser, url, what, mode, t, runs)
                        if kind == "harness"
                        else page_run(browser, url, what, runs)
                    )
                    res[label].append(one)
                    print(f"[round {r + 1}] {label}: p50 {p50_of(kind, one):.2f} ms", flush=True)
            prof, hot = {}, {}
            if profile:
                for mode in ("fp32", "int8"):
                    cats, top = ort_run(browser, url, mode, 1, 5, profile=True)["profile"]
                    census = simd_census(ortweb_dist() / ORT_FILES[2], [f for f, _ in top])
                    prof[("ORT Web", mode)] = (cats, top, census)
                    hot[mode] = simd_any(ortweb_dist() / ORT_FILES[2], [f for f, _ in top])
                prof.update(profiles(browser, url, ("default",)))
            version = browser.version
            browser.close()
    load.append(os.getloadavg()[0])
    return {
        "plan": steps,
        "res": res,
        "chromium": version,
        "profiles": prof,
        "hot": hot,
        "load": load,
        "ops": optimized_ops(onnx),
        "check": output_check(onnx, res, steps),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="timed runs per configuration and round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds over all configurations (more: steadier)")
    parser.add_argument("--builds", default="default,threaded", help="LiteRT.js builds on edgetool's side")
    parser.add_argument("--no-profile", action="store_true", help="skip the CPU profiles and instruction census")
    args = parser.parse_args()
    builds = tuple(b for b in args.builds.split(",") if b)
    if not builds or set(builds) - set(BUILDS) or args.runs < 1 or args.rounds < 1:
        sys.exit(f"--builds: a comma list from {', '.join(BUILDS)}; --runs and --rounds: at least 1")

    data = measure(args.runs, args.rounds, builds, not args.no_profile)
    body = "\n\n".join(
        [
            "## edgetool's browser page vs onnxruntime-web (`benchmarks/bench_ortweb.py`, headless Chromium)",
            f"Machine: {machine()}. MobileNetV2-224, batch 1, random weights (seed 0).",
            report(data, args.runs, args.rounds),
        ]
    )
    print(body)
    write_section("ortweb", body)


if __name__ == "__main__":
    main()
