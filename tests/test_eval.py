"""edgetool eval: drift figures checked against an independent computation, the CI gate, quantized I/O, TFJS in
Node, an honest timing loop, the three report formats and every input error path."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.convert.api import convert
from edge_tool.convert.config import ConvertConfig
from edge_tool.core.env import import_tf
from edge_tool.errors import DataError, ModelError, UsageError
from edge_tool.evaluate import EvalConfig, run_eval
from edge_tool.evaluate.latency import measure_tflite, measure_tflite_subprocess
from edge_tool.evaluate.metrics import cosine, topk_accuracy
from edge_tool.litert.flatbuffer_facts import read_flatbuffer
from edge_tool.litert.tflite_runner import TfliteInterpreter
from edge_tool.models.readers import describe
from edge_tool.nodejs import tfjs_session as tfjs_runner
from edge_tool.tfjs_writer.export import export_tfjs
from tests.oracles.litert_outputs import litert_outputs
from tests.oracles.raw_converter import raw_converter
from tests.schema_check import validated

runner = CliRunner()
tf = import_tf()


def _eval_cli(args: list[str]):
    """``edgetool eval ARGS`` in-process (exit code + combined output)."""
    return runner.invoke(app, ["eval", *args])


# ---------------------------------------------------------------- artefacts made with the raw TFLite converter


def _raw_convert(saved_model: Path, out: Path, mode: str, rep_x: np.ndarray | None = None) -> Path:
    """A .tflite from tf.lite.TFLiteConverter.from_saved_model directly (not edgetool convert); ``int8io`` is int8
    with int8 input and output."""

    def rep():
        for i in range(min(100, len(rep_x))):
            yield [rep_x[i : i + 1]]

    conv = raw_converter(tf, saved_model, "int8" if mode == "int8io" else mode, rep)
    if mode == "int8io":
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    out.write_bytes(conv.convert())
    return out


@pytest.fixture(scope="module")
def arts(digits_model, tmp_path_factory) -> dict[str, Path]:
    """fp32, dynamic, int8 with int8 I/O, and a deliberately mis-calibrated int8 (a known accuracy drop)."""
    d = tmp_path_factory.mktemp("eval-arts")
    cal = np.load(digits_model / "calibration.npz")["x"].astype(np.float32)
    out = {m: _raw_convert(digits_model, d / f"{m}.tflite", m, cal) for m in ("fp32", "dynamic", "int8io")}
    # Calibrating on inputs scaled down 8x clips every brighter pixel: a real, reproducible accuracy drop.
    out["badcal"] = _raw_convert(digits_model, d / "badcal.tflite", "int8", cal / 8.0)
    return out


@pytest.fixture(scope="module")
def eval_npz(digits_model) -> Path:
    return digits_model / "eval.npz"


def _config(arts_list, digits_model, eval_npz, **kw) -> EvalConfig:
    base = dict(artifacts=tuple(arts_list), reference=digits_model, data=eval_npz, warmup=3, runs=20)
    return EvalConfig(**{**base, **kw})


# ---------------------------------------------------------------- independent computation


def _reference_outputs(saved_model: Path, x: np.ndarray) -> np.ndarray:
    fn = tf.saved_model.load(str(saved_model)).signatures["serving_default"]
    (out,) = fn(pixels=tf.constant(x)).values()
    return out.numpy().astype(np.float64)


def _interpreter_outputs(path: Path, x: np.ndarray) -> np.ndarray:
    """Plain LiteRT, one sample at a time, with the model's own (de)quantization parameters."""
    return litert_outputs(path, x)


