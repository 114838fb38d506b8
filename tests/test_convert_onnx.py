"""``convert --format onnx`` and the format registry it plugs into.

Oracles: Keras ``predict`` of the model, saved when the model was built, and ONNX Runtime run here directly on
the written files (not through edgetool). The refusals run the real converter on a model it cannot convert, and a
real interpreter in which the onnx packages cannot be imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.convert.formats import FORMATS, OutputFormat, format_table, formats_for
from edge_tool.schemas import load
from edge_tool.schemas.manifest import Manifest
from tests.builds import run_script
from tests.edgetool_runs import REPO, run_edgetool

# not in the quick tier: tf2onnx conversions of several models (~2 min of the quick tier under load)
pytestmark = pytest.mark.slow

ort = pytest.importorskip("onnxruntime", reason="the onnx extra: pip install -e '.[onnx]'")
onnx = pytest.importorskip("onnx")

_MODEL_SCRIPT = """
import sys, numpy as np, tf_keras as keras
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
y = rng.integers(0, 5, 600)
x = rng.uniform(0, 0.5, (600, 8, 8, 3)).astype("float32")
for c in range(5):  # class c: a bright patch at its own place
    x[y == c, c:c + 3, c:c + 3, :] += 0.5
inp = keras.Input((8, 8, 3), name="image")
h = keras.layers.Conv2D(6, 3, activation="relu")(inp)
h = keras.layers.GlobalAveragePooling2D()(h)
out = keras.layers.Dense(5, activation="softmax", name="probs")(h)
model = keras.Model(inp, out)
model.compile("adam", "sparse_categorical_crossentropy")
model.fit(x[:500], y[:500], epochs=15, batch_size=32, verbose=0)
model.save(sys.argv[1], save_format="tf")
np.savez(sys.argv[1] + "/calibration.npz", x=x[:60])
np.savez(sys.argv[2], x=x[500:], keras=model.predict(x[500:], verbose=0), y=y[500:])
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, dict]:
    """A small trained Keras-2 SavedModel (calibration.npz beside it) and held-out x with Keras' predictions."""
    root = tmp_path_factory.mktemp("onnx")
    run_script(_MODEL_SCRIPT, root / "tiny", root / "oracle.npz")
    with np.load(root / "oracle.npz") as z:
        return root / "tiny", {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def built(tiny, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("onnx-out") / "out"
    proc = run_edgetool("convert", tiny[0], "--format", "onnx", "--quant", "fp32,int8", "--samples", "40", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _session(path: Path):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def test_fp32_computes_what_keras_computes(built, tiny):
    oracle = tiny[1]
    session = _session(built / "tiny_fp32.onnx")
    (got,) = session.run(None, {session.get_inputs()[0].name: oracle["x"]})
    np.testing.assert_allclose(got, oracle["keras"], atol=1e-5)


def test_int8_is_qdq_and_stays_close_to_keras(built, tiny):
    oracle = tiny[1]
    model = onnx.load(str(built / "tiny_int8.onnx"))
    ops = {n.op_type for n in model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    weights = [i for i in model.graph.initializer if i.data_type == onnx.TensorProto.INT8]
    assert weights, "the int8 file stores its weights as int8"
    session = _session(built / "tiny_int8.onnx")
    (got,) = session.run(None, {session.get_inputs()[0].name: oracle["x"]})
    assert np.abs(got - oracle["keras"]).max() < 0.1  # probabilities; int8 rounding, not a broken graph
    assert (got.argmax(1) == oracle["keras"].argmax(1)).mean() >= 0.95
    assert (built / "tiny_int8.onnx").stat().st_size < 4 * (built / "tiny_fp32.onnx").stat().st_size


def test_manifest_records_opset_agreement_and_validates(built):
    doc = json.loads((built / "manifest.json").read_text())
    jsonschema.validate(doc, load("manifest"))
    arts = {a["quant"]: a for a in doc["artifacts"]}
    assert [a["format"] for a in doc["artifacts"]] == ["onnx", "onnx"]
    for art in arts.values():
        model = onnx.load(str(built / art["path"]))
        assert art["opset"] == next(o.version for o in model.opset_import if o.domain == "")
        assert art["size_bytes"] == (built / art["path"]).stat().st_size
        assert art["agreement"]["inputs"] == "calibration" and art["agreement"]["checked"]
        assert art["agreement"]["top1_agreement"] >= 0.9
    assert arts["fp32"]["agreement"]["ok"] is True and arts["fp32"]["agreement"]["max_abs_error"] < 1e-4
    assert arts["int8"]["agreement"]["ok"] is None  # measured, not judged
    assert set(doc["timings_s"]) == {"onnx-fp32", "onnx-int8", "total"}
    assert doc["versions"]["onnxruntime"] == ort.__version__ and doc["versions"]["tf2onnx"]
    assert Manifest.read(built / "manifest.json").to_dict() == doc


def test_int8_is_calibrated_on_the_tflite_selection(built, tiny, tmp_path):
    """Same calibration reader and sample selection as TFLite int8: identical calibration records, and the input's
    QuantizeLinear scale is the min/max of exactly those samples (asymmetric int8: (max - min) / 255)."""
    out = tmp_path / "tfl"
    proc = run_edgetool("convert", tiny[0], "--quant", "int8", "--samples", "40", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    onnx_doc = json.loads((built / "manifest.json").read_text())
    tfl_doc = json.loads((out / "manifest.json").read_text())
    assert onnx_doc["calibration"] == tfl_doc["calibration"]
    assert onnx_doc["calibration"]["n_selected"] == 40
    art = next(a for a in onnx_doc["artifacts"] if a["quant"] == "int8")
    assert art["quantization"]["samples"] == 40
    stats = onnx_doc["calibration"]["inputs"]["image"]
    model = onnx.load(str(built / "tiny_int8.onnx"))
    fed = {"image"}  # the input, and what only transposes it (tf2onnx turns NHWC into ONNX's NCHW)
    fed |= {n.output[0] for n in model.graph.node if n.op_type == "Transpose" and n.input[0] in fed}
    q = next(n for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] in fed)
    scale = next(onnx.numpy_helper.to_array(i) for i in model.graph.initializer if i.name == q.input[1])
    want = (max(stats["max"], 0.0) - min(stats["min"], 0.0)) / 255
    assert float(scale) == pytest.approx(want, rel=1e-3)


def test_a_keras_file_converts_through_the_same_source(keras3_file, tmp_path):
    out = tmp_path / "k"
    proc = run_edgetool("convert", keras3_file, "--format", "onnx", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["source"]["kind"] == "keras-file"
    art = doc["artifacts"][0]
    assert art["agreement"]["ok"] is True
    with np.load(f"{keras3_file}.eval.npz") as z:
        x, y = z["x"], z["y"]
    session = _session(out / art["path"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x.astype(np.float32)})
    assert (got.argmax(1) == y).mean() >= 0.8


_UNSUPPORTED_SCRIPT = """
import sys, tensorflow as tf
class M(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def __call__(self, x):
        return {"y": tf.math.lgamma(x) + 1.0}
m = M()
tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.__call__})
"""


def test_an_op_tf2onnx_cannot_convert_is_refused_by_name(tmp_path):
    run_script(_UNSUPPORTED_SCRIPT, tmp_path / "lgamma")
    out = tmp_path / "out"
    proc = run_edgetool("convert", tmp_path / "lgamma", "--format", "onnx", "-o", out)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    text = " ".join((proc.stdout + proc.stderr).split())
    assert "Lgamma" in text and "--format tflite" in text
    assert not out.exists()


_HIDDEN = """
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tf2onnx", "onnx", "onnxruntime"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
sys.argv = ["edgetool", *sys.argv[1:]]
from edge_tool.cli import main
main()
"""


def test_missing_onnx_extra_is_refused_before_the_model_loads(tiny, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", _HIDDEN, "convert", str(tiny[0]), "--format", "onnx", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    text = " ".join((proc.stdout + proc.stderr).split())
    assert "pip install 'edgetool[onnx]'" in text and "tf2onnx" in text
    assert not out.exists()


@pytest.mark.parametrize(
    "args, words",
    [
        (["--quant", "fp16"], ["--quant fp16", "--format tflite"]),
        (["--quant", "int8", "--io-type", "int8"], ["--io-type int8"]),
        (["--allow-select-tf-ops"], ["--allow-select-tf-ops"]),
    ],
)
def test_options_onnx_cannot_honour_are_refused(tiny, tmp_path, args, words):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["convert", str(tiny[0]), "--format", "onnx", *args, "-o", str(out)], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert all(w in text for w in words), text
    assert not out.exists()


def test_registry_drives_format_choices_and_schema():
    assert [f.value for f in OutputFormat] == [*FORMATS, "all"]
    assert formats_for("all") == tuple(n for n, s in FORMATS.items() if s.in_all)
    assert formats_for("micro") == ("tflite", "micro") and formats_for("onnx") == ("onnx",)
    assert len(format_table().splitlines()) == 2 + len(FORMATS)


def test_registry_import_is_light():
    code = (
        "import sys; import edge_tool.cli, edge_tool.convert.formats; "
        "print(sorted(m for m in ('numpy', 'tensorflow', 'onnx', 'tf2onnx', 'onnxruntime') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


def test_a_manifest_of_the_previous_version_still_reads(tmp_path):
    doc = {
        "schema": "edgetool.convert/1",
        "tool": {"name": "edgetool", "version": "0.1.0"},
        "created": "2026-01-01T00:00:00+00:00",
        "source": {
            "path": "m",
            "kind": "saved_model",
            "flavor": "keras2",
            "sha256": "ab",
            "signature": {"key": "serving_default", "inputs": [], "outputs": []},
            "fixed_batch": None,
        },
        "options": {"model": "m", "output_dir": "o", "modes": ["int8"], "output_format": "all", "seed": 0},
        "calibration": None,
        "artifacts": [
            {
                "path": "m_int8.tflite",
                "format": "tflite",
                "quant": "int8",
                "size_bytes": 5,
                "sha256": "ab",
                "seconds": 1.0,
                "tensors": {
                    "ops": {"FULLY_CONNECTED": 1},
                    "weight_dtypes": {"int8": 1},
                    "activation_dtypes": {"int8": 2},
                    "input_dtypes": ["int8"],
                    "output_dtypes": ["int8"],
                    "weight_params": 40,
                    "flex_ops": [],
                    "variable_tensors": 0,
                },
                "state_warning": None,
                "metadata": None,
            },
            {"path": "tfjs", "format": "tfjs", "quant": "none", "size_bytes": 5, "files": {}, "seconds": 1.0},
        ],
        "versions": {"python": "3.11"},
        "timings_s": {"int8": 1.0, "tfjs": 1.0, "total": 2.0},
    }
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    read = Manifest.read(tmp_path / "manifest.json").to_dict()
    assert read.pop("options")["trust_model_code"] is False  # options it lacks read as their defaults, written whole
    assert read == {k: v for k, v in doc.items() if k != "options"}
