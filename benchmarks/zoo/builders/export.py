"""Zoo builders of SavedModels not saved by Keras 2's ``model.save``: Keras 3 ``model.export()``, a tf.Module."""

from __future__ import annotations

from pathlib import Path

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, fit, predict_classes, seeded_keras, train_classifier, write_sidecars


def build_keras3_export(out: Path) -> dict:
    """A Keras 3 CNN exported with ``model.export()`` (a SavedModel that holds no Keras layers)."""
    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Flatten()(L.Conv2D(8, 3, activation="relu")(L.Rescaling(1 / 255)(inp)))
    return train_classifier(keras, inp, L.Dense(32, activation="relu")(x), split, out, "keras3_export", epochs=6)


def _digits_mlp(tf):
    """A tf.Module MLP over 8×8 pixels: tf.Variables, ``logits`` for training, a ``serve`` signature."""

    class DigitsMLP(tf.Module):
        def __init__(self):
            super().__init__()
            g = tf.random.Generator.from_seed(SEED)
            self.w1 = tf.Variable(g.normal([64, 32]) * 0.2, name="w1")
            self.b1 = tf.Variable(tf.zeros([32]), name="b1")
            self.w2 = tf.Variable(g.normal([32, 10]) * 0.2, name="w2")
            self.b2 = tf.Variable(tf.zeros([10]), name="b2")

        def logits(self, pixels):
            h = tf.nn.relu(tf.reshape(pixels, [-1, 64]) / 255.0 @ self.w1 + self.b1)
            return h @ self.w2 + self.b2

        @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32, name="pixels")])
        def serve(self, pixels):
            return {"probs": tf.nn.softmax(self.logits(pixels))}

    return DigitsMLP()


def build_tf_module(out: Path) -> dict:
    """A plain ``tf.Module`` MLP (tf.Variables, tf.function signature) trained with GradientTape and Adam."""
    import tensorflow as tf

    keras, _ = seeded_keras()
    split = zdata.digits(SEED)
    module = _digits_mlp(tf)
    opt = keras.optimizers.Adam(1e-2)
    ds = tf.data.Dataset.from_tensor_slices((split.x_train, split.y_train)).shuffle(2000, seed=SEED).batch(32)
    for _ in range(15):
        for xb, yb in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, module.logits(xb)))
            opt.apply_gradients(zip(tape.gradient(loss, module.trainable_variables), module.trainable_variables))
    accuracy = float((predict_classes(module.serve, split.x_eval) == split.y_eval).mean())
    tf.saved_model.save(module, str(out), signatures={"serving_default": module.serve.get_concrete_function()})
    return write_sidecars(out, split, "tf_module", accuracy)


def build_tfmot_qat(out: Path) -> dict:
    """A Keras-2 CNN fine-tuned quantization-aware with tfmot's ``quantize_model`` (FakeQuant ops with trained
    ranges in the graph), saved with ``model.save`` as users of the tfmot guide do."""
    import tensorflow_model_optimization as tfmot

    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")  # raw 0..255 pixels: tfmot cannot quantize a Rescaling layer
    x = L.Flatten()(L.Conv2D(8, 3, activation="relu")(inp))
    model = keras.Model(inp, L.Dense(10, activation="softmax", name="probs")(L.Dense(32, activation="relu")(x)))
    fit(model, split, epochs=6)
    qat = tfmot.quantization.keras.quantize_model(model)
    fit(qat, split, epochs=2, lr=1e-3)
    accuracy = float((predict_classes(lambda v: qat.predict(v, verbose=0), split.x_eval) == split.y_eval).mean())
    qat.save(str(out), save_format="tf", include_optimizer=False)
    return write_sidecars(out, split, "tfmot_qat", accuracy)
