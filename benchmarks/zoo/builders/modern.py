"""Zoo builders of shapes the converters find hard: a ConvNeXt block in a Keras 3 ``.keras`` file, a tf.Module with
three signatures, exact GELU (Erfc), GroupNormalization, and a serving function that calls back into Python."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, fit, predict_classes, seeded_keras, train_classifier, write_sidecars


def build_convnext_keras(out: Path) -> dict:
    """Keras 3: patchify stem → ConvNeXt block (depthwise 7×7, LayerNorm, Dense ×4 with exact GELU, Dense, residual)
    → pooling → softmax, on 16×16 digits, saved as ``model.keras``."""
    keras, L = seeded_keras()
    split = zdata.map_split(zdata.digits(SEED), lambda x: zdata.upscale(x, 2, rgb=False))
    inp = keras.Input((16, 16, 1), name="image")
    x = L.LayerNormalization(epsilon=1e-6)(L.Conv2D(16, 2, strides=2)(L.Rescaling(1 / 255)(inp)))
    y = L.LayerNormalization(epsilon=1e-6)(L.DepthwiseConv2D(7, padding="same")(x))
    y = L.Dense(16)(L.Dense(64, activation="gelu")(y))  # Keras 3's gelu: exact (approximate=False)
    x = L.LayerNormalization(epsilon=1e-6)(L.GlobalAveragePooling2D()(L.Add()([x, y])))
    model = keras.Model(inp, L.Dense(10, activation="softmax", name="probs")(x))
    fit(model, split, epochs=6)
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out / "model.keras"))
    accuracy = float((predict_classes(lambda v: model.predict(v, verbose=0), split.x_eval) == split.y_eval).mean())
    return write_sidecars(out, split, "convnext_keras", accuracy)


def build_multi_signature(out: Path) -> dict:
    """A tf.Module MLP saved with three signatures, ``a_features`` (hidden layer), ``b_logits`` and
    ``serving_default`` (probabilities), which sorts last: a tool that takes the first signature converts the
    wrong function."""
    import tensorflow as tf

    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    hidden = L.Dense(32, activation="relu")(L.Flatten()(L.Rescaling(1 / 255)(inp)))
    model = keras.Model(inp, L.Dense(10, activation="softmax")(hidden))
    fit(model, split, epochs=10)
    features = keras.Model(inp, hidden)
    spec = [tf.TensorSpec([None, 8, 8, 1], tf.float32, name="pixels")]

    class Served(tf.Module):
        def __init__(self):
            super().__init__()
            self.model, self.features = model, features

        @tf.function(input_signature=spec)
        def a_features(self, pixels):
            return {"features": self.features(pixels)}

        @tf.function(input_signature=spec)
        def b_logits(self, pixels):
            return {"logits": tf.math.log(self.model(pixels) + 1e-7)}

        @tf.function(input_signature=spec)
        def serve(self, pixels):
            return {"probs": self.model(pixels)}

    m = Served()
    tf.saved_model.save(
        m,
        str(out),
        signatures={
            "a_features": m.a_features.get_concrete_function(),
            "b_logits": m.b_logits.get_concrete_function(),
            "serving_default": m.serve.get_concrete_function(),
        },
    )
    accuracy = float((predict_classes(m.serve, split.x_eval) == split.y_eval).mean())
    return write_sidecars(out, split, "multi_signature", accuracy)


def build_gelu_transformer(out: Path) -> dict:
    """One Transformer encoder block over 8 rows whose FFN uses tf_keras' exact GELU (tf.nn.gelu → Erfc)."""
    keras, L = seeded_keras()
    split = zdata.map_split(zdata.digits(SEED), lambda x: x.reshape(len(x), 8, 8))
    inp = keras.Input((8, 8), name="rows")
    x = L.Dense(32)(L.Rescaling(1 / 255)(inp))
    x = L.LayerNormalization()(L.Add()([x, L.MultiHeadAttention(num_heads=2, key_dim=16)(x, x)]))
    ffn = L.Dense(32)(L.Dense(64, activation="gelu")(x))
    x = L.LayerNormalization()(L.Add()([x, ffn]))
    return train_classifier(keras, inp, L.GlobalAveragePooling1D()(x), split, out, "gelu_transformer", epochs=6)


def build_groupnorm(out: Path) -> dict:
    """Conv → GroupNormalization(groups=4) → ReLU, twice, global pooling, on 8×8 digits."""
    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Rescaling(1 / 255)(inp)
    for width in (16, 16):
        x = L.ReLU()(L.GroupNormalization(groups=4)(L.Conv2D(width, 3, padding="same")(x)))
    return train_classifier(keras, inp, L.GlobalAveragePooling2D()(x), split, out, "groupnorm", epochs=8)


def build_numpy_function(out: Path) -> dict:
    """A Keras CNN behind a tf.Module whose serving function scales the pixels with ``tf.numpy_function`` (a
    Python callback that exists only in the process that traced it)."""
    import tensorflow as tf

    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Flatten()(L.Conv2D(8, 3, activation="relu")(inp))
    model = keras.Model(inp, L.Dense(10, activation="softmax")(L.Dense(32, activation="relu")(x)))
    fit(model, zdata.map_split(split, lambda v: v / 255.0), epochs=6)

    def scale(a):
        return (a / 255.0).astype(np.float32)

    class Served(tf.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32, name="pixels")])
        def serve(self, pixels):
            scaled = tf.numpy_function(scale, [pixels], tf.float32)
            scaled.set_shape(pixels.shape)
            return {"probs": self.model(scaled)}

    m = Served()
    tf.saved_model.save(m, str(out), signatures={"serving_default": m.serve.get_concrete_function()})
    accuracy = float((predict_classes(m.serve, split.x_eval) == split.y_eval).mean())
    return write_sidecars(out, split, "numpy_function", accuracy)
