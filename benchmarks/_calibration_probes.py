"""``bench_calibration_shards.py``: what one calibrated sample costs and the ways around it that were measured and
refused, each a number this script measures again rather than a claim.

- ``logging_share``: TensorFlow's calibration wrapper (a logging interpreter: every float tensor's min/max scanned
  once as an output and twice as each consumer's input) against the same float model in ``tf.lite.Interpreter`` on
  the builtin kernels without delegates, one thread — the part of a sample that is logging, not kernels;
- ``batched``: the wrapper fed ``b`` samples at a time (it resizes the input): CPU per sample and whether the
  calibrated model is byte-identical to batch 1 (every kernel must give each sample the same bits at batch b);
- ``outside_ranges``: the tensor ranges another interpreter's values give (min/max with numpy over every tensor,
  ``experimental_preserve_all_tensors``) against the wrapper's on the same samples — how many logged tensors differ
  (in-place ops the wrapper's arena shares, and kernels built into another binary);
- ``serial_cpu``: edgetool's in-process CPU for one int8 conversion in one calibration process, minus its calibration
  feed: the parent's work no number of cores shortens (SavedModel read, MLIR conversion, quantization).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import numpy as np

from edge_tool.parsers.tflite_schema import tflite_schema

SERIAL = r"""
import json, os, sys, time, numpy as np
from pathlib import Path
import tensorflow as tf
from edge_tool.tflite_converter.fast_path import SharedSource
from edge_tool.tflite_converter.run import Refusal, new_converter, run_converter
saved, cal = sys.argv[1:]
x = np.load(cal)["x"]
conv = new_converter(SharedSource(Path(saved), "serving_default"))
conv.optimizations = [tf.lite.Optimize.DEFAULT]
conv.representative_dataset = lambda: ([x[i : i + 1]] for i in range(len(x)))
c0 = time.process_time()
run_converter(conv, Refusal("m", "failed"))
print(json.dumps({"cpu": time.process_time() - c0}))
"""


def _wrapper(model: bytes):
    from tensorflow.lite.python.optimize import calibrator

    return calibrator._calibration_wrapper.CalibrationWrapper(model, [], [])


def batched(model: bytes, x: np.ndarray, sizes: tuple[int, ...] = (1, 2, 4)) -> dict[int, tuple[float, bool]]:
    """Batch size → (CPU seconds per sample, calibrated bytes identical to batch 1's)."""
    out, first = {}, None
    for b in sizes:
        cal = _wrapper(model)
        cal.Prepare([[b, *x.shape[1:]]])
        c0 = time.process_time()
        for i in range(0, len(x) - len(x) % b, b):
            cal.FeedTensor([x[i : i + b]])
        per = (time.process_time() - c0) / (len(x) - len(x) % b)
        got = bytes(cal.Calibrate())
        first = first or got
        out[b] = (per, got == first)
    return out


def _interpreter(model: bytes, preserve: bool):
    import tensorflow as tf

    resolver = tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = tf.lite.Interpreter(
        model_content=model,
        num_threads=1,
        experimental_op_resolver_type=resolver,
        experimental_preserve_all_tensors=preserve,
    )
    it.allocate_tensors()
    return it, it.get_input_details()[0]["index"]


def logging_share(model: bytes, x: np.ndarray) -> tuple[float, float]:
    """(the wrapper's CPU seconds per sample, the plain interpreter's) on the same samples."""
    cal = _wrapper(model)
    cal.Prepare([[1, *x.shape[1:]]])
    c0 = time.process_time()
    for i in range(len(x)):
        cal.FeedTensor([x[i : i + 1]])
    wrapped = (time.process_time() - c0) / len(x)
    it, idx = _interpreter(model, False)
    c0 = time.process_time()
    for i in range(len(x)):
        it.set_tensor(idx, x[i : i + 1])
        it.invoke()
    return wrapped, (time.process_time() - c0) / len(x)


def outside_ranges(model: bytes, x: np.ndarray) -> tuple[int, int]:
    """(logged tensors whose numpy min/max over another interpreter's values differ from the wrapper's, logged)."""
    cal = _wrapper(model)
    cal.Prepare([[1, *x.shape[1:]]])
    for i in range(len(x)):
        cal.FeedTensor([x[i : i + 1]])
    graph = tflite_schema().Model.GetRootAs(bytes(cal.Calibrate()), 0).Subgraphs(0)
    want = {}
    for t in range(graph.TensorsLength()):
        q = graph.Tensors(t).Quantization()
        if q is not None and q.MinLength():
            want[t] = (q.Min(0), q.Max(0))
    it, idx = _interpreter(model, True)
    got: dict[int, tuple[float, float]] = {}
    for i in range(len(x)):
        it.set_tensor(idx, x[i : i + 1])
        it.invoke()
        for t in want:
            a = it.tensor(t)()
            lo, hi = float(a.min()), float(a.max())
            del a  # the interpreter refuses to run while a view of its arena is alive
            got[t] = (min(got[t][0], lo), max(got[t][1], hi)) if t in got else (lo, hi)
    return sum(
        np.float32(got[t][0]) != np.float32(w[0]) or np.float32(got[t][1]) != np.float32(w[1]) for t, w in want.items()
    ), len(want)


def serial_cpu(saved, cal, env: dict, runs: int = 3) -> tuple[float, float]:
    """(median in-process CPU of edgetool's int8 conversion in one calibration process, of its calibration feed)."""
    total, feed = [], []
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-c", SERIAL, str(saved), str(cal)],
            env={**env, "EDGETOOL_CALIBRATION_WORKERS": "1", "EDGETOOL_VERBOSE": "1"},
            capture_output=True,
            text=True,
        )
        if proc.returncode:
            raise SystemExit(proc.stderr[-3000:])
        marker = "edgetool: calibration phases "
        phases = [json.loads(ln[len(marker) :]) for ln in proc.stderr.splitlines() if ln.startswith(marker)][-1]
        total.append(json.loads(proc.stdout.strip().splitlines()[-1])["cpu"])
        feed.append(sum(s for _, ph, s in phases if ph == "feed + Calibrate()"))
    return statistics.median(total), statistics.median(feed)