def test_figures_agree_with_independent_numpy(arts, digits_model, eval_npz):
    report = run_eval(_config([arts["fp32"], arts["int8io"]], digits_model, eval_npz))
    npz = np.load(eval_npz)
    x, y = npz["x"].astype(np.float32), npz["y"]
    ref = _reference_outputs(digits_model, x)
    ref_acc = float(np.mean(ref.argmax(1) == y))
    assert report.reference.accuracy == pytest.approx(ref_acc, abs=1e-12)
    for res, path in zip(report.results, (arts["fp32"], arts["int8io"])):
        out = _interpreter_outputs(path, x)
        acc = float(np.mean(out.argmax(1) == y))
        assert res.accuracy == pytest.approx(acc, abs=1e-12)
        assert res.accuracy_drop == pytest.approx(ref_acc - acc, abs=1e-12)
        assert res.top1_agreement == pytest.approx(float(np.mean(out.argmax(1) == ref.argmax(1))), abs=1e-12)
        diff = np.abs(ref - out)
        assert res.max_abs_error == pytest.approx(diff.max(), abs=1e-6)
        assert res.mean_abs_error == pytest.approx(diff.mean(), abs=1e-7)
        cos = np.mean(np.sum(ref * out, 1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(out, axis=1)))
        assert res.cosine == pytest.approx(cos, abs=1e-9)
        top5 = float(np.mean([y[i] in np.argsort(-out[i])[:5] for i in range(len(y))]))
        assert res.top_k_accuracy == pytest.approx(top5, abs=1e-12)
        assert res.size_bytes == path.stat().st_size
        assert res.latency.runs == 20 and res.latency.p50 > 0 and res.latency.cold_start > 0
        assert 5 < res.peak_rss_mb < 2000  # the worker's own RSS, not the TF-loaded evaluator's
    fp32, int8io = report.results
    assert fp32.quant == "fp32" and fp32.max_abs_error < 1e-4 and fp32.top1_agreement == 1.0
    # quantized int8 in/out: inputs quantized with the model's scale, outputs dequantized → close to reference
    assert int8io.quant == "int8"
    assert int8io.top1_agreement >= 0.97
    assert abs(int8io.accuracy_drop) <= 0.02
    assert int8io.cosine > 0.99


def test_quant_mode_inferred_from_tensor_types(arts, digits_model, tmp_path):
    cal = np.load(digits_model / "calibration.npz")["x"].astype(np.float32)
    extra = {m: _raw_convert(digits_model, tmp_path / f"{m}.tflite", m, cal) for m in ("fp16", "int16x8")}
    expected = {
        arts["fp32"]: "fp32",
        arts["dynamic"]: "dynamic",
        arts["int8io"]: "int8",
        arts["badcal"]: "int8",
        extra["fp16"]: "fp16",
        extra["int16x8"]: "int16x8",
    }
    for path, mode in expected.items():
        a = describe(path)
        assert (a.quant, a.quant_source) == (mode, "tensor types"), path.name
    # a manifest.json written by edgetool convert beside the file wins over inference
    d = tmp_path / "converted"
    d.mkdir()
    (d / "m_qat.tflite").write_bytes(arts["int8io"].read_bytes())
    (d / "manifest.json").write_text(json.dumps(_manifest([_tflite_entry("m_qat.tflite", "qat")])))
    assert (describe(d / "m_qat.tflite").quant, describe(d).quant) == ("qat", "qat")
    # another tool's manifest.json (no edgetool schema line) claims nothing: the tensor types decide
    (d / "manifest.json").write_text(json.dumps({"artifacts": [{"path": "m_qat.tflite", "quant": "qat"}]}))
    assert (describe(d / "m_qat.tflite").quant, describe(d).quant_source) == ("int8", "tensor types")


def _tflite_entry(name: str, quant, size_bytes: int = 1) -> dict:
    return {
        "path": name,
        "format": "tflite",
        "quant": quant,
        "size_bytes": size_bytes,
        "sha256": "0",
        "seconds": 0.0,
        "tensors": {},
        "state_warning": None,
        "metadata": None,
    }


