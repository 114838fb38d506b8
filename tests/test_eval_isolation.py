"""edgetool eval on models off the digits path: dynamic height/width, recurrent state, an artefact that crashes
LiteRT (its own row, exit 1, the others measured), the batched accuracy pass equal to batch 1, TFJS on wasm with
control flow. Every figure is checked against an independent LiteRT / TensorFlow computation."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.core.env import import_tf
from edge_tool.device import board_model, board_runner
from edge_tool.errors import ModelError, RuntimeFailure, UsageError
from edge_tool.evaluate import EvalConfig, run_eval
from edge_tool.litert import tflite_runner
from edge_tool.litert.flatbuffer_facts import read_flatbuffer
from edge_tool.litert.isolated import WorkerProcess, death_reason
from edge_tool.litert.tflite_runner import TfliteInterpreter
from edge_tool.models.readers import describe
from edge_tool.tfjs_writer.export import export_tfjs
from tests.oracles.litert_outputs import litert_outputs

tf = import_tf()
runner = CliRunner()


def _keras():
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    return tf_keras


def _reference(sm: Path, x: np.ndarray) -> np.ndarray:
    fn = tf.saved_model.load(str(sm)).signatures["serving_default"]
    (out,) = fn(tf.constant(x)).values()
    return out.numpy().astype(np.float64)


def _int8(conv, rep: np.ndarray):
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([rep[i : i + 1]] for i in range(min(30, len(rep))))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return conv


def _config(arts, sm, data, **kw) -> EvalConfig:
    return EvalConfig(**{**dict(artifacts=tuple(arts), reference=sm, data=data, warmup=2, runs=10), **kw})


# ---------------------------------------------------------------- dynamic height × width


@pytest.fixture(scope="module")
def dynamic_hw(tmp_path_factory) -> dict:
    """A CNN on Input((None, None, 1)) with global pooling, fp32 and int8 .tflite, 60 samples of 16×12."""
    keras = _keras()
    d = tmp_path_factory.mktemp("dynhw")
    inp = keras.Input((None, None, 1))
    x = keras.layers.Conv2D(8, 3, activation="relu")(inp)
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inp, keras.layers.Dense(5, activation="softmax")(x))
    model.save(str(d / "sm"), save_format="tf")
    x = np.random.default_rng(0).uniform(0, 1, (60, 16, 12, 1)).astype(np.float32)
    np.savez(d / "eval.npz", x=x)
    out = {"sm": d / "sm", "eval": d / "eval.npz", "x": x}
    for mode in ("fp32", "int8"):
        conv = tf.lite.TFLiteConverter.from_saved_model(str(d / "sm"))
        (d / f"{mode}.tflite").write_bytes((_int8(conv, x) if mode == "int8" else conv).convert())
        out[mode] = d / f"{mode}.tflite"
    return out


def _dynamic_oracle(path: Path, x: np.ndarray) -> np.ndarray:
    """Plain LiteRT: resize to each sample's shape, allocate, invoke, dequantize."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    inp, outp = it.get_input_details()[0], it.get_output_details()[0]
    it.resize_tensor_input(inp["index"], [1, *x.shape[1:]])
    it.allocate_tensors()
    rows = []
    for i in range(len(x)):
        s = x[i : i + 1]
        if inp["dtype"] == np.int8:
            sc, z = inp["quantization"]
            s = np.clip(np.round(s / sc + z), -128, 127).astype(np.int8)
        it.set_tensor(inp["index"], s)
        it.invoke()
        y = it.get_tensor(outp["index"]).astype(np.float64)
        if outp["dtype"] == np.int8:
            sc, z = outp["quantization"]
            y = (y - z) * sc
        rows.append(y)
    return np.concatenate(rows)


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_dynamic_height_width_resized_to_the_data(dynamic_hw):
    d = dynamic_hw
    from ai_edge_litert.interpreter import Interpreter

    assert list(Interpreter(model_path=str(d["fp32"])).get_input_details()[0]["shape_signature"]) == [-1, -1, -1, 1]
    report = run_eval(_config([d["fp32"], d["int8"]], d["sm"], d["eval"]))
    ref = _reference(d["sm"], d["x"])
    for r, mode in zip(report.results, ("fp32", "int8")):
        assert r.failed is None, r.failed
        out = _dynamic_oracle(d[mode], d["x"])
        assert r.top1_agreement == pytest.approx(float(np.mean(out.argmax(1) == ref.argmax(1))), abs=1e-12)
        assert r.max_abs_error == pytest.approx(float(np.abs(out - ref).max()), abs=1e-6)
        assert r.latency.runs == 10 and r.latency.p50 > 0  # the latency worker resized too
        assert r.batching == "batched"
    assert report.results[0].max_abs_error < 1e-5


