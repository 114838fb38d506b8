"""int8 calibration split across processes (``calibration_shards``) against the raw converter and ORT, same bytes.

MobileNetV2-224 (tf_keras, weights=None, seed 0; ``bench_peer.build``) and ``--samples`` seeded inputs in [-1, 1].
Alternating rounds, each a fresh process:

- raw: ``TFLiteConverter.from_saved_model`` + ``Optimize.DEFAULT`` + the samples, ``convert()`` timed in-process;
- edgetool: ``edgetool convert --quant int8`` with ``EDGETOOL_CALIBRATION_WORKERS`` = 1, 2 and ``--workers``, the
  int8 mode's in-process seconds from its manifest;
- ORT: ``quant_pre_process`` + ``quantize_static`` (bench_peer's) on the same samples, in-process seconds (the fp32
  ONNX from tf2onnx is made once, untimed).

Every int8 file's sha256 must equal the raw converter's (the script stops otherwise). Then the per-shard cost: one
``calibration_worker`` process on every sample, its own CPU seconds per phase (start, wrapper import, model load,
per sample, Calibrate), edgetool's own CPU outside calibration (``_calibration_probes.serial_cpu``), from which the
in-process time at 1 to 16 cores is projected, and the probes of ``_calibration_probes`` (where a sample's cost goes,
batched feeding, another interpreter's ranges: the ways around it, measured and refused). CPU seconds are recorded
beside every wall (in-process ``time.process_time()``, and the whole process tree's): they stay judgeable when the
machine is loaded. Writes the ``calibration-shards`` section of benchmarks/RESULTS.md.

``--calibration-only`` times the calibration step alone instead (TensorFlow's ``Calibrator.calibrate`` against
``calibration_shards.calibrate`` at 2 and ``--workers`` processes, alternating in one process; wall and CPU seconds
of the process and its workers; the calibrated models must be byte-identical) and writes ``calibration-only``.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_calibration_shards.py [--rounds 3] [--samples 128] [--workers 4]
       [--calibration-only]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _calibration_probes as probes
from _calibration_only import calibration_only, phase_table
from _results import load_line, machine, simd_flags, table, write_section
from bench_peer import _ORT_QUANTIZE, build

ENV = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
# ORT's median in-process wall from this script on an idle machine (the projections' yardstick when this run is loaded:
# ORT's own walls then grow more than 2x, its threads competing with the load)
ORT_IDLE, ORT_IDLE_WHERE = 3.68, "this script at commit e1bc06a on this 2-core EPYC, load 1.1"
RAW = r"""
import sys, time, numpy as np, tensorflow as tf
saved, cal, out = sys.argv[1:]
x = np.load(cal)["x"]
conv = tf.lite.TFLiteConverter.from_saved_model(saved)
conv.optimizations = [tf.lite.Optimize.DEFAULT]
conv.representative_dataset = lambda: ([x[i:i + 1]] for i in range(len(x)))
t0, c0 = time.perf_counter(), time.process_time()
data = conv.convert()
print(time.perf_counter() - t0, time.process_time() - c0)
open(out, "wb").write(data)
"""
SHARD = r"""
import sys, numpy as np, tensorflow as tf
from tensorflow.lite.python.optimize import calibrator
saved, cal, folder = sys.argv[1:]
model = calibrator.add_intermediate_tensors(tf.lite.TFLiteConverter.from_saved_model(saved).convert())
open(folder + "/model.tflite", "wb").write(model)
open(folder + "/registerers.txt", "w").write("")
np.save(folder + "/input0.npy", np.load(cal)["x"][:, None])
print(calibrator._calibration_wrapper.__file__)
"""


@dataclass(frozen=True)
class Run:
    """One timed run: in-process wall and CPU seconds (CPU None when not measured), CPU of the process tree, the
    output's sha256, the calibration phases edgetool printed."""

    wall: float
    cpu: float | None
    tree_cpu: float
    digest: str
    phases: list = field(default_factory=list)


