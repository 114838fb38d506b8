"""``edgetool inspect`` on real models: a Keras-2 SavedModel, a Keras-3 export, plain tf modules, .tflite files."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.core.env import import_tf

runner = CliRunner()

# conv1 3*3*1*16 + bn1 4*16 + conv2 3*3*16*32 + bn2 4*32 + dense1 512*64+64 + probs 64*10+10
DIGITS_PARAMS = 144 + 64 + 4608 + 128 + 32832 + 650
DIGITS_NON_TRAINABLE = 2 * 16 + 2 * 32  # BatchNorm moving mean/variance


def _inspect_json(path) -> dict:
    result = runner.invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _tf():
    return import_tf()


@pytest.fixture(scope="module")
def tflite_files(digits_model, tmp_path_factory):
    """fp32 and dynamic-range (int8 weights) .tflite files converted from the digits SavedModel."""
    tf = _tf()
    out = tmp_path_factory.mktemp("tflite")
    conv = tf.lite.TFLiteConverter.from_saved_model(str(digits_model))
    (out / "fp32.tflite").write_bytes(conv.convert())
    conv = tf.lite.TFLiteConverter.from_saved_model(str(digits_model))
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    (out / "dynamic.tflite").write_bytes(conv.convert())
    return out


@pytest.fixture(scope="module")
def plain_modules(tmp_path_factory):
    """tf.saved_model.save modules: one with a serving signature, one with none."""
    tf = _tf()
    out = tmp_path_factory.mktemp("plain")

    class Softmax(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(tf.ones([64, 10]))

        @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32, name="pixels")])
        def __call__(self, x):
            return tf.nn.softmax(tf.reshape(x, [-1, 64]) @ self.w)

    m = Softmax()
    tf.saved_model.save(m, str(out / "with_sig"), signatures=m.__call__)
    bare = tf.Module()
    bare.v = tf.Variable(tf.zeros([3]))
    tf.saved_model.save(bare, str(out / "no_sig"))
    return out


@pytest.mark.slow
def test_keras2_saved_model(digits_model):
    d = _inspect_json(digits_model)
    assert d["format"] == "saved_model"
    sig = d["signatures"][0]
    assert sig["key"] == "serving_default"
    assert sig["inputs"] == [{"name": "pixels", "dtype": "float32", "shape": [None, 8, 8, 1]}]
    assert sig["outputs"] == [{"name": "probs", "dtype": "float32", "shape": [None, 10]}]
    assert d["parameters"]["total"] == DIGITS_PARAMS
    assert d["parameters"]["non_trainable"] == DIGITS_NON_TRAINABLE
    assert d["parameters"]["by_dtype"] == {"float32": DIGITS_PARAMS}
    assert d["keras"]["flavor"] == "keras2" and d["keras"]["reloadable_as_keras"] is True
    # trained under MirroredStrategy: trainable variables were MirroredVariables (ON_WRITE)
    assert d["distribution"]["variable_synchronization"]["ON_WRITE"] == 10
    assert any("mirrored strategy" in t for t in d["distribution"]["traces"])
    assert d["training"]["strategy"] == "mirrored" and d["training"]["num_replicas"] == 2


@pytest.mark.slow
def test_keras3_export_is_told_apart(keras3_export):
    d = _inspect_json(keras3_export)
    assert d["keras"]["flavor"] == "keras3-export"
    assert d["keras"]["reloadable_as_keras"] is False
    assert "can NOT be reloaded as a Keras model" in d["keras"]["note"]
    keys = [s["key"] for s in d["signatures"]]
    assert keys[0] == "serving_default" and "serve" in keys
    assert d["signatures"][0]["outputs"][0]["shape"] == [None, 10]
    assert d["parameters"]["total"] == 64 * 32 + 32 + 32 * 10 + 10
    assert d["distribution"]["variable_synchronization"] == {"AUTO": 4}
    assert d["training"] is None


@pytest.mark.slow
def test_human_output_tells_flavors_apart(digits_model, keras3_export):
    k2 = runner.invoke(app, ["inspect", str(digits_model)])
    k3 = runner.invoke(app, ["inspect", str(keras3_export)])
    assert k2.exit_code == 0 and k3.exit_code == 0
    assert "keras2" in k2.stdout and "reloadable as Keras" in k2.stdout and "yes" in k2.stdout
    assert "keras3-export" in k3.stdout and "NOT be reloaded" in " ".join(k3.stdout.split())
    for out in (k2.stdout, k3.stdout):
        assert "serving_default" in out and "[None, 8, 8, 1]" in out


@pytest.mark.slow
def test_plain_tf_module(plain_modules):
    d = _inspect_json(plain_modules / "with_sig")
    assert d["keras"] == {**d["keras"], "flavor": "tf-saved-model", "reloadable_as_keras": False}
    assert d["parameters"]["total"] == 640
    assert d["signatures"][0]["inputs"][0]["shape"] == [None, 8, 8, 1]


@pytest.mark.slow
def test_tflite_fp32_and_dynamic_range(tflite_files):
    fp32 = _inspect_json(tflite_files / "fp32.tflite")
    dyn = _inspect_json(tflite_files / "dynamic.tflite")
    for d in (fp32, dyn):
        assert d["format"] == "tflite" and d["keras"] is None and d["distribution"] is None
        sig = d["signatures"][0]
        assert sig["key"] == "serving_default"
        assert sig["inputs"][0]["dtype"] == "float32" and sig["inputs"][0]["shape"] == [None, 8, 8, 1]
        assert sig["outputs"][0]["shape"] == [None, 10]
        assert "CONV_2D" in d["tflite"]["ops"]
    # BatchNorm (and the 1/255 rescale) fold into the convs: kernels + one bias per conv, the two dense layers,
    # and Flatten's int32 target shape [2]; the SavedModel's 96 moving stats and 96 gamma/beta are gone.
    folded = 144 + 16 + 4608 + 32 + 32832 + 650
    assert fp32["parameters"]["by_dtype"] == {"float32": folded, "int32": 2}
    # dynamic range: kernels with >= 1024 elements (conv2, dense1) become int8; small ones and biases stay float32
    assert dyn["parameters"]["by_dtype"]["int8"] == 4608 + 32768
    assert dyn["parameters"]["by_dtype"]["float32"] == folded - 4608 - 32768
    assert dyn["size_bytes"] < fp32["size_bytes"] / 2


@pytest.mark.slow
def test_tflite_human_output(tflite_files):
    result = runner.invoke(app, ["inspect", str(tflite_files / "dynamic.tflite")])
    assert result.exit_code == 0, result.output
    assert "int8" in result.stdout and "tflite ops" in result.stdout


# --- errors: exit 2, one clear message ------------------------------------------------------------------------------


def test_missing_path(tmp_path):
    result = runner.invoke(app, ["inspect", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "nothing is there" in result.output


def test_dir_that_is_not_a_saved_model(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    result = runner.invoke(app, ["inspect", str(tmp_path)])
    assert result.exit_code == 2
    assert "Expected a SavedModel directory (containing saved_model.pb)" in result.output


@pytest.mark.parametrize("content", [b"this is not a flatbuffer", b"", b"\x1c\x00\x00\x00TFL3" + b"\xff" * 40])
def test_invalid_tflite_file(tmp_path, content):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(content)
    result = runner.invoke(app, ["inspect", str(bad)])
    assert result.exit_code == 2
    assert "error:" in result.output and str(bad) in " ".join(result.output.split())
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_saved_model_without_serving_signature(plain_modules):
    result = runner.invoke(app, ["inspect", str(plain_modules / "no_sig")])
    assert result.exit_code == 2
    assert "Expected a 'serving_default' signature" in result.output
    assert "no signatures" in result.output