# ---------------------------------------------------------------- recurrent state


@pytest.fixture(scope="module")
def lstm(tmp_path_factory) -> dict:
    """Embedding + LSTM classifier, converted with the raw TFLiteConverter at a fixed batch of 1 (builtin
    UNIDIRECTIONAL_SEQUENCE_LSTM with variable state tensors), and 200 token sequences."""
    keras = _keras()
    d = tmp_path_factory.mktemp("lstm")
    inp = keras.Input((12,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(50, 8)(inp)
    x = keras.layers.LSTM(16)(x)
    model = keras.Model(inp, keras.layers.Dense(4, activation="softmax")(x))
    model.save(str(d / "sm"), save_format="tf")
    fn = tf.function(lambda t: model(t), input_signature=[tf.TensorSpec([1, 12], tf.int32, name="tokens")])
    conv = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], model)
    (d / "lstm.tflite").write_bytes(conv.convert())
    x = np.random.default_rng(1).integers(0, 50, (200, 12)).astype(np.int32)
    np.savez(d / "eval.npz", x=x, y=np.random.default_rng(2).integers(0, 4, 200))
    return {"sm": d / "sm", "tflite": d / "lstm.tflite", "eval": d / "eval.npz", "x": x}


def _stateful_oracle(path: Path, x: np.ndarray, reset: bool) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    rows = []
    for k in range(len(x)):
        if reset:
            it.reset_all_variables()
        it.set_tensor(i, x[k : k + 1])
        it.invoke()
        rows.append(it.get_tensor(o).astype(np.float64))
    return np.concatenate(rows)


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_recurrent_state_reset_before_every_sample(lstm):
    assert read_flatbuffer(lstm["tflite"]).variable_tensors > 0
    ref = _reference(lstm["sm"], lstm["x"])
    reset = _stateful_oracle(lstm["tflite"], lstm["x"], reset=True)
    carried = _stateful_oracle(lstm["tflite"], lstm["x"], reset=False)
    agree = float(np.mean(reset.argmax(1) == ref.argmax(1)))
    assert agree >= 0.99
    assert np.mean(carried.argmax(1) == ref.argmax(1)) < agree  # the state really leaks without a reset
    for in_subprocess in (True, False):
        report = run_eval(_config([lstm["tflite"]], lstm["sm"], lstm["eval"], latency_in_subprocess=in_subprocess))
        (r,) = report.results
        assert r.failed is None and r.batching == "batch 1 (stateful)"
        assert r.top1_agreement == pytest.approx(agree, abs=1e-12)
        assert r.max_abs_error == pytest.approx(float(np.abs(reset - ref).max()), abs=1e-6)
        assert r.latency.runs == 10


# ---------------------------------------------------------------- a crash of LiteRT is a row, not the end


