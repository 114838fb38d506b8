"""Calibration split across processes writes the bytes TensorFlow's one-process calibrator writes, and falls back
to one process (same bytes) whenever splitting could change them or a worker fails."""

from __future__ import annotations

import numpy as np
import pytest

from edge_tool.tflite_converter import calibration_shards as shards
from edge_tool.tflite_converter.calibration_merge import merge_ranges

SAMPLES = 12


def _float_model(stateful: bool = False) -> bytes:
    """A tiny conv net (or a fused-LSTM one, whose state runs from one sample to the next) as a float .tflite."""
    import tensorflow as tf
    import tf_keras as keras

    keras.utils.set_random_seed(0)
    if stateful:
        model = keras.Sequential([keras.Input((6, 3), batch_size=1), keras.layers.LSTM(4), keras.layers.Dense(2)])
    else:
        model = keras.Sequential(
            [
                keras.Input((8, 8, 2)),
                keras.layers.Conv2D(4, 3, activation="relu"),
                keras.layers.DepthwiseConv2D(3),
                keras.layers.GlobalAveragePooling2D(),
                keras.layers.Dense(3, activation="softmax"),
            ]
        )
    from tensorflow.lite.python.optimize import calibrator

    return calibrator.add_intermediate_tensors(tf.lite.TFLiteConverter.from_keras_model(model).convert())


def _samples(model: bytes):
    """A representative dataset of {input name: array} samples, as edgetool's calibration data yields them."""
    import tensorflow as tf

    details = tf.lite.Interpreter(model_content=model).get_signature_runner().get_input_details()
    rng = np.random.default_rng(0)
    data = {k: rng.normal(0, 1, (SAMPLES, *np.maximum(v["shape_signature"], 1))) for k, v in details.items()}

    def gen():
        for i in range(SAMPLES):
            yield {k: v[i].astype(np.float32) for k, v in data.items()}

    return gen


@pytest.fixture(scope="module")
def conv_model() -> bytes:
    """The tiny conv net, converted once for this module's tests."""
    return _float_model()


def _both(monkeypatch, model: bytes, workers: int) -> tuple[bytes, shards.Calibrated]:
    """(TensorFlow's own calibrated model, edgetool's with every sample split over ``workers`` processes)."""
    from tensorflow.lite.python.optimize import calibrator

    gen = _samples(model)
    expected = calibrator.Calibrator(model).calibrate(gen)
    monkeypatch.setenv("EDGETOOL_CALIBRATION_WORKERS", str(workers))
    monkeypatch.setenv("EDGETOOL_CALIBRATION_SHARD_SECONDS", "0")  # shard however cheap the samples are
    return expected, shards.calibrate(calibrator.Calibrator(model), model, gen, [])


def test_sharded_calibration_writes_the_one_process_bytes(monkeypatch, conv_model):
    expected, got = _both(monkeypatch, conv_model, 3)
    assert (got.shards, got.fell_back) == (3, None)
    assert got.model == expected
    fed = {proc: seconds for proc, phase, seconds in got.phases if phase == "samples"}
    # the parent fed the first 2 samples before splitting, then its third of the other 10: 5 of 12
    assert sorted(fed) == ["worker 1", "worker 2"] and sum(fed.values()) == 7
    assert merge_ranges([got.model, got.model]) == expected  # merging a model with itself changes nothing


def test_a_failed_worker_falls_back_to_one_process(monkeypatch, tmp_path, conv_model):
    failing = tmp_path / "python"
    failing.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    failing.chmod(0o755)
    monkeypatch.setattr(shards.sys, "executable", str(failing))
    expected, got = _both(monkeypatch, conv_model, 2)
    assert got.shards == 1 and "exited with 3: broken" in got.fell_back
    assert got.model == expected


@pytest.mark.slow  # builds a recurrent model (its measured cost)
def test_a_model_with_state_across_samples_is_not_split(monkeypatch):
    model = _float_model(stateful=True)
    expected, got = _both(monkeypatch, model, 2)
    assert (got.shards, got.fell_back) == (1, None)
    assert got.model == expected


def test_models_of_different_layouts_do_not_merge(conv_model):
    a = conv_model
    assert merge_ranges([a, a[:5] + b"X" + a[6:]]) is None  # a byte outside the ranges differs
    assert merge_ranges([a, a + b"\0"]) is None