def _manifest(artifacts: list[dict]) -> dict:
    """The smallest manifest.json the published schema accepts."""
    return {
        "schema": "edgetool.convert/1",
        "tool": {"name": "edgetool", "version": "0"},
        "created": "2026-01-01",
        "source": {
            "path": "m",
            "kind": "saved_model",
            "flavor": "keras2",
            "sha256": "0",
            "signature": {"key": "serving_default", "inputs": [], "outputs": []},
            "fixed_batch": None,
        },
        "options": {"model": "m", "output_dir": "o", "modes": ["qat"], "output_format": "tflite", "seed": 0},
        "calibration": None,
        "artifacts": artifacts,
        "versions": {"python": "3.11"},
        "timings_s": {"total": 0},
    }


def test_malformed_edgetool_manifest_is_a_data_error(arts, tmp_path):
    (tmp_path / "m.tflite").write_bytes(arts["int8io"].read_bytes())
    doc = _manifest([_tflite_entry("m.tflite", 8, -1)])
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(DataError) as exc:
        describe(tmp_path / "m.tflite")
    message = str(exc.value)
    assert "manifest.json" in message and "$.artifacts[0].quant: expected string, found integer 8" in message
    assert "$.artifacts[0].size_bytes: expected a number >= 0" in message and "\n" not in message


def test_integer_input_of_a_float_model_is_not_a_quantized_weight(tmp_path):
    """A float model that takes uint8 and casts it is fp32: its input tensor is neither weight nor activation."""
    import tensorflow as tf

    class CastThenMatmul(tf.Module):
        def __init__(self):
            self.w = tf.Variable(tf.random.stateless_normal((64, 10), seed=(0, 1)))

        @tf.function(input_signature=[tf.TensorSpec((None, 64), tf.uint8)])
        def serve(self, x):
            return tf.matmul(tf.cast(x, tf.float32), self.w)

    module = CastThenMatmul()
    tf.saved_model.save(module, str(tmp_path / "sm"), signatures={"serving_default": module.serve})
    path = tmp_path / "uint8_in_fp32.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(tmp_path / "sm")).convert())
    assert read_flatbuffer(path).quant == "fp32"


def test_metrics_registry_on_hand_computed_values():
    a = np.array([[1.0, 0.0], [0.0, 2.0]])
    b = np.array([[1.0, 1.0], [0.0, -2.0]])
    assert cosine(a, b) == pytest.approx((1 / np.sqrt(2) + -1.0) / 2)
    scores = np.array([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]])
    labels = np.array([2, 2])
    assert topk_accuracy(scores, labels, 1) == 0.0
    assert topk_accuracy(scores, labels, 2) == 0.5


# ---------------------------------------------------------------- the CI gate


def test_gate_exit_codes_around_a_known_drop(arts, digits_model, eval_npz, tmp_path):
    args = [
        str(arts["fp32"]),
        str(arts["badcal"]),
        "-r",
        str(digits_model),
        "-d",
        str(eval_npz),
        "--runs",
        "10",
        "--warmup",
        "2",
    ]
    first = _eval_cli([*args, "--json", str(tmp_path / "a.json")])
    assert first.exit_code == 0, first.output
    results = {r["artifact"]: r for r in validated(tmp_path / "a.json", "eval")["results"]}
    drop = results["badcal.tflite"]["accuracy_drop"]
    assert drop > 0.02, f"the mis-calibrated model should lose accuracy, drop={drop}"
    assert results["fp32.tflite"]["accuracy_drop"] == 0.0

    above = _eval_cli([*args, "--max-drop", f"{drop + 0.005:.4f}"])
    assert above.exit_code == 0, above.output

    below = _eval_cli([*args, "--max-drop", f"{drop - 0.005:.4f}", "--json", str(tmp_path / "b.json")])
    assert below.exit_code == 1, below.output
    assert "badcal.tflite: accuracy drop" in below.output and "exceeds --max-drop" in below.output
    assert "fp32.tflite:" not in below.output
    assert (tmp_path / "b.json").is_file(), "reports are written before the gate fails"

    slow = _eval_cli([*args, "--max-latency-ms", "0.000001"])
    assert slow.exit_code == 1
    assert "fp32.tflite: p50 latency" in slow.output and "exceeds --max-latency-ms" in slow.output
    fast = _eval_cli([*args, "--max-latency-ms", "100000"])
    assert fast.exit_code == 0, fast.output