def sha(path: Path) -> str:
    """The file's sha256."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run(cmd: list[str], env: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """(the finished process, CPU seconds of its whole tree: user + system of it and every process it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(proc.stdout[-2000:] + proc.stderr[-3000:])
    return proc, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def raw(saved: Path, cal: Path, out: Path) -> Run:
    """The raw converter's int8 run (its file written to ``out``)."""
    proc, tree = _run([sys.executable, "-c", RAW, str(saved), str(cal), str(out)], ENV)
    wall, cpu = map(float, proc.stdout.split()[-2:])
    return Run(wall, cpu, tree, sha(out))


def edgetool(saved: Path, cal: Path, out: Path, workers: int, samples: int) -> Run:
    """edgetool's int8 run with ``workers`` calibration processes (in-process seconds from its manifest)."""
    cmd = [sys.executable, "-m", "edge_tool", "convert", str(saved), "-q", "int8", "--calibration", str(cal)]
    cmd += ["--samples", str(samples), "-o", str(out), "--force"]
    env = {**ENV, "EDGETOOL_CALIBRATION_WORKERS": str(workers), "EDGETOOL_VERBOSE": "1"}
    proc, tree = _run(cmd, env)
    art = next(a for a in json.loads((out / "manifest.json").read_text())["artifacts"] if a["quant"] == "int8")
    marker = "edgetool: calibration phases "
    phases = [json.loads(ln[len(marker) :]) for ln in proc.stderr.splitlines() if ln.startswith(marker)]
    return Run(float(art["seconds"]), None, tree, sha(out / art["path"]), phases[-1] if phases else [])


def ort(onnx: Path, cal: Path, out: Path) -> Run:
    """ORT's in-process ``quant_pre_process`` + ``quantize_static`` run."""
    script = _ORT_QUANTIZE.replace("t0 = time.perf_counter()", "t0, c0 = time.perf_counter(), time.process_time()")
    script = script.replace(
        "print(time.perf_counter() - t0)", "print(time.perf_counter() - t0, time.process_time() - c0)"
    )
    proc, tree = _run([sys.executable, "-c", script, str(onnx), str(out), str(cal)])
    wall, cpu = map(float, proc.stdout.split()[-2:])
    return Run(wall, cpu, tree, "")


def shard_cost(saved: Path, cal: Path, folder: Path, samples: int, runs: int = 3) -> dict:
    """One calibration worker's CPU seconds per phase (its own accounting, robust to load), medians of ``runs``
    runs on ``samples`` samples; ``per sample`` is its feed CPU / samples."""
    folder.mkdir(parents=True, exist_ok=True)
    so = subprocess.run(
        [sys.executable, "-c", SHARD, str(saved), str(cal), str(folder)], env=ENV, capture_output=True, text=True
    )
    if so.returncode:
        raise SystemExit(so.stderr[-3000:])
    got: dict[str, list[float]] = {}
    for _ in range(runs):
        cmd = [sys.executable, "-m", "edge_tool.tflite_converter.calibration_worker", so.stdout.split()[-1]]
        subprocess.run([*cmd, str(folder), "1"], input=f"0 {samples}\n", text=True, env=ENV, check=True)
        for k, v in json.loads((folder / "phases-1.json").read_text()).items():
            got.setdefault(k, []).append(v)
    cost = {k: statistics.median(v) for k, v in got.items()}
    cost["per sample"] = cost["feed"] / samples
    return cost


def main() -> None:
    """Measure, check the bytes, print and record."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=int, default=128)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--calibration-only", action="store_true")
    args = ap.parse_args()
    load_before = load_line()
    with tempfile.TemporaryDirectory(prefix="bench-calib-") as tmp:
        tmp = Path(tmp)
        saved, _ = build(tmp)
        if args.calibration_only:
            name, body = "calibration-only", calibration_only(saved, args, load_before)
        else:
            name, body = "calibration-shards", full(saved, tmp, args, load_before)
    print(body)
    if not args.no_record:
        write_section(name, body)


def full(saved: Path, tmp: Path, args, load_before: str) -> str:
    """Alternating rounds of raw, edgetool at 1, 2 and ``--workers`` processes, and ORT; the RESULTS.md section."""
    x = np.random.default_rng(0).uniform(-1, 1, (args.samples, 224, 224, 3)).astype(np.float32)
    cal = tmp / "cal.npz"
    np.savez(cal, x=x)
    onnx = tmp / "mobilenetv2.onnx"
    _run([sys.executable, "-m", "tf2onnx.convert", "--saved-model", str(saved), "--opset", "17", "--output", str(onnx)])
    counts = sorted({1, 2, args.workers})
    runs: dict[str, list[Run]] = {}
    for r in range(args.rounds):
        runs.setdefault("raw converter", []).append(raw(saved, cal, tmp / "raw.tflite"))
        for w in counts:
            got = edgetool(saved, cal, tmp / f"et{w}", w, args.samples)
            runs.setdefault(f"edgetool, {w} process{'es' if w > 1 else ''}", []).append(got)
        runs.setdefault("ORT quantize_static", []).append(ort(onnx, cal, tmp / "int8.onnx"))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1].wall:.2f} s" for k, v in runs.items()), flush=True)
    digests = {run.digest for k, v in runs.items() if not k.startswith("ORT") for run in v}
    if len(digests) != 1:
        raise SystemExit(f"int8 files differ: {digests}")
    cost = shard_cost(saved, cal, tmp / "shard", args.samples)
    cost["serial"], cost["serial feed"] = probes.serial_cpu(saved, cal, ENV)
    model, few = (tmp / "shard" / "model.tflite").read_bytes(), x[:16]
    cost["batched"], cost["logging"] = probes.batched(model, few), probes.logging_share(model, few)
    cost["outside"] = probes.outside_ranges(model, x[:4])
    return section(runs, cost, args, load_before, digests.pop())


def section(runs: dict[str, list[Run]], cost: dict, args, load_before: str, digest: str) -> str:
    """The RESULTS.md section."""
    wall = {k: statistics.median(r.wall for r in v) for k, v in runs.items()}
    tree = {k: statistics.median(r.tree_cpu for r in v) for k, v in runs.items()}
    cpu = {k: statistics.median(r.cpu for r in v) for k, v in runs.items() if v[0].cpu is not None}
    rows = [
        [
            k,
            f"{wall[k]:.2f} s",
            f"{wall[k] / wall['raw converter']:.2f}×",
            f"{wall[k] / wall['ORT quantize_static']:.2f}×",
        ]
        + [f"{cpu[k]:.2f} s" if k in cpu else "—", f"{tree[k]:.1f} s"]
        for k in runs
    ]
    per, n = cost["per sample"], args.samples
    start = cost["process start + numpy"] + cost["wrapper import"] + cost["model load"]
    serial = cost["serial"] - cost["serial feed"]  # edgetool's parent outside calibration: SavedModel → MLIR, quantize
    proj = {c: serial + (start if c > 1 else 0) + n * per / c for c in (1, 2, 4, 8, 16)}
    # ORT against an idle wall only: its fastest round here, or (the machine loaded) the idle reference above
    ort, ort_is = (
        (ORT_IDLE, f"ORT's idle wall ({ORT_IDLE_WHERE})")
        if loaded()
        else (min(r.wall for r in runs["ORT quantize_static"]), "ORT's fastest round here")
    )
    projected = "; ".join(
        f"{c} core{'s' if c > 1 else ''}: {proj[c]:.2f} s ({proj[c] / cpu['raw converter']:.2f}× raw's CPU, "
        f"{proj[c] / ort:.2f}× ORT's)"
        for c in proj
    )
    wrapped, plain = cost["logging"]
    batches = ", ".join(
        f"batch {b}: {s * 1e3:.1f} ms ({'identical' if same else 'bytes differ'})"
        for b, (s, same) in cost["batched"].items()
    )
    differ, logged = cost["outside"]
    two = next((v[-1].phases for k, v in runs.items() if k.startswith("edgetool, 2")), [])
    return "\n".join(
        [
            "## int8 calibration across processes (`benchmarks/bench_calibration_shards.py`)",
            "",
            f"Machine: {machine()}; SIMD: {simd_flags()}. Load before: {load_before}; after: {load_line()}"
            + (" — **the machine was loaded**: walls are not judgeable, CPU seconds are." if loaded() else "."),
            f"MobileNetV2-224 (random weights, seed 0), {n} calibration samples, {args.rounds} alternating rounds, "
            "medians. In-process wall: edgetool's int8 seconds in its manifest (SavedModel read, MLIR conversion, "
            "calibration, quantization); raw `TFLiteConverter.convert()`; ORT `quant_pre_process` + `quantize_static` "
            "from the fp32 ONNX (tf2onnx, untimed) on the same samples. In-process CPU: `time.process_time()` around "
            "the same call; tree CPU: user + system of the whole command and every process it started.",
            "",
            table(["int8 quantization", "in-process wall", "× raw", "× ORT", "in-process CPU", "tree CPU"], rows),
            "",
            f"Every int8 .tflite (all rounds, every process count, and the raw converter's) has sha256 `{digest[:16]}…`.",
            "",
            "CPU seconds per phase of the last 2-process edgetool run (its own accounting, `EDGETOOL_VERBOSE=1`; "
            "robust to load):",
            "",
            phase_table(two),
            "",
            f"One calibration worker alone on {n} samples (CPU, medians of 3): process start + numpy "
            f"{cost['process start + numpy']:.2f} s, calibration wrapper import {cost['wrapper import']:.2f} s, model "
            f"load + Prepare {cost['model load']:.2f} s, **{per * 1e3:.1f} ms per sample**, Calibrate() + write "
            f"{cost['calibrate + write']:.2f} s. edgetool's parent outside calibration (in-process CPU of one int8 "
            f"conversion in one calibration process, {cost['serial']:.2f} s, minus its feed {cost['serial feed']:.2f} "
            f"s; medians of 3): **{serial:.2f} s** that no number of cores shortens. Projected idle in-process time "
            f"(that + one worker's start {start:.2f} s + {n} samples / cores × per sample): {projected}. The floor on "
            f"2 cores is {proj[2]:.2f} s = {proj[2] / ort:.2f}× {ort_is}, {ort:.2f} s.",
            "",
            f"Where a sample's {wrapped * 1e3:.1f} ms go (16 samples, CPU): the same float model in `tf.lite.Interpreter` "
            f"(builtin kernels, no delegate, one thread) takes {plain * 1e3:.1f} ms — {1 - plain / wrapped:.0%} of a "
            "calibrated sample is the wrapper's logging (a scalar min/max scan of every float tensor, three times), "
            "compiled into TensorFlow's wrapper, which exposes no thread count and runs one thread. Refused, with their "
            f"numbers: feeding batched samples ({batches}; CPU per sample); ranges from another interpreter's tensors "
            f"(numpy min/max over `experimental_preserve_all_tensors`, 4 samples): {differ} of {logged} logged "
            "tensors' ranges differ from the wrapper's (in-place ops share an input's buffer in its arena, so it logs "
            "the output into the input's range; the other kernels' binary differs in the last bits).",
        ]
    )


def loaded() -> bool:
    """True when the 1-minute load average is above the CPU count."""
    return os.getloadavg()[0] > (os.cpu_count() or 1)


if __name__ == "__main__":
    main()
