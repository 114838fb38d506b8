"""--batch on recurrent models beyond tf_keras GRU/LSTM: Keras-3 .keras files, and layers that cannot be unrolled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_tool.parsers.tflite_model import summarize_tflite
from tests.edgetool_runs import REPO, run_edgetool
from tests.schema_check import validated

# A Keras-3 model file (not loadable by tf_keras) with a Bidirectional LSTM and a GRU: Keras 3's recurrent layers
# are plain tf.while_loops on CPU, which the converter cannot lower with a dynamic batch.
_KERAS3_RECURRENT = """
import sys, numpy as np, keras
keras.utils.set_random_seed(0)
i = keras.Input((12, 4), name="x")
h = keras.layers.Bidirectional(keras.layers.LSTM(6, return_sequences=True))(i)
m = keras.Model(i, keras.layers.Dense(3, activation="softmax", name="probs")(keras.layers.GRU(5)(h)))
m.save(sys.argv[1] + "/seq.keras")
np.savez(sys.argv[1] + "/data.npz", x=np.random.default_rng(1).normal(size=(64, 12, 4)).astype("float32"))
"""

# tf_keras ConvLSTM2D (ignores `unroll`) beside TimeDistributed convs and an LSTM.
_CONVLSTM = """
import sys, numpy as np, tf_keras as keras
keras.utils.set_random_seed(0)
i = keras.Input((5, 8, 8, 1), name="frames")
h = keras.layers.GlobalAveragePooling2D()(keras.layers.ConvLSTM2D(4, 3, padding="same")(i))
t = keras.layers.TimeDistributed(keras.layers.Conv2D(3, 3))(i)
t = keras.layers.LSTM(4)(keras.layers.TimeDistributed(keras.layers.GlobalAveragePooling2D())(t))
m = keras.Model(i, keras.layers.Dense(3, activation="softmax", name="probs")(keras.layers.Concatenate()([h, t])))
m.save(sys.argv[1] + "/convlstm", save_format="tf")
x = np.random.default_rng(1).uniform(size=(16, 5, 8, 8, 1)).astype("float32")
np.savez(sys.argv[1] + "/convlstm/calibration.npz", x=x)
"""


def _build(script: str, out: Path, legacy: bool) -> Path:
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1" if legacy else "0", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(out)], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _keras3_outputs(model: Path, x: np.ndarray) -> np.ndarray:
    script = (
        "import sys, numpy as np, keras; m = keras.models.load_model(sys.argv[1]); "
        "np.save(sys.argv[3], np.asarray(m(np.load(sys.argv[2]), training=False)))"
    )
    np.save(model.parent / "x.npy", x)
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "0", "TF_CPP_MIN_LOG_LEVEL": "3"}
    subprocess.run(
        [sys.executable, "-c", script, str(model), str(model.parent / "x.npy"), str(model.parent / "y.npy")],
        check=True,
        env=env,
        capture_output=True,
        timeout=600,
    )
    return np.load(model.parent / "y.npy")


@pytest.mark.slow
def test_keras3_recurrent_file_converts_with_batch_1_unrolled_and_quantizes(tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    src = _build(_KERAS3_RECURRENT, tmp_path, legacy=False)
    out = tmp_path / "o"
    proc = run_edgetool(
        "convert",
        src / "seq.keras",
        "--quant",
        "fp32,int8",
        "--batch",
        "1",
        "--calibration",
        src / "data.npz",
        "-o",
        out,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    manifest = validated(out / "manifest.json", "manifest")
    fixed = manifest["source"]["fixed_batch"]
    assert fixed["method"] == "keras3" and sorted(fixed["unrolled"]) == ["backward_lstm", "forward_lstm", "gru"]
    assert fixed["signature"]["inputs"][0]["shape"] == [1, 12, 4]
    assert manifest["source"]["signature"]["inputs"][0]["shape"] == [None, 12, 4]  # the model's own signature
    x = np.load(src / "data.npz")["x"][:32]
    want = _keras3_outputs(src / "seq.keras", x)
    for art in manifest["artifacts"]:
        data = (out / art["path"]).read_bytes()
        assert "WHILE" not in summarize_tflite(data).ops
        runner = Interpreter(model_content=data).get_signature_runner("serving_default")
        got = np.concatenate([next(iter(runner(x=x[i : i + 1]).values())) for i in range(len(x))])
        if art["quant"] == "fp32":
            assert np.abs(got - want).max() < 1e-5 and art["self_check"]["ok"]
        else:  # int8 over 12 unrolled steps of three recurrent layers: small drift, same ranking mostly
            assert np.abs(got - want).max() < 0.1 and (got.argmax(1) == want.argmax(1)).mean() >= 0.9


@pytest.mark.slow
def test_keras3_file_with_a_fixed_batch_other_than_asked_is_refused(tmp_path):
    script = _KERAS3_RECURRENT.replace('keras.Input((12, 4), name="x")', 'keras.Input((12, 4), batch_size=4, name="x")')
    src = _build(script, tmp_path, legacy=False)
    proc = run_edgetool("convert", src / "seq.keras", "--quant", "fp32", "--batch", "1", "-o", tmp_path / "o")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--batch 1 fixes the first (batch) dimension" in proc.stderr and "'x'" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()


@pytest.mark.slow
def test_a_layer_that_cannot_be_unrolled_stays_a_loop_and_is_not_reported_unrolled(tmp_path):
    src = _build(_CONVLSTM, tmp_path, legacy=True) / "convlstm"
    out = tmp_path / "o"
    proc = run_edgetool("convert", src, "--quant", "fp32", "--batch", "1", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    manifest = validated(out / "manifest.json", "manifest")
    assert manifest["source"]["fixed_batch"]["unrolled"] == []  # ConvLSTM2D ignores `unroll` in tf_keras 2.19
    art = manifest["artifacts"][0]
    assert "WHILE" in art["tensors"]["ops"] and "UNIDIRECTIONAL_SEQUENCE_LSTM" in art["tensors"]["ops"]
    assert art["self_check"]["ok"] and art["self_check"]["max_abs_error"] < 1e-5
    refused = run_edgetool("convert", src, "--quant", "int8", "--batch", "1", "-o", tmp_path / "q")
    assert refused.returncode == 2 and "ConvLSTM" in refused.stderr and "WHILE loop" in refused.stderr


# tf_keras Embedding(mask_zero=True) + Bidirectional LSTM over right-padded token ids, and its own predictions.
_MASKED_BILSTM = """
import sys, numpy as np, tf_keras as keras
keras.utils.set_random_seed(0)
rng = np.random.default_rng(1)
x = np.zeros((48, 8), np.int32)
for row in x:
    n = rng.integers(2, 9)
    row[:n] = rng.integers(1, 20, n)
