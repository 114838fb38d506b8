"""Float .tflite files as users get them, built for the tests of ``convert model.tflite`` and the quantizer floor:
a multi-signature language-model-like file with an embedding (GATHER), and a model hub's image classifier (a small
Keras model converted, metadata and labels written with edgetool's metadata writer)."""

from __future__ import annotations

LM_SCRIPT = """
import sys, tensorflow as tf
tf.random.set_seed(0)
class Lm(tf.Module):
    def __init__(self):
        self.emb = tf.Variable(tf.random.normal([128, 64]) * 0.1)
        self.w = tf.Variable(tf.random.normal([64, 64]) * 0.1)
        self.head = tf.Variable(tf.random.normal([64, 128]) * 0.1)
    @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.int32)])
    def prefill(self, ids):
        h = tf.nn.relu(tf.matmul(tf.reshape(tf.gather(self.emb, ids), [4, 64]), self.w))
        return {"logits": tf.matmul(h, self.head)}
    @tf.function(input_signature=[tf.TensorSpec([1, 64], tf.float32)])
    def decode(self, x):
        return {"logits": tf.matmul(tf.nn.relu(tf.matmul(x, self.w)), self.head)}
m = Lm()
fns = [m.prefill.get_concrete_function(), m.decode.get_concrete_function()]
open(sys.argv[1], "wb").write(tf.lite.TFLiteConverter.from_concrete_functions(fns, m).convert())
"""

# A hub's classifier: trained on [0, 1] pixels, its metadata saying model_input = pixel / 255 and carrying labels.txt;
# data.npz holds held-out samples as the model takes them (x in [0, 1]) with their labels.
HUB_SCRIPT = """
import sys, numpy as np, tensorflow as tf, tf_keras as keras
from edge_tool.metadata.writer import MetadataSpec, embed_metadata
out = sys.argv[1]
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
y = rng.integers(0, 4, 160)
x = rng.random((160, 16, 16, 3)).astype("float32") * 0.6
for i, k in enumerate(y):  # class k: channel k brighter (k < 3), or the top half of every channel (k = 3)
    if k < 3:
        x[i, ..., k] += 0.4
    else:
        x[i, :8] += 0.4
m = keras.Sequential([keras.layers.Input((16, 16, 3)), keras.layers.Conv2D(16, 3, activation="relu"),
    keras.layers.Conv2D(32, 3, strides=2, activation="relu"), keras.layers.GlobalAveragePooling2D(),
    keras.layers.Dense(64, activation="relu"), keras.layers.Dense(4, activation="softmax")])
m.compile("adam", "sparse_categorical_crossentropy")
m.fit(x[:128], y[:128], epochs=30, verbose=0)
data = tf.lite.TFLiteConverter.from_keras_model(m).convert()
spec = MetadataSpec("hub classifier", "a float classifier from a model hub", "1", "vendor",
                    labels=("red", "green", "blue", "top"), mean=(0.0,), std=(255.0,))
open(out + "/model.tflite", "wb").write(embed_metadata(data, spec))
np.savez(out + "/data.npz", x=x[128:], y=y[128:].astype("int64"))
"""