@pytest.fixture(scope="module")
def transformer(tmp_path_factory) -> dict:
    """A Transformer encoder block: fp32 .tflite (runs) and int16x8 .tflite (aborts LiteRT 2.x on invoke)."""
    keras = _keras()
    d = tmp_path_factory.mktemp("transformer")
    inp = keras.Input((8, 16))
    a = keras.layers.MultiHeadAttention(2, 8)(inp, inp)
    x = keras.layers.LayerNormalization()(inp + a)
    f = keras.layers.Dense(32, activation="gelu")(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.Dense(16)(f))
    model = keras.Model(inp, keras.layers.Dense(3, activation="softmax")(keras.layers.GlobalAveragePooling1D()(x)))
    model.save(str(d / "sm"), save_format="tf")
    x = np.random.default_rng(0).normal(size=(40, 8, 16)).astype(np.float32)
    np.savez(d / "eval.npz", x=x, y=np.arange(40) % 3)
    (d / "fp32.tflite").write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(d / "sm")).convert())
    conv = tf.lite.TFLiteConverter.from_saved_model(str(d / "sm"))
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([x[i : i + 1]] for i in range(20))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    (d / "int16x8.tflite").write_bytes(conv.convert())
    return {"sm": d / "sm", "eval": d / "eval.npz", "fp32": d / "fp32.tflite", "int16x8": d / "int16x8.tflite", "x": x}


