"""A Keras 3 ``.keras`` file with a custom layer (``keras.ops`` inside, ``register_keras_serializable`` in the script
that built it) stores the class by name only: no loader can rebuild it outside that script, trusted or not. edgetool
says so — not "rerun with --trust-model-code", which then fails — and names the way out that works: the graph saved
with ``model.export(DIR)`` where the class is defined (issue 22: Keras-3 ``keras.ops`` models)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from edge_tool.trust.keras_code import NAME_ONLY, find_code
from tests.edgetool_runs import REPO, run_edgetool

# not in the quick tier: builds Keras files with custom classes in fresh interpreters (~3 min of the quick tier under load)
pytestmark = pytest.mark.slow

_SCRIPT = r"""
import sys, numpy as np, keras
from keras import ops, layers as L

@keras.saving.register_keras_serializable(package="zoo")
class RMSNorm(L.Layer):
    def build(self, shape):
        self.g = self.add_weight(shape=(shape[-1],), initializer="ones")
    def call(self, x):
        return x * ops.rsqrt(ops.mean(ops.square(x), axis=-1, keepdims=True) + 1e-6) * self.g

inp = keras.Input((8,), name="x")
model = keras.Model(inp, L.Dense(3, activation="softmax")(RMSNorm()(L.Dense(16)(inp))))
x = np.random.default_rng(0).normal(size=(64, 8)).astype("float32")
model.save(sys.argv[1] + "/model.keras")
model.export(sys.argv[1] + "/export", verbose=False)
np.savez(sys.argv[1] + "/calibration.npz", x=x)
np.save(sys.argv[1] + "/want.npy", model.predict(x, verbose=0))
"""


@pytest.fixture(scope="module")
def custom_class_model(tmp_path_factory):
    """Directory with the Keras 3 ``model.keras``, its ``export/`` SavedModel, calibration.npz and Keras' outputs."""
    out = tmp_path_factory.mktemp("custom_class")
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "0", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(out)], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.parametrize(
    ("module", "name_only"),
    [(None, True), ("__main__", True), ("no_such_package_here.layers", True), ("numpy.custom", False)],
)
def test_a_registered_class_is_name_only_unless_its_module_can_be_found(module, name_only):
    config = {"class_name": "RMSNorm", "module": module, "registered_name": "zoo>RMSNorm", "config": {"name": "rms"}}
    (finding,) = find_code(config, "model.keras")
    assert (NAME_ONLY in finding.kind) is name_only, finding.kind


@pytest.mark.parametrize("trust", [False, True])
def test_custom_class_keras_file_is_refused_with_the_way_out_that_works(custom_class_model, tmp_path, trust):
    out = tmp_path / "out"
    args = ["--calibration", custom_class_model / "calibration.npz", "-o", out]
    proc = run_edgetool(
        "convert", custom_class_model / "model.keras", *args, *(["--trust-model-code"] if trust else [])
    )
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "'zoo>RMSNorm'" in said and "--trust-model-code alone cannot help" in said and "model.export(DIR)" in said
    assert "--custom-objects" in said
    assert not out.exists()


def test_the_named_way_out_converts_and_matches_keras(custom_class_model, tmp_path):
    proc = run_edgetool("convert", custom_class_model / "export", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from ai_edge_litert.interpreter import Interpreter

    (tflite,) = (tmp_path / "out").glob("*.tflite")
    interp = Interpreter(model_path=str(tflite))
    x = np.load(custom_class_model / "calibration.npz")["x"]
    interp.resize_tensor_input(interp.get_input_details()[0]["index"], x.shape)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    got = interp.get_tensor(interp.get_output_details()[0]["index"])
    np.testing.assert_allclose(got, np.load(custom_class_model / "want.npy"), atol=1e-5)


_MODULE = r"""
import keras
from keras import ops, layers as L


def make():
    @keras.saving.register_keras_serializable(package="zoo")
    class Scale(L.Layer):  # registered only when make() runs: importing this module does not define it
        def call(self, x):
            return ops.multiply(x, 2.0)

    return Scale
"""


def test_trusted_file_whose_module_does_not_define_the_class_names_it_and_the_way_out(tmp_path):
    (tmp_path / "late_layers.py").write_text(_MODULE)
    save = "import sys, keras, late_layers; i = keras.Input((4,)); keras.Model(i, late_layers.make()()(i))"
    save += ".save(sys.argv[1])"
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "0", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", save, str(tmp_path / "m.keras")], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    pythonpath = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    proc = run_edgetool(
        "convert", tmp_path / "m.keras", "-o", tmp_path / "out", "--trust-model-code", env={"PYTHONPATH": pythonpath}
    )
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "custom class 'Scale'" in said and "model.export(DIR)" in said and not (tmp_path / "out").exists()


