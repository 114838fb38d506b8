"""convert on model kinds beyond the image classifier: what builds is written, what cannot is named for what it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_tool.models.readers import describe
from edge_tool.tfjs_writer.export import ops_from_refusal, unsupported_ops_message
from tests.edgetool_runs import REPO, edgetool_in_process, run_edgetool
from tests.oracles.litert_outputs import litert_outputs
from tests.schema_check import validated

# not in the quick tier: builds a model per kind (LSTM, GroupNorm, numpy_function, ...) (~4 min of the quick tier under load)
pytestmark = pytest.mark.slow

_LAYERNORM_SCRIPT = """
import sys, numpy as np, tf_keras as keras
keras.utils.set_random_seed(0)
inp = keras.Input((8, 16))
x = keras.layers.Dense(16)(inp)
x = keras.layers.LayerNormalization()(x + inp)
x = keras.layers.GlobalAveragePooling1D()(x)
out = keras.layers.Dense(3, activation="softmax")(x)
m = keras.Model(inp, out)
m.save(sys.argv[1], save_format="tf")
np.savez(sys.argv[1] + "/calibration.npz", x=np.random.default_rng(0).normal(size=(32, 8, 16)).astype("float32"))
"""


def build(script: str, out: Path) -> Path:
    """Run a model-building script (tf_keras) in a fresh process; return ``out``."""
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(out)], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def layernorm_model(tmp_path_factory) -> Path:
    """A tf_keras SavedModel with a LayerNormalization (int16x8 of it kills LiteRT in TF 2.19)."""
    return build(_LAYERNORM_SCRIPT, tmp_path_factory.mktemp("ln") / "model")


def test_a_mode_list_writes_what_builds_and_exits_1_for_the_rest(layernorm_model, tmp_path):
    """int8,int16x8 of a LayerNorm model: int8 is written and runs, int16x8 is listed with its reason, exit 1."""
    out = tmp_path / "o"
    proc = edgetool_in_process("convert", layernorm_model, "--quant", "int8,int16x8", "-o", out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "not built: int16x8 (" in proc.stdout and "not every mode built" in proc.stderr
    manifest = validated(out / "manifest.json", "manifest")
    assert "LiteRT cannot run" in manifest["failed"]["int16x8"]
    assert [a["quant"] for a in manifest["artifacts"]] == ["int8"] and not (out / "model_int16x8.tflite").exists()
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(out / "model_int8.tflite"))  # what was written runs
    it.allocate_tensors()
    it.invoke()


def test_a_single_mode_that_cannot_be_built_writes_nothing(layernorm_model, tmp_path):
    """--quant int16x8 alone: nothing was built, so exit 2 and no output directory."""
    out = tmp_path / "o"
    proc = edgetool_in_process("convert", layernorm_model, "--quant", "int16x8", "-o", out)
    assert proc.returncode == 2 and "LiteRT cannot run" in proc.stderr, proc.stdout + proc.stderr
    assert not out.exists()


def test_convert_help_documents_the_exit_codes_of_a_mode_list():
    proc = run_edgetool("convert", "--help", env={"COLUMNS": "200"})
    flat = " ".join(proc.stdout.replace("│", " ").split())
    assert "not built: MODE (reason)" in flat and "1 when some were not, 2 when none was" in flat, flat


_OPEN_HW_SCRIPT = """
import sys, numpy as np, tf_keras as keras, tensorflow as tf
keras.utils.set_random_seed(0)
inp = keras.Input((None, None, 3))  # any image size: resize and per-image standardization inside the model
x = keras.layers.Lambda(lambda t: tf.image.resize(t, (32, 32)))(inp)
x = keras.layers.Lambda(tf.image.per_image_standardization)(x)
x = keras.layers.Conv2D(8, 3, activation="relu")(x)
x = keras.layers.GlobalAveragePooling2D()(x)
m = keras.Model(inp, keras.layers.Dense(3, activation="softmax")(x))
m.save(sys.argv[1], save_format="tf")
x = np.random.default_rng(0).uniform(0, 255, size=(16, 24, 40, 3)).astype("float32")
np.savez(sys.argv[1] + "/calibration.npz", x=x)
"""

_STRING_SCRIPT = """
import sys, tf_keras as keras, tensorflow as tf
tv = keras.layers.TextVectorization(max_tokens=50, output_sequence_length=6)
tv.adapt(["the cat sat", "a dog ran fast", "the bird flew"])
inp = keras.Input((1,), dtype=tf.string, name="text")
x = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(50, 4)(tv(inp)))
keras.Model(inp, keras.layers.Dense(2, activation="softmax")(x)).save(sys.argv[1], save_format="tf")
"""


@pytest.fixture(scope="module")
def open_hw_model(tmp_path_factory) -> Path:
    """Open H×W input with in-graph resize + per-image standardization; calibration images are 24×40."""
    return build(_OPEN_HW_SCRIPT, tmp_path_factory.mktemp("openhw") / "model")


def test_open_hw_int16x8_is_run_checked_at_the_calibration_shape(open_hw_model, tmp_path):
    """TF 2.19 writes an int16x8 file whose SQUARED_DIFFERENCE LiteRT cannot invoke; with H×W open the run-check
    used to set them to 1 and forgive the failure, shipping it. At the calibration shape it is refused."""
    out = tmp_path / "o"
    proc = edgetool_in_process("convert", open_hw_model, "--quant", "int16x8,int8", "-o", out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    reason = validated(out / "manifest.json", "manifest")["failed"]["int16x8"]
    assert "LiteRT cannot run" in reason and "shape of the calibration data, 1×24×40×3" in reason, reason
    from ai_edge_litert.interpreter import Interpreter

    x = np.load(open_hw_model / "calibration.npz")["x"][:2]
    runner = Interpreter(model_path=str(out / "model_int8.tflite")).get_signature_runner()
    name = next(iter(runner.get_input_details()))
    probs = next(iter(runner(**{name: x[:1]}).values()))  # the file written runs at that shape
    assert probs.shape == (1, 3) and abs(float(probs.sum()) - 1) < 0.05


@pytest.fixture(scope="module")
def string_model(tmp_path_factory) -> Path:
    """A TextVectorization text classifier taking a string tensor."""
    return build(_STRING_SCRIPT, tmp_path_factory.mktemp("text") / "model")


def test_tfjs_of_a_string_input_model_is_refused_naming_the_string_input(string_model, tmp_path):
    out = tmp_path / "o"
    proc = edgetool_in_process("convert", string_model, "--format", "tfjs", "-o", out)
    assert proc.returncode == 2 and not out.exists(), proc.stdout + proc.stderr
    flat = " ".join(proc.stderr.split())
    assert "TensorFlow.js cannot run" in flat and "input text is a string tensor" in flat, flat
    assert "outside the model" in flat and "--format tflite" in flat


def test_format_all_of_a_string_model_writes_the_tflite_and_records_tfjs(string_model, tmp_path):
    """The way out named (TFLite with --allow-select-tf-ops) works: the .tflite is written, tfjs is 'not built'."""
    out = tmp_path / "o"
    proc = edgetool_in_process(
        "convert", string_model, "--format", "all", "--quant", "fp32", "--allow-select-tf-ops", "-o", out
    )
    assert proc.returncode == 1 and "not built: tfjs (" in proc.stdout, proc.stdout + proc.stderr
    manifest = validated(out / "manifest.json", "manifest")
    assert "string tensor" in manifest["failed"]["tfjs"] and not (out / "tfjs").exists()
    assert [a["quant"] for a in manifest["artifacts"]] == ["fp32"] and (out / "model_fp32.tflite").stat().st_size


def test_int8_of_a_string_model_names_the_string_input_and_the_float_way_out(string_model, tmp_path):
    """int8 needs every op in integer form; string ops have none: refused naming the input and --allow-select-tf-ops
    with a float mode (the zoo's text model was refused as 'invalid input spec: dtype string is not numeric')."""
    out = tmp_path / "o"
    proc = run_edgetool("convert", string_model, "--quant", "int8", "-o", out)
    assert proc.returncode == 2 and not out.exists(), proc.stdout + proc.stderr
    flat = " ".join(proc.stderr.split())
    assert "input 'text'" in flat and "string tensor" in flat and "--allow-select-tf-ops" in flat, flat


_GROUPNORM_SCRIPT = """
import sys, numpy as np, tf_keras as keras
keras.utils.set_random_seed(0)
inp = keras.Input((8, 8, 4))
x = keras.layers.GroupNormalization(groups=2)(keras.layers.Conv2D(8, 3, padding="same")(inp))
x = keras.layers.GlobalAveragePooling2D()(keras.layers.ReLU()(x))
keras.Model(inp, keras.layers.Dense(3, activation="softmax")(x)).save(sys.argv[1], save_format="tf")
np.savez(sys.argv[1] + "/calibration.npz", x=np.random.default_rng(0).normal(size=(16, 8, 8, 4)).astype("float32"))
"""

_NUMPY_FUNCTION_SCRIPT = """
import sys, numpy as np, tf_keras as keras, tensorflow as tf
def clip(a):
    return np.clip(a, 0, 1).astype("float32")
inp = keras.Input((8, 8, 1))
x = keras.layers.Lambda(lambda t: tf.reshape(tf.numpy_function(clip, [t], tf.float32), [-1, 8, 8, 1]))(inp)
x = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(4, 3, activation="relu")(x))
keras.Model(inp, keras.layers.Dense(3, activation="softmax")(x)).save(sys.argv[1], save_format="tf")
"""


@pytest.fixture(scope="module")
def groupnorm_model(tmp_path_factory) -> Path:
    """tf_keras GroupNormalization: with a free batch TF 2.19 writes a BROADCAST_TO that LiteRT refuses."""
    return build(_GROUPNORM_SCRIPT, tmp_path_factory.mktemp("gn") / "model")


def test_groupnorm_is_built_again_with_a_fixed_batch_and_matches_the_savedmodel(groupnorm_model, tmp_path):
    out = tmp_path / "o"
    proc = edgetool_in_process("convert", groupnorm_model, "--quant", "fp32,int8", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    flat = " ".join((proc.stdout + proc.stderr).split())
    assert "fp32 with a free input batch does not run in LiteRT" in flat and "BROADCAST_TO" in flat, flat
    assert "built again with the input batch fixed to 1 (as --batch 1 does)" in flat
    manifest = validated(out / "manifest.json", "manifest")
    assert {a["quant"]: a["fixed_batch"]["batch"] for a in manifest["artifacts"]} == {"fp32": 1, "int8": 1}
    import tensorflow as tf

    x = np.random.default_rng(3).normal(size=(6, 8, 8, 4)).astype("float32")
    fn = tf.saved_model.load(str(groupnorm_model)).signatures["serving_default"]
    want = next(iter(fn(tf.constant(x)).values())).numpy()  # the SavedModel itself, in TensorFlow
    got = {q: np.asarray(litert_outputs(out / f"model_{q}.tflite", x)) for q in ("fp32", "int8")}
    assert np.abs(got["fp32"].reshape(want.shape) - want).max() < 1e-4
    assert (got["int8"].reshape(want.shape).argmax(1) == want.argmax(1)).mean() >= 5 / 6
    # the int8 file keeps GroupNorm's SQUARE in float (LiteRT's own op table says so): convert and eval flag it
    assert _ops_computing_in_float(out / "model_int8.tflite") == {"SQUARE"}
    assert "model_int8.tflite is not fully integer: SQUARE compute in float32" in flat

    assert describe(out / "model_int8.tflite").quant == "int8 (not fully integer)"
    assert describe(out / "model_fp32.tflite").quant == "fp32"


_STFT_SCRIPT = """
import sys, tensorflow as tf, tf_keras as keras
keras.utils.set_random_seed(0)
inp = keras.Input((256,), name="waveform")
spec = tf.abs(tf.signal.stft(inp, frame_length=64, frame_step=32, fft_length=64))
x = tf.math.log(spec + 1e-6)[..., None]  # a StridedSlice adding an axis: not legalized at the free batch
x = keras.layers.Flatten()(keras.layers.Conv2D(2, 3)(x))
keras.Model(inp, keras.layers.Dense(3, activation="softmax")(x)).save(sys.argv[1], save_format="tf")
"""


def test_an_op_left_unconverted_at_the_free_batch_is_built_again_at_batch_1(tmp_path):
    """An STFT front end's x[..., None] is not legalized at the free batch ('uses ops the builtin op set cannot
    express: StridedSlice', which named only Flex as the way out); at batch 1 it is, and the file matches TF."""
    import tensorflow as tf

    model = build(_STFT_SCRIPT, tmp_path / "model")
    proc = run_edgetool("convert", model, "--quant", "fp32", "-o", tmp_path / "o")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    flat = " ".join((proc.stdout + proc.stderr).split())
    assert "fp32 with a free input batch does not convert to builtin ops" in flat and "StridedSlice" in flat, flat
    x = np.random.default_rng(0).uniform(-1, 1, (3, 256)).astype("float32")
    want = next(iter(tf.saved_model.load(str(model)).signatures["serving_default"](tf.constant(x)).values())).numpy()
    got = np.asarray(litert_outputs(tmp_path / "o" / "model_fp32.tflite", x)).reshape(want.shape)
    assert np.abs(got - want).max() < 1e-4


def _ops_computing_in_float(path: Path) -> set[str]:
    """Independent oracle: LiteRT's op table and tensor details; ops with a non-constant float32 tensor."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    tensors = {t["index"]: t for t in it.get_tensor_details()}
    found = set()
    for op in it._get_ops_details():
        for i in (*op["inputs"], *op["outputs"]):
            if i >= 0 and tensors[i]["dtype"] == np.float32 and op["op_name"] not in ("QUANTIZE", "DEQUANTIZE"):
                try:
                    it.get_tensor(i)  # constants have data before allocate_tensors; computed tensors raise
                except ValueError:
                    found.add(op["op_name"])
    return found


def test_a_dynamic_file_with_no_weight_quantized_is_named_fp32(layernorm_model, tmp_path):
    """The LayerNorm model's weights are all under 1,024 values: dynamic-range quantization quantizes none."""
    from ai_edge_litert.interpreter import Interpreter

    out = tmp_path / "o"
    proc = edgetool_in_process("convert", layernorm_model, "--quant", "dynamic", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    path = out / "model_dynamic.tflite"
    dtypes = {t["dtype"] for t in Interpreter(model_path=str(path)).get_tensor_details()}
    assert np.int8 not in dtypes and np.float16 not in dtypes  # the oracle: nothing in it is quantized
    assert "model_dynamic.tflite is really fp32" in " ".join(proc.stderr.split())

    art = describe(path)
    assert (art.quant, art.quant_source) == ("fp32", "tensor types (manifest.json says dynamic)")


@pytest.fixture(scope="module")
def numpy_function_model(tmp_path_factory) -> Path:
    return build(_NUMPY_FUNCTION_SCRIPT, tmp_path_factory.mktemp("npf") / "model")


@pytest.mark.parametrize(
    "extra", [[], ["--allow-select-tf-ops"], ["--format", "tfjs"]], ids=["builtins", "select-tf-ops", "tfjs"]
)
def test_a_numpy_function_is_named_as_what_can_never_convert(numpy_function_model, tmp_path, extra):
    """Not 'needs --allow-select-tf-ops for Conv2D' nor '--batch 1': the Python callback, whatever the options."""
    out = tmp_path / "o"
    args = extra if extra[:1] == ["--format"] else ["--quant", "fp32", *extra]
    proc = edgetool_in_process("convert", numpy_function_model, *args, "-o", out)
    assert proc.returncode == 2 and not out.exists(), proc.stdout + proc.stderr
    flat = " ".join(proc.stderr.split())
    assert "calls back into Python (tf.numpy_function: op PyFunc)" in flat, flat
    assert "pass --allow-select-tf-ops" not in flat and "pass --batch" not in flat


def test_qat_of_a_keras3_export_names_the_model_not_the_labels(keras3_export, tmp_path):
    """Unlabelled --train-data used to be the complaint ('add a y array'); the real blocker is the model."""
    x = tmp_path / "x.npz"
    np.savez(x, x=np.random.default_rng(0).uniform(0, 255, (32, 8, 8, 1)).astype("float32"))
    proc = edgetool_in_process(
        "convert", keras3_export, "--quant", "qat", "--train-data", x, "--calibration", x, "-o", tmp_path / "o"
    )
    flat = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "is a Keras 3 export" in flat and "no Keras layers" in flat, flat
    assert "'y' array" not in flat


_MULTI_SIGNATURE_SCRIPT = """
import sys, numpy as np, tensorflow as tf
class M(tf.Module):
    def __init__(self):
        super().__init__()
        r = np.random.default_rng(0)
        self.w = tf.Variable(r.normal(size=(4, 3)).astype("float32"))
        self.e = tf.Variable(r.normal(size=(4, 5)).astype("float32"))
    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="features")])
    def classify(self, features):
        return {"scores": tf.nn.softmax(tf.matmul(features, self.w))}
    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="features")])
    def embed(self, features):
        return {"embedding": tf.matmul(features, self.e)}
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="pair")])
    def aux(self, pair):
        return {"sum": tf.reduce_sum(pair, axis=1, keepdims=True)}
m = M()
tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.classify, "a_embed": m.embed, "aux": m.aux})
x = np.random.default_rng(1).normal(size=(16, 4)).astype("float32")
np.savez(sys.argv[1] + "/eval.npz", x=x, y=m.classify(x)["scores"].numpy().argmax(1))
"""


@pytest.fixture(scope="module")
def multi_signature_model(tmp_path_factory) -> Path:
    """A tf.Module with three signatures; serving_default sorts last (a_embed, aux, serving_default)."""
    return build(_MULTI_SIGNATURE_SCRIPT, tmp_path_factory.mktemp("multisig") / "model")


@pytest.mark.parametrize("signature", [None, "a_embed"])
def test_convert_uses_serving_default_or_the_named_signature_and_says_which(multi_signature_model, tmp_path, signature):
    import tensorflow as tf

    out = tmp_path / "o"
    proc = edgetool_in_process(
        "convert",
        multi_signature_model,
        "--quant",
        "fp32",
        "-o",
        out,
        *(["--signature", signature] if signature else []),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    key = signature or "serving_default"
    assert f"signature: {key} (of a_embed, aux, serving_default" in " ".join((proc.stdout + proc.stderr).split())
    x = np.load(multi_signature_model / "eval.npz")["x"][:5]
    fn = tf.saved_model.load(str(multi_signature_model)).signatures[key]
    want = next(iter(fn(tf.constant(x)).values())).numpy()  # (5, 3) scores or (5, 5) embedding
    got = np.asarray(litert_outputs(out / "model_fp32.tflite", x)).reshape(want.shape)
    assert np.abs(got - want).max() < 1e-4


def test_eval_and_demo_take_the_signature_and_say_which(multi_signature_model, tmp_path):
    out = tmp_path / "o"
    assert (
        edgetool_in_process(
            "convert", multi_signature_model, "--quant", "fp32", "--signature", "a_embed", "-o", out
        ).returncode
        == 0
    )
    report = tmp_path / "r.json"
    proc = edgetool_in_process(
        "eval",
        out / "model_fp32.tflite",
        "-r",
        multi_signature_model,
        "--signature",
        "a_embed",
        "--data",
        multi_signature_model / "eval.npz",
        "--runs",
        "2",
        "--json",
        report,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "reference signature: a_embed (of a_embed, aux, serving_default" in " ".join(proc.stdout.split())
    (row,) = json.loads(report.read_text())["results"]
    assert row["max_abs_error"] < 1e-4  # against the embedding, not the serving_default scores
    site = tmp_path / "site"
    proc = edgetool_in_process("demo", multi_signature_model, "--signature", "a_embed", "-o", site)
    assert proc.returncode == 0 and "signature: a_embed (of" in proc.stdout, proc.stdout + proc.stderr
    assert list(json.loads((site / "model" / "model.json").read_text())["signature"]["outputs"]) == ["embedding"]


def test_an_unknown_signature_is_refused_listing_the_ones_there(multi_signature_model, tmp_path):
    proc = edgetool_in_process("convert", multi_signature_model, "--signature", "nope", "-o", tmp_path / "o")
    flat = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "['a_embed', 'aux', 'serving_default']" in flat and "--signature NAME" in flat


def test_an_op_tfjs_lacks_is_named_with_its_origin_and_the_litert_way_out():
    """Exact GELU lowers to Erfc, which TF.js has no kernel for: the refusal names it, where it comes from, and
    `demo --litert` (issue 22: ViT, BERT-tiny, ConvNeXt); check reads the ops back; another error text is not
    mistaken for it."""
    said = unsupported_ops_message(["Erfc", "Foo"])
    assert "Erfc (exact GELU" in said and "Foo" in said and "--litert" in said
    assert ops_from_refusal(said) == ["Erfc", "Foo"]
    assert ops_from_refusal("Signature 'x' not found") == []
