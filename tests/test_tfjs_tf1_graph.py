"""A TF1 graph with batch-norm reference variables (issue 42, item 2) through edgetool's TF.js writer.

Built as TF1 users built it: ``tf.compat.v1`` graph mode, a conv, a batch norm whose moving statistics are
``VariableV2`` updated by ``Assign`` inside a ``tf.cond`` on a ``training`` placeholder_with_default, exported with
``SavedModelBuilder``. Freezing used to fail ("cond/Assign/Switch was passed float … expected float_ref", exit
70; with ``enable_resource_variables`` "cond/AssignVariableOp was passed float … expected resource"); now the ref ops are frozen as TF1's tools froze them, the never-taken training branch is cut, and tfjs in
Node computes what the SavedModel computes.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.builds import run_script
from tests.edgetool_runs import edgetool_in_process
from tests.test_tfjs_writer import nodes, tf_outputs, tfjs_outputs

_TF1_BN_SCRIPT = """
import sys, numpy as np, tensorflow as tf
v1 = tf.compat.v1
v1.disable_v2_behavior()
if sys.argv[2] == "resource":
    v1.enable_resource_variables()  # the same graph on resource variables: AssignVariableOp inside the cond
x = v1.placeholder(tf.float32, [None, 8, 8, 3], name="x")
training = v1.placeholder_with_default(False, [], name="training")
w = v1.get_variable("conv1/w", [3, 3, 3, 4], initializer=v1.glorot_uniform_initializer(seed=1))
h = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
with v1.variable_scope("bn1"):
    mm = v1.get_variable("moving_mean", [4], initializer=v1.zeros_initializer(), trainable=False)
    mv = v1.get_variable("moving_variance", [4], initializer=v1.ones_initializer(), trainable=False)
    gamma = v1.get_variable("gamma", [4], initializer=v1.ones_initializer())
    beta = v1.get_variable("beta", [4], initializer=v1.zeros_initializer())
def train_branch():
    m, v = tf.nn.moments(h, [0, 1, 2])
    with tf.control_dependencies([v1.assign(mm, 0.9 * mm + 0.1 * m), v1.assign(mv, 0.9 * mv + 0.1 * v)]):
        return tf.identity(m), tf.identity(v)
mean, var = tf.cond(training, train_branch, lambda: (tf.identity(mm), tf.identity(mv)))
h = tf.nn.relu(tf.nn.batch_normalization(h, mean, var, beta, gamma, 1e-3))
fw = v1.get_variable("fc/w", [4, 3], initializer=v1.glorot_uniform_initializer(seed=2))
y = tf.nn.softmax(tf.matmul(tf.reduce_mean(h, axis=[1, 2]), fw), name="y")
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    rng = np.random.default_rng(0)
    for _ in range(5):  # moving statistics far from the initial 0/1, so using them (not the batch's) matters
        sess.run(y, {x: rng.normal(2, 3, (4, 8, 8, 3)).astype("float32"), training: True})
    b = v1.saved_model.Builder(sys.argv[1])
    sig = v1.saved_model.predict_signature_def({"x": x}, {"y": y})
    b.add_meta_graph_and_variables(sess, [v1.saved_model.SERVING], signature_def_map={"serving_default": sig})
    b.save()
"""


@pytest.mark.slow
@pytest.mark.parametrize("variables", ["ref", "resource"])
def test_tf1_batch_norm_variables_convert_to_tfjs_and_check_says_runs(tmp_path, variables):
    model = tmp_path / "tf1_sm"
    run_script(_TF1_BN_SCRIPT, model, variables, legacy_keras=False)
    res = edgetool_in_process("convert", model, "--format", "tfjs", "-o", tmp_path / "out")
    assert res.returncode == 0, res.stdout + res.stderr
    agreement = json.loads((tmp_path / "out" / "manifest.json").read_text())["artifacts"][0]["agreement"]
    assert agreement["checked"] and agreement["ok"], agreement
    ops = {n["op"] for n in nodes(tmp_path / "out" / "tfjs" / "model.json")}
    assert not ops & {"VariableV2", "Assign", "AssignVariableOp", "Switch", "Merge", "SquaredDifference"}, ops
    x = np.random.default_rng(7).normal(2, 3, (6, 8, 8, 3)).astype(np.float32)
    got, want = tfjs_outputs(tmp_path / "out" / "tfjs", {"x": x}, tmp_path), tf_outputs(model, {"x": x})
    np.testing.assert_allclose(got["y"], want["y"], atol=1e-5)
    tflite = edgetool_in_process("convert", model, "--quant", "fp32", "-o", tmp_path / "tflite")
    if variables == "ref":  # the TFLite converter cannot read VariableV2: refused with the re-export that works
        assert tflite.returncode == 2 and "enable_resource_variables()" in tflite.stderr, tflite.stderr
    else:  # ... which is the resource variant: it converts
        assert tflite.returncode == 0, tflite.stdout + tflite.stderr
    checked = edgetool_in_process("check", model, "--target", "tfjs")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert any(line.split()[:2] == ["tfjs", "runs"] for line in checked.stdout.splitlines()), checked.stdout
