"""Issue 35: what serving exports look like — an image-bytes ``serving_default`` beside a pixel signature, a Python
callback in a function no signature reaches, string labels out of a StaticHashTable, Keras lookup tables.

Tiny real SavedModels, the real converter, LiteRT and TensorFlow as the oracle.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_tool.trust.graph_scan import scan_saved_model
from tests.edgetool_runs import REPO, edgetool_in_process

_SERVING = """
import sys, numpy as np, tensorflow as tf
out = sys.argv[1]
g = tf.random.Generator.from_seed(0)

class Served(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(g.normal([16, 3]) * 0.1)
        init = tf.lookup.KeyValueTensorInitializer(tf.constant([0, 1, 2], tf.int64), tf.constant(["cat", "dog", "owl"]))
        self.table = tf.lookup.StaticHashTable(init, default_value="?")

    def probs(self, pixels):
        return tf.nn.softmax(tf.reshape(pixels, [-1, 16]) / 255.0 @ self.w * 8.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="image_bytes")])
    def from_bytes(self, image_bytes):
        def decode(b):
            return tf.image.resize(tf.cast(tf.io.decode_png(b, channels=1), tf.float32), (4, 4))
        return {"probs": self.probs(tf.map_fn(decode, image_bytes, fn_output_signature=tf.float32))}

    @tf.function(input_signature=[tf.TensorSpec([None, 4, 4, 1], tf.float32, name="pixels")])
    def from_pixels(self, pixels):
        return {"probs": self.probs(pixels)}

    @tf.function(input_signature=[tf.TensorSpec([None, 4, 4, 1], tf.float32, name="pixels")])
    def labelled(self, pixels):
        p = self.probs(pixels)
        return {"probs": p, "label": self.table.lookup(tf.argmax(p, axis=-1))}

    @tf.function(input_signature=[tf.TensorSpec([None, 4, 4, 1], tf.float32, name="pixels")])
    def debug(self, pixels):  # a Python callback: saved, but only the 'debug' signature calls it
        clipped = tf.numpy_function(lambda a: np.clip(a, 0, 255).astype("float32"), [pixels], tf.float32)
        return {"probs": self.probs(tf.reshape(clipped, [-1, 4, 4, 1]))}

m = Served()
m.unused = m.debug  # a tracked tf.function of the object graph no serving signature reaches
tf.saved_model.save(m, out, signatures={
    "serving_default": m.from_bytes.get_concrete_function(),
    "serving_pixels": m.from_pixels.get_concrete_function(),
    "labelled": m.labelled.get_concrete_function(),
    "debug": m.debug.get_concrete_function(),
})
rng = np.random.default_rng(0)
np.savez(out + "/calibration.npz", pixels=rng.uniform(0, 255, (16, 4, 4, 1)).astype("float32"))
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("served") / "model"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", _SERVING, str(out)], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _flat(proc) -> str:
    return " ".join((proc.stdout + proc.stderr).split())


def _tf_outputs(model: Path, signature: str, **feeds) -> dict:
    import tensorflow as tf

    fn = tf.saved_model.load(str(model)).signatures[signature]
    return {k: v.numpy() for k, v in fn(**{k: tf.constant(v) for k, v in feeds.items()}).items()}


def _litert_outputs(tflite: Path, **feeds) -> dict:
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(tflite)).get_signature_runner()
    return runner(**feeds)


def test_the_scan_judges_what_the_chosen_signature_executes(served):
    """A PyFunc reached only by the 'debug' signature does not refuse serving_default; it is flagged where it runs."""
    assert scan_saved_model(served, "serving_pixels") == ()
    assert scan_saved_model(served, "labelled") == ()
    assert [f.op for f in scan_saved_model(served, "debug")] == ["PyFunc"]
    assert [f.op for f in scan_saved_model(served)] == ["PyFunc"]  # no signature named: every function


def test_a_callback_the_signature_never_reaches_does_not_stop_convert_and_one_it_reaches_does(served, tmp_path):
    ok = edgetool_in_process("convert", served, "--signature", "serving_pixels", "-o", tmp_path / "a")
    assert ok.returncode == 0, _flat(ok)
    refused = edgetool_in_process("convert", served, "--signature", "debug", "-o", tmp_path / "b")
    assert refused.returncode == 2 and "PyFunc" in _flat(refused) and not (tmp_path / "b").exists()


def test_image_bytes_refusals_name_the_pixel_signature_and_that_way_out_converts(served, tmp_path):
    """Every mode was refused on the string input with no word of which signature works; now the refusal names
    serving_pixels, and the command with --signature serving_pixels gives TF's outputs in LiteRT."""
    for args in (["--quant", "int8"], ["--format", "tfjs"]):
        proc = edgetool_in_process("convert", served, *args, "-o", tmp_path / "r")
        assert proc.returncode == 2, _flat(proc)
        flat = _flat(proc)
        assert "taking numeric input: serving_pixels (pixels float32[N,4,4,1]); labelled" in flat, flat
        assert "--signature serving_pixels uses the first" in flat and flat.index("serving_pixels") < 400
    demo = edgetool_in_process("demo", served, "-o", tmp_path / "site")
    assert demo.returncode == 2 and f"`edgetool demo {served} --signature serving_pixels`" in _flat(demo)
    out = tmp_path / "px"
    proc = edgetool_in_process("convert", served, "--signature", "serving_pixels", "--quant", "fp32,int8", "-o", out)
    assert proc.returncode == 0, _flat(proc)
    x = np.random.default_rng(1).uniform(0, 255, (1, 4, 4, 1)).astype(np.float32)
    want = _tf_outputs(served, "serving_pixels", pixels=x)["probs"]
    np.testing.assert_allclose(_litert_outputs(out / "model_fp32.tflite", pixels=x)["probs"], want, atol=1e-5)
    check = edgetool_in_process("check", served, "--signature", "serving_pixels", "--target", "litert-cpu,litertjs")
    assert check.returncode == 0, _flat(check)