# ---------------------------------------------------------------- honest timing


@pytest.fixture(scope="module")
def heavier_tflite(tmp_path_factory) -> Path:
    """A conv stack taking ~0.1-1 ms per call, so loop overhead would show if the loop were dishonest."""
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            tf.keras.Input((32, 32, 8)),
            layers.Conv2D(32, 3, padding="same"),
            layers.Conv2D(32, 3, padding="same"),
            layers.GlobalAveragePooling2D(),
            layers.Dense(10),
        ]
    )
    path = tmp_path_factory.mktemp("heavy") / "heavy.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    return path


def _plain_p50(path: Path, x: np.ndarray, warmup: int, runs: int) -> float:
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path), num_threads=1)
    it.allocate_tensors()
    i_idx, o_idx = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    for _ in range(warmup):
        it.set_tensor(i_idx, x)
        it.invoke()
        it.get_tensor(o_idx)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        it.set_tensor(i_idx, x)
        it.invoke()
        it.get_tensor(o_idx)
        times.append(time.perf_counter_ns() - t0)
    return float(np.median(times)) / 1e6


def test_timing_loop_matches_a_plain_invoke_loop(heavier_tflite):
    x = np.random.default_rng(0).standard_normal((1, 32, 32, 8)).astype(np.float32)
    ours, plain = [], []
    for _ in range(5):  # interleaved repeats, medians compared: robust to a noisy shared machine
        ours.append(measure_tflite(heavier_tflite, {0: x}, [_out_index(heavier_tflite)], 1, 10, 200, None).p50)
        plain.append(_plain_p50(heavier_tflite, x, 10, 200))
    a, b = statistics.median(ours), statistics.median(plain)
    assert abs(a - b) <= max(0.35 * b, 0.05), f"eval p50 {a:.4f} ms vs plain loop {b:.4f} ms"
    # the subprocess worker runs the same loop: same ballpark, and it reports its own (small) peak RSS
    subs = [
        measure_tflite_subprocess(heavier_tflite, {0: x}, [_out_index(heavier_tflite)], 1, 10, 200, None)
        for _ in range(3)
    ]  # median of three runs: one load spike on a shared machine must not decide
    sub, rss = subs[0]
    assert sub.runs == 200 and len(sub.samples_ms) == 200
    sub_p50 = statistics.median(s.p50 for s, _ in subs)
    assert abs(sub_p50 - b) <= max(0.35 * b, 0.05) * 2, f"subprocess p50 {sub_p50:.4f} ms vs plain {b:.4f} ms"
    assert 5 < rss < 1000
    budget = measure_tflite(heavier_tflite, {0: x}, [_out_index(heavier_tflite)], 1, 2, None, 0.2)
    assert budget.runs > 1


_AHEAD_PARENT = """
from edge_tool.evaluate.latency import LatencyProcess
LatencyProcess.start_ahead(2)
started = [p._proc.pid for p in LatencyProcess._ahead]
print(LatencyProcess.take()._proc.pid, *started, flush=True)
"""


