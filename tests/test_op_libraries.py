"""A SavedModel holding tensorflow-text ops (a tokenizer in the serving graph): inspect reads its signature without
loading it and names the library, convert refuses with the package to install, which ops TFLite can run as custom
ops and which never, and the way out. Built with tensorflow-text where it is installed (it pins TensorFlow's minor
version, so it is not in the test extra); everywhere else the same ops are written into a plain SavedModel's graph."""

from __future__ import annotations

import importlib.util

import pytest

from tests.builds import run_script
from tests.edgetool_runs import edgetool_in_process

pytestmark = pytest.mark.slow

WITH_TF_TEXT = """
import sys, tensorflow as tf, tensorflow_text as text
class M(tf.Module):
    def __init__(self):
        self.emb = tf.Variable(tf.random.stateless_normal([64, 4], seed=(0, 1)))
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(self, s):
        ids = tf.strings.to_hash_bucket_fast(text.WhitespaceTokenizer().tokenize(text.case_fold_utf8(s)), 64)
        return {"probs": tf.nn.softmax(tf.reduce_mean(tf.ragged.map_flat_values(tf.gather, self.emb, ids), axis=1))}
m = M()
tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.serve})
"""

# the same graph shape without the package: a string model whose two string ops are renamed to tensorflow-text's
WRITTEN_IN = """
import sys, tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2
class M(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(self, s):
        return {"n": tf.strings.length(tf.strings.lower(s))}
m = M()
tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.serve})
pb = sys.argv[1] + "/saved_model.pb"
sm = saved_model_pb2.SavedModel.FromString(open(pb, "rb").read())
rename = {"StringLower": "CaseFoldUTF8", "StringLength": "TFText>WhitespaceTokenizeWithOffsetsV2"}
for mg in sm.meta_graphs:
    for fn in mg.graph_def.library.function:
        for node in fn.node_def:
            node.op = rename.get(node.op, node.op)
open(pb, "wb").write(sm.SerializeToString())
"""


@pytest.fixture(params=["tensorflow-text", "written-in"])
def text_model(request, tmp_path):
    """The model built with tensorflow-text (where installed), and its ops written into a plain graph."""
    if request.param == "tensorflow-text":
        if importlib.util.find_spec("tensorflow_text") is None:
            pytest.skip("tensorflow-text is not installed")
        run_script(WITH_TF_TEXT, tmp_path / "text_model", legacy_keras=False)
    else:
        run_script(WRITTEN_IN, tmp_path / "text_model", legacy_keras=False)
    return tmp_path / "text_model"


def test_tf_text_ops_are_named_with_their_package_and_tflite_support(text_model, tmp_path):
    model = text_model
    proc = edgetool_in_process("inspect", model)
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 0, said  # inspected without loading: the signature and the library
    assert "serving_default" in said and "tensorflow-text" in said
    proc = edgetool_in_process("convert", model, "--allow-select-tf-ops", "-o", tmp_path / "out")
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2, said
    assert "pip install 'tensorflow-text==2." in said
    assert "TFLite runs TFText>WhitespaceTokenizeWithOffsetsV2 as custom ops" in said
    assert "CaseFoldUTF8 never runs in TFLite" in said
    assert "keep the text preprocessing outside the model" in said
    assert "Op type not registered" not in said and "tf.contrib" not in said
    assert not (tmp_path / "out").exists()
