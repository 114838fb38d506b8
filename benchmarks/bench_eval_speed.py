"""`edgetool eval` against a plain script doing the same accuracy work, wall time including process start.

Workload (issue 14, item 1): MobileNetV2-224 (tf_keras.applications, weights=None, seed 0) fp32 + int8 .tflite
against its SavedModel on N seeded random uint8 images (default 1,000; cast to float32 per batch). The models
are the ones bench_eval_scale.py builds and caches under benchmarks/.cache/.

- plain: a fresh Python process that imports TensorFlow, runs the SavedModel at batch 64, then each .tflite with
  ai_edge_litert at batch 64 and every core, and computes top-1 agreement and max abs error;
- eval: ``python -m edge_tool eval FP32 INT8 -r SM -d DATA --json …`` with its defaults (which also measure
  latency: 100 timed batch-1 calls per model, each .tflite in a fresh process, plus the reference's) and, as a
  second row, with ``--runs 10``.

Runs alternate (plain, eval, eval --runs 10, plain, …); medians are reported, with the ratio eval / plain, in the
``eval-speed`` section of benchmarks/RESULTS.md. The agreement figures of both sides are printed side by side.

Usage: .venv/bin/python benchmarks/bench_eval_speed.py [--samples 1000] [--repeats 3] [--no-record]
       [--code-dir DIR]  (run eval from another checkout, e.g. an older one, as an extra "before" row)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import load_line, machine, simd_flags, table, write_section  # noqa: E402
from bench_eval_scale import CACHE, prepare_models, write_data  # noqa: E402

PLAIN = r"""
import os, sys, json, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
cpu = {"Python start": time.process_time()}
import numpy as np
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter

cpu["imports"] = time.process_time() - sum(cpu.values())
sm, data, *tflites = sys.argv[1:]
B = 64
with np.load(data) as z:
    x = z["x"]
fn = tf.saved_model.load(sm).signatures["serving_default"]
name = list(fn.structured_input_signature[1])[0]
ref = np.concatenate([list(fn(**{name: tf.constant(x[i:i + B].astype(np.float32))}).values())[0].numpy()
                      for i in range(0, len(x), B)]).astype(np.float64)
cpu["reference (load + pass)"] = time.process_time() - sum(cpu.values())
res = {}
for path in tflites:
    it = Interpreter(model_path=path, num_threads=os.cpu_count())
    i_d, o_d = it.get_input_details()[0], it.get_output_details()[0]
    outs = []
    for i in range(0, len(x), B):
        xb = x[i:i + B].astype(np.float32)
        if i_d["dtype"] != np.float32:
            s, z = i_d["quantization"]
            xb = np.clip(np.round(xb / s + z), -128, 127).astype(i_d["dtype"])
        if i == 0 or len(xb) != B:
            it.resize_tensor_input(i_d["index"], list(xb.shape))
            it.allocate_tensors()
        it.set_tensor(i_d["index"], xb)
        it.invoke()
        y = it.get_tensor(o_d["index"]).astype(np.float64)
        if o_d["dtype"] != np.float32:
            s, z = o_d["quantization"]
            y = (y - z) * s
        outs.append(y)
    out = np.concatenate(outs)
    res[os.path.basename(path)] = {"agreement": float(np.mean(out.argmax(1) == ref.argmax(1))),
                                   "max_abs_error": float(np.abs(out - ref).max())}
    cpu[os.path.basename(path)] = time.process_time() - sum(cpu.values())
res["_cpu"] = cpu
print(json.dumps(res))
"""


def timed(cmd: list[str], env: dict) -> tuple[float, float, str, str]:
    """Wall seconds of a subprocess (process start included), CPU seconds of it and its waited-for children
    (user + system), and its stdout; exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=CACHE, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} … exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout, proc.stderr


