"""``bench_calibration_shards.py --calibration-only``: the calibration step alone, TensorFlow's ``Calibrator`` against
``calibration_shards.calibrate`` at 2 and ``--workers`` processes, alternating in one process, with the CPU seconds per
phase of the parent and each worker (their own accounting)."""

from __future__ import annotations

import os
import resource
import statistics
import time
from pathlib import Path

import numpy as np
from _results import load_line, machine, simd_flags, table

from edge_tool.tflite_converter import calibration_shards


def phase_table(phases: list) -> str:
    """The ``(process, phase, seconds)`` list as a Markdown table."""
    return table(
        ["process", "phase", "CPU s"], [[p, ph, f"{s:.3f}" if ph != "samples" else int(s)] for p, ph, s in phases]
    )


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

    counts, got, expected = sorted({1, 2, args.workers}), {}, None
    for _ in range(args.rounds):
        for n in counts:
            os.environ["EDGETOOL_CALIBRATION_WORKERS"] = str(n)
            t0, c0 = time.perf_counter(), cpu()
            if n == 1:
                done = calibration_shards.Calibrated(calibrator.Calibrator(model).calibrate(gen))
            else:
                done = calibration_shards.calibrate(calibrator.Calibrator(model), model, gen, [])
            got.setdefault(n, []).append((time.perf_counter() - t0, cpu() - c0, done))
            expected = expected or done.model
            if done.model != expected:
                raise SystemExit(f"calibrated model with {n} processes differs from TensorFlow's")
    base = statistics.median(w for w, _, _ in got[1])
    rows = []
    for n in counts:
        wall, cpus = [w for w, _, _ in got[n]], [c for _, c, _ in got[n]]
        name = "TensorFlow's Calibrator (one process)" if n == 1 else f"calibration_shards, {n} processes"
        rows.append(
            [name, got[n][-1][2].shards, " / ".join(f"{w:.2f}" for w in wall), f"{statistics.median(wall):.2f} s"]
            + [f"{statistics.median(wall) / base:.2f}×", f"{statistics.median(cpus):.2f} s"]
        )
    loaded = os.getloadavg()[0] > (os.cpu_count() or 1)
    return "\n".join(
        [
            "## int8 calibration step alone (`benchmarks/bench_calibration_shards.py --calibration-only`)",
            "",
            f"Machine: {machine()}; SIMD: {simd_flags()}. Load before: {load_before}; after: {load_line()}"
            + (" — **the machine was loaded**: walls are not judgeable, CPU seconds are." if loaded else "."),
            f"MobileNetV2-224 float model (random weights, seed 0), {args.samples} samples, {args.rounds} alternating "
            "rounds in one process; CPU = user + system of the process and its workers. Every calibrated model was "
            "byte-identical to TensorFlow's.",
            "",
            table(
                ["calibration", "shards used", "wall per round (s)", "median wall", "× one process", "median CPU"], rows
            ),
            "",
            "CPU seconds per phase of the last 2-process run (each process's own accounting):",
            "",
            phase_table(list(got[2][-1][2].phases)),
        ]
    )
