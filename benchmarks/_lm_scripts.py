"""The two programs benchmarks/bench_lm.py runs in fresh interpreters: BUILD (the seeded decoder, exported and
converted to fp32 / fp16 / dynamic int8) and PLAIN (the plain loop: signature runners, caches fed back, argmax —
nothing of edgetool, so it also runs on a board with its own tflite_runtime)."""

from __future__ import annotations

BUILD = """
import sys, os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
from pathlib import Path
import tensorflow as tf, tf_keras as keras
from edge_tool.lm.export import export_lm
from edge_tool.lm.model import LmConfig, build_lm
out = Path(sys.argv[1]); cfg = dict(eval(sys.argv[2])); prefill = tuple(eval(sys.argv[3]))
keras.utils.set_random_seed(0)
export_lm(build_lm(keras, LmConfig(**cfg)), out / "model", prefill_lengths=prefill)
keys = ["decode", *(f"prefill_{t}" for t in prefill)]
for mode in ("fp32", "fp16", "int8"):
    conv = tf.lite.TFLiteConverter.from_saved_model(str(out / "model"), signature_keys=keys)
    if mode != "fp32":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "fp16":
        conv.target_spec.supported_types = [tf.float16]
    (out / f"lm_{mode}.tflite").write_bytes(conv.convert())
"""

PLAIN = """
import json, sys, time
import numpy as np
try:
    from ai_edge_litert.interpreter import Interpreter
except ImportError:
    from tflite_runtime.interpreter import Interpreter
req = json.loads(sys.argv[1]); out = {}
for path in req["models"]:
    if req.get("read_model"):  # as eval does (it validates the file): glibc raises its mmap threshold once it is freed
        open(path, "rb").read()
    it = Interpreter(model_path=path, num_threads=1)
    run = {k: it.get_signature_runner(k) for k in it.get_signature_list()}
    dec = run["decode"]
    names = [n for n in dec.get_input_details() if n.startswith("kv_cache_")]
    shape = dec.get_input_details()[names[0]]["shape"]
    zeros = {n: np.zeros(shape, np.float32) for n in names}
    ttft = {}
    for t in req["lengths"]:
        fn, toks, pos = run["prefill_%d" % t], np.array([[(7 * i + 3) % 256 for i in range(t)]], np.int32), np.arange(t, dtype=np.int32)
        times = []
        for r in range(req["warmup"] + req["reps"]):
            t0 = time.perf_counter_ns()
            o = fn(tokens=toks, input_pos=pos, **zeros)
            int(np.argmax(o["logits"][0, -1]))
            times.append(time.perf_counter_ns() - t0)
        ttft[str(t)] = times[req["warmup"]:]
    def decode(start, steps):
        caches, tok, times = dict(zeros), 65, []
        for p in range(start, start + steps):
            t0 = time.perf_counter_ns()
            o = dec(tokens=np.array([[tok]], np.int32), input_pos=np.array([p], np.int32), **caches)
            caches = {n: o[n] for n in names}
            tok = int(np.argmax(o["logits"][0, 0]))
            times.append(time.perf_counter_ns() - t0)
        return times
    decode(req["positions"][0], req["warmup"])
    out[path] = {"ttft_ns": ttft, "short": decode(req["positions"][0], req["steps"]), "full": decode(req["positions"][1], req["steps"])}
print(json.dumps(out))
"""
