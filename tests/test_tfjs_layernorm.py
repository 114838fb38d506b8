"""tf_keras' LayerNormalization through TensorFlow.js: tfjs 4.22 runs the fused form (FusedBatchNormV3 with
is_training=true) as inference-mode batch norm, which made a Transformer block NaN on tfjs's cpu backend. edgetool
converts a copy with the layers unfused; the TFJS model must then agree with TensorFlow (checked in Node)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_tool.convert.tfjs import export_tfjs, unsupported_fusions
from edge_tool.convert.tfjs_layernorm import training_batchnorms
from edge_tool.core.env import configure_tf_env
from tests.conftest import REPO, edgetool_in_process


@pytest.fixture(scope="module")
def layernorm_model(tmp_path_factory) -> Path:
    import tf_keras as keras

    keras.utils.set_random_seed(0)
    inp = keras.Input((6, 8), name="rows")
    x = keras.layers.Dense(8)(inp)
    x = keras.layers.LayerNormalization()(x + inp)
    x = keras.layers.GlobalAveragePooling1D()(x)
    model = keras.Model(inp, keras.layers.Dense(4, activation="softmax", name="probs")(x))
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, size=(64, 6, 8)).astype("float32")
    out = tmp_path_factory.mktemp("ln") / "model"
    model.save(str(out), save_format="tf")
    np.savez(out / "eval.npz", rows=x, y=rng.integers(0, 4, 64))
    return out


def test_fused_layernorm_is_detected_in_a_plain_export(layernorm_model, tmp_path):
    configure_tf_env()  # before tensorflowjs: its decision-forests import must not print a banner
    from tensorflowjs.converters import tf_saved_model_conversion_v2 as tfjs_conv

    tfjs_conv.convert_tf_saved_model(str(layernorm_model), str(tmp_path / "raw"))
    assert training_batchnorms(tmp_path / "raw" / "model.json")  # what tensorflowjs itself writes


@pytest.mark.slow
def test_layernorm_model_converts_to_tfjs_that_agrees_with_tensorflow(layernorm_model, tmp_path):
    out = tmp_path / "o"
    proc = edgetool_in_process("convert", layernorm_model, "--format", "tfjs", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    model_json = next(out.rglob("model.json"))
    assert training_batchnorms(model_json) == []
    report = tmp_path / "r.json"
    proc = edgetool_in_process(
        "eval",
        model_json.parent,
        "-r",
        layernorm_model,
        "-d",
        layernorm_model / "eval.npz",
        "--runs",
        "2",
        "--json",
        report,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (row,) = json.loads(report.read_text())["results"]
    assert row.get("failed") is None, row
    assert row["top1_agreement"] == 1.0 and row["max_abs_error"] < 1e-4, row  # float32 on both sides


@pytest.mark.slow
def test_hard_swish_and_layernorm_together_convert_once_unfused(tmp_path):
    """Both tfjs gaps in one model (hard-swish convs, as in a MobileNetV3 stem, and a LayerNormalization): the one
    unfused re-export (oneDNN off) handles both, instead of the hard-swish re-export refusing the LayerNorm."""
    script = """
import sys, numpy as np, tf_keras as keras
keras.utils.set_random_seed(0)
inp = keras.Input((8, 8, 3), name="image")
x = keras.layers.BatchNormalization()(keras.layers.Conv2D(8, 3, padding="same", use_bias=False)(inp))
x = keras.layers.Multiply()([x, keras.layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)])
x = keras.layers.LayerNormalization()(keras.layers.Reshape((64, 8))(x))
x = keras.layers.GlobalAveragePooling1D()(x)
keras.Model(inp, keras.layers.Dense(4, activation="softmax", name="probs")(x)).save(sys.argv[1], save_format="tf")
"""
    model = tmp_path / "m"
    subprocess.run(
        [sys.executable, "-c", script, str(model)],
        check=True,
        capture_output=True,
        cwd=REPO,
        env={**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_ENABLE_ONEDNN_OPTS": "1"},
        timeout=600,
    )
    model_json = export_tfjs(model, tmp_path / "tfjs", user_metadata={"labels": ["a", "b", "c", "d"]})
    assert training_batchnorms(model_json) == [] and unsupported_fusions(model_json) == []
    doc = json.loads(model_json.read_text())
    assert doc["userDefinedMetadata"] == {"labels": ["a", "b", "c", "d"]}  # kept through the re-export child