_PLAIN_RUN = """
import sys, numpy as np
from ai_edge_litert.interpreter import Interpreter
it = Interpreter(model_path=sys.argv[1]); it.allocate_tensors()
d = it.get_input_details()[0]
it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"])); it.invoke()
"""


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_artifact_that_aborts_litert_is_its_own_row_and_exit_1(transformer, tmp_path):
    plain = subprocess.run([sys.executable, "-c", _PLAIN_RUN, str(transformer["int16x8"])], capture_output=True)
    if plain.returncode != -6:
        pytest.skip(f"this LiteRT no longer aborts on the int16x8 Transformer block (rc {plain.returncode})")
    report_path = tmp_path / "r.json"
    res = runner.invoke(
        app,
        [
            "eval",
            str(transformer["int16x8"]),
            str(transformer["fp32"]),
            "-r",
            str(transformer["sm"]),
            "-d",
            str(transformer["eval"]),
            "--runs",
            "5",
            "--json",
            str(report_path),
            "--markdown",
            str(tmp_path / "r.md"),
            "--html",
            str(tmp_path / "r.html"),
        ],
    )
    assert res.exit_code == 1, res.output
    assert "int16x8.tflite: does not run in LiteRT: the LiteRT process was killed by SIGABRT" in res.output
    assert "Traceback" not in res.output
    doc = json.loads(report_path.read_text())
    crashed, ok = doc["results"]
    assert crashed["failed"].startswith("does not run in LiteRT: the LiteRT process was killed by SIGABRT")
    assert crashed["top1_agreement"] is None and crashed["latency_ms"] is None
    # the other artefact was measured in full, and matches an independent computation
    ref = _reference(transformer["sm"], transformer["x"])
    out = litert_outputs(transformer["fp32"], transformer["x"])
    assert "failed" not in ok and ok["max_abs_error"] == pytest.approx(float(np.abs(out - ref).max()), abs=1e-6)
    assert ok["top1_agreement"] == pytest.approx(float(np.mean(out.argmax(1) == ref.argmax(1))))
    assert ok["latency_ms"]["runs"] == 5
    assert "does not run" in (tmp_path / "r.md").read_text()
    assert "int16x8.tflite" in (tmp_path / "r.html").read_text()


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_convert_refuses_a_mode_whose_file_aborts_litert(transformer, tmp_path):
    """The same int16x8 file from edgetool convert: refused (exit 2, the signal and the way out named), not
    shipped; fp32 of the same model converts as before."""
    plain = subprocess.run([sys.executable, "-c", _PLAIN_RUN, str(transformer["int16x8"])], capture_output=True)
    if plain.returncode != -6:
        pytest.skip(f"this LiteRT no longer aborts on the int16x8 Transformer block (rc {plain.returncode})")
    np.savez(tmp_path / "cal.npz", x=np.load(transformer["eval"])["x"][:20])
    res = runner.invoke(
        app,
        [
            "convert",
            str(transformer["sm"]),
            "--quant",
            "int16x8",
            "--calibration",
            str(tmp_path / "cal.npz"),
            "-o",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "--quant int16x8: the TFLite converter wrote a model that LiteRT cannot run" in text
    assert "killed by SIGABRT" in text and "--quant auto" in text
    assert not (tmp_path / "o").exists()
    res = runner.invoke(app, ["convert", str(transformer["sm"]), "--quant", "fp32", "-o", str(tmp_path / "f")])
    assert res.exit_code == 0, res.output


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_artifact_with_nan_outputs_is_a_failed_row_not_a_number(tmp_path):
    """An artefact whose runtime returns NaN where the reference is finite (tfjs 4.22's cpu kernels do that on a
    Transformer block) is a failed row naming it, exit 1 — not an accuracy of 0.1 and a NaN error in the table."""

    class Scores(tf.Module):
        def __init__(self, poison: float):
            super().__init__()
            self.w = tf.Variable(np.random.default_rng(0).normal(size=(4, 3)).astype("float32"))
            self.poison = poison

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def serve(self, x):
            return {"probs": tf.nn.softmax(tf.matmul(x, self.w)) * self.poison}

    good, bad = Scores(1.0), Scores(float("nan"))
    tf.saved_model.save(good, str(tmp_path / "sm"), signatures={"serving_default": good.serve})
    for name, module in (("good", good), ("nan", bad)):
        conv = tf.lite.TFLiteConverter.from_concrete_functions([module.serve.get_concrete_function()], module)
        (tmp_path / f"{name}.tflite").write_bytes(conv.convert())
    x = np.random.default_rng(1).normal(size=(40, 4)).astype("float32")
    np.savez(tmp_path / "d.npz", x=x, y=np.zeros(40, np.int64))
    res = runner.invoke(
        app,
        [
            "eval",
            str(tmp_path / "nan.tflite"),
            str(tmp_path / "good.tflite"),
            "-r",
            str(tmp_path / "sm"),
            "-d",
            str(tmp_path / "d.npz"),
            "--runs",
            "3",
            "--json",
            str(tmp_path / "r.json"),
        ],
    )
    assert res.exit_code == 1, res.output
    bad_row, good_row = json.loads((tmp_path / "r.json").read_text())["results"]
    assert re.match(
        r"gives non-finite outputs \(NaN/Inf in (\d+) of \1 values of 'probs'\) where the reference", bad_row["failed"]
    ), bad_row["failed"]  # every value of the first batch
    assert bad_row["top1_agreement"] is None and bad_row["max_abs_error"] is None
    assert good_row.get("failed") is None and good_row["top1_agreement"] == 1.0


def test_crash_reason_names_the_signal():
    assert (
        death_reason(-11, "INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\n", "LiteRT")
        == "the LiteRT process was killed by SIGSEGV (Segmentation fault)"
    )
    assert (
        death_reason(3, "Error: Tensorflow Op is not supported: Foo\n    at x (a.js:1)\n", "tfjs (Node)")
        == "the tfjs (Node) process exited with code 3: Error: Tensorflow Op is not supported: Foo"
    )


def test_a_worker_that_hangs_is_stopped_and_named(tmp_path, monkeypatch):
    """A runtime that never answers (a hang inside LiteRT or Node) becomes a RuntimeFailure after the timeout,
    and its process is gone — eval makes that a row instead of waiting forever."""

    monkeypatch.setenv("EDGETOOL_EVAL_TIMEOUT", "1.5")
    worker = WorkerProcess([sys.executable, "-c", "import time; time.sleep(120)"], "LiteRT", tmp_path)
    with pytest.raises(RuntimeFailure, match=r"LiteRT did not answer within 1.5 s and was stopped"):
        worker.ask({"op": "run"})
    assert worker._proc.poll() is not None
    worker.close()
    monkeypatch.setenv("EDGETOOL_EVAL_TIMEOUT", "soon")
    with pytest.raises(UsageError, match="EDGETOOL_EVAL_TIMEOUT must be a number of seconds, but it is 'soon'"):
        WorkerProcess([sys.executable, "-c", "print('{}')"], "LiteRT", tmp_path).receive()
    for bad in ("inf", "nan", "0"):  # inf would overflow the watchdog's wait; nan compares false everywhere
        monkeypatch.setenv("EDGETOOL_EVAL_TIMEOUT", bad)
        with pytest.raises(UsageError, match="must be a positive number of seconds below"):
            WorkerProcess([sys.executable, "-c", "print('{}')"], "LiteRT", tmp_path)


# ---------------------------------------------------------------- batched accuracy pass == batch 1


@pytest.fixture(scope="module")
def cnn(tmp_path_factory) -> dict:
    """A small CNN with BN and a depthwise conv on 16×16×3, dynamic batch; fp32, fp16, dynamic and int8 files."""
    keras = _keras()
    d = tmp_path_factory.mktemp("cnn")
    inp = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(16, 3, strides=2, padding="same")(inp)
    x = keras.layers.ReLU(6.0)(keras.layers.BatchNormalization()(x))
    x = keras.layers.DepthwiseConv2D(3, padding="same", activation="relu")(x)
    x = keras.layers.Conv2D(24, 1, activation="relu")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inp, keras.layers.Dense(10, activation="softmax")(x))
    model.save(str(d / "sm"), save_format="tf")
    x = np.random.default_rng(3).uniform(-1, 1, (150, 16, 16, 3)).astype(np.float32)
    np.savez(d / "eval.npz", x=x, y=np.random.default_rng(4).integers(0, 10, 150))
    out = {"sm": d / "sm", "eval": d / "eval.npz", "x": x}
    for mode in ("fp32", "fp16", "dynamic", "int8"):
        conv = tf.lite.TFLiteConverter.from_saved_model(str(d / "sm"))
        if mode == "int8":
            conv = _int8(conv, x)
        elif mode != "fp32":
            conv.optimizations = [tf.lite.Optimize.DEFAULT]
            if mode == "fp16":
                conv.target_spec.supported_types = [tf.float16]
        (d / f"{mode}.tflite").write_bytes(conv.convert())
        out[mode] = d / f"{mode}.tflite"
    return out


@pytest.mark.parametrize("mode", ["fp32", "fp16", "dynamic", "int8"])
def test_batched_pass_equals_batch_1(cnn, mode):
    model = TfliteInterpreter(cnn[mode], threads=2)
    feeds = model.prepare({"input_1": cnn["x"]})
    (b,) = model.outputs
    batched = model.dequantize(b, model.predict(feeds)[b.index])
    assert model.batching == "dynamic"
    single = litert_outputs(cnn[mode], cnn["x"])  # independent: plain LiteRT, one sample at a time
    assert np.array_equal(batched.argmax(1), single.argmax(1))
    # float kernels: rounding only (dynamic-range models quantize activations per sample row, so a batch
    # does not change them); int8: integer arithmetic, one output step at most
    tol = {"fp32": 1e-5, "fp16": 1e-5, "dynamic": 1e-5, "int8": b.scale * 1.01}[mode]
    assert np.max(np.abs(batched - single)) <= tol


def test_a_batch_is_invoked_in_chunks_that_keep_its_largest_activation_small(cnn, monkeypatch):
    """A batch of a big model's activations leaves the cache (MobileNetV2: 9.1 ms of CPU per sample at batch 64, 7.4
    at batch 1, the same bits), so the pass invokes at most CHUNK_BYTES of the largest activation at a time."""
    fp32, int8 = TfliteInterpreter(cnn["fp32"]), TfliteInterpreter(cnn["int8"])
    largest = 8 * 8 * 24  # Conv2D(24, 1) on the 8x8 map: the largest operator output (the input is no op's)
    assert (fp32.facts.activation_bytes, int8.facts.activation_bytes) == (largest * 4, largest)
    assert fp32.chunk >= len(cnn["x"])  # a small model: the whole batch in one invoke
    monkeypatch.setattr(tflite_runner, "CHUNK_BYTES", 7 * largest * 4)
    chunked = TfliteInterpreter(cnn["fp32"])
    assert chunked.chunk == 7
    calls, invoke = [], chunked.interp.invoke
    chunked.interp.invoke = lambda: (calls.append(1), invoke())[1]
    feeds = chunked.prepare({"input_1": cnn["x"]})
    (b,) = chunked.outputs
    got = chunked.predict(feeds)[b.index]
    assert chunked.batching == "dynamic"
    assert len(calls) == 3 + -(-len(cnn["x"]) // 7)  # the batching check (2 samples batched, then each), then chunks
    np.testing.assert_array_equal(got, fp32.predict(fp32.prepare({"input_1": cnn["x"]}))[b.index])


def test_the_board_runner_invokes_in_the_hosts_chunks(cnn, monkeypatch):
    """The board's model (device/board_model, run here on the host's LiteRT, with board_runner's ``bindings`` beside
    it as in the program sent to a device) takes the host's samples per invoke."""
    from ai_edge_litert.interpreter import Interpreter

    monkeypatch.setattr(board_model, "bindings", board_runner.bindings, raising=False)
    BoardModel = board_model.BoardModel
    whole = BoardModel(Interpreter, str(cnn["fp32"]), 1, False)
    chunked = BoardModel(Interpreter, str(cnn["fp32"]), 1, False, chunk=7)
    calls, invoke = [], chunked.interp.invoke
    chunked.interp.invoke = lambda: (calls.append(1), invoke())[1]
    index, out = whole.inputs[0][1], [whole.outputs[0][1]]
    got = chunked.predict({index: cnn["x"]}, out)[0]
    assert chunked.describe() == "batched" and len(calls) == 3 + -(-len(cnn["x"]) // 7)
    np.testing.assert_array_equal(got, whole.predict({index: cnn["x"]}, out)[0])


def test_run_eval_batched_matches_batch_1_oracle(cnn):
    arts = [cnn[m] for m in ("fp32", "int8")]
    report = run_eval(_config(arts, cnn["sm"], cnn["eval"], batch_size=64, latency_in_subprocess=False))
    ref = _reference(cnn["sm"], cnn["x"])
    for r, path in zip(report.results, arts):
        single = litert_outputs(path, cnn["x"])
        assert r.batching == "batched"
        assert r.top1_agreement == pytest.approx(float(np.mean(single.argmax(1) == ref.argmax(1))), abs=1e-12)
        assert r.max_abs_error == pytest.approx(float(np.abs(single - ref).max()), abs=2e-5)
    # the reference gets half the cores, the two LiteRT workers take turns on the rest
    cores = len(os.sched_getaffinity(0))
    assert report.settings["reference_pass_threads"] == max(1, cores // 2)
    assert report.settings["accuracy_pass_threads"] == max(1, cores - max(1, cores // 2))


def test_fixed_batch_file_runs_in_chunks_of_its_batch(cnn, tmp_path):
    """A file converted at a fixed batch of 4 gets chunks of 4 (the last padded), with the oracle's figures."""
    model = tf.saved_model.load(str(cnn["sm"]))
    fn = model.signatures["serving_default"]
    name = list(fn.structured_input_signature[1])[0]
    fixed = tf.function(lambda x: fn(**{name: x}), input_signature=[tf.TensorSpec([4, 16, 16, 3], tf.float32)])
    path = tmp_path / "b4.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_concrete_functions([fixed.get_concrete_function()], model).convert())
    m = TfliteInterpreter(path)
    assert (m.batching, m.fixed_batch) == ("fixed", 4)
    x = cnn["x"][:10]  # 10 = 4 + 4 + 2 (padded)
    (b,) = m.outputs
    out = m.dequantize(b, m.predict(m.prepare({"x": x}))[b.index])
    assert out.shape == (10, 10)
    np.testing.assert_allclose(out, litert_outputs(cnn["fp32"], x), atol=1e-5)


# ---------------------------------------------------------------- TFJS: wasm backend, control flow, failure rows


@pytest.mark.slow
def test_tfjs_lstm_runs_with_execute_async_and_reports_its_backend(lstm, tmp_path):
    export_tfjs(lstm["sm"], tmp_path / "tfjs")
    report = run_eval(_config([tmp_path / "tfjs"], lstm["sm"], lstm["eval"], runs=3))
    (r,) = report.results
    assert r.failed is None, r.failed
    assert r.top1_agreement >= 0.99 and r.max_abs_error < 1e-4
    backend = "wasm" if "(wasm backend" in r.runtime else "cpu"
    assert f"tfjs {backend} backend" in r.latency_note
    if backend == "cpu":  # wasm lacks a kernel this graph needs: the note says which
        assert "wasm backend failed (" in r.latency_note


@pytest.mark.slow
def test_tfjs_model_that_fails_everywhere_is_a_row(dynamic_hw, tmp_path):
    export_tfjs(dynamic_hw["sm"], tmp_path / "good")
    bad = tmp_path / "bad"
    bad.mkdir()
    doc = json.loads((tmp_path / "good" / "model.json").read_text())
    for node in doc["modelTopology"]["node"]:
        if node["op"] not in ("Const", "Placeholder"):  # the first op of the graph: nothing runs past it
            node["op"] = "NoSuchOpAnywhere"
            break
    (bad / "model.json").write_text(json.dumps(doc))
    for shard in (tmp_path / "good").glob("*.bin"):
        (bad / shard.name).write_bytes(shard.read_bytes())
    res = runner.invoke(
        app,
        [
            "eval",
            str(bad),
            str(tmp_path / "good"),
            "-r",
            str(dynamic_hw["sm"]),
            "-d",
            str(dynamic_hw["eval"]),
            "--runs",
            "3",
            "--json",
            str(tmp_path / "r.json"),
        ],
    )
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and "    at " not in res.output  # no JS stack either
    bad_row, good_row = json.loads((tmp_path / "r.json").read_text())["results"]
    assert bad_row["failed"].startswith("does not run in tfjs (cpu backend, Node):")
    assert "NoSuchOpAnywhere" in bad_row["failed"]
    assert "failed" not in good_row and good_row["top1_agreement"] == 1.0
    assert "(wasm backend, Node)" in good_row["runtime"]


def test_tfjs_weight_path_outside_the_model_dir_is_refused(tmp_path):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 8)
    d = tmp_path / "m"
    d.mkdir()
    (d / "model.json").write_text(
        json.dumps(
            {
                "format": "graph-model",
                "modelTopology": {"node": []},
                "weightsManifest": [{"paths": ["../secret.bin"], "weights": []}],
            }
        )
    )
    with pytest.raises(ModelError, match="outside"):
        describe(d)


def test_names_are_printed_verbatim_not_as_markup(cnn, tmp_path):
    art = tmp_path / "[bold]m[i].tflite"
    art.write_bytes(cnn["fp32"].read_bytes())
    res = runner.invoke(
        app,
        ["eval", str(art), "-r", str(cnn["sm"]), "-d", str(cnn["eval"]), "--runs", "2", "--max-latency-ms", "0.000001"],
    )
    assert res.exit_code == 1, res.output
    assert "[bold]m[i].tflite" in res.output and "Traceback" not in res.output
