"""convert shares work across modes without changing a byte: each .tflite equals the raw TFLiteConverter's output
with the same settings; int8 and int16x8 share one calibration; the TFJS worker process writes the same files
as an in-process export and reports errors as edgetool errors."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from edge_tool.convert.api import convert
from edge_tool.convert.background import BackgroundCall
from edge_tool.convert.config import ConvertConfig
from edge_tool.core.env import import_tf
from edge_tool.errors import ConversionError
from tests.edgetool_runs import run_edgetool
from tests.oracles.raw_converter import MODES, raw_converter
from tests.schema_check import validated


def raw_tflite(tf, saved_model, mode: str, x: np.ndarray) -> bytes:
    """What tf.lite.TFLiteConverter writes for ``mode`` (the benchmarks' baseline: the settings documented per mode)."""
    return raw_converter(tf, saved_model, mode, lambda: ([x[i : i + 1]] for i in range(len(x)))).convert()


@pytest.mark.slow
def test_every_mode_is_byte_identical_to_the_raw_converter(digits_model, tmp_path):
    tf = import_tf()
    calls = []
    from tensorflow.lite.python.optimize import calibrator

    original = calibrator.Calibrator._feed_tensors

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    calibrator.Calibrator._feed_tensors = counting
    try:
        result = convert(ConvertConfig(model=digits_model, output_dir=tmp_path / "out", modes=MODES, metadata=False))
    finally:
        calibrator.Calibrator._feed_tensors = original
    assert len(calls) == 1, "int8 and int16x8 should share one calibration pass"
    x = np.load(digits_model / "calibration.npz")["x"].astype(np.float32)
    for mode in MODES:
        assert result.tflite(mode).read_bytes() == raw_tflite(tf, digits_model, mode, x), mode


def _digest(directory) -> dict[str, str]:
    """sha256 per file; model.json canonicalised (tensorflowjs writes protobuf maps in a per-process order)."""

    def content(p):
        return json.dumps(json.loads(p.read_text()), sort_keys=True).encode() if p.suffix == ".json" else p.read_bytes()

    return {p.name: hashlib.sha256(content(p)).hexdigest() for p in sorted(directory.iterdir())}


@pytest.mark.slow
def test_tfjs_worker_process_writes_the_same_files(digits_model, tmp_path):
    outs, logs = {}, {}
    for workers in ("0", "1"):
        outs[workers] = tmp_path / f"workers{workers}"
        proc = run_edgetool(
            "convert",
            digits_model,
            "--format",
            "all",
            "--quant",
            "fp32",
            "-o",
            outs[workers],
            env={"EDGETOOL_CONVERT_WORKERS": workers},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        logs[workers] = proc.stderr
    assert "parallel worker" in logs["1"] and "parallel worker" not in logs["0"]
    assert _digest(outs["0"] / "tfjs") == _digest(outs["1"] / "tfjs")
    manifest = validated(outs["1"] / "manifest.json", "manifest")
    assert {a["format"] for a in manifest["artifacts"]} == {"tflite", "tfjs"}


def test_background_call_returns_the_value():
    call = BackgroundCall()
    call.submit(divmod, 17, 5)
    assert call.result() == (3, 2)


def test_background_call_reraises_as_edgetool_error():
    call = BackgroundCall()
    call.submit(json.loads, "not json")
    with pytest.raises(ConversionError, match="JSONDecodeError"):
        call.result()


def test_background_call_closed_unused_exits():
    call = BackgroundCall()
    call.close()
    assert call._proc.poll() is not None  # the isolated child process has exited