def test_latency_processes_started_ahead_are_handed_out_and_never_outlive_eval(tmp_path):
    """eval starts its latency processes before TensorFlow's import; one never taken (an eval that ended early)
    must not outlive the process that started it."""
    proc = subprocess.run([sys.executable, "-c", _AHEAD_PARENT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    taken, *pids = (int(p) for p in proc.stdout.split())
    assert len(set(pids)) == 2 and taken in pids  # the one taken was one of the two started, not a third
    deadline = time.monotonic() + 60  # an emulated or loaded machine imports LiteRT slowly; they exit after it
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.2)
    assert not alive, f"latency processes {alive} outlived their parent"


def _out_index(path: Path) -> int:
    from ai_edge_litert.interpreter import Interpreter

    return Interpreter(model_path=str(path)).get_output_details()[0]["index"]


# ---------------------------------------------------------------- reports


def test_reports_written_json_markdown_html(arts, digits_model, eval_npz, tmp_path):
    paths = {k: tmp_path / f"r.{k}" for k in ("json", "md", "html")}
    res = _eval_cli(
        [
            str(arts["fp32"]),
            str(arts["int8io"]),
            "-r",
            str(digits_model),
            "-d",
            str(eval_npz),
            "--runs",
            "10",
            "--json",
            str(paths["json"]),
            "--markdown",
            str(paths["md"]),
            "--html",
            str(paths["html"]),
            "--per-layer",
        ]
    )
    assert res.exit_code == 0, res.output
    assert "fp32.tflite" in res.output and "(reference)" in res.output
    doc = json.loads(paths["json"].read_text())
    keys = {
        "artifact",
        "format",
        "quant",
        "size_bytes",
        "accuracy",
        "reference_accuracy",
        "accuracy_drop",
        "top1_agreement",
        "max_abs_error",
        "mean_abs_error",
        "cosine",
        "latency_ms",
        "peak_rss_mb",
        "threads",
        "runtime",
    }
    for r in doc["results"]:
        assert keys <= set(r)
        assert set(r["latency_ms"]) >= {"p50", "p90", "p99", "mean", "std", "cold_start"}
    assert [r["artifact"] for r in doc["results"]] == ["fp32.tflite", "int8io.tflite"]
    assert "per_layer" not in doc["results"][0]
    worst = doc["results"][1]["per_layer"]
    assert worst and all(w["rmse_over_scale"] >= 0 for w in worst)
    assert worst == sorted(worst, key=lambda w: -w["rmse_over_scale"])
    assert {"cpu", "cores_logical", "python", "tensorflow", "litert"} <= set(doc["machine"])
    assert doc["reference"]["accuracy"] == doc["results"][0]["reference_accuracy"]
    md = paths["md"].read_text()
    assert "| artifact | format | mode |" in md and "| fp32.tflite | tflite | fp32 |" in md
    html = paths["html"].read_text()
    # latency, Pareto and (a labelled classifier) per-class accuracy charts, plus one confusion matrix per model
    assert html.count("<svg") == 3 and "int8io.tflite" in html
    assert html.count("<h3>Confusion matrix: ") == 1 + len(doc["results"])
    for external in ("<script", "<link", "src=", "href=", "@import", "url("):
        assert external not in html, external


# ---------------------------------------------------------------- TFJS


@pytest.mark.slow
def test_tfjs_model_dir_evaluated_in_node(digits_model, eval_npz, tmp_path):
    export_tfjs(digits_model, tmp_path / "tfjs")
    report = run_eval(_config([tmp_path / "tfjs"], digits_model, eval_npz, runs=10))
    (r,) = report.results
    assert (r.format, r.quant) == ("tfjs", "fp32")
    assert r.max_abs_error < 1e-4 and r.top1_agreement == 1.0 and r.accuracy_drop == 0.0
    assert "Node" in r.runtime and r.latency.runs == 10 and "not a browser" in r.latency_note


def test_tfjs_bundle_missing_names_the_setup_command(monkeypatch, tmp_path):
    monkeypatch.setattr(tfjs_runner, "web_demo_dir", lambda: tmp_path / "web_demo")
    monkeypatch.delenv("EDGETOOL_TFJS_BUNDLE", raising=False)
    with pytest.raises(UsageError, match="python scripts/vendor_runtimes.py"):
        tfjs_runner.tfjs_bundle_path()


def test_artifact_from_edgetool_convert_reads_manifest(digits_model, eval_npz, tmp_path):
    result = convert(ConvertConfig(model=digits_model, output_dir=tmp_path / "conv", modes=("int8",), samples=100))
    path = result.tflite("int8")
    assert describe(path).quant_source == "tensor types"  # the manifest agrees; the flatbuffer decides
    (r,) = run_eval(_config([path], digits_model, eval_npz, runs=5, latency_in_subprocess=False)).results
    assert r.quant == "int8" and r.top1_agreement >= 0.97


# ---------------------------------------------------------------- error paths (exit 2, nothing written)


def test_bad_artifact_file_exits_2(digits_model, eval_npz, tmp_path):
    bad = tmp_path / "broken.tflite"
    bad.write_text("not a flatbuffer")
    res = _eval_cli([str(bad), "-r", str(digits_model), "-d", str(eval_npz), "--json", str(tmp_path / "r.json")])
    assert res.exit_code == 2
    assert "broken.tflite" in res.output and "not a loadable TFLite model" in res.output
    assert not (tmp_path / "r.json").exists()
    with pytest.raises(ModelError):
        describe(tmp_path / "missing.tflite")


def test_data_with_wrong_shape_exits_2_naming_shapes(arts, digits_model, tmp_path):
    data = tmp_path / "wrong.npz"
    np.savez(data, x=np.zeros((4, 8, 8, 3), np.float32), y=np.zeros(4, np.int64))
    res = _eval_cli([str(arts["fp32"]), "-r", str(digits_model), "-d", str(data)])
    assert res.exit_code == 2, res.output
    assert "8, 8, 3" in res.output and "8, 8, 1" in res.output


def test_artifact_whose_inputs_differ_from_the_data_names_shapes(digits_model, eval_npz, tmp_path):
    fn = tf.function(lambda x: tf.reduce_sum(x, axis=[1, 2]), input_signature=[tf.TensorSpec([1, 4, 4, 1])])
    path = tmp_path / "other.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn).convert())
    with pytest.raises(DataError, match=r"\(8, 8, 1\).*\(4, 4, 1\)"):
        TfliteInterpreter(path).prepare({"pixels": np.zeros((2, 8, 8, 1), np.float32)})


def test_reference_without_serving_signature_exits_2(arts, eval_npz, tmp_path):
    module = tf.Module()
    module.v = tf.Variable(1.0)
    tf.saved_model.save(module, str(tmp_path / "nosig"))
    res = _eval_cli([str(arts["fp32"]), "-r", str(tmp_path / "nosig"), "-d", str(eval_npz)])
    assert res.exit_code == 2
    assert "serving_default" in res.output


def test_existing_report_without_force_exits_2_and_keeps_it(arts, digits_model, eval_npz, tmp_path):
    existing = tmp_path / "r.json"
    existing.write_text("keep me")
    res = _eval_cli([str(arts["fp32"]), "-r", str(digits_model), "-d", str(eval_npz), "--json", str(existing)])
    assert res.exit_code == 2
    assert "already exists" in res.output and "--force" in res.output
    assert existing.read_text() == "keep me"


def test_option_errors_exit_2(arts, digits_model, eval_npz):
    res = _eval_cli(
        [
            str(arts["fp32"]),
            "-r",
            str(digits_model),
            "-d",
            str(eval_npz),
            "--runs",
            "5",
            "--time-budget",
            "1",
            "--threads",
            "0",
        ]
    )
    assert res.exit_code == 2
    assert "--runs and --time-budget are exclusive" in res.output and "--threads must be >= 1" in res.output


def test_max_drop_without_labels_exits_2(arts, digits_model, tmp_path):
    data = tmp_path / "nolabels.npz"
    np.savez(data, x=np.load(digits_model / "eval.npz")["x"][:20])
    res = _eval_cli([str(arts["fp32"]), "-r", str(digits_model), "-d", str(data), "--max-drop", "0.01"])
    assert res.exit_code == 2
    assert "--max-drop needs labels" in res.output


def test_uint8_model_inputs_passed_unchanged(uint8_model, tmp_path):
    cal = np.load(uint8_model / "calibration.npz")["x"]
    path = _raw_convert(uint8_model, tmp_path / "u8.tflite", "int8", cal)
    report = run_eval(
        EvalConfig(
            artifacts=(path,),
            reference=uint8_model,
            data=uint8_model / "eval.npz",
            warmup=1,
            runs=5,
            latency_in_subprocess=False,
        )
    )
    (r,) = report.results
    assert r.top1_agreement >= 0.97 and abs(r.accuracy_drop) <= 0.02
