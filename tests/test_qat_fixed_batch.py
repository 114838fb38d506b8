"""QAT of a model that converts only at a fixed batch (GroupNormalization: with a free batch TF 2.19 writes a
BROADCAST_TO LiteRT refuses). The PTQ modes were already built again at batch 1; QAT's two conversions (the
fine-tuned model and the int8 PTQ it is compared with) now are too, said and recorded, instead of "Neither QAT nor
plain int8 produced a model"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.builds import run_script
from tests.edgetool_runs import edgetool_in_process
from tests.schema_check import validated

pytestmark = pytest.mark.slow

_GROUPNORM_SCRIPT = """
import sys, numpy as np, tf_keras as keras
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(160, 8, 8, 4)).astype("float32")
y = x[..., :3].mean(axis=(1, 2)).argmax(1)  # learnable: the channel with the largest mean
inp = keras.Input((8, 8, 4))
h = keras.layers.GroupNormalization(groups=2)(keras.layers.Conv2D(8, 3, padding="same")(inp))
h = keras.layers.GlobalAveragePooling2D()(keras.layers.ReLU()(h))
m = keras.Model(inp, keras.layers.Dense(3, activation="softmax")(h))
m.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy")
m.fit(x, y, epochs=20, verbose=0)
m.save(sys.argv[1], save_format="tf")
np.savez(sys.argv[1] + "/calibration.npz", x=x[:32])
np.savez(sys.argv[1] + "/train.npz", x=x, y=y)
"""


@pytest.fixture(scope="module")
def groupnorm_model(tmp_path_factory) -> Path:
    """A trained tf_keras GroupNormalization classifier with calibration.npz and train.npz beside it."""
    out = tmp_path_factory.mktemp("gnqat") / "model"
    run_script(_GROUPNORM_SCRIPT, out)
    return out


def test_qat_of_a_groupnorm_model_is_built_at_batch_1_and_agrees_with_the_savedmodel(groupnorm_model, tmp_path):
    out = tmp_path / "o"
    proc = edgetool_in_process(
        "convert", groupnorm_model, "--quant", "qat", "--train-data", groupnorm_model / "train.npz",
        "--qat-epochs", "1", "-o", out,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    flat = " ".join((proc.stdout + proc.stderr).split())
    assert "the QAT model with a free input batch does not run in LiteRT" in flat and "BROADCAST_TO" in flat, flat
    assert "built again with the input batch fixed to 1 (as --batch 1 does)" in flat
    art = validated(out / "manifest.json", "manifest")["artifacts"][0]
    assert art["quant"] == "qat" and art["fixed_batch"]["batch"] == 1 and "BROADCAST_TO" in art["fixed_batch"]["reason"]
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    x = np.load(groupnorm_model / "train.npz")["x"][:40]
    fn = tf.saved_model.load(str(groupnorm_model)).signatures["serving_default"]
    want = next(iter(fn(tf.constant(x)).values())).numpy().argmax(1)  # the SavedModel itself, in TensorFlow
    runner = Interpreter(model_path=str(out / "model_qat.tflite")).get_signature_runner()
    name = next(iter(runner.get_input_details()))
    assert runner.get_input_details()[name]["shape"][0] == 1  # the file takes one sample at a time
    got = np.array([next(iter(runner(**{name: x[i : i + 1]}).values())).argmax() for i in range(len(x))])
    assert (got == want).mean() >= 0.85, (got == want).mean()
