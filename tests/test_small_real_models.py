"""Issue 42's smaller items on models built as their users build them: a candidate exactly at --max-drop, a binary
sigmoid head with its two-line labels file, and a float64 signature checked for TFLite Micro."""

from __future__ import annotations

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
