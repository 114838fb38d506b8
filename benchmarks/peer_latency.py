"""Batch-1 latency of one model in a fresh process that loads only its runtime (LiteRT or ONNX Runtime): ``runs``
timed calls after 10 warm-up calls, the p50 in milliseconds (bench_peer.py's latency columns)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# each runtime's script defines step() (one batch-1 call); _TIMED then warms up and times it
_HEAD = r"""
import json, sys, time, numpy as np
path, threads, warmup, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
x = np.load(sys.argv[5])
"""

_TIMED = r"""
for _ in range(warmup): step()
t = []
for _ in range(runs):
    t0 = time.perf_counter_ns(); step(); t.append((time.perf_counter_ns() - t0) / 1e6)
print(json.dumps({"p50": float(np.median(t))}))
"""

_ORT = r"""
import onnxruntime as ort
so = ort.SessionOptions(); so.intra_op_num_threads = threads; so.inter_op_num_threads = 1
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
name = sess.get_inputs()[0].name
def step():
    sess.run(None, {name: x})
"""

_LITERT = r"""
from ai_edge_litert.interpreter import Interpreter
it = Interpreter(model_path=path, num_threads=threads); it.allocate_tensors()
inp, out = it.get_input_details()[0], it.get_output_details()[0]
if inp["dtype"] != np.float32:
    s, z = inp["quantization"]; i = np.iinfo(inp["dtype"]); x = np.clip(np.round(x / s + z), i.min, i.max).astype(inp["dtype"])
def step():
    it.set_tensor(inp["index"], x); it.invoke(); it.get_tensor(out["index"])
"""


def litert_p50(path: Path, sample: Path, threads: int, runs: int) -> float:
    """set_tensor + invoke + get_tensor with a LiteRT Interpreter in a fresh process (what edgetool eval times)."""
    return _p50(_LITERT, path, sample, threads, runs)


def _p50(script: str, path: Path, sample: Path, threads: int, runs: int) -> float:
    proc = subprocess.run(
        [sys.executable, "-c", _HEAD + script + _TIMED, str(path), str(threads), "10", str(runs), str(sample)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])["p50"]


def ort_p50(path: Path, sample: Path, threads: int, runs: int) -> float:
    """The same loop with an ORT InferenceSession (sequential, intra-op threads) in a fresh process."""
    return _p50(_ORT, path, sample, threads, runs)