_LAYERS = r"""
import keras
from keras import ops, layers as L

@keras.saving.register_keras_serializable(package="zoo")
class RMSNorm(L.Layer):
    def build(self, shape):
        self.g = self.add_weight(shape=(shape[-1],), initializer="ones")
    def call(self, x):
        return x * ops.rsqrt(ops.mean(ops.square(x), axis=-1, keepdims=True) + 1e-6) * self.g
"""


def _litert_all(path, x):
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(path)).get_signature_runner()
    (name,) = runner.get_input_details()
    return np.concatenate([next(iter(runner(**{name: x[i : i + 1]}).values())) for i in range(len(x))])


def test_custom_objects_module_is_code_refused_without_trust(custom_class_model, tmp_path):
    (tmp_path / "layers.py").write_text(_LAYERS)
    for cmd in (("inspect",), ("convert", "-o", tmp_path / "out")):
        proc = run_edgetool(
            cmd[0], custom_class_model / "model.keras", *cmd[1:], "--custom-objects", tmp_path / "layers.py"
        )
        said = " ".join(proc.stderr.split())
        assert proc.returncode == 2 and "--custom-objects" in said and "--trust-model-code" in said, said
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_custom_objects_inspect_convert_and_eval_a_custom_class_keras_file(custom_class_model, tmp_path):
    """With the module that defines the class (and --trust-model-code), inspect reports the signature and convert
    matches Keras: fp32 within 1e-5, int8 deciding as Keras does (the raw converter, run where the class is
    defined, gives agreement 1.000 fp32 and 0.985 int8 on such a model)."""
    (tmp_path / "layers.py").write_text(_LAYERS)
    trusted = ("--custom-objects", tmp_path / "layers.py", "--trust-model-code")
    proc = run_edgetool("inspect", custom_class_model / "model.keras", "--json", *trusted)
    assert proc.returncode == 0, proc.stderr
    (sig,) = [s for s in json.loads(proc.stdout)["signatures"] if s["key"] == "serving_default"]
    assert [i["shape"] for i in sig["inputs"]] == [[None, 8]] and [o["shape"] for o in sig["outputs"]] == [[None, 3]]
    cal = custom_class_model / "calibration.npz"
    proc = run_edgetool(
        "convert", custom_class_model / "model.keras", "--quant", "fp32,int8", "--calibration", cal, "-o",
        tmp_path / "out", *trusted,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    x, want = np.load(cal)["x"], np.load(custom_class_model / "want.npy")
    fp32 = _litert_all(next((tmp_path / "out").glob("*fp32.tflite")), x)
    np.testing.assert_allclose(fp32, want, atol=1e-5)
    int8 = _litert_all(next((tmp_path / "out").glob("*int8.tflite")), x)
    assert np.mean(int8.argmax(1) == want.argmax(1)) >= 0.95
    np.savez(tmp_path / "eval.npz", x=x, y=want.argmax(1))
    proc = run_edgetool(
        "eval", next((tmp_path / "out").glob("*fp32.tflite")), "-r", custom_class_model / "model.keras", "-d",
        tmp_path / "eval.npz", "--runs", "2", "--warmup", "1", *trusted,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


_TFK_LAYERS = r"""
import tf_keras

@tf_keras.saving.register_keras_serializable(package="mine")
class Scale2(tf_keras.layers.Layer):
    def call(self, x):
        return x * 2.0
"""

_TFK_BUILD = r"""
import sys, numpy as np, tf_keras
from tfk_layers import Scale2
tf_keras.utils.set_random_seed(0)
i = tf_keras.Input((4,), name="x")
m = tf_keras.Model(i, tf_keras.layers.Dense(3, activation="softmax")(Scale2()(i)))
m.save("m.h5")
x = np.random.default_rng(0).normal(size=(16, 4)).astype("float32")
np.save("x.npy", x)
np.save("want.npy", m.predict(x, verbose=0))
"""


def test_custom_objects_module_path_loads_a_tf_keras_h5(tmp_path):
    """A tf_keras .h5 with a registered layer: refused naming --custom-objects; with the module path (imported from
    the working directory) it converts and matches tf_keras."""
    (tmp_path / "tfk_layers.py").write_text(_TFK_LAYERS)
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", _TFK_BUILD], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = run_edgetool("convert", tmp_path / "m.h5", "--quant", "fp32", "-o", tmp_path / "no")
    assert proc.returncode == 2 and "--custom-objects" in " ".join(proc.stderr.split()), proc.stderr
    args = ["-m", "edge_tool", "convert", "m.h5", "--quant", "fp32", "-o", "out"]
    args += ["--custom-objects", "tfk_layers", "--trust-model-code"]
    run_env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=run_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = _litert_all(next((tmp_path / "out").glob("*.tflite")), np.load(tmp_path / "x.npy"))
    np.testing.assert_allclose(got, np.load(tmp_path / "want.npy"), atol=1e-5)
