"""One shard of a sharded calibration, in its own process (``calibration_shards`` starts it; not a user command).

``python -m edge_tool.tflite_converter.calibration_worker WRAPPER_SO DIR K`` loads TensorFlow's calibration wrapper
(the compiled module ``tf.lite``'s Calibrator drives) by path — without importing TensorFlow, so it starts in a
fraction of a second — while the parent is still feeding its first samples, then waits for one line on stdin:
``LO HI`` (its shard: samples LO..HI-1) or nothing (end of input: not needed, exit 0). It builds the wrapper on
``DIR/model.tflite`` with the custom op registerers named in ``DIR/registerers.txt``, feeds rows LO..HI-1 of
``DIR/input{i}.npy`` (memory-mapped: the parent wrote the workers' samples once, in shared memory where there is some) in
order exactly as ``Calibrator._feed_tensors`` does for positional samples (one ``Prepare`` with the first sample's
shapes, then one ``FeedTensor`` per sample) and writes the model ``Calibrate()`` returns (the float model with each
tensor's min/max) to ``DIR/out-K.tflite`` (beside, then renamed: a file there is complete), and its CPU seconds per
phase to ``DIR/phases-K.json``. Any failure exits non-zero; the parent then calibrates in one process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np


def load_wrapper(so_path: str):
    """The ``_pywrap_tensorflow_lite_calibration_wrapper`` extension module loaded from ``so_path``."""
    name = "_pywrap_tensorflow_lite_calibration_wrapper"
    spec = importlib.util.spec_from_file_location(name, so_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {so_path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def process_cpu() -> float:
    """User + system CPU seconds of this process so far, its interpreter start and every thread included."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def calibrate_shard(wrapper, folder: Path, k: int, lo: int, hi: int, phases: dict) -> None:
    """Feed samples ``lo``..``hi``-1 and write shard ``k``'s calibrated model (see the module doc)."""
    cpu = process_cpu()
    names = [n for n in (folder / "registerers.txt").read_text().splitlines() if n]
    model = (folder / "model.tflite").read_bytes()  # the wrapper reads this buffer, not a copy: keep it alive
    calibrator = wrapper.CalibrationWrapper(model, names, [])
    count = sum(1 for p in folder.iterdir() if p.name.startswith("input") and p.suffix == ".npy")
    inputs = [np.load(folder / f"input{i}.npy", mmap_mode="r")[lo:hi] for i in range(count)]
    calibrator.Prepare([list(a.shape[1:]) for a in inputs])
    phases["model load"], cpu = process_cpu() - cpu, process_cpu()
    for j in range(hi - lo):
        calibrator.FeedTensor([np.asarray(a[j]) for a in inputs])
    phases["samples"], phases["feed"], cpu = hi - lo, process_cpu() - cpu, process_cpu()
    out = folder / f"out-{k}.tflite"
    part = out.with_suffix(".part")
    part.write_bytes(calibrator.Calibrate())
    os.replace(part, out)
    phases["calibrate + write"] = process_cpu() - cpu


def main(argv: list[str]) -> int:
    """Entry point: ``WRAPPER_SO DIR K``, then ``LO HI`` on stdin."""
    so_path, folder, k = argv
    phases = {"process start + numpy": process_cpu()}
    cpu = process_cpu()
    wrapper = load_wrapper(so_path)
    phases["wrapper import"] = process_cpu() - cpu
    waited = time.perf_counter()
    line = sys.stdin.readline().split()
    phases["idle wait (wall)"] = time.perf_counter() - waited
    if not line:
        return 0
    calibrate_shard(wrapper, Path(folder), int(k), int(line[0]), int(line[1]), phases)
    phases["total"] = process_cpu()
    part = Path(folder) / f"phases-{k}.part"
    part.write_text(json.dumps(phases))
    os.replace(part, Path(folder) / f"phases-{k}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
