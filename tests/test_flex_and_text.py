"""A string-input model (TextVectorization) through convert, auto and eval: the float modes build with
--allow-select-tf-ops (Flex ops), the integer ones are listed as not built with the reason, and auto and eval run the
Flex files (TensorFlow's tf.lite interpreter links the Flex delegate; ai_edge_litert does not) on text data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_tool.calibration.spec import TensorSpec, input_problems
from edge_tool.calibration.validate import match_input
from tests.edgetool_runs import REPO, edgetool_in_process
from tests.schema_check import validated

_TEXT_SCRIPT = """
import sys, numpy as np, tf_keras as keras, tensorflow as tf
keras.utils.set_random_seed(0)
topics = [["cat", "dog", "bird"], ["car", "bus", "train"], ["red", "blue", "green"]]
rng = np.random.default_rng(0)
y = rng.integers(0, 3, 240)
filler = ["the", "a", "big", "small", "one"]
x = np.array([[" ".join(rng.choice(topics[k] + filler, 4))] for k in y])
tv = keras.layers.TextVectorization(max_tokens=30, output_sequence_length=4)
tv.adapt(x[:, 0])
inp = keras.Input((1,), dtype=tf.string, name="text")
h = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(30, 8)(tv(inp)))
m = keras.Model(inp, keras.layers.Dense(3, activation="softmax", name="topic")(h))
m.compile(keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy")
m.fit(x[:160], y[:160], epochs=15, verbose=0)
m.save(sys.argv[1], save_format="tf")
np.savez(sys.argv[1] + "/calibration.npz", x=x[:32])
np.savez(sys.argv[1] + "/eval.npz", x=x[160:], y=y[160:])
"""


@pytest.fixture(scope="module")
def text_model(tmp_path_factory) -> Path:
    """A tf_keras TextVectorization classifier: string input 'text' [N, 1] -> softmax 'topic' [N, 3]; eval.npz
    holds 80 held-out sentences (a str array) and their topics."""
    out = tmp_path_factory.mktemp("text") / "model"
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", _TEXT_SCRIPT, str(out)], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _flex_accuracy(path: Path, x: np.ndarray, y: np.ndarray) -> float:
    """Independent oracle: TensorFlow's tf.lite.Interpreter (it has the Flex delegate), one sample at a time."""
    import tensorflow as tf

    runner = tf.lite.Interpreter(model_path=str(path)).get_signature_runner()
    name = next(iter(runner.get_input_details()))
    hits = [int(next(iter(runner(**{name: x[i : i + 1]}).values())).argmax()) == y[i] for i in range(len(x))]
    return float(np.mean(hits))


def test_a_mode_list_of_a_string_model_builds_the_float_modes_and_names_the_integer_ones(text_model, tmp_path):
    """fp32,int8 with --allow-select-tf-ops: int8 has no integer form of the string ops (refused alone), but the
    list writes fp32 and records int8 as not built with that reason (exit 1), instead of refusing both."""
    out = tmp_path / "o"
    proc = edgetool_in_process("convert", text_model, "--quant", "fp32,int8", "--allow-select-tf-ops", "-o", out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    manifest = validated(out / "manifest.json", "manifest")
    assert [a["quant"] for a in manifest["artifacts"]] == ["fp32"]
    assert "string tensor" in manifest["failed"]["int8"] and "input 'text'" in manifest["failed"]["int8"]
    assert "not built: int8 (" in proc.stdout


@pytest.mark.slow
def test_auto_of_a_string_model_with_flex_ops_measures_the_float_candidates(text_model, tmp_path):
    """auto with --allow-select-tf-ops used to build nothing (the flag never reached the candidates) and stopped at
    the integer modes' string refusal; now int8/int16x8 are failed rows naming the string input, and the float
    candidates (Flex files) are measured on the text eval data: the chosen file's accuracy is what TF Lite's own
    Flex interpreter gives on the same data."""
    out = tmp_path / "auto"
    data = text_model / "eval.npz"
    proc = edgetool_in_process(
        "convert", text_model, "--quant", "auto", "--max-drop", "0.05", "--eval-data", data,
        "--allow-select-tf-ops", "-o", out,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    decision = json.loads((out / "decision.json").read_text())
    rows = {c["name"]: c for c in decision["candidates"]}
    for integer in ("int8", "int16x8"):
        assert "string tensor" in rows[integer]["failed"], rows[integer]
    chosen = next(c for c in decision["candidates"] if c["chosen"])
    assert chosen["name"] in ("fp16", "dynamic"), chosen
    with np.load(data) as npz:
        x, y = npz["x"], npz["y"]
    want = _flex_accuracy(out / chosen["file"], x, y)
    assert want > 0.8  # the model learnt its topics: the check can fail
    assert abs(chosen["accuracy"] - want) <= 1 / len(y) + 1e-9, (chosen["accuracy"], want)


def test_text_data_matches_a_string_input_and_other_data_does_not():
    """calibration's matching with ``text`` (eval reads its data so): text for a string input is kept as text (an
    object array of str becomes a str array, which np.save stores without pickle); numbers are refused for it.
    Calibration itself still refuses a string input (string ops have no integer form)."""
    spec = TensorSpec("text", "string", (None, 1))
    assert input_problems(spec, text=True) == [] and "is not numeric" in input_problems(spec)[0]
    got = match_input("text", np.array([["a cat"], ["the bus"]], dtype=object), spec)
    assert got.problems == [] and got.array.dtype.kind == "U" and got.array.tolist() == [["a cat"], ["the bus"]]
    bad = match_input("text", np.zeros((2, 1), dtype=np.float32), spec)
    assert bad.array is None and "non-text data" in bad.problems[0]
