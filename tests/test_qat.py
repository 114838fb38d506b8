"""QAT mode: full-integer int8 output, at least as accurate as plain int8 PTQ, mirrored fine-tuning, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.core.env import import_tf
from edge_tool.errors import DataError, ModelError, UsageError
from edge_tool.parsers.tflite_schema import enum_names, tflite_schema
from edge_tool.qat.export import qat_to_tflite
from edge_tool.qat.folding import fold_model
from edge_tool.qat.pipeline import QatOptions, quantization_aware_model
from edge_tool.qat.source import load_keras_for_qat
from edge_tool.training.config import Strategy
from edge_tool.training.data import load_digits_split

REPO = Path(__file__).resolve().parents[1]
INTEGER = ("int8", "int32")


# ---------------------------------------------------------------- helpers (real TF, real converter, real LiteRT)


def _interpreter(tflite: bytes):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    # no XNNPACK delegate, so the op list is the model's own ops
    it = Interpreter(
        model_content=tflite, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    )
    it.allocate_tensors()
    return it


def _graph(tflite: bytes) -> tuple[list[tuple[str, list[int], list[int]]], list[tuple[str, str]], set[int]]:
    """Subgraph 0 read from the flatbuffer (no private interpreter API): ops in execution order as
    (name, input indices, output indices), tensors as (name, dtype), the model's I/O tensor indices."""
    schema = tflite_schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(tflite), 0))
    sg = model.subgraphs[0]
    types, builtins = enum_names(schema.TensorType), enum_names(schema.BuiltinOperator)
    ops = []
    for op in sg.operators:
        code = model.operatorCodes[op.opcodeIndex]
        ops.append((builtins[max(code.builtinCode, code.deprecatedBuiltinCode)], list(op.inputs), list(op.outputs)))
    tensors = [(t.name.decode(), types[t.type].lower()) for t in sg.tensors]
    return ops, tensors, set(sg.inputs) | set(sg.outputs)


def _op_names(tflite: bytes) -> list[str]:
    return [name for name, _, _ in _graph(tflite)[0]]


def _non_integer(tflite: bytes) -> tuple[list[str], list[str]]:
    """(non-int8/int32 tensors other than the model's I/O, ops touching a float tensor other than the I/O boundary)."""
    ops, tensors, io = _graph(tflite)
    floats = [f"{name}:{dtype}" for i, (name, dtype) in enumerate(tensors) if i not in io and dtype not in INTEGER]
    found = []
    for name, inputs, outputs in ops:
        if all(i in io or tensors[i][1] in INTEGER for i in (*inputs, *outputs) if i >= 0):
            continue
        boundary = (name == "QUANTIZE" and set(inputs) <= io) or (name == "DEQUANTIZE" and set(outputs) <= io)
        if not boundary:
            found.append(name)
    return floats, found


def _tflite_accuracy(tflite: bytes, x: np.ndarray, y: np.ndarray) -> float:
    it = _interpreter(tflite)
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    hits = 0
    for i in range(len(x)):
        xi = x[i : i + 1].astype(inp["dtype"]) if inp["dtype"] == np.uint8 else x[i : i + 1].astype(np.float32)
        if inp["dtype"] == np.int8:
            scale, zero = inp["quantization"]
            xi = np.clip(np.round(xi / scale + zero), -128, 127).astype(inp["dtype"])
        it.set_tensor(inp["index"], xi)
        it.invoke()
        hits += int(np.argmax(it.get_tensor(out["index"])[0]) == y[i])
    return hits / len(x)


def _fp32_accuracy(model_dir: Path, x, y) -> float:
    tf = import_tf()
    fn = tf.saved_model.load(str(model_dir)).signatures["serving_default"]
    probs = list(fn(pixels=tf.constant(x, tf.float32)).values())[0].numpy()
    return float(np.mean(probs.argmax(axis=1) == y))


def _representative(model_dir: Path):
    cal = np.load(model_dir / "calibration.npz")["x"].astype(np.float32)
    return lambda: ([cal[i : i + 1]] for i in range(len(cal)))


def _ptq_int8(model_dir: Path) -> bytes:
    tf = import_tf()
    conv = tf.lite.TFLiteConverter.from_saved_model(str(model_dir))
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = _representative(model_dir)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return conv.convert()


def _train_split():
    return load_digits_split(seed=0)  # the split the digits_model fixture trained on; eval.npz is its held-out part


@pytest.fixture(scope="module")
def qat_run(digits_model):
    """QAT under the default strategy with default options, converted with float and with int8 I/O."""
    split = _train_split()
    epochs = []
    model = quantization_aware_model(
        digits_model, split.x_train, split.y_train, QatOptions(), progress=lambda e, logs: epochs.append((e, logs))
    )
    rep = _representative(digits_model)
    return {
        "model": model,
        "epochs": epochs,
        "float_io": qat_to_tflite(model, rep, "float32"),
        "int8_io": qat_to_tflite(model, rep, "int8"),
    }


