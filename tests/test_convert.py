"""edgetool convert: every mode converts, loads in LiteRT and predicts; int8 is really full-integer; errors."""

from __future__ import annotations

import importlib.metadata
import json

import numpy as np
import pytest

from edge_tool.convert.modes import every_mode
from edge_tool.models.signatures import load_serving_fn
from edge_tool.nodejs.tfjs_session import run_tfjs
from edge_tool.parsers.tflite_model import summarize_tflite
from tests.edgetool_runs import edgetool_in_process
from tests.oracles.litert_outputs import litert_outputs
from tests.schema_check import validated

TFLITE_MODES = every_mode()  # every mode that needs no training data (what --format all builds)
# size vs fp32 for a weight-dominated model: fp16 halves, 8-bit weights quarter (+ scales and graph).
SIZE_RATIO = {"fp16": (0.45, 0.60), "dynamic": (0.22, 0.35), "int8": (0.22, 0.35), "int16x8": (0.22, 0.36)}


def predict_tflite(path, x: np.ndarray) -> np.ndarray:
    """Run a .tflite one sample at a time, quantizing/dequantizing integer I/O with the model's own params."""
    return litert_outputs(path, x)


def reference_predict(saved_model, x: np.ndarray) -> np.ndarray:
    _, fn, info = load_serving_fn(saved_model)
    import tensorflow as tf

    out = fn(**{info.inputs[0].name: tf.constant(x)})
    return out[info.outputs[0].name].numpy()