def test_the_pixel_signature_computes_what_the_bytes_signature_does(served):
    """The way out is the same model: PNG bytes through serving_default equal the decoded pixels through
    serving_pixels (so converting the pixel signature loses nothing but the decoding)."""
    from PIL import Image

    pixels = np.random.default_rng(2).integers(0, 256, (4, 4)).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels, mode="L").save(buf, format="PNG")
    by_bytes = _tf_outputs(served, "serving_default", image_bytes=np.array([buf.getvalue()]))["probs"]
    by_pixels = _tf_outputs(served, "serving_pixels", pixels=pixels[None, :, :, None].astype(np.float32))["probs"]
    np.testing.assert_allclose(by_bytes, by_pixels, atol=1e-6)


def test_string_label_outputs_convert_and_compare_as_strings(served, tmp_path):
    """A StaticHashTable mapping class ids to words at the end of the graph: convert exited 70 (a pickled object
    array); the .tflite runs TFLite's builtin HASHTABLE ops and gives TF's very strings."""
    out = tmp_path / "lab"
    proc = edgetool_in_process("convert", served, "--signature", "labelled", "--quant", "fp32,int16x8", "-o", out)
    assert proc.returncode == 0, _flat(proc)
    x = np.random.default_rng(3).uniform(0, 255, (1, 4, 4, 1)).astype(np.float32)
    want = _tf_outputs(served, "labelled", pixels=x)
    for mode in ("fp32", "int16x8"):
        got = _litert_outputs(out / f"model_{mode}.tflite", pixels=x)
        assert got["label"].astype(bytes).tolist() == want["label"].astype(bytes).tolist()
    tfjs = edgetool_in_process("convert", served, "--signature", "labelled", "--format", "tfjs", "-o", tmp_path / "t")
    assert tfjs.returncode == 2 and "a resource" in _flat(tfjs) and not (tmp_path / "t").exists(), _flat(tfjs)
    data = tmp_path / "eval.npz"
    np.savez(data, pixels=np.random.default_rng(4).uniform(0, 255, (12, 4, 4, 1)).astype(np.float32))
    ev = edgetool_in_process(
        "eval", out / "model_fp32.tflite", "-r", served, "--signature", "labelled", "-d", data, "--runs", "1"
    )
    assert ev.returncode == 0, _flat(ev)


def test_no_numpy_load_anywhere_allows_pickles():
    """String outputs travel as bytes arrays: nothing in edgetool loads a pickled array."""
    hits = [
        f"{p}:{n}"
        for p in (REPO / "edge_tool").rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if "allow_pickle=True" in line.replace(" ", "")
    ]
    assert hits == []


_TABULAR = """
import sys, numpy as np, tf_keras as keras
out = sys.argv[1]
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = {"age": rng.normal(50, 9, (64, 1)).astype("float32"),
     "thal": rng.choice(np.array(["normal", "fixed", "reversible"]), (64, 1))}
age, thal = keras.Input((1,), name="age"), keras.Input((1,), name="thal", dtype="string")
norm = keras.layers.Normalization(); norm.adapt(x["age"])
lookup = keras.layers.StringLookup(output_mode="one_hot"); lookup.adapt(x["thal"])
features = keras.layers.Concatenate(name="features")([norm(age), lookup(thal)])
head = keras.layers.Dense(2, activation="softmax")(keras.layers.Dense(8, activation="relu")(features))
model = keras.Model({"age": age, "thal": thal}, head)
model.save(out + "/full", save_format="tf")
# the way out the refusal names (docs/models.md): the numeric model from the layer after the features, and the
# preprocessing as a model of its own (run in the app or in TensorFlow)
concat = model.get_layer("features")
inp = keras.Input(concat.output.shape[1:], name="features")
y = inp
for layer in model.layers[model.layers.index(concat) + 1:]:
    y = layer(y)
keras.Model(inp, y).save(out + "/numeric", save_format="tf")
preprocess = keras.Model(model.inputs, concat.output)
np.savez(out + "/features.npz", features=preprocess.predict(x, verbose=0), probs=model.predict(x, verbose=0))
"""


def test_lookup_tables_the_converter_cannot_take_name_the_split_and_the_split_converts(tmp_path):
    """A tutorial-style tabular model (Normalization + StringLookup one-hot): the static string table converts to
    TFLite's HASHTABLE builtins, but the one-hot count (DenseBincount) has no builtin; the refusal says so and how to
    split the preprocessing off; the numeric model so split converts with builtins only and,
    fed the preprocessing's output, gives the whole model's outputs."""
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", _TABULAR, str(tmp_path)], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    refused = edgetool_in_process("convert", tmp_path / "full", "--quant", "fp32", "-o", tmp_path / "a")
    flat = _flat(refused)
    assert refused.returncode == 2 and "DenseBincount (CategoryEncoding, or a lookup's one_hot" in flat, flat
    assert "split the preprocessing off" in flat
    assert "calls back into Python" not in flat
    ok = edgetool_in_process("convert", tmp_path / "numeric", "--quant", "fp32", "-o", tmp_path / "b")
    assert ok.returncode == 0, _flat(ok)
    data = np.load(tmp_path / "features.npz")
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(tmp_path / "b" / "numeric_fp32.tflite")).get_signature_runner()
    got = np.concatenate([next(iter(runner(features=f[None]).values())) for f in data["features"]])
    np.testing.assert_allclose(got, data["probs"], atol=1e-5)
