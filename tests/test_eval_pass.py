"""The accuracy pass's plumbing: input statistics in float64 chunks, the read-ahead thread, the primary output named
from the signature, the reference's TF1 session on a chosen thread count, and the CLI's fast exit once TensorFlow
is loaded (same exit codes, same output)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from edge_tool.calibration.spec import TensorSpec
from edge_tool.core.env import import_tf
from edge_tool.evaluate import data as data_module
from edge_tool.evaluate.data import RunningStats
from edge_tool.evaluate.reference import ReferenceModel
from edge_tool.evaluate.stream import prefetched, primary_from_specs, primary_output
from edge_tool.models import signatures

ROOT = Path(__file__).resolve().parents[1]
tf = import_tf()


# ---------------------------------------------------------------- statistics


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int16"])
def test_running_stats_in_chunks_equal_numpy_on_the_whole_data(monkeypatch, dtype):
    """Batches of odd sizes, chunks (1,000 elements) that split samples: the figures of the concatenation."""
    monkeypatch.setattr(data_module, "STATS_CHUNK", 1000)
    rng = np.random.default_rng(0)
    batches = [
        (rng.normal(50, 20, (n, 7, 11)) if dtype == "float32" else rng.integers(0, 200, (n, 7, 11))).astype(dtype)
        for n in (3, 40, 1, 17)
    ]
    stats = RunningStats()
    for b in batches:
        stats.update(b)
    whole = np.concatenate(batches).astype(np.float64)
    got = stats.to_dict(len(whole))
    assert got["mean"] == pytest.approx(whole.mean(), rel=1e-12)
    assert got["std"] == pytest.approx(whole.std(), rel=1e-12)
    assert (got["min"], got["max"], got["shape"], got["dtype"]) == (whole.min(), whole.max(), [61, 7, 11], dtype)


# ---------------------------------------------------------------- read-ahead


def _readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "edgetool-eval-reader"]


def test_prefetched_keeps_order_and_raises_where_the_reader_failed():
    assert list(prefetched(iter(range(10)))) == list(range(10))

    def failing():
        yield from range(5)
        raise ValueError("sample 5 is broken")

    seen = []
    with pytest.raises(ValueError, match="sample 5 is broken"):
        for item in prefetched(failing()):
            seen.append(item)
    assert seen == [0, 1, 2, 3, 4] and not _readers()


def test_prefetched_stops_its_reader_when_the_loop_is_left():
    def endless():
        n = 0
        while True:
            yield n
            n += 1

    for item in prefetched(endless(), ahead=2):
        if item == 3:
            break
    assert not _readers()


# ---------------------------------------------------------------- primary output from the signature


@pytest.mark.parametrize(
    "shapes",
    [
        {"probs": (None, 10)},
        {"a_score": (None, 1), "b_probs": (None, 5), "c": (None, 3)},
        {"embedding": (None, 4, 8), "logits": (None, 2)},
        {"value": (None,), "other": (None, 1)},
    ],
)
def test_primary_from_specs_names_what_primary_output_picks_on_real_arrays(shapes):
    specs = [TensorSpec(n, "float32", s) for n, s in shapes.items()]
    arrays = {n: np.zeros((2, *s[1:]), np.float32) for n, s in shapes.items()}
    assert primary_from_specs(specs) == primary_output(arrays)


def test_primary_from_specs_gives_up_on_a_dynamic_last_dimension():
    assert primary_from_specs([TensorSpec("a", "float32", (None, None)), TensorSpec("b", "float32", (None, 3))]) is None
    assert primary_from_specs([TensorSpec("a", "float32", None)]) is None


# ---------------------------------------------------------------- the reference on a chosen thread count


@pytest.fixture(scope="module")
def small_sm(tmp_path_factory) -> tuple[Path, np.ndarray]:
    """A conv + dense SavedModel (enough work per op for TensorFlow to split it across threads) and inputs."""
    d = tmp_path_factory.mktemp("ref")

    class Small(tf.Module):
        def __init__(self):
            super().__init__()
            rng = np.random.default_rng(0)
            self.k = tf.Variable(rng.normal(0, 0.1, (3, 3, 3, 16)).astype("float32"))
            self.w = tf.Variable(rng.normal(0, 0.1, (16, 5)).astype("float32"))

        @tf.function(input_signature=[tf.TensorSpec([None, 24, 24, 3], tf.float32, name="x")])
        def serve(self, x):
            h = tf.nn.relu(tf.nn.conv2d(x, self.k, 1, "SAME"))
            return {"probs": tf.nn.softmax(tf.matmul(tf.reduce_mean(h, axis=[1, 2]), self.w))}

    m = Small()
    tf.saved_model.save(m, str(d / "sm"), signatures={"serving_default": m.serve})
    x = np.random.default_rng(1).uniform(0, 1, (20, 24, 24, 3)).astype(np.float32)
    want = m.serve(tf.constant(x))["probs"].numpy()
    return d / "sm", x, want


def test_reference_runs_on_its_thread_count_with_the_signature_outputs(small_sm):
    sm, x, want = small_sm
    ref = ReferenceModel(sm, threads=1)
    assert ref.threads == 1
    np.testing.assert_allclose(ref.predict({"x": x}, batch=7)["probs"], want, rtol=0, atol=1e-6)
    stats = ref.latency({"x": x[:1]}, warmup=1, runs=3, time_budget_s=None, threads=2)
    assert ref.threads == 2 and stats.runs == 3  # re-opened on the latency loop's thread count
    np.testing.assert_allclose(ref.predict({"x": x})["probs"], want, rtol=0, atol=1e-6)


def test_reference_falls_back_to_tf2_loading_when_the_tf1_loader_refuses(small_sm, monkeypatch):
    sm, x, want = small_sm

    def refuse(*args, **kwargs):
        raise ValueError("no serve tag-set")

    monkeypatch.setattr(signatures, "session_signature", refuse)
    ref = ReferenceModel(sm, threads=1)
    assert ref.threads is None  # TensorFlow's process-wide pools: the count cannot be chosen
    np.testing.assert_allclose(ref.predict({"x": x})["probs"], want, rtol=0, atol=1e-6)
    ref.latency({"x": x[:1]}, warmup=0, runs=2, time_budget_s=None, threads=2)
    assert ref.threads is None


# ---------------------------------------------------------------- fast exit


@pytest.fixture(scope="module")
def eval_inputs(small_sm, tmp_path_factory) -> dict[str, Path]:
    sm, x, want = small_sm
    d = tmp_path_factory.mktemp("fastexit")
    (d / "m.tflite").write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(sm)).convert())
    np.savez(d / "data.npz", x=x, y=want.argmax(1))
    return {"sm": sm, "tflite": d / "m.tflite", "data": d / "data.npz", "dir": d}


@pytest.mark.slow  # not in the quick tier (its measured cost)
@pytest.mark.parametrize("full_exit", ["", "1"])
@pytest.mark.parametrize("budget, code", [(None, 0), ("0.000001", 1)])
def test_cli_exit_after_tensorflow_keeps_codes_reports_and_output(eval_inputs, full_exit, budget, code):
    """Without Python's teardown (the default once TensorFlow is loaded) the exit code, the report file and
    everything printed, through a pipe, are the same as with it (EDGETOOL_FULL_EXIT=1)."""
    report = eval_inputs["dir"] / f"r-{full_exit or 'fast'}-{code}.json"
    cmd = [
        sys.executable,
        "-m",
        "edge_tool",
        "eval",
        str(eval_inputs["tflite"]),
        "-r",
        str(eval_inputs["sm"]),
        "-d",
        str(eval_inputs["data"]),
        "--runs",
        "2",
        "--warmup",
        "0",
        "--json",
        str(report),
        "--force",
    ]
    if budget:
        cmd += ["--max-latency-ms", budget]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EDGETOOL_FULL_EXIT": full_exit}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == code, proc.stderr[-2000:]
    assert f"wrote {report}" in proc.stdout and "m.tflite" in proc.stdout
    assert json.loads(report.read_text())["results"][0]["top1_agreement"] == 1.0
    if budget:
        assert "budget exceeded" in proc.stderr
