"""Mixed-precision models (issue 35.1): a model trained under ``mixed_float16`` / ``mixed_bfloat16`` converts in
every mode from its float32 recast, says so, and eval measures against the model as trained.

The oracle is built with the model, in the process that trained it: its own predictions (float16/bfloat16 compute)
and those of the same architecture built afresh under the float32 policy with the trained weights copied in — an
independent float32 twin, not edgetool's recast. The .tflite files run in plain LiteRT (``litert_outputs``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.builds import built_once, run_script
from tests.edgetool_runs import run_edgetool
from tests.oracles.litert_outputs import litert_outputs

_MIXED_SCRIPT = """
import sys, numpy as np
out, flavor, policy = sys.argv[1], sys.argv[2], sys.argv[3]
if flavor == "keras3":
    import keras
else:
    import tf_keras as keras
from sklearn.datasets import load_digits
def build():
    return keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(8, 3, padding="same"),
        keras.layers.BatchNormalization(), keras.layers.ReLU(), keras.layers.MaxPooling2D(), keras.layers.Flatten(),
        keras.layers.Dense(10), keras.layers.Activation("softmax", dtype="float32")])
keras.utils.set_random_seed(0)
d = load_digits()
x, y = (d.images / 16).astype("float32").reshape(-1, 8, 8, 1), d.target
keras.mixed_precision.set_global_policy(policy)
model = build()
model.compile("adam", "sparse_categorical_crossentropy")
model.fit(x[:1200], y[:1200], epochs=3, verbose=0)
if flavor == "keras3":
    model.save(out + "/model.keras")
else:
    model.save(out + "/model", save_format="tf")
    model.save(out + "/model.h5")
keras.mixed_precision.set_global_policy("float32")
twin = build()
twin.set_weights(model.get_weights())
xe = x[1200:1300]
np.savez(out + "/calibration.npz", x=x[:64], y=y[:64])
np.savez(out + "/train.npz", x=x[:600], y=y[:600])
np.savez(out + "/eval.npz", x=xe, y=y[1200:1300])
np.savez(out + "/oracle.npz", mixed=model.predict(xe, verbose=0).astype("float64"),
         float32=twin.predict(xe, verbose=0).astype("float64"))
"""


@pytest.fixture(scope="module")
def mixed16(tmp_path_factory) -> Path:
    """tf_keras digits CNN trained under mixed_float16: ``model/`` (SavedModel), ``model.h5``, data and oracle."""
    return built_once(tmp_path_factory, "mixed16", lambda d: run_script(_MIXED_SCRIPT, d, "keras2", "mixed_float16"))


@pytest.fixture(scope="module")
def keras3_bf16(tmp_path_factory) -> Path:
    """The same CNN built by Keras 3 under mixed_bfloat16, saved as ``model.keras``."""
    return built_once(
        tmp_path_factory,
        "keras3bf16",
        lambda d: run_script(_MIXED_SCRIPT, d, "keras3", "mixed_bfloat16", legacy_keras=False),
    )


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def test_mixed_float16_savedmodel_converts_in_every_tflite_mode(mixed16, tmp_path):
    out = tmp_path / "out"
    r = run_edgetool(
        "convert", mixed16 / "model", "--quant", "fp32,fp16,int8,int16x8",
        "--calibration", mixed16 / "calibration.npz", "-o", out,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    said = " ".join((r.stdout + r.stderr).split())
    assert "mixed precision: cast to float32" in said and "computes in float16" in said
    precision = _manifest(out)["source"]["precision"]
    assert precision["dtype"] == "float16" and precision["method"] == "graph"
    assert {"Conv2D", "MatMul"} <= set(precision["ops"]) and 0 < precision["max_abs_diff"] < 0.01
    oracle, x = np.load(mixed16 / "oracle.npz"), np.load(mixed16 / "eval.npz")["x"]
    fp32 = litert_outputs(out / "model_fp32.tflite", x)
    assert np.abs(fp32 - oracle["float32"]).max() < 1e-5  # the float32 twin, to float rounding
    assert np.abs(fp32 - oracle["mixed"]).max() < 0.01  # the model as trained: float16 rounding only
    for mode in ("fp16", "int8", "int16x8"):
        got = litert_outputs(out / f"model_{mode}.tflite", x)
        agreement = float(np.mean(got.argmax(1) == oracle["mixed"].argmax(1)))
        assert agreement >= 0.95, (mode, agreement)


def test_mixed_float16_h5_qat_runs_from_a_float32_rebuild(mixed16, tmp_path):
    out = tmp_path / "out"
    r = run_edgetool(
        "convert", mixed16 / "model.h5", "--quant", "qat", "--calibration", mixed16 / "calibration.npz",
        "--train-data", mixed16 / "train.npz", "--qat-epochs", "1", "-o", out,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr  # was exit 70: tfmot's QuantizeAnnotate on float16 tensors
    oracle, data = np.load(mixed16 / "oracle.npz"), np.load(mixed16 / "eval.npz")
    got = litert_outputs(next(out.glob("*qat.tflite")), data["x"])
    assert float(np.mean(got.argmax(1) == oracle["mixed"].argmax(1))) >= 0.9


def test_eval_reference_is_the_model_as_trained(mixed16, tmp_path):
    out = tmp_path / "out"
    r = run_edgetool(
        "convert", mixed16 / "model", "--quant", "fp32", "--calibration", mixed16 / "calibration.npz", "-o", out
    )
    assert r.returncode == 0, r.stdout + r.stderr
    report = tmp_path / "eval.json"
    r = run_edgetool(
        "eval", out / "model_fp32.tflite", "-r", mixed16 / "model", "-d", mixed16 / "eval.npz", "--json", report
    )
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(report.read_text())
    oracle, y = np.load(mixed16 / "oracle.npz"), np.load(mixed16 / "eval.npz")["y"]
    assert doc["reference"]["accuracy"] == pytest.approx(float(np.mean(oracle["mixed"].argmax(1) == y)), abs=1e-9)
    assert any("computes in float16" in n for n in doc["notes"])


def test_keras3_mixed_bfloat16_file_converts_from_its_float32_recast(keras3_bf16, tmp_path):
    out = tmp_path / "out"
    r = run_edgetool(
        "convert", keras3_bf16 / "model.keras", "--quant", "fp32,int8",
        "--calibration", keras3_bf16 / "calibration.npz", "-o", out,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert _manifest(out)["source"]["precision"]["dtype"] == "bfloat16"
    oracle, x = np.load(keras3_bf16 / "oracle.npz"), np.load(keras3_bf16 / "eval.npz")["x"]
    fp32 = litert_outputs(out / "model_fp32.tflite", x)
    assert np.abs(fp32 - oracle["float32"]).max() < 1e-5
    int8 = litert_outputs(out / "model_int8.tflite", x)
    assert float(np.mean(int8.argmax(1) == oracle["mixed"].argmax(1))) >= 0.95