i = keras.Input((8,), dtype="int32", name="tokens")
h = keras.layers.Bidirectional(keras.layers.LSTM(4))(keras.layers.Embedding(20, 4, mask_zero=True)(i))
m = keras.Model(i, keras.layers.Dense(3, activation="softmax", name="probs")(h))
m.save(sys.argv[1] + "/masked", save_format="tf")
np.savez(sys.argv[1] + "/data.npz", x=x, want=m.predict(x, verbose=0))
"""


@pytest.mark.slow
def test_masked_bilstm_is_unrolled_so_int8_calibrates_and_int16x8_says_why_not(tmp_path):
    """A masked LSTM cannot use TFLite's fused kernel (it takes no mask): it lowered to a WHILE loop whose int8
    calibration is refused. --batch 1 now unrolls it: fp32 exact with padding, int8 calibrated; int16x8 is refused
    with the real cause (the 16x8 quantizer wants a float range for the int32 ids feeding the mask)."""
    from ai_edge_litert.interpreter import Interpreter

    src = _build(_MASKED_BILSTM, tmp_path, legacy=True)
    out = tmp_path / "o"
    proc = run_edgetool(
        "convert", src / "masked", "--quant", "fp32,int8,int16x8", "--batch", "1",
        "--calibration", src / "data.npz", "-o", out,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr  # int16x8 not built (ModesNotBuilt), the others written
    manifest = validated(out / "manifest.json", "manifest")
    assert sorted(manifest["source"]["fixed_batch"]["unrolled"]) == ["backward_lstm", "forward_lstm"]
    refusal = " ".join(manifest["failed"]["int16x8"].split())
    assert "'tokens'" in refusal and "mask_zero=True" in refusal and "--quant int8" in refusal
    data = np.load(src / "data.npz")
    x, want = data["x"], data["want"]
    for art in manifest["artifacts"]:
        blob = (out / art["path"]).read_bytes()
        assert "WHILE" not in summarize_tflite(blob).ops
        runner = Interpreter(model_content=blob).get_signature_runner("serving_default")
        got = np.concatenate([next(iter(runner(tokens=x[i : i + 1]).values())) for i in range(len(x))])
        if art["quant"] == "fp32":
            assert np.abs(got - want).max() < 1e-5
        else:
            assert np.abs(got - want).max() < 0.05  # untrained, near-uniform probabilities: no arg-max test