def main() -> None:
    """Prepare (cached), alternate the runs, print and record medians."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--code-dir", type=Path, help="also time eval from this checkout (a 'before' row)")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--skip-runs10", action="store_true", help="leave out the `eval --runs 10` row (saves time)")
    args = ap.parse_args()

    CACHE.mkdir(parents=True, exist_ok=True)
    saved, tflites = prepare_models()
    data = CACHE / f"eval-speed-{args.samples}.npz"
    if not data.is_file():
        write_data(data, args.samples, "npz")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3", "EDGETOOL_VERBOSE": "1"}
    report = CACHE / "eval-speed-report.json"
    paths = [str(p) for p in tflites.values()]
    eval_cmd = [
        sys.executable,
        "-m",
        "edge_tool",
        "eval",
        *paths,
        "-r",
        str(saved),
        "-d",
        str(data),
        "--json",
        str(report),
        "--force",
    ]
    variants = {
        "plain script": [sys.executable, "-c", PLAIN, str(saved), str(data), *paths],
        "edgetool eval (defaults: 100 latency runs)": eval_cmd,
        "edgetool eval --runs 10": [*eval_cmd, "--runs", "10"],
    }
    if args.skip_runs10:
        del variants["edgetool eval --runs 10"]
    envs = {k: env for k in variants}
    if args.code_dir:
        variants["edgetool eval, before (--code-dir)"] = eval_cmd
        envs["edgetool eval, before (--code-dir)"] = {**env, "PYTHONPATH": str(args.code_dir.resolve())}
    walls: dict[str, list[float]] = {k: [] for k in variants}
    cpus: dict[str, list[float]] = {k: [] for k in variants}
    load_before = load_line()
    plain_out, eval_doc, eval_cpu, eval_wall = {}, {}, {}, {}
    for rep in range(args.repeats):
        for name, cmd in variants.items():
            wall, cpu, out, err = timed(cmd, envs[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
            print(f"[{rep + 1}/{args.repeats}] {name}: {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
            if name == "plain script":
                plain_out = json.loads(out.strip().splitlines()[-1])
            elif name.startswith("edgetool eval (defaults"):
                eval_doc = json.loads(report.read_text())
                marker = "edgetool: eval stages CPU s "
                line = next((ln[len(marker) :] for ln in err.splitlines() if ln.startswith(marker)), "{} wall s {}")
                eval_cpu, eval_wall = (json.loads(part) for part in line.split(" wall s "))
    base = statistics.median(walls["plain script"])
    cpu_base = statistics.median(cpus["plain script"])
    rows = [
        [
            name,
            " / ".join(f"{w:.1f}" for w in ws),
            f"{statistics.median(ws):.1f} s",
            f"{statistics.median(ws) / base:.2f}×",
            f"{statistics.median(w / p for w, p in zip(ws, walls['plain script'])):.2f}×",
            f"{args.samples / statistics.median(ws):.1f}",
            f"{statistics.median(cpus[name]):.1f} s ({statistics.median(cpus[name]) / cpu_base:.2f}×)",
        ]
        for name, ws in walls.items()
    ]
    stage_rows = [["plain script", k, f"{v:.1f}", "", ""] for k, v in plain_out.get("_cpu", {}).items()]
    stage_rows += [
        ["edgetool eval", k, f"{tree:.1f}", f"{own:.1f}", f"{eval_wall[k]:.1f}" if k in eval_wall else ""]
        for k, (tree, own) in eval_cpu.items()
    ]
    split = where_it_goes(plain_out.get("_cpu", {}), eval_cpu)
    checks = []
    for r in eval_doc.get("results", []):
        p = plain_out.get(r["artifact"], {})
        checks.append(
            [
                r["artifact"],
                r.get("accuracy_pass", ""),
                f"{100 * r['top1_agreement']:.2f}%",
                f"{100 * p.get('agreement', float('nan')):.2f}%",
                f"{r['max_abs_error']:.2e}",
                f"{p.get('max_abs_error', float('nan')):.2e}",
            ]
        )
    ratio = statistics.median(walls["edgetool eval (defaults: 100 latency runs)"]) / base
    cpu_ratio = statistics.median(cpus["edgetool eval (defaults: 100 latency runs)"]) / cpu_base
    load = os.getloadavg()[0]
    if load > (os.cpu_count() or 1):
        verdict = (
            f"not judged — the machine was loaded (load average {load:.1f} on {os.cpu_count()} cores), and "
            "under contention a run with more processes gets a larger share of the CPU, which flatters "
            f"eval's wall time; its CPU time is {cpu_ratio:.2f}× the plain script's. Rerun on a quiet "
            "machine to judge the target."
        )
    else:
        verdict = f"{'met' if ratio <= 1.0 else 'not met'} (CPU time {cpu_ratio:.2f}× the plain script's)."
    phases = eval_doc.get("timings_s") or {}
    if phases:  # where eval's time went (its own report, last default run)
        verdict += (
            " Where eval's time went (its report, last run): "
            + ", ".join(f"{name} {sec:.1f} s" for name, sec in phases.items())
            + f"; the plain script measures no latency, so eval's comparable work (everything but the latency "
            f"loops) is {sum(v for k, v in phases.items() if 'latency' not in k):.1f} s."
        )
    body = "\n".join(
        [
            "## eval speed vs a plain script (`benchmarks/bench_eval_speed.py`)",
            "",
            f"Machine: {machine()}; SIMD: {simd_flags()}. MobileNetV2-224 (random weights) fp32 + int8 .tflite against the SavedModel on "
            f"{args.samples} seeded random uint8 images (.npz, cast to float32). Wall time of the whole process, "
            "Python start and TensorFlow import included; runs alternate, medians of "
            f"{args.repeats}. The plain script runs the SavedModel at batch 64, then each .tflite at batch 64 with "
            "every core, and computes agreement and max error — nothing else. eval also measures latency (batch 1, "
            "each .tflite in a fresh process, and the reference), writes the JSON report, and isolates every "
            "artefact in its own process. The machine is shared with other jobs, so single runs are noisy: CPU "
            f"seconds (user + system of the whole process tree) are shown too, and the paired ratio (median over rounds of "
            f"eval's wall / the same round's plain wall). Before: {load_before}; at the end: {load_line()}.",
            "",
            table(
                [
                    "run",
                    "wall per run (s)",
                    "median wall",
                    "× plain",
                    "paired × plain",
                    "samples/s",
                    "median CPU (× plain)",
                ],
                rows,
            ),
            "",
            f"Target ≤ 1.00× wall (issue 14 item 1, eval with defaults): measured {ratio:.2f}× — {verdict}",
            "",
            "CPU seconds per stage, last round (the plain script's `time.process_time()`, eval's whole process tree "
            "by its own accounting, `EDGETOOL_VERBOSE=1`; robust to load):",
            "",
            table(["run", "stage", "CPU s", "of it eval's own process", "wall s (loaded)"], stage_rows),
            "",
            split,
            "",
            "Same figures on both sides (eval's batched pass vs the plain script):",
            "",
            table(
                [
                    "artefact",
                    "eval accuracy pass",
                    "eval agreement",
                    "plain agreement",
                    "eval max err",
                    "plain max err",
                ],
                checks,
            ),
        ]
    )
    print(body)
    if not args.no_record:
        write_section("eval-speed", body)


def where_it_goes(plain: dict, stages: dict) -> str:
    """Where eval's CPU seconds differ from the plain script's, from both sides' per-stage CPU."""
    if not plain or not stages:
        return ""
    tflites = sum(v for k, v in plain.items() if k.endswith(".tflite"))
    pass_tree, pass_own = stages.get("accuracy pass", (0.0, 0.0))
    latency = sum(tree for k, (tree, _) in stages.items() if "latency" in k)
    before = sum(tree for k, (tree, _) in stages.items() if k.startswith(("before", "start")))
    return (
        f"Where the CPU goes: the accuracy pass costs eval {pass_tree:.1f} s (its own process, the reference and the "
        f"batch feeding, {pass_own:.1f} s; its LiteRT workers {pass_tree - pass_own:.1f} s: on 2 cores the pass "
        f"takes at least the larger, {max(pass_own, pass_tree - pass_own):.1f} s) against the plain script's "
        f"{plain.get('reference (load + pass)', 0) + tflites:.1f} s (reference load included); eval's start "
        f"(Python, imports, TensorFlow, reference load, workers) {before:.1f} s against the plain script's imports "
        f"{plain.get('imports', 0):.1f} s; the latency loops, which the plain script does not run, {latency:.1f} s, "
        "one model at a time on an otherwise idle machine (their wall is on the critical path)."
    )


if __name__ == "__main__":
    main()
