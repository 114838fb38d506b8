"""Models that carry code, built once per session (tests/hostile/test_hostile_model_code.py).

Every piece of hostile code writes the file ``RAN`` (``MARKER``) in the directory the process runs in: the harness
runs each case in its own root, so a run that executes the code leaves ``root/RAN`` behind, which the case then
sees twice (the marker check, and the harness's "nothing changed" snapshot).

    lambda_sm/        tf_keras SavedModel (keras_metadata.pb) whose Lambda layer 'evil_lambda' writes RAN
    lambda.h5         the same model as HDF5 (model_config attr)
    lambda.keras      the same model as a tf_keras .keras zip (config.json)
    write_sm/         tf.Module whose serving signature calls tf.io.write_file('RAN', ...)
    pyfunc_sm/        tf.Module whose serving signature runs tf.py_function writing RAN
    save_sm/          tf.Module whose serving signature calls raw SaveV2 (a checkpoint op outside the saver)
    clean_sm/         the same tf.Module without any of that (the reference for eval cases)
    clean.tflite      clean_sm converted; flex_write.tflite: write_sm converted with select TF ops (FlexWriteFile)
    clean_bn_lstm.h5 / clean_bn_lstm.keras / clean_bn_lstm_sm/   conv + BatchNorm + LSTM, no code (false positives)
    table_sm/         a lookup table filled from a vocabulary file in its own assets/ (not flagged)
    table_hostile_sm/ the same, whose signature re-fills the table from /etc/hostname (flagged)
    tf1_sm/           a TF1 SavedModel (graph-mode saver: save/SaveV2, save/RestoreV2 in the graph itself)
    data.npz          x [32, 4] float32, y [32] labels in 0..2
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.edgetool_runs import REPO

MARKER = "RAN"

_BUILD = r"""
import os, sys, numpy as np, tensorflow as tf, tf_keras as keras
out = sys.argv[1]
os.chdir(out)
ns = {}
exec("f = lambda x: (open('RAN', 'w').write('lambda ran'), x)[1]", ns)
inp = keras.Input((4,), name="x")
h = keras.layers.Dense(3, name="d")(inp)
y = keras.layers.Lambda(ns["f"], name="evil_lambda")(h)
m = keras.Model(inp, y)
m.save("lambda_sm", save_format="tf")
m.save("lambda.h5")
m.save("lambda.keras")

def module(body):
    class M(tf.Module):
        def __init__(self):
            self.w = tf.Variable(np.random.default_rng(0).normal(size=(4, 3)).astype("float32"))
        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def serve(self, x):
            return {"y": tf.nn.softmax(tf.matmul(body(x), self.w))}
    return M()

def write(x):
    tf.io.write_file("RAN", tf.strings.as_string(tf.reduce_sum(x)))
    return x

def pyfunc(x):
    y = tf.py_function(lambda t: (open("RAN", "w").write("py_function ran"), t)[1], [x], tf.float32)
    y.set_shape([None, 4])
    return y

def save(x):
    tf.raw_ops.SaveV2(prefix="RAN", tensor_names=["x"], shape_and_slices=[""], tensors=[x])
    return x

for name, body in {"write_sm": write, "pyfunc_sm": pyfunc, "save_sm": save, "clean_sm": lambda x: x}.items():
    mod = module(body)
    tf.saved_model.save(mod, name, signatures={"serving_default": mod.serve})
open("clean.tflite", "wb").write(tf.lite.TFLiteConverter.from_saved_model("clean_sm").convert())
conv = tf.lite.TFLiteConverter.from_saved_model("write_sm")
conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS]
open("flex_write.tflite", "wb").write(conv.convert())

seq = keras.Input((8, 8, 1), name="image")
z = keras.layers.Conv2D(4, 3, padding="same")(seq)
z = keras.layers.BatchNormalization()(z)
z = keras.layers.ReLU(6.0)(z)
z = keras.layers.Reshape((8, 32))(z)
z = keras.layers.LSTM(5)(z)
clean = keras.Model(seq, keras.layers.Dense(3, activation="softmax")(z))
clean.save("clean_bn_lstm_sm", save_format="tf")
clean.save("clean_bn_lstm.h5")
clean.save("clean_bn_lstm.keras")

with tf.Graph().as_default() as g, tf.compat.v1.Session(graph=g) as sess:
    x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
    w = tf.compat.v1.get_variable("w", initializer=tf.ones([4, 3]))
    sess.run(tf.compat.v1.global_variables_initializer())
    tf.compat.v1.saved_model.simple_save(sess, "tf1_sm", {"x": x}, {"y": tf.matmul(x, w)})

open("vocab.txt", "w").write("a\nb\nc\n")
class Table(tf.Module):
    def __init__(self, hostile):
        init = tf.lookup.TextFileInitializer("vocab.txt", tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
                                             tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER)
        self.table, self.hostile = tf.lookup.StaticHashTable(init, -1), hostile
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="word")])
    def serve(self, word):
        if self.hostile:  # re-fill the table from a path of the model's choosing
            tf.raw_ops.InitializeTableFromTextFileV2(table_handle=self.table.resource_handle, filename="/etc/hostname",
                                                     key_index=-2, value_index=-1)
        return {"id": self.table.lookup(word)}
for name, hostile in {"table_sm": False, "table_hostile_sm": True}.items():
    t = Table(hostile)
    tf.saved_model.save(t, name, signatures={"serving_default": t.serve})
os.remove("vocab.txt")

rng = np.random.default_rng(1)
np.savez("data.npz", x=rng.normal(size=(32, 4)).astype("float32"), y=rng.integers(0, 3, 32))
os.remove("RAN")  # building the functional model called the Lambda once
"""


@pytest.fixture(scope="session")
def code_models(tmp_path_factory) -> Path:
    """The directory holding the models of the module docstring."""
    out = tmp_path_factory.mktemp("model-code")
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", _BUILD, str(out)], capture_output=True, text=True, env=env, cwd=REPO, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not (out / MARKER).exists()
    return out


@pytest.fixture
def code_root(tmp_path, code_models) -> Path:
    """A fresh case directory holding copies of every model in ``code_models``."""
    root = tmp_path / "case"
    shutil.copytree(code_models, root)
    return root