# ---------------------------------------------------------------- the bar: full integer, >= PTQ, near fp32


@pytest.mark.slow
def test_qat_tflite_is_full_integer(qat_run):
    tensors, ops = _non_integer(qat_run["float_io"])
    assert tensors == [] and ops == [], f"float tensors {tensors}, float ops {ops}"
    it = _interpreter(qat_run["float_io"])
    assert it.get_input_details()[0]["dtype"] == np.float32
    assert it.get_output_details()[0]["dtype"] == np.float32
    names = _op_names(qat_run["float_io"])
    assert names[0] == "QUANTIZE" and names[-1] == "DEQUANTIZE" and "CONV_2D" in names, names


@pytest.mark.slow
def test_qat_with_int8_io_has_no_float_tensor_at_all(qat_run):
    it = _interpreter(qat_run["int8_io"])
    dtypes = dict(_graph(qat_run["int8_io"])[1])
    assert all(d in INTEGER for d in dtypes.values()), {n: d for n, d in dtypes.items() if d not in INTEGER}
    assert it.get_input_details()[0]["dtype"] == np.int8
    assert it.get_output_details()[0]["dtype"] == np.int8


@pytest.mark.slow
def test_qat_int8_is_at_least_as_accurate_as_ptq_int8(qat_run, digits_model):
    ev = np.load(digits_model / "eval.npz")
    x, y = ev["x"], ev["y"]
    fp32 = _fp32_accuracy(digits_model, x, y)
    ptq = _tflite_accuracy(_ptq_int8(digits_model), x, y)
    qat = _tflite_accuracy(qat_run["float_io"], x, y)
    qat_int8_io = _tflite_accuracy(qat_run["int8_io"], x, y)
    report = f"held-out accuracy on {len(y)}: fp32 {fp32:.4f}, PTQ int8 {ptq:.4f}, QAT int8 {qat:.4f}"
    print(report)
    assert qat >= ptq, report
    assert qat >= fp32 - 0.015, report
    assert qat_int8_io == qat, f"int8 I/O changed accuracy: {qat_int8_io} vs {qat}"


@pytest.mark.slow
def test_qat_reports_progress_and_folds_batchnorm_rescaling_and_relu(qat_run):
    epochs = qat_run["epochs"]
    assert 1 <= len(epochs) <= QatOptions().epochs and [e for e, _ in epochs] == list(range(len(epochs)))
    assert all(isinstance(logs["loss"], float) and np.isfinite(logs["loss"]) for _, logs in epochs)
    notes = qat_run["model"].edgetool_qat_notes
    assert sorted(notes["folded"]) == [
        "bn1 -> conv1",
        "bn2 -> conv2",
        "relu1 -> conv1",
        "relu2 -> conv2",
        "rescale -> conv1",
    ]
    assert notes["fold_dropped"] == [] and notes["float_layers"] == []  # everything left is annotated for tfmot
    assert notes["ranges_calibrated"] >= 5
    history = notes["history"]
    assert history[0]["epoch"] == 0 and notes["best_epoch"] in [r["epoch"] for r in history]
    layer_types = {type(layer).__name__ for layer in qat_run["model"].layers}
    assert not layer_types & {"BatchNormalization", "Rescaling", "ReLU"}


@pytest.mark.slow
def test_folding_is_exact(digits_model):
    import tf_keras as keras

    source = load_keras_for_qat(digits_model)
    x = np.load(digits_model / "eval.npz")["x"]
    folded, folds, dropped = fold_model(keras, source, [x[:64]])
    diff = np.abs(folded(x, training=False).numpy() - source(x, training=False).numpy()).max()
    assert diff < 1e-5, diff
    assert len(folds) == 5 and dropped == []
    assert len(folded.layers) == len(source.layers) - 5


@pytest.mark.slow
def test_layers_tfmot_cannot_annotate_are_calibrated_to_int8_at_conversion(uint8_model):
    """uint8 input: the Rescaling that casts it cannot be folded or annotated, yet the result is full-integer."""
    split = _train_split()
    model = quantization_aware_model(uint8_model, split.x_train.astype(np.uint8), split.y_train, QatOptions(epochs=1))
    assert model.edgetool_qat_notes["float_layers"] == ["rescaling"]
    cal = np.load(uint8_model / "calibration.npz")["x"]
    tflite = qat_to_tflite(model, lambda: ([cal[i : i + 1]] for i in range(len(cal))))
    tensors, ops = _non_integer(tflite)
    # the only float left is the input boundary: uint8 -> float32 (CAST) -> int8 (QUANTIZE, Rescaling folded in)
    assert ops == ["CAST", "QUANTIZE"] and len(tensors) == 1, (tensors, ops)
    names = _op_names(tflite)
    assert names[:2] == ["CAST", "QUANTIZE"] and "MUL" not in names, names
    ev = np.load(uint8_model / "eval.npz")
    assert _tflite_accuracy(tflite, ev["x"], ev["y"]) >= 0.9