@pytest.fixture(scope="module")
def converted(digits_model, tmp_path_factory):
    """Every TFLite mode plus TFJS from the mirrored-trained digits model, in one run."""
    out = tmp_path_factory.mktemp("conv") / "out"
    proc = edgetool_in_process("convert", digits_model, "--format", "all", "-o", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_every_mode_written_with_manifest(converted, digits_model):
    manifest = validated(converted / "manifest.json", "manifest")
    assert {a["quant"] for a in manifest["artifacts"] if a["format"] == "tflite"} == set(TFLITE_MODES)
    assert manifest["source"]["flavor"] == "keras2"
    assert len(manifest["source"]["sha256"]) == 64
    assert manifest["calibration"]["n_selected"] == 200
    assert manifest["calibration"]["path"].endswith("calibration.npz")
    assert manifest["versions"]["tensorflow"] == importlib.metadata.version("tensorflow")  # the one that converted
    for art in manifest["artifacts"]:
        assert (converted / art["path"]).exists()
        assert art["size_bytes"] > 0
    assert (converted / "tfjs" / "model.json").is_file()
    assert sorted(p.name for p in converted.glob("*.tflite")) == sorted(f"model_{m}.tflite" for m in TFLITE_MODES)


@pytest.mark.parametrize("mode", TFLITE_MODES)
def test_mode_loads_and_predicts_close_to_tf(converted, digits_model, mode):
    data = np.load(digits_model / "eval.npz")
    x, y = data["x"], data["y"]
    ref = reference_predict(digits_model, x)
    got = predict_tflite(converted / f"model_{mode}.tflite", x)
    assert got.shape == ref.shape == (len(x), 10)
    agreement = float(np.mean(got.argmax(1) == ref.argmax(1)))
    acc_ref, acc = float(np.mean(ref.argmax(1) == y)), float(np.mean(got.argmax(1) == y))
    if mode in ("fp32", "fp16"):
        assert np.max(np.abs(got - ref)) < (1e-4 if mode == "fp32" else 5e-3)
    else:
        # 8-bit quantization: top-1 within 1.5 points of the float model on 360 held-out digits.
        assert acc >= acc_ref - 0.015, (mode, acc, acc_ref)
        assert agreement >= 0.97, (mode, agreement)


@pytest.mark.parametrize("mode", sorted(SIZE_RATIO))
def test_sizes_shrink_as_expected(converted, mode):
    fp32 = (converted / "model_fp32.tflite").stat().st_size
    size = (converted / f"model_{mode}.tflite").stat().st_size
    lo, hi = SIZE_RATIO[mode]
    assert lo <= size / fp32 <= hi, (mode, size / fp32)


def test_int8_is_full_integer(converted):
    summary = summarize_tflite((converted / "model_int8.tflite").read_bytes())
    acts = dict(summary.activation_dtypes)
    # Only the float model I/O and its QUANTIZE/DEQUANTIZE boundary stay float32.
    assert acts.pop("float32") == 2
    assert set(acts) == {"int8"}
    assert set(summary.weight_dtypes) <= {"int8", "int32"}
    assert summary.ops["QUANTIZE"] == 1 and summary.ops["DEQUANTIZE"] == 1


def test_int16x8_has_int16_activations(converted):
    summary = summarize_tflite((converted / "model_int16x8.tflite").read_bytes())
    acts = dict(summary.activation_dtypes)
    assert acts.pop("float32") == 2 and set(acts) == {"int16"}
    assert "int8" in summary.weight_dtypes


def test_dynamic_and_fp16_weight_types(converted):
    dyn = summarize_tflite((converted / "model_dynamic.tflite").read_bytes())
    assert "int8" in dyn.weight_dtypes and set(dyn.activation_dtypes) == {"float32"}
    fp16 = summarize_tflite((converted / "model_fp16.tflite").read_bytes())
    assert "float16" in fp16.weight_dtypes and "DEQUANTIZE" in fp16.ops


@pytest.mark.parametrize("io_type", ["int8", "uint8"])
def test_integer_io(digits_model, tmp_path, io_type):
    out = tmp_path / "out"
    proc = edgetool_in_process(
        "convert", digits_model, "--quant", "int8", "--io-type", io_type, "--samples", "64", "-o", out
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    [tfl] = list(out.glob("*.tflite"))
    summary = summarize_tflite(tfl.read_bytes())
    assert summary.input_dtypes == (io_type,) and summary.output_dtypes == (io_type,)
    assert "float32" not in summary.activation_dtypes
    data = np.load(digits_model / "eval.npz")
    got = predict_tflite(tfl, data["x"][:100])
    assert np.mean(got.argmax(1) == data["y"][:100]) >= 0.9


def test_uint8_input_model(uint8_model, tmp_path):
    out = tmp_path / "out"
    proc = edgetool_in_process("convert", uint8_model, "--quant", "fp32,int8", "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    manifest = validated(out / "manifest.json", "manifest")
    assert manifest["calibration"]["inputs"]["image"]["dtype"] == "uint8"
    data = np.load(uint8_model / "eval.npz")
    ref = reference_predict(uint8_model, data["x"])
    for mode in ("fp32", "int8"):
        tfl = out / f"model_{mode}.tflite"
        assert summarize_tflite(tfl.read_bytes()).input_dtypes == ("uint8",)
        got = predict_tflite(tfl, data["x"])
        assert np.mean(got.argmax(1) == ref.argmax(1)) >= 0.97


def test_keras3_export_converts(keras3_export, tmp_path):
    out = tmp_path / "out"
    calib = tmp_path / "cal.npz"
    np.savez(calib, x=np.random.default_rng(0).uniform(0, 255, (50, 8, 8, 1)).astype("float32"))
    proc = edgetool_in_process("convert", keras3_export, "--quant", "fp32,int8", "--calibration", calib, "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    manifest = validated(out / "manifest.json", "manifest")
    assert manifest["source"]["flavor"] == "keras3-export"
    assert len(list(out.glob("*.tflite"))) == 2


def test_keras_h5_file_converts(tmp_path):
    import tf_keras as keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    h5 = tmp_path / "tiny.h5"
    model.save(h5)
    out = tmp_path / "out"
    proc = edgetool_in_process("convert", h5, "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [tfl] = list(out.glob("*.tflite"))
    assert tfl.name == "tiny_fp32.tflite"
    x = np.random.default_rng(1).normal(size=(5, 4)).astype("float32")
    np.testing.assert_allclose(predict_tflite(tfl, x), model.predict(x, verbose=0), atol=1e-5)


# ---- errors: exit 2, one clear message, nothing written ----


def _fails(args, expected: str, out):
    proc = edgetool_in_process("convert", *args, "-o", out)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert expected in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists() or not any(out.iterdir())
    return proc.stderr


def test_missing_model(tmp_path):
    _fails([tmp_path / "nope"], "but nothing is there", tmp_path / "out")


def test_not_a_saved_model(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "x.txt").write_text("hi")
    _fails([tmp_path / "dir"], "Expected a SavedModel directory (containing saved_model.pb)", tmp_path / "out")


def test_bad_quant_value(digits_model, tmp_path):
    _fails([digits_model, "--quant", "int4"], "Invalid value for '--quant'", tmp_path / "out")


def test_int8_without_calibration(keras3_export, tmp_path):
    _fails([keras3_export, "--quant", "int8"], "needs representative data", tmp_path / "out")


def test_calibration_shape_mismatch(digits_model, tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros((10, 28, 28, 1), np.float32))
    err = _fails(
        [digits_model, "--quant", "int8", "--calibration", bad], "expected shape (any, 8, 8, 1)", tmp_path / "out"
    )
    assert "found (10, 28, 28, 1)" in err


def test_io_type_not_allowed_for_mode(digits_model, tmp_path):
    _fails(
        [digits_model, "--quant", "fp16", "--io-type", "int8"],
        "--io-type int8 is not possible with --quant fp16",
        tmp_path / "out",
    )


def test_qat_needs_train_data(digits_model, tmp_path):
    _fails([digits_model, "--quant", "qat"], "--quant qat needs --train-data", tmp_path / "out")


def test_existing_output_needs_force(digits_model, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("user data")
    proc = edgetool_in_process("convert", digits_model, "-o", out)
    assert proc.returncode == 2 and "--force" in proc.stderr
    assert (out / "keep.txt").read_text() == "user data"
    proc = edgetool_in_process("convert", digits_model, "-o", out, "--force")  # not edgetool's: --force refuses too
    assert proc.returncode == 2 and ".edgetool-output" in proc.stderr
    assert (out / "keep.txt").read_text() == "user data"
    (out / "keep.txt").unlink()
    proc = edgetool_in_process("convert", digits_model, "-o", out)  # empty dir: no --force needed
    assert proc.returncode == 0, proc.stderr[-2000:]
    (out / "stale.txt").write_text("left in edgetool's own output")
    proc = edgetool_in_process("convert", digits_model, "-o", out, "--force")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not (out / "stale.txt").exists() and (out / "model_fp32.tflite").is_file()
    assert (out / ".edgetool-output").is_file()


@pytest.fixture(scope="module")
def flex_model(tmp_path_factory):
    """A SavedModel using tf.math.cumprod, which the TFLite builtin op set lacks."""
    import tensorflow as tf

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def serve(self, x):
            return {"y": tf.math.cumprod(x, axis=1)}

    path = tmp_path_factory.mktemp("flex") / "m"
    m = M()
    tf.saved_model.save(m, str(path), signatures={"serving_default": m.serve})
    return path


def test_flex_ops_named_and_refused(flex_model, tmp_path):
    err = _fails([flex_model], "cannot express: Cumprod", tmp_path / "out")
    assert "--allow-select-tf-ops" in err


def test_flex_ops_allowed_with_flag(flex_model, tmp_path):
    out = tmp_path / "out"
    proc = edgetool_in_process("convert", flex_model, "--allow-select-tf-ops", "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Flex delegate" in proc.stderr
    manifest = validated(out / "manifest.json", "manifest")
    assert manifest["artifacts"][0]["tensors"]["flex_ops"] == ["Cumprod"]


@pytest.mark.slow
def test_tfjs_graph_model_predicts_like_tf_in_node(converted, digits_model):
    model_json = converted / "tfjs" / "model.json"
    doc = json.loads(model_json.read_text())
    assert doc["format"] == "graph-model"
    assert doc["weightsManifest"][0]["paths"] == ["group1-shard1of1.bin"]
    x = np.load(digits_model / "eval.npz")["x"][:64]
    run = run_tfjs(model_json, {"pixels": x}, warmup=0, runs=0)
    np.testing.assert_allclose(run.outputs["probs"], reference_predict(digits_model, x), atol=1e-4)


@pytest.mark.slow
def test_tfjs_weight_compression(digits_model, tmp_path):
    out = tmp_path / "out"
    proc = edgetool_in_process("convert", digits_model, "--format", "tfjs", "--tfjs-quant", "float16", "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not list(out.glob("*.tflite"))
    manifest = validated(out / "manifest.json", "manifest")
    [art] = manifest["artifacts"]
    assert art["format"] == "tfjs" and art["quant"] == "float16"
    shards = sum(f["size_bytes"] for name, f in art["files"].items() if name.endswith(".bin"))
    assert shards < 0.55 * 4 * 38_426  # float16 halves the float32 weights (38,426 parameters)
    x = np.load(digits_model / "eval.npz")["x"][:64]
    run = run_tfjs(out / "tfjs" / "model.json", {"pixels": x}, warmup=0, runs=0)
    np.testing.assert_allclose(run.outputs["probs"], reference_predict(digits_model, x), atol=5e-3)
