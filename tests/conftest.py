"""Shared fixtures: real models trained by edgetool itself, kept tiny so the suite stays fast.

Pytest injects these by name; no test imports this module. How a test runs edgetool is tests/edgetool_runs.py;
building once per run is tests/builds.py; the LiteRT oracle is tests/oracles/litert_outputs.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builds import built_once, run_script
from tests.edgetool_runs import edgetool_in_process, run_edgetool
from tests.lm_models import BUILD as LM_BUILD


def pytest_collection_modifyitems(items: list) -> None:
    """The support-matrix rows (tests/test_stack_*.py) first: pytest-xdist hands files out in this order, and a row's
    first minutes are pip installing a venv (waiting on disk, not the CPU), which then overlaps the rest of the suite."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/test_stack_"))


@pytest.fixture(scope="session")
def digits_model(tmp_path_factory) -> Path:
    """Keras-2 SavedModel of the digits CNN trained under MirroredStrategy (2 CPU replicas), with sidecars."""

    def build(where: Path) -> None:
        proc = run_edgetool(
            "train", "--strategy", "mirrored", "--replicas", "2", "--epochs", "8", "-o", where / "model"
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr

    return built_once(tmp_path_factory, "digits", build) / "model"


@pytest.fixture(scope="session")
def digits_demo_site(digits_model, tmp_path_factory) -> Path:
    """``edgetool demo`` of digits_model (the TFJS site), built once for the browser tests that only serve it."""

    def build(where: Path) -> None:
        proc = edgetool_in_process("demo", digits_model, "-o", where / "site")
        assert proc.returncode == 0, proc.stdout + proc.stderr

    return built_once(tmp_path_factory, "digits-site", build) / "site"


@pytest.fixture(scope="session")
def digits_litert_site(digits_model, tmp_path_factory) -> Path:
    """``edgetool demo --litert`` of digits_model, built once for the browser tests that only serve it."""

    def build(where: Path) -> None:
        proc = edgetool_in_process("demo", digits_model, "-o", where / "site", "--litert")
        assert proc.returncode == 0, proc.stdout + proc.stderr

    return built_once(tmp_path_factory, "digits-litert-site", build) / "site"


_KERAS3_EXPORT_SCRIPT = """
import sys, numpy as np, keras
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Rescaling(1 / 255), keras.layers.Flatten(),
                          keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10, activation="softmax")])
from sklearn.datasets import load_digits
d = load_digits()
x = (d.images * (255 / 16)).astype("float32").reshape(-1, 8, 8, 1)
model.compile("adam", "sparse_categorical_crossentropy")
model.fit(x, d.target, epochs=3, verbose=0)
model.export(sys.argv[1])
"""

_UINT8_MODEL_SCRIPT = """
import sys, numpy as np, tf_keras as keras
from edge_tool.training.data import load_digits_split
keras.utils.set_random_seed(0)
s = load_digits_split(0)
inp = keras.Input((8, 8, 1), dtype="uint8", name="image")
x = keras.layers.Rescaling(1 / 255)(inp)  # Rescaling casts uint8 to float32 itself
x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(x)
x = keras.layers.Flatten()(x)
out = keras.layers.Dense(10, activation="softmax")(x)
model = keras.Model(inp, out)
model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(s.x_train.astype("uint8"), s.y_train, epochs=6, batch_size=32, verbose=0)
model.save(sys.argv[1], save_format="tf")
np.savez(sys.argv[1] + "/calibration.npz", x=s.x_train[:100].astype("uint8"), y=s.y_train[:100])
np.savez(sys.argv[1] + "/eval.npz", x=s.x_eval.astype("uint8"), y=s.y_eval)
"""


@pytest.fixture(scope="session")
def keras3_export(tmp_path_factory) -> Path:
    """A tiny Keras-3 model (float32 [None,8,8,1] → softmax 10) exported with ``model.export()``."""
    return (
        built_once(
            tmp_path_factory, "keras3", lambda d: run_script(_KERAS3_EXPORT_SCRIPT, d / "export", legacy_keras=False)
        )
        / "export"
    )


@pytest.fixture(scope="session")
def uint8_model(tmp_path_factory) -> Path:
    """A tiny Keras-2 SavedModel whose signature takes uint8 pixels (with uint8 calibration.npz / eval.npz)."""
    return built_once(tmp_path_factory, "uint8", lambda d: run_script(_UINT8_MODEL_SCRIPT, d / "model")) / "model"


_FLAT_MODEL_SCRIPT = """
import sys, numpy as np, tensorflow as tf
class Flat(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.random.default_rng(0).normal(size=(4, 3)).astype("float32"))
        self.b = tf.Variable(np.array([0.1, -0.2, 0.05], dtype="float32"))
    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="features")])
    def serve(self, features):
        return {"scores": tf.nn.softmax(tf.matmul(features, self.w) + self.b)}
m = Flat()
tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.serve})
open(sys.argv[1] + "/labels.txt", "w").write("setosa\\nversicolor\\nvirginica\\n")
x = np.random.default_rng(1).normal(size=(16, 4)).astype("float32")
np.savez(sys.argv[1] + "/eval.npz", x=x, y=m.serve(x)["scores"].numpy().argmax(1))
"""


@pytest.fixture(scope="session")
def flat_model(tmp_path_factory) -> Path:
    """A tiny tf.Module SavedModel: float32 'features' [None,4] -> softmax 'scores' [None,3], with labels.txt, eval.npz."""
    return built_once(tmp_path_factory, "flat", lambda d: run_script(_FLAT_MODEL_SCRIPT, d / "model")) / "model"


_KERAS_FILE_SCRIPT = """
import sys, numpy as np
legacy = sys.argv[2] == "h5"
if legacy:
    import tf_keras as keras
else:
    import keras
keras.utils.set_random_seed(0)
from sklearn.datasets import load_digits
d = load_digits()
x = (d.images / 16).astype("float32").reshape(-1, 8, 8, 1)
model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
                          keras.layers.Flatten(), keras.layers.Dense(10, activation="softmax")])
model.compile("adam", "sparse_categorical_crossentropy")
model.fit(x[:1200], d.target[:1200], epochs=4, verbose=0)
model.save(sys.argv[1])
np.savez(sys.argv[1] + ".calibration.npz", x=x[:64], y=d.target[:64])
np.savez(sys.argv[1] + ".eval.npz", x=x[1200:1300], y=d.target[1200:1300])
"""


@pytest.fixture(scope="session")
def keras3_file(tmp_path_factory) -> Path:
    """A Keras-3 ``.keras`` file (digits, float32 [None,8,8,1] in 0..1 → softmax 10), with ``<file>.calibration.npz``
    and ``<file>.eval.npz`` (x, y) beside it."""
    return (
        built_once(
            tmp_path_factory,
            "keras3file",
            lambda d: run_script(_KERAS_FILE_SCRIPT, d / "digits.keras", "keras", legacy_keras=False),
        )
        / "digits.keras"
    )


@pytest.fixture(scope="session")
def h5_file(tmp_path_factory) -> Path:
    """The same digits model built and saved by tf_keras (Keras 2) as ``.h5``, with the same two .npz beside it."""
    return built_once(tmp_path_factory, "h5file", lambda d: run_script(_KERAS_FILE_SCRIPT, d / "digits.h5", "h5")) / (
        "digits.h5"
    )


def _tiny_lm(tmp_path_factory, position: str) -> Path:
    return built_once(tmp_path_factory, f"tiny-lm-{position}", lambda d: run_script(LM_BUILD, d, position))


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory) -> Path:
    """A directory with ``model`` (a contract LM SavedModel: learned positions, Keras MultiHeadAttention, tied
    embeddings; prefill_8, prefill_16, decode; max_len 64) and ``reference.npz`` (tokens, Keras logits): tests/lm_models.py."""
    return _tiny_lm(tmp_path_factory, "learned")


@pytest.fixture(scope="session")
def tiny_lm_rope(tmp_path_factory) -> Path:
    """As ``tiny_lm`` with rotary positions, 2 grouped key/value heads and a separate output head."""
    return _tiny_lm(tmp_path_factory, "rope")


@pytest.fixture(scope="session")
def tiny_lm_bhsd(tmp_path_factory) -> Path:
    """As ``tiny_lm_rope`` with its caches in LiteRT-LM's layout [1, kv_heads, max_len, head_dim] (cache_layout bhsd)."""
    return _tiny_lm(tmp_path_factory, "rope-bhsd")
