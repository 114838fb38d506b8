"""A model already trained quantization-aware with tfmot (``quantize_model`` + fit, saved as a SavedModel): --quant
int8 converts with the trained FakeQuant ranges and no calibration data, and --quant qat is not run on it again."""

from __future__ import annotations

import json

import pytest

from edge_tool.parsers.tflite_model import integer_only_problem
from tests.builds import run_script
from tests.edgetool_runs import edgetool_in_process

pytestmark = pytest.mark.slow

TFMOT_QAT = """
import sys, numpy as np, tf_keras as keras, tensorflow_model_optimization as tfmot
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.random((256, 8, 8, 1)).astype("float32")
y = (x[:, :4].mean(axis=(1, 2, 3)) > x[:, 4:].mean(axis=(1, 2, 3))).astype("int64")
m = keras.Sequential([keras.layers.Input((8, 8, 1)), keras.layers.Conv2D(8, 3, activation="relu"),
                      keras.layers.Flatten(), keras.layers.Dense(2, activation="softmax")])
m.compile("adam", "sparse_categorical_crossentropy")
m.fit(x, y, epochs=3, verbose=0)
q = tfmot.quantization.keras.quantize_model(m)
q.compile("adam", "sparse_categorical_crossentropy")
q.fit(x, y, epochs=2, verbose=0)
q.save(sys.argv[1], save_format="tf")
np.savez(sys.argv[1] + "_eval.npz", x=x[:64], y=y[:64])
"""


def test_int8_from_trained_ranges_without_calibration(tmp_path):
    model = tmp_path / "qat"
    run_script(TFMOT_QAT, model)
    proc = edgetool_in_process("convert", model, "--quant", "int8", "-o", tmp_path / "out")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "trained quantization-aware" in out and "no calibration data needed" in out
    data = (tmp_path / "out" / "qat_int8.tflite").read_bytes()
    assert integer_only_problem(data) is None  # every op int8, from the FakeQuant ranges
    report = tmp_path / "eval.json"
    args = ("-r", model, "-d", f"{model}_eval.npz", "--runs", "5", "--json", report)
    proc = edgetool_in_process("eval", tmp_path / "out" / "qat_int8.tflite", *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(report.read_text())["results"][0]["top1_agreement"] >= 0.95
    proc = edgetool_in_process(
        "convert", model, "--quant", "qat", "--train-data", f"{model}_eval.npz", "-o", tmp_path / "q"
    )
    assert proc.returncode == 2 and "already is one" in proc.stdout + proc.stderr
    assert "Use --quant int8" in proc.stdout + proc.stderr
