"""Streaming models (Keras stateful=True): the .tflite keeps the state, is self-checked as one stream of calls, its
manifest records the state; the TF.js writer refuses (a graph model holds no state) with the ways out."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.builds import run_script
from tests.edgetool_runs import edgetool_in_process

pytestmark = pytest.mark.slow  # builds a model and converts it

_GRU = """
import sys, tf_keras as keras
keras.utils.set_random_seed(0)
m = keras.Sequential([keras.Input(batch_shape=(1, 1, 4)), keras.layers.GRU(8, stateful=True), keras.layers.Dense(3)])
m.save(sys.argv[1], save_format="tf")
"""


@pytest.fixture(scope="module")
def stateful_gru(tmp_path_factory):
    """A tf_keras SavedModel: GRU(8, stateful=True) on one 4-feature frame per call → Dense(3)."""
    out = tmp_path_factory.mktemp("stateful") / "gru"
    run_script(_GRU, out)
    return out


def test_the_tflite_keeps_the_state_and_matches_the_savedmodel_call_by_call(stateful_gru, tmp_path):
    proc = edgetool_in_process("convert", str(stateful_gru), "--output", str(tmp_path / "o"), "--quant", "fp32")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "does not compute what the SavedModel computes" not in proc.stdout
    entry = json.loads((tmp_path / "o" / "manifest.json").read_text())["artifacts"][0]
    assert entry["state"]["variables"] == [{"name": "gru/Variable", "shape": [1, 8], "dtype": "float32", "bytes": 32}]
    assert "new Interpreter" in entry["state"]["reset"]
    assert entry["self_check"]["inputs"] == "seeded random stream" and entry["self_check"]["ok"]
    # independently: a new LiteRT Interpreter and a freshly loaded SavedModel, the same 6 calls in order
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    frames = np.random.default_rng(1).uniform(-1, 1, (6, 1, 1, 4)).astype("float32")
    runner = Interpreter(model_path=str(tmp_path / "o" / entry["path"])).get_signature_runner()
    name = next(iter(runner.get_input_details()))
    got = np.stack([next(iter(runner(**{name: f}).values())) for f in frames])
    serve = tf.saved_model.load(str(stateful_gru)).signatures["serving_default"]
    want = np.stack([next(iter(serve(tf.constant(f)).values())).numpy() for f in frames])
    assert np.abs(got - want).max() < 1e-5
    model = str(tmp_path / "o" / entry["path"])
    alone = next(iter(Interpreter(model_path=model).get_signature_runner()(**{name: frames[1]}).values()))
    assert np.abs(alone - got[1]).max() > 1e-3  # the state matters: call 2 alone is not call 2 of the stream


def test_tfjs_of_a_stateful_model_is_refused_with_the_ways_out(stateful_gru, tmp_path):
    proc = edgetool_in_process("convert", str(stateful_gru), "--output", str(tmp_path / "o"), "--format", "tfjs")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    text = " ".join((proc.stdout + proc.stderr).split())
    assert "keeps state between calls" in text and "stateful=True" in text
    assert "edgetool convert" in text and "docs/streaming.md" in text
    assert not (tmp_path / "o").exists()
