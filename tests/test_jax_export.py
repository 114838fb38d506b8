"""A Keras 3 model trained on the JAX backend: its model.export() SavedModel (XlaCallModule ops, with the Dropout
seed state the TFLite converter cannot take) is refused saying it is a JAX export and naming the way out, and that way
out (the model's .keras file, which edgetool exports on the TensorFlow backend) converts.

Runs where jax 0.5.x is installed (``pip install jax==0.5.3 jaxlib==0.5.3``: the XlaCallModule serialization TensorFlow
2.19 reads; 0.10 writes one it does not). jax is not in the test extra: with jax installed, TensorFlow imports it in
``tensorflow.lite.python.util`` on every ``import tensorflow`` (about 2 s more in each of the suite's TF processes)."""

from __future__ import annotations

import json

import pytest

from tests.builds import run_script
from tests.edgetool_runs import edgetool_in_process

pytest.importorskip("jax")
pytestmark = pytest.mark.slow

JAX_TRAINED = """
import os, sys
os.environ["KERAS_BACKEND"] = "jax"
import numpy as np, keras
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).random((64, 16, 16, 3)).astype("float32")
y = (x.mean(axis=(1, 2, 3)) > 0.5).astype("int64")
i = keras.Input((16, 16, 3))
h = keras.layers.Conv2D(8, 3, padding="same")(i)
h = keras.layers.Activation("relu")(keras.layers.BatchNormalization()(h))
h = keras.layers.Dropout(0.2)(keras.layers.GlobalAveragePooling2D()(h))
m = keras.Model(i, keras.layers.Dense(2, activation="softmax")(h))
m.compile("adam", "sparse_categorical_crossentropy")
m.fit(x, y, epochs=1, verbose=0)
m.export(sys.argv[1] + "/exported")
m.save(sys.argv[1] + "/model.keras")
"""


def test_a_jax_export_is_named_and_its_way_out_converts(tmp_path):
    run_script(JAX_TRAINED, tmp_path, legacy_keras=False)
    proc = edgetool_in_process("convert", tmp_path / "exported", "-o", tmp_path / "a")
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2, said
    assert "is a JAX export" in said and "XlaCallModule" in said and ".keras file" in said
    assert "pass --batch 1" not in said  # the old hint, which fails the same way
    proc = edgetool_in_process("convert", tmp_path / "exported", "--format", "tfjs", "-o", tmp_path / "t")
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2 and "is a JAX export" in said and "no kernel for XlaCallModule" in said, said
    proc = edgetool_in_process("convert", tmp_path / "model.keras", "-o", tmp_path / "b")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    entry = json.loads((tmp_path / "b" / "manifest.json").read_text())["artifacts"][0]
    assert entry["self_check"]["ok"]  # the TensorFlow-backend export computes what the Keras model computes
