"""One shard of a sharded calibration, in its own process (``calibration_shards`` starts it; not a user command).

``python -m edge_tool.tflite_converter.calibration_worker WRAPPER_SO DIR K`` loads TensorFlow's calibration wrapper
(the compiled module ``tf.lite``'s Calibrator drives) by path — without importing TensorFlow, so it starts in a
fraction of a second — builds it on ``DIR/model.tflite`` with the custom op registerers named in
``DIR/registerers.txt``, feeds the samples of ``DIR/shard-K.npz`` in order exactly as ``Calibrator._feed_tensors``
does for positional samples (one ``Prepare`` with the first sample's shapes, then one ``FeedTensor`` per sample)
and writes the model ``Calibrate()`` returns (the float model with each tensor's min/max) to ``DIR/out-K.tflite``
(beside, then renamed: a file there is complete). Any failure exits non-zero; the parent then feeds that shard
itself.
"""

from __future__ import annotations

import importlib.util
import os
import sys
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


def calibrate_shard(so_path: str, folder: Path, k: int) -> None:
    """Feed shard ``k`` of ``folder`` and write its calibrated model (see the module doc)."""
    wrapper = load_wrapper(so_path)
    names = [n for n in (folder / "registerers.txt").read_text().splitlines() if n]
    model = (folder / "model.tflite").read_bytes()  # the wrapper reads this buffer, not a copy: keep it alive
    calibrator = wrapper.CalibrationWrapper(model, names, [])
    with np.load(folder / f"shard-{k}.npz") as shard:
        inputs = [shard[f"input{i}"] for i in range(len(shard.files))]
    count = len(inputs[0])
    calibrator.Prepare([list(a.shape[1:]) for a in inputs])
    for j in range(count):
        calibrator.FeedTensor([a[j] for a in inputs])
    out = folder / f"out-{k}.tflite"
    part = out.with_suffix(".part")
    part.write_bytes(calibrator.Calibrate())
    os.replace(part, out)


def main(argv: list[str]) -> int:
    """Entry point: ``WRAPPER_SO DIR K``."""
    so_path, folder, k = argv
    calibrate_shard(so_path, Path(folder), int(k))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
