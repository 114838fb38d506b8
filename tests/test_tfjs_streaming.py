"""Big weights streamed to the TF.js shards (edge_tool/tfjs_writer/standins.py) write the same bytes as weights
frozen inline: every file of the graph model, for a Keras MLP (grappler folds its ReadVariableOps) and for a model
where grappler computes a constant from a weight (a transposed kernel: the writer freezes it inline again), and with
uint8 weights (the self-check's reference takes the streamed weights' decoded values). Sizes
are tiny; ``stream_bytes=1`` streams every float32 variable. Memory is measured in benchmarks/bench_big_model.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge_tool.tfjs_writer import graph as tfjs_graph
from edge_tool.tfjs_writer import standins
from edge_tool.tfjs_writer.export import export_tfjs
from edge_tool.tfjs_writer.weights import Weight, encode, write_shards
from tests.builds import run_script

_MLP = """
import sys, tf_keras as keras
keras.utils.set_random_seed(0)
inp = keras.Input((4, 4, 3), name="image")
x = keras.layers.Dense(24, activation="relu", bias_initializer="ones")(keras.layers.Flatten()(inp))
keras.Model(inp, keras.layers.Dense(5, activation="softmax", name="probs")(x)).save(sys.argv[1], save_format="tf")
"""
_TRANSPOSED = """
import sys, numpy as np, tensorflow as tf
class M(tf.Module):
    def __init__(self):
        self.w = tf.Variable(np.random.default_rng(0).normal(size=(6, 8)).astype(np.float32))
    @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32, name="x")])
    def __call__(self, x):
        return {"y": tf.matmul(x, tf.transpose(tf.transpose(self.w) * 2.0))}
m = M()
tf.saved_model.save(m, sys.argv[1], signatures=m.__call__)
"""


def files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "quant"),
    [(_MLP, "none"), (_TRANSPOSED, "none"), (_MLP, "uint8")],
    ids=["keras-mlp", "weight-folded-by-grappler", "keras-mlp-uint8"],
)
def test_streamed_weights_write_the_same_graph_model_bytes(tmp_path, script, quant):
    run_script(script, str(tmp_path / "sm"))
    streamed = tfjs_graph.freeze_signature(tmp_path / "sm", "serving_default", 1).streamed
    assert streamed, "the stand-in path was not taken: the test would compare the old path with itself"
    inline = export_tfjs(tmp_path / "sm", tmp_path / "inline", quant, stream_bytes=standins.NEVER)
    export_tfjs(tmp_path / "sm", tmp_path / "streamed", quant, stream_bytes=1)
    assert files(tmp_path / "streamed") == files(tmp_path / "inline")
    assert inline.check.get("checked") in (True, False)  # the self-check ran or said why not, as before


def test_shards_stream_across_weight_and_shard_boundaries(tmp_path):
    tf = pytest.importorskip("tensorflow")
    big = np.arange(35, dtype=np.float32).reshape(7, 5)
    variable = tf.Variable(big)
    spec = {"name": "v", "shape": [7, 5], "dtype": "float32"}
    weights = [encode("a", np.arange(3, dtype=np.int64), "none"), Weight("v", None, spec, None, variable)]
    weights.append(encode("b", np.ones(4, np.float32), "none"))
    manifest = write_shards(weights, tmp_path, shard_bytes=24)
    want = np.arange(3, dtype="<i4").tobytes() + big.tobytes() + np.ones(4, "<f4").tobytes()
    got = b"".join((tmp_path / p).read_bytes() for p in manifest[0]["paths"])
    assert got == want
    assert len(manifest[0]["paths"]) == -(-len(want) // 24)
    assert [w["name"] for w in manifest[0]["weights"]] == ["a", "v", "b"]
