"""The converter fast path (shared SavedModel read and calibration across modes, the calibration split across
processes) is guarded: it is feature-detected, can be forced off with EDGETOOL_FAST_CONVERT=0, and falls back to the
public converter with the same bytes."""

from __future__ import annotations

import hashlib
import json

import pytest

from edge_tool.convert.modes import every_mode
from edge_tool.tflite_converter import fast_path as converter
from tests.edgetool_runs import run_edgetool

MODES = ",".join(every_mode())


def _digests(out) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.glob("*.tflite"))}


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_fast_and_public_paths_write_identical_files_in_every_mode(flat_model, tmp_path):
    fast = run_edgetool(
        "convert",
        flat_model,
        "--quant",
        MODES,
        "--calibration",
        flat_model / "eval.npz",
        "-o",
        tmp_path / "fast",
        env={
            "EDGETOOL_FAST_CONVERT": "1",
            "EDGETOOL_CALIBRATION_WORKERS": "2",
            "EDGETOOL_CALIBRATION_SHARD_SECONDS": "0",
        },
    )  # calibration split over two processes however cheap: its bytes are the public path's too
    assert fast.returncode == 0, fast.stderr[-3000:]
    public = run_edgetool(
        "convert",
        flat_model,
        "--quant",
        MODES,
        "--calibration",
        flat_model / "eval.npz",
        "-o",
        tmp_path / "public",
        env={"EDGETOOL_FAST_CONVERT": "0"},
    )
    assert public.returncode == 0, public.stderr[-3000:]
    fast_files, public_files = _digests(tmp_path / "fast"), _digests(tmp_path / "public")
    assert len(fast_files) == 5
    assert fast_files == public_files
    assert "fast path off" not in public.stdout + public.stderr  # a user's own choice is not warned about
    manifest = json.loads((tmp_path / "public" / "manifest.json").read_text())
    assert {a["quant"] for a in manifest["artifacts"]} == set(MODES.split(","))


def test_feature_detection_accepts_the_pinned_tensorflow(monkeypatch):
    monkeypatch.delenv("EDGETOOL_FAST_CONVERT", raising=False)
    converter.fast_path_problem.cache_clear()
    try:
        assert converter.fast_path_problem() is None
        monkeypatch.setenv("EDGETOOL_FAST_CONVERT", "0")
        converter.fast_path_problem.cache_clear()
        assert converter.fast_path_problem() == "EDGETOOL_FAST_CONVERT=0"
    finally:
        converter.fast_path_problem.cache_clear()


def test_feature_detection_refuses_a_changed_private_signature(monkeypatch):
    from tensorflow.lite.python import lite

    def _quantize(self, result, input_type, output_type, activations_type, bias_type, allow_float):
        raise AssertionError("never called")

    monkeypatch.delenv("EDGETOOL_FAST_CONVERT", raising=False)
    monkeypatch.setattr(lite.TFLiteSavedModelConverterV2, "_quantize", _quantize)
    converter.fast_path_problem.cache_clear()
    try:
        problem = converter.fast_path_problem()
    finally:
        converter.fast_path_problem.cache_clear()
    assert problem is not None and "_quantize" in problem


def test_a_tensorflow_the_fast_path_was_not_checked_on_uses_the_public_path(monkeypatch):
    import tensorflow as tf

    monkeypatch.delenv("EDGETOOL_FAST_CONVERT", raising=False)
    monkeypatch.setattr(tf, "__version__", "2.22.0")
    converter.fast_path_problem.cache_clear()
    try:
        problem = converter.fast_path_problem()
    finally:
        converter.fast_path_problem.cache_clear()
    assert problem == "TensorFlow 2.22.0 is not one the fast path was checked on (2.19, 2.20, 2.21)"
