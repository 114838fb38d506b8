"""eval of .onnx artefacts in ONNX Runtime (CPU EP), beside LiteRT in one table: the onnx rows' figures against an
independent onnxruntime + TensorFlow computation, the int8 QDQ model's float boundary, hostile .onnx files refused
(exit 2, nothing written), the missing extra named. The .onnx files are made here with tf2onnx and
onnxruntime.quantization directly, not with edgetool."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.errors import UsageError
from edge_tool.models.readers import ArtifactFormat, describe
from edge_tool.training.data import load_digits_split
from tests.oracles.litert_outputs import litert_outputs
from tests.schema_check import validated

# not in the quick tier: ONNX conversions and ONNX Runtime rows (~1 min of the quick tier under load)
pytestmark = pytest.mark.slow

ort = pytest.importorskip("onnxruntime")  # the `onnx` extra; scripts/setup.sh installs it for the suite
runner = CliRunner()


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """A tiny trained CNN on 8×8 digits: its SavedModel (the reference), .tflite, .onnx and int8 QDQ .onnx."""
    import tensorflow as tf
    import tf2onnx
    import tf_keras as keras
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    d = tmp_path_factory.mktemp("onnx-eval")
    keras.utils.set_random_seed(0)
    s = load_digits_split(0)
    inp = keras.Input((8, 8, 1), name="image")
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inp)
    out = keras.layers.Dense(10, activation="softmax")(keras.layers.Flatten()(x))
    model = keras.Model(inp, out)
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(s.x_train, s.y_train, epochs=3, batch_size=32, verbose=0)
    model.save(d / "ref", save_format="tf")
    np.savez(d / "eval.npz", x=s.x_eval.astype("float32"), y=s.y_eval)
    (d / "m.tflite").write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(d / "ref")).convert())
    spec = (tf.TensorSpec((None, 8, 8, 1), tf.float32, name="image"),)
    tf2onnx.convert.from_keras(model, input_signature=spec, opset=17, output_path=str(d / "m.onnx"))
    tf2onnx.convert.from_keras(
        model, input_signature=spec, opset=17, output_path=str(d / "nchw.onnx"), inputs_as_nchw=["image"]
    )

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.samples = iter({"image": s.x_train[i : i + 1].astype("float32")} for i in range(50))

        def get_next(self):
            return next(self.samples, None)

    quantize_static(
        str(d / "m.onnx"),
        str(d / "q.onnx"),
        Reader(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
    )
    return {
        "dir": d,
        "ref": d / "ref",
        "data": d / "eval.npz",
        "tflite": d / "m.tflite",
        "onnx": d / "m.onnx",
        "qdq": d / "q.onnx",
        "nchw": d / "nchw.onnx",
    }


def _onnx_outputs(path: Path, x: np.ndarray) -> np.ndarray:
    """Independent oracle: a plain onnxruntime session, one sample at a time, float64 outputs."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return np.concatenate([session.run(None, {name: x[i : i + 1]})[0] for i in range(len(x))]).astype(np.float64)


def _reference_outputs(ref: Path, x: np.ndarray) -> np.ndarray:
    import tensorflow as tf

    fn = tf.saved_model.load(str(ref)).signatures["serving_default"]
    return next(iter(fn(image=tf.constant(x)).values())).numpy().astype(np.float64)


def test_litert_and_onnx_runtime_rows_side_by_side(models, tmp_path):
    """One eval: the .tflite row in LiteRT, the fp32 and int8 QDQ .onnx rows in ONNX Runtime, each with the same
    drift metrics and latency loop; the onnx rows' accuracy, agreement and error equal an independent run."""
    report = tmp_path / "r.json"
    result = runner.invoke(
        app,
        [
            "eval",
            str(models["tflite"]),
            str(models["onnx"]),
            str(models["qdq"]),
            "-r",
            str(models["ref"]),
            "-d",
            str(models["data"]),
            "--runs",
            "5",
            "--json",
            str(report),
            "--markdown",
            str(tmp_path / "r.md"),
        ],
    )
    assert result.exit_code == 0, result.output
    doc = validated(report, "eval")
    rows = {r["artifact"]: r for r in doc["results"]}
    assert [rows[n]["format"] for n in ("m.tflite", "m.onnx", "q.onnx")] == ["tflite", "onnx", "onnx"]
    assert rows["m.onnx"]["quant"] == "fp32" and rows["q.onnx"]["quant"] == "int8 QDQ"
    with np.load(models["data"]) as npz:
        x, y = npz["x"], npz["y"]
    ref = _reference_outputs(models["ref"], x)
    for name, out in (
        ("m.onnx", _onnx_outputs(models["onnx"], x)),
        ("q.onnx", _onnx_outputs(models["qdq"], x)),
        ("m.tflite", litert_outputs(models["tflite"], x)),
    ):
        row = rows[name]
        assert row["accuracy"] == pytest.approx(np.mean(out.argmax(1) == y), abs=1e-9), name
        assert row["top1_agreement"] == pytest.approx(np.mean(out.argmax(1) == ref.argmax(1)), abs=1e-9), name
        assert row["max_abs_error"] == pytest.approx(np.abs(out - ref).max(), rel=1e-3, abs=1e-6), name
    assert rows["q.onnx"]["max_abs_error"] > 1e-3  # really quantized: not the float model's error
    for name in ("m.onnx", "q.onnx"):
        row = rows[name]
        assert row["runtime"] == f"onnxruntime {ort.__version__} (CPUExecutionProvider)"
        assert row["latency_ms"]["runs"] == 5 and row["latency_ms"]["cold_start"] > 0
        assert row["peak_rss_mb"] > 0 and row["accuracy_pass"] == "batched"
    md = (tmp_path / "r.md").read_text()
    assert "| m.onnx | onnx | fp32 |" in md and "| q.onnx | onnx | int8 QDQ |" in md
    assert f"q.onnx: onnxruntime {ort.__version__} (CPUExecutionProvider)" in md


