"""Issue 42's smaller items on models built as their users build them: a candidate exactly at --max-drop, a binary
sigmoid head with its two-line labels file, and a float64 signature checked for TFLite Micro."""

from __future__ import annotations

import json

import pytest

from edge_tool.evaluate.budgets import drop_within
from edge_tool.metadata.reader import read_metadata
from tests.builds import run_script
from tests.edgetool_runs import edgetool_in_process

BINARY = """
import sys, numpy as np, tf_keras as keras
keras.utils.set_random_seed(0)
m = keras.Sequential([keras.layers.Input((8,)), keras.layers.Dense(16, activation="relu"),
                      keras.layers.Dense(1, activation="sigmoid")])
m.save(sys.argv[1], save_format="tf")
open(sys.argv[1] + "/labels.txt", "w").write("cat\\ndog\\n")
"""

FLOAT64 = """
import sys, numpy as np, tensorflow as tf
class M(tf.Module):
    def __init__(self):
        self.w = tf.Variable(tf.random.stateless_normal([8, 4], seed=(0, 1)))
    @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float64)])
    def serve(self, x):
        return {"y": tf.nn.softmax(tf.matmul(tf.cast(x, tf.float32), self.w))}
m = M()
tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.serve})
np.savez(sys.argv[1] + "/calibration.npz", x=np.random.default_rng(0).random((40, 8)))
"""


def test_a_drop_exactly_at_the_budget_is_within_it():
    assert 0.97 - 0.95 > 0.02  # what float subtraction gives: 0.020000000000000018
    assert drop_within(0.97 - 0.95, 0.02)
    assert not drop_within(0.0201, 0.02)


@pytest.mark.slow
def test_a_binary_sigmoid_head_keeps_its_two_labels(tmp_path):
    run_script(BINARY, tmp_path / "model")
    proc = edgetool_in_process("convert", tmp_path / "model", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = read_metadata((tmp_path / "out" / "model_fp32.tflite").read_bytes())
    assert meta.labels == ("cat", "dog")
    assert "above 0.5 is 'dog'" in meta.outputs[0].description


@pytest.mark.slow
def test_tflm_names_the_float64_signature(tmp_path):
    run_script(FLOAT64, tmp_path / "model", legacy_keras=False)
    proc = edgetool_in_process("check", tmp_path / "model", "--target", "tflm")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "signature takes float64" in proc.stdout and "float32 inputs" in proc.stdout


STRING_INPUT = """
import sys, numpy as np, tf_keras as keras, tensorflow as tf
keras.utils.set_random_seed(0)
texts = np.array(["good movie", "bad film", "great plot", "awful acting"] * 8)
y = np.array([1, 0, 1, 0] * 8)
tv = keras.layers.TextVectorization(max_tokens=50, output_sequence_length=4)
tv.adapt(texts)
inp = keras.Input((1,), dtype=tf.string)
x = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(50, 8)(tv(inp)))
m = keras.Model(inp, keras.layers.Dense(2, activation="softmax")(x))
m.compile("adam", "sparse_categorical_crossentropy")
m.fit(texts[:, None], y, epochs=2, verbose=0)
m.save(sys.argv[1], save_format="tf")
np.savez(sys.argv[1] + "_data.npz", x=texts[:, None], y=y)
"""


@pytest.mark.slow
def test_a_string_input_models_way_out_works_as_written(tmp_path):
    run_script(STRING_INPUT, tmp_path / "text")
    data = f"{tmp_path / 'text'}_data.npz"
    proc = edgetool_in_process(
        "convert", tmp_path / "text", "--quant", "int8", "--calibration", data, "-o", tmp_path / "a"
    )
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2 and "Use --quant fp32, fp16 or dynamic with --allow-select-tf-ops" in said, said
    # the way out, as the message words it, with the user's --calibration still on the command line
    args = ("--quant", "fp32", "--allow-select-tf-ops", "--calibration", data, "-o", tmp_path / "b")
    proc = edgetool_in_process("convert", tmp_path / "text", *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = tmp_path / "eval.json"
    proc = edgetool_in_process(
        "eval",
        tmp_path / "b" / "text_fp32.tflite",
        "-r",
        tmp_path / "text",
        "-d",
        data,
        "--runs",
        "3",
        "--json",
        report,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr  # eval reads the text of the npz
    assert json.loads(report.read_text())["results"][0]["top1_agreement"] == 1.0
