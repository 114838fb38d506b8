"""int8 calibration split across processes (``calibration_shards``) against the raw converter and ORT, same bytes.

MobileNetV2-224 (tf_keras, weights=None, seed 0; ``bench_peer.build``) and ``--samples`` seeded inputs in [-1, 1].
Alternating rounds, each a fresh process:

- raw: ``TFLiteConverter.from_saved_model`` + ``Optimize.DEFAULT`` + the samples, ``convert()`` timed in-process;
- edgetool: ``edgetool convert --quant int8`` with ``EDGETOOL_CALIBRATION_WORKERS`` = 1, 2 and ``--workers``, the
  int8 mode's in-process seconds from its manifest;
- ORT: ``quant_pre_process`` + ``quantize_static`` (bench_peer's) on the same samples, in-process seconds (the fp32
  ONNX from tf2onnx is made once, untimed).

Every int8 file's sha256 must equal the raw converter's (the script stops otherwise). Then the per-shard cost: one
``calibration_worker`` process on k samples for two k (start-up + per-sample time), from which the calibration time
at 8 and 16 cores is projected. Writes the ``calibration-shards`` section of benchmarks/RESULTS.md.

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
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import load_line, machine, simd_flags, table, write_section
from bench_peer import _ORT_QUANTIZE, build

from edge_tool.tflite_converter import calibration_shards

ENV = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
RAW = r"""
import sys, time, numpy as np, tensorflow as tf
saved, cal, out = sys.argv[1:]
x = np.load(cal)["x"]
conv = tf.lite.TFLiteConverter.from_saved_model(saved)
conv.optimizations = [tf.lite.Optimize.DEFAULT]
conv.representative_dataset = lambda: ([x[i:i + 1]] for i in range(len(x)))
t0 = time.perf_counter()
data = conv.convert()
print(time.perf_counter() - t0)
open(out, "wb").write(data)
"""
SHARD = r"""
import sys, time, numpy as np, tensorflow as tf
from tensorflow.lite.python.optimize import calibrator
saved, cal, folder, counts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
model = calibrator.add_intermediate_tensors(tf.lite.TFLiteConverter.from_saved_model(saved).convert())
open(folder + "/model.tflite", "wb").write(model)
open(folder + "/registerers.txt", "w").write("")
x = np.load(cal)["x"]
for k, n in enumerate(counts, 1):
    np.savez(folder + f"/shard-{k}.npz", input0=x[:int(n), None])
print(calibrator._calibration_wrapper.__file__)
"""


def sha(path: Path) -> str:
    """The file's sha256."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def raw(saved: Path, cal: Path, out: Path) -> float:
    """The raw converter's in-process int8 seconds (its file written to ``out``)."""
    proc = subprocess.run([sys.executable, "-c", RAW, str(saved), str(cal), str(out)], env=ENV, capture_output=True)
    if proc.returncode:
        raise SystemExit(proc.stderr.decode()[-3000:])
    return float(proc.stdout.decode().split()[-1])


def edgetool(saved: Path, cal: Path, out: Path, workers: int, samples: int) -> tuple[float, Path]:
    """(edgetool's in-process int8 seconds, its file) with ``workers`` calibration processes."""
    cmd = [sys.executable, "-m", "edge_tool", "convert", str(saved), "-q", "int8", "--calibration", str(cal)]
    cmd += ["--samples", str(samples), "-o", str(out), "--force"]
    env = {**ENV, "EDGETOOL_CALIBRATION_WORKERS": str(workers), "EDGETOOL_VERBOSE": "1"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(proc.stdout[-2000:] + proc.stderr[-3000:])
    art = next(a for a in json.loads((out / "manifest.json").read_text())["artifacts"] if a["quant"] == "int8")
    return float(art["seconds"]), out / art["path"]


def ort(onnx: Path, cal: Path, out: Path) -> float:
    """ORT's in-process ``quant_pre_process`` + ``quantize_static`` seconds."""
    proc = subprocess.run([sys.executable, "-c", _ORT_QUANTIZE, str(onnx), str(out), str(cal)], capture_output=True)
    if proc.returncode:
        raise SystemExit(proc.stderr.decode()[-3000:])
    return float(proc.stdout.decode().split()[-1])


def shard_cost(saved: Path, cal: Path, folder: Path, counts: tuple[int, int]) -> tuple[float, float]:
    """(start-up s, per-sample s) of one calibration worker, from its wall time on ``counts`` samples."""
    folder.mkdir(parents=True, exist_ok=True)
    so = subprocess.run(
        [sys.executable, "-c", SHARD, str(saved), str(cal), str(folder), *map(str, counts)],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[-1]
    walls = []
    for k in (1, 2):
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "edge_tool.tflite_converter.calibration_worker", so, str(folder), str(k)]
        subprocess.run(cmd, env=ENV, check=True, capture_output=True)
        walls.append(time.perf_counter() - t0)
    per = (walls[1] - walls[0]) / (counts[1] - counts[0])
    return walls[0] - per * counts[0], per


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
    if args.calibration_only:
        with tempfile.TemporaryDirectory(prefix="bench-calib-") as tmp:
            saved, _ = build(Path(tmp))
            body = calibration_only(saved, args, load_before)
        print(body)
        if not args.no_record:
            write_section("calibration-only", body)
        return
    with tempfile.TemporaryDirectory(prefix="bench-calib-") as tmp:
        tmp = Path(tmp)
        saved, _ = build(tmp)
        x = np.random.default_rng(0).uniform(-1, 1, (args.samples, 224, 224, 3)).astype(np.float32)
        cal = tmp / "cal128.npz"
        np.savez(cal, x=x)
        onnx = tmp / "mobilenetv2.onnx"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tf2onnx.convert",
                "--saved-model",
                str(saved),
                "--opset",
                "17",
                "--output",
                str(onnx),
            ],
            check=True,
            capture_output=True,
        )
        kinds = ["raw", *(f"edgetool, {w} process{'es' if w > 1 else ''}" for w in (1, 2, args.workers)), "ORT"]
        times: dict[str, list[float]] = {k: [] for k in kinds}
        digests = set()
        for r in range(args.rounds):
            times["raw"].append(raw(saved, cal, tmp / "raw.tflite"))
            digests.add(sha(tmp / "raw.tflite"))
            for w in (1, 2, args.workers):
                seconds, path = edgetool(saved, cal, tmp / f"et{w}", w, args.samples)
                times[f"edgetool, {w} process{'es' if w > 1 else ''}"].append(seconds)
                digests.add(sha(path))
            times["ORT"].append(ort(onnx, cal, tmp / "int8.onnx"))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
        if len(digests) != 1:
            raise SystemExit(f"int8 files differ: {digests}")
        startup, per = shard_cost(saved, cal, tmp / "shard", (8, 40))
    body = section(times, (startup, per), args, load_before, digests.pop())
    print(body)
    if not args.no_record:
        write_section("calibration-shards", body)


