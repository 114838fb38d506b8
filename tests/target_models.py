"""Small real models that stress deployment targets (imported as fixtures by test_micro and test_check).

- ``gelu``: a Dense with GELU — a builtin TFLite op that TFLite Micro has no kernel for.
- ``lstm``: a Keras LSTM over the digit's 8 rows (static batch 1, so the converter fuses it into
  UNIDIRECTIONAL_SEQUENCE_LSTM).
- ``flex``: uses tf.math.erf, which the TFLite builtin set lacks (converts only with --allow-select-tf-ops).
Each is trained for 3 epochs on bundled digits and saved with calibration.npz and eval.npz.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builds import built_once, run_script

SCRIPT = """
import sys, numpy as np, tf_keras as keras, tensorflow as tf
from edge_tool.training.data import load_digits_split
keras.utils.set_random_seed(0)
s = load_digits_split(0)
kind, out = sys.argv[1], sys.argv[2]
xtr, xev = s.x_train, s.x_eval
if kind == "lstm":
    xtr, xev = xtr.reshape(-1, 8, 8), xev.reshape(-1, 8, 8)
inp = keras.Input(xtr.shape[1:], name="pixels", batch_size=1 if kind == "lstm" else None)
x = keras.layers.Rescaling(1 / 255)(inp)
if kind == "gelu":
    x = keras.layers.Dense(32, activation="gelu")(keras.layers.Flatten()(x))
elif kind == "lstm":
    x = keras.layers.LSTM(16)(x)
elif kind == "flex":
    x = keras.layers.Dense(16, activation="relu")(keras.layers.Flatten()(x))
    x = keras.layers.Lambda(lambda t: tf.concat([t, tf.math.erf(t)], -1))(x)
m = keras.Model(inp, keras.layers.Dense(10, activation="softmax", name="probs")(x))
m.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
m.fit(xtr, s.y_train, epochs=3, batch_size=32, verbose=0)
m.save(out, save_format="tf")
np.savez(out + "/calibration.npz", x=xtr[:100], y=s.y_train[:100])
np.savez(out + "/eval.npz", x=xev, y=s.y_eval)
"""


def build(kind: str, out: Path) -> Path:
    """Train and save the ``kind`` model at ``out``."""
    run_script(SCRIPT, kind, out)
    return out


@pytest.fixture(scope="session")
def gelu_model(tmp_path_factory) -> Path:
    """Digits MLP with a GELU layer (TFLM has no GELU kernel)."""
    return built_once(tmp_path_factory, "gelu", lambda d: build("gelu", d / "gelu")) / "gelu"


@pytest.fixture(scope="session")
def lstm_model(tmp_path_factory) -> Path:
    """Digits rows → LSTM(16) → softmax, batch 1."""
    return built_once(tmp_path_factory, "lstm", lambda d: build("lstm", d / "lstm")) / "lstm"


@pytest.fixture(scope="session")
def flex_model(tmp_path_factory) -> Path:
    """Digits MLP using tf.math.erf (a Flex op)."""
    return built_once(tmp_path_factory, "flex", lambda d: build("flex", d / "flex")) / "flex"
