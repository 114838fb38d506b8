"""Big weights streamed to the TF.js shards (edge_tool/tfjs_writer/standins.py) write the same bytes as weights
frozen inline: every file of the graph model, for a Keras MLP (grappler folds its ReadVariableOps) and for a model
where grappler computes a constant from a weight (a transposed kernel: the writer freezes it inline again), and with
uint8 and float16 weights (encoded a block of rows at a time; the self-check's reference is fed the streamed
weights' decoded values); the SavedModel is let go while grappler runs and loaded again after, so these also prove
the reload finds the same variables. Node's self-check reads the weights one at a time (edge_tool/nodejs/
tfjs_run.js): across shard boundaries, a string weight included, it gives what tfjs' own loader gives
(tests/oracles/tfjs_check.js). Sizes are tiny; ``stream_bytes=1`` streams every float32 variable. Memory is
measured in benchmarks/bench_big_model.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edge_tool.nodejs.tfjs_session import TfjsSession
from edge_tool.tfjs_writer import graph as tfjs_graph
from edge_tool.tfjs_writer import standins
from edge_tool.tfjs_writer.export import export_tfjs
from edge_tool.tfjs_writer.weights import Weight, encode, write_shards
from tests.builds import run_script
from tests.edgetool_runs import REPO

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
    [(_MLP, "none"), (_TRANSPOSED, "none"), (_MLP, "uint8"), (_MLP, "float16")],
    ids=["keras-mlp", "weight-folded-by-grappler", "keras-mlp-uint8", "keras-mlp-float16"],
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


def resharded(model_dir: Path, dest: Path, size: int) -> Path:
    """A copy of ``model_dir``'s graph model with its weight bytes cut into shards of ``size`` bytes (weights span
    shards, a shard ends inside a weight); its model.json."""
    doc = json.loads((model_dir / "model.json").read_text())
    data = b"".join((model_dir / p).read_bytes() for group in doc["weightsManifest"] for p in group["paths"])
    dest.mkdir()
    paths = [f"s{k // size}.bin" for k in range(0, len(data), size)]
    for k, name in zip(range(0, len(data), size), paths):
        (dest / name).write_bytes(data[k : k + size])
    weights = [w for group in doc["weightsManifest"] for w in group["weights"]]
    doc["weightsManifest"] = [{"paths": paths, "weights": weights}]
    (dest / "model.json").write_text(json.dumps(doc))
    return dest / "model.json"


def tfjs_loader_outputs(model_json: Path, name: str, x: np.ndarray, out: str, tmp: Path) -> np.ndarray:
    """The graph model's output ``out`` for input ``name`` = ``x``, its weights loaded by tfjs' own loadGraphModel
    (tests/oracles/tfjs_check.js, cpu backend)."""
    (tmp / "in.json").write_text(
        json.dumps({name: {"dtype": "float32", "shape": list(x.shape), "data": x.ravel().tolist()}})
    )
    oracle, bundle = REPO / "tests" / "oracles" / "tfjs_check.js", REPO / "web_demo" / "vendor" / "tf.min.js"
    argv = ["node", str(oracle), str(bundle), str(model_json.parent), str(tmp / "in.json"), str(tmp / "out.json")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads((tmp / "out.json").read_text())[out]
    return np.asarray(got["data"], np.float64).reshape(got["shape"])


def assert_node_reads_as_tfjs_loader(model_json: Path, name: str, x: np.ndarray, out: str, tmp: Path) -> None:
    """edgetool's Node session (edge_tool/nodejs/tfjs_run.js, its own weight reader) gives what tfjs' loader gives:
    the same bits on the same cpu kernels, float rounding on wasm."""
    want = tfjs_loader_outputs(model_json, name, x, out, tmp)
    with TfjsSession(model_json, backend="cpu") as session:
        np.testing.assert_array_equal(session.predict({name: x})[out], want)
    with TfjsSession(model_json, backend="wasm") as session:
        np.testing.assert_allclose(session.predict({name: x})[out], want, rtol=0, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("quant", ["none", "uint8"])
def test_node_reads_weights_across_shards_as_tfjs_loader_does(tmp_path, quant):
    run_script(_MLP, str(tmp_path / "sm"))
    export_tfjs(tmp_path / "sm", tmp_path / "written", quant)
    model_json = resharded(tmp_path / "written", tmp_path / "resharded", 7)
    x = np.random.default_rng(4).uniform(0, 1, (3, 4, 4, 3)).astype(np.float32)
    assert_node_reads_as_tfjs_loader(model_json, "image", x, "probs", tmp_path)


def _node(name: str, op: str, dtype: str, inputs=(), shape=(2,)) -> dict:
    dims = {"dim": [{"size": str(d)} for d in shape]}
    if op == "Const":
        attr = {"dtype": {"type": dtype}, "value": {"tensor": {"dtype": dtype, "tensorShape": dims}}}
    else:
        attr = {"dtype": {"type": dtype}, "shape": {"shape": dims}} if op == "Placeholder" else {"T": {"type": dtype}}
    return {"name": name, "op": op, "input": list(inputs), "attr": attr}


@pytest.mark.slow
def test_a_string_weight_before_a_float_one_is_counted_as_tfjs_counts_it(tmp_path):
    """A string weight's bytes (uint32 length + bytes, per element) are counted as tfjs counts them: the float weight
    after it, read across 5-byte shards, adds to the input as tfjs' own loader has it."""
    nodes = [_node("x", "Placeholder", "DT_FLOAT"), _node("s", "Const", "DT_STRING"), _node("w", "Const", "DT_FLOAT")]
    nodes.append(_node("y", "AddV2", "DT_FLOAT", ("x", "w")))
    sig = {"dtype": "DT_FLOAT", "tensorShape": {"dim": [{"size": "2"}]}}
    doc = {
        "format": "graph-model",
        "modelTopology": {"node": nodes, "versions": {"producer": 1}},
        "signature": {"inputs": {"x": {"name": "x:0", **sig}}, "outputs": {"y": {"name": "y:0", **sig}}},
        "weightsManifest": [
            {
                "paths": ["w.bin"],
                "weights": [
                    {"name": "s", "shape": [2], "dtype": "string"},
                    {"name": "w", "shape": [2], "dtype": "float32"},
                ],
            }
        ],
    }
    (tmp_path / "w").mkdir()
    strings = b"".join(np.uint32(len(t)).astype("<u4").tobytes() + t for t in (b"abc", b"z"))
    (tmp_path / "w" / "w.bin").write_bytes(strings + np.array([0.5, -2.0], "<f4").tobytes())
    (tmp_path / "w" / "model.json").write_text(json.dumps(doc))
    model_json = resharded(tmp_path / "w", tmp_path / "resharded", 5)
    x = np.array([1.0, 2.0], np.float32)
    assert_node_reads_as_tfjs_loader(model_json, "x", x, "y", tmp_path)
    np.testing.assert_array_equal(tfjs_loader_outputs(model_json, "x", x, "y", tmp_path), [1.5, 0.0])