def calibration_only(saved: Path, args, load_before: str) -> str:
    """Time the calibration step alone (see the module doc); the RESULTS.md section."""
    import tensorflow as tf
    from tensorflow.lite.python.optimize import calibrator

    model = calibrator.add_intermediate_tensors(tf.lite.TFLiteConverter.from_saved_model(str(saved)).convert())
    x = np.random.default_rng(0).uniform(-1, 1, (args.samples, 224, 224, 3)).astype(np.float32)

    def gen():
        return ([x[i : i + 1]] for i in range(len(x)))

    def cpu() -> float:
        a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

    counts, got, expected = (1, 2, args.workers), {}, None
    for _ in range(args.rounds):
        for n in counts:
            os.environ["EDGETOOL_CALIBRATION_WORKERS"] = str(n)
            t0, c0 = time.perf_counter(), cpu()
            if n == 1:
                out, shards = calibrator.Calibrator(model).calibrate(gen), 1
            else:
                done = calibration_shards.calibrate(calibrator.Calibrator(model), model, gen, [])
                out, shards = done.model, done.shards
            got.setdefault(n, []).append((time.perf_counter() - t0, cpu() - c0, shards))
            expected = expected or out
            if out != expected:
                raise SystemExit(f"calibrated model with {n} processes differs from TensorFlow's")
    base = statistics.median(w for w, _, _ in got[1])
    rows = [
        [
            "TensorFlow's Calibrator (one process)" if n == 1 else f"calibration_shards, {n} processes",
            got[n][0][2],
            " / ".join(f"{w:.2f}" for w, _, _ in got[n]),
            f"{statistics.median(w for w, _, _ in got[n]):.2f} s",
            f"{statistics.median(w for w, _, _ in got[n]) / base:.2f}×",
            f"{statistics.median(c for _, c, _ in got[n]):.2f} s",
        ]
        for n in counts
    ]
    return "\n".join(
        [
            "## int8 calibration step alone (`benchmarks/bench_calibration_shards.py --calibration-only`)",
            "",
            f"Machine: {machine()}; SIMD: {simd_flags()}. Load before: {load_before}; after: {load_line()} — "
            "**the machine was loaded** (other helpers' runs share its 2 cores).",
            f"MobileNetV2-224 float model (random weights, seed 0), {args.samples} samples, {args.rounds} alternating "
            "rounds in one process; CPU = user + system of the process and its workers. Every calibrated model was "
            "byte-identical to TensorFlow's.",
            "",
            table(
                ["calibration", "shards used", "wall per round (s)", "median wall", "× one process", "median CPU"], rows
            ),
        ]
    )


def section(times: dict, cost: tuple[float, float], args, load_before: str, digest: str) -> str:
    """The RESULTS.md section."""
    med = {k: statistics.median(v) for k, v in times.items()}
    rows = [[k, f"{med[k]:.2f} s", f"{med[k] / med['raw']:.2f}×", f"{med[k] / med['ORT']:.2f}×"] for k in med]
    startup, per = cost
    seq = args.samples * per
    projected = [f"{n} cores: ~{startup + seq / n:.1f} s (vs {seq:.1f} s in one process)" for n in (2, 8, 16)]
    return "\n".join(
        [
            "## int8 calibration across processes (`benchmarks/bench_calibration_shards.py`)",
            "",
            f"Machine: {machine()}; SIMD: {simd_flags()}. Load before: {load_before}; after: {load_line()} — "
            "**the machine was loaded** (other helpers' test runs share its 2 cores), so walls are noisy.",
            f"MobileNetV2-224 (random weights, seed 0), {args.samples} calibration samples, {args.rounds} alternating "
            "rounds, medians of in-process seconds (edgetool: the int8 mode's seconds in its manifest — SavedModel "
            "read, MLIR conversion, calibration, quantization; raw: `TFLiteConverter.convert()`; ORT: "
            "`quant_pre_process` + `quantize_static` from the fp32 ONNX).",
            "",
            table(["int8 quantization", "median", "vs raw converter", "vs ORT"], rows),
            "",
            f"Every int8 file (all rounds, all process counts, and the raw converter's) has sha256 `{digest[:16]}…`.",
            f"One calibration worker: start-up {startup:.2f} s, {per * 1e3:.0f} ms per sample (wall, loaded machine). "
            f"Calibration of {args.samples} samples projected from these (start-up + samples / cores × per sample; "
            f"the MLIR conversion and quantization around it do not shrink): {'; '.join(projected)}.",
        ]
    )


if __name__ == "__main__":
    main()