def test_onnx_recognised_by_content(models, tmp_path):
    """An ONNX model under another name is read as ONNX; an .onnx name holding a .tflite is refused as that."""
    other = tmp_path / "model.bin"
    other.write_bytes(models["onnx"].read_bytes())
    assert describe(other).format is ArtifactFormat.ONNX
    assert describe(models["qdq"]).quant == "int8 QDQ"


def _hostile(kind: str, models, d: Path) -> Path:
    import onnx

    path = d / f"{kind}.onnx"
    if kind == "garbage":
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "tflite":
        path.write_bytes(models["tflite"].read_bytes())
    else:
        model = onnx.load(str(models["onnx"]))
        if kind == "huge":
            model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 10**9
        else:  # external data outside the model's directory
            t = model.graph.initializer[0]
            t.ClearField("raw_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            t.external_data.add(key="location", value="../../etc/passwd")
        onnx.save(model, str(path))
    return path


@pytest.mark.parametrize(
    "kind, says",
    [
        ("garbage", "does not parse as an ONNX ModelProto"),
        ("empty", "not a usable ONNX model"),
        ("tflite", "it is a TFLite flatbuffer"),
        ("huge", "over edgetool's"),
        ("external", "refusing to read data from outside the model's directory"),
    ],
)
def test_hostile_onnx_refused(models, tmp_path, kind, says):
    """Refused with exit 2 and one paragraph before any runtime loads it; the report is not written."""
    path = _hostile(kind, models, tmp_path)
    result = runner.invoke(
        app,
        ["eval", str(path), "-r", str(models["ref"]), "-d", str(models["data"]), "--json", str(tmp_path / "r.json")],
    )
    assert result.exit_code == 2, result.output
    assert says in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r.json").exists()


def test_missing_extra_names_the_install(models, monkeypatch):
    """Without onnxruntime, an .onnx artefact is refused naming the extra to install."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    with pytest.raises(UsageError, match=r"pip install 'edgetool\[onnx\]'"):
        describe(models["onnx"])


def test_nchw_onnx_is_refused_naming_both_layouts(models, tmp_path):
    """An NCHW model (as PyTorch exports) against the NHWC reference and data: exit 2 naming the input and both
    per-sample shapes, no report written."""
    result = runner.invoke(
        app,
        [
            "eval",
            str(models["nchw"]),
            "-r",
            str(models["ref"]),
            "-d",
            str(models["data"]),
            "--json",
            str(tmp_path / "r.json"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "data per-sample shape (8, 8, 1), but nchw.onnx expects (1, 8, 8)" in " ".join(result.output.split())
    assert not (tmp_path / "r.json").exists()


def test_raw_uint8_input_model(uint8_model, tmp_path):
    """A model whose own input is raw uint8 pixels: its .onnx takes uint8, fed the data unchanged; the row equals
    an independent onnxruntime run on the same uint8 samples."""
    import tensorflow as tf
    import tf2onnx
    import tf_keras as keras

    spec = (tf.TensorSpec((None, 8, 8, 1), tf.uint8, name="image"),)
    path = tmp_path / "u8.onnx"
    tf2onnx.convert.from_keras(
        keras.models.load_model(uint8_model), input_signature=spec, opset=17, output_path=str(path)
    )
    assert ort.InferenceSession(str(path)).get_inputs()[0].type == "tensor(uint8)"
    result = runner.invoke(
        app,
        [
            "eval",
            str(path),
            "-r",
            str(uint8_model),
            "-d",
            str(uint8_model / "eval.npz"),
            "--runs",
            "3",
            "--json",
            str(tmp_path / "r.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    row = json.loads((tmp_path / "r.json").read_text())["results"][0]
    with np.load(uint8_model / "eval.npz") as npz:
        x, y = npz["x"], npz["y"]
    out = _onnx_outputs(path, x)
    assert row["accuracy"] == pytest.approx(np.mean(out.argmax(1) == y), abs=1e-9)
    assert row["max_abs_error"] < 1e-5