# ---------------------------------------------------------------- mirrored (fresh process: CPU split before TF starts)

_MIRRORED_SCRIPT = """
import json, sys
import numpy as np
from pathlib import Path
from edge_tool.qat.pipeline import QatOptions, quantization_aware_model
from edge_tool.qat.export import qat_to_tflite
from edge_tool.training.data import load_digits_split
model_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
s = load_digits_split(seed=0)
cal = np.load(model_dir / "calibration.npz")["x"].astype(np.float32)
q = quantization_aware_model(model_dir, s.x_train, s.y_train, QatOptions(strategy="mirrored", replicas=2))
out.write_bytes(qat_to_tflite(q, lambda: ([cal[i:i + 1]] for i in range(len(cal)))))
print(json.dumps({"replicas": int(q.distribute_strategy.num_replicas_in_sync)}))
"""


@pytest.mark.slow
def test_qat_under_mirrored_strategy(digits_model, tmp_path):
    out = tmp_path / "qat_mirrored.tflite"
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", _MIRRORED_SCRIPT, str(digits_model), str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"replicas": 2}
    tflite = out.read_bytes()
    assert _non_integer(tflite) == ([], [])
    ev = np.load(digits_model / "eval.npz")
    fp32 = _fp32_accuracy(digits_model, ev["x"], ev["y"])
    assert _tflite_accuracy(tflite, ev["x"], ev["y"]) >= fp32 - 0.015


# ---------------------------------------------------------------- inputs QAT refuses, clearly


@pytest.mark.slow
def test_keras3_export_is_refused_with_a_clear_message(keras3_export):
    with pytest.raises(ModelError, match="Keras 3 export") as err:
        load_keras_for_qat(keras3_export)
    assert "tf_keras" in str(err.value) and "--quant int8" in str(err.value)


def test_keras3_dot_keras_file_is_refused(tmp_path):
    path = tmp_path / "model.keras"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        zf.writestr("config.json", "{}")
    with pytest.raises(ModelError, match=r"Keras 3\.15\.1 \(Keras 3\)"):
        load_keras_for_qat(path)


def test_missing_path_and_plain_saved_model_are_refused(tmp_path):
    with pytest.raises(ModelError, match="nothing is there"):
        load_keras_for_qat(tmp_path / "absent")
    with pytest.raises(ModelError, match="Expected a SavedModel directory"):
        load_keras_for_qat(tmp_path)  # an empty dir is not a SavedModel
    tf = import_tf()
    module = tf.Module()
    module.f = tf.function(lambda x: x * 2.0, input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32)])
    tf.saved_model.save(module, str(tmp_path / "plain"), signatures={"serving_default": module.f})
    with pytest.raises(ModelError, match="plain TensorFlow SavedModel without Keras metadata"):
        load_keras_for_qat(tmp_path / "plain")


@pytest.mark.slow
def test_h5_and_tf_keras_dot_keras_files_are_accepted(digits_model, tmp_path):
    source = load_keras_for_qat(digits_model)
    for name in ("model.h5", "model.keras"):
        source.save(str(tmp_path / name))
        loaded = load_keras_for_qat(tmp_path / name)
        assert [type(x).__name__ for x in loaded.layers] == [type(x).__name__ for x in source.layers]


@pytest.mark.slow
def test_training_data_that_does_not_fit_is_a_data_error(digits_model):
    with pytest.raises(DataError) as err:
        quantization_aware_model(digits_model, np.zeros((4, 8, 8, 3), np.float32), np.array([0, 1, 2, 11]))
    assert "shape (n, 8, 8, 1)" in str(err.value) and "0..9" in str(err.value)
    with pytest.raises(DataError, match="differ in length"):
        quantization_aware_model(digits_model, np.zeros((4, 8, 8, 1), np.float32), np.array([0, 1, 2]))


def test_options_are_validated_all_at_once():
    with pytest.raises(UsageError) as err:
        QatOptions(
            epochs=0,
            batch_size=0,
            learning_rate=0,
            strategy="multiworker",
            replicas=0,
            distillation=2,
            patience=0,
            held_out_fraction=1.0,
            range_samples=0,
        )
    msg = str(err.value)
    for part in (
        "epochs",
        "batch size",
        "learning rate",
        "strategy",
        "replicas",
        "distillation",
        "patience",
        "held-out fraction",
        "range samples",
    ):
        assert part in msg, (part, msg)

    assert QatOptions(strategy=Strategy.MIRRORED).strategy == "mirrored"


def test_eval_data_is_refused_without_qat_or_auto(tmp_path):
    res = CliRunner().invoke(
        app,
        [
            "convert",
            str(tmp_path),
            "-o",
            str(tmp_path / "out"),
            "--quant",
            "int8",
            "--eval-data",
            str(tmp_path / "e.npz"),
        ],
    )
    assert res.exit_code == 2, res.output
    assert "--eval-data belongs to --quant qat" in res.output and not (tmp_path / "out").exists()
