"""The reference SavedModel run by eval: a signature traced at a fixed batch (batch 1, as `tf.function` examples and
many exported graphs have) is fed in chunks of that batch, not refused with an internal error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.edgetool_runs import run_edgetool

# not in the quick tier: builds a batch-1 model and evaluates it sample by sample (20 s under load)
pytestmark = pytest.mark.slow

_FIXED = """
import sys, numpy as np, tensorflow as tf
class M(tf.Module):
    def __init__(self):
        self.w = tf.Variable(np.random.default_rng(0).normal(size=(6, 3)).astype("float32"))
    @tf.function(input_signature=[tf.TensorSpec([1, 6], tf.float32, name="x")])
    def __call__(self, x):
        return {"y": tf.nn.softmax(tf.matmul(x, self.w))}
m = M()
tf.saved_model.save(m, sys.argv[1] + "/model", signatures=m.__call__)
x = np.random.default_rng(1).normal(size=(5, 6)).astype("float32")
np.savez(sys.argv[1] + "/data.npz", x=x)
open(sys.argv[1] + "/m.tflite", "wb").write(tf.lite.TFLiteConverter.from_saved_model(sys.argv[1] + "/model").convert())
"""


def test_a_batch_1_signature_is_fed_one_sample_at_a_time(tmp_path):
    """5 samples through a [1, 6] signature: the reference's outputs equal the .tflite's (LiteRT, batch 1, its own
    code path) sample for sample; fed wrongly they would not."""
    made = subprocess.run([sys.executable, "-c", _FIXED, str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-3000:]
    out = tmp_path / "r.json"
    proc = run_edgetool(
        "eval",
        tmp_path / "m.tflite",
        "-r",
        tmp_path / "model",
        "-d",
        tmp_path / "data.npz",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--json",
        out,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = json.loads(out.read_text())["results"][0]
    assert row["top1_agreement"] == 1.0 and row["max_abs_error"] < 1e-6, row
