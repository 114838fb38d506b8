"""Zoo builders of tabular and multi-input / multi-output models."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, classifier_head, seeded_keras, train_and_save, train_classifier


def build_tabular_mlp(out: Path) -> dict:
    """Normalization (adapted on the training split) → Dense(16) → softmax(2) on raw breast_cancer features."""
    keras, L = seeded_keras()
    split, _features = zdata.breast_cancer(SEED)
    norm = L.Normalization()
    norm.adapt(split.x_train)
    inp = keras.Input((30,), name="features")
    x = L.Dense(16, activation="relu")(norm(inp))
    return train_classifier(keras, inp, x, split, out, "tabular_mlp", epochs=15, classes=2, lr=1e-2, batch=16)


def build_multi_input(out: Path) -> dict:
    """image float32[N,8,8,1] (conv branch) and counts int32[N,8] (row sums, dense branch), concatenated.

    The signature lists inputs by name (counts, image), the model takes them as (image, counts): calibration that
    feeds inputs by position instead of by name breaks here.
    """
    import tensorflow as tf

    keras, L = seeded_keras()
    base = zdata.digits(SEED)

    def inputs(x):
        return {"image": x, "counts": (x[..., 0].sum(axis=2) * 16 / 255).round().astype(np.int32)}

    split = zdata.Split(inputs(base.x_train), base.y_train, inputs(base.x_eval), base.y_eval, base.labels)
    image = keras.Input((8, 8, 1), name="image")
    counts = keras.Input((8,), dtype="int32", name="counts")
    a = L.Flatten()(L.Conv2D(8, 3, activation="relu")(L.Rescaling(1 / 255)(image)))
    b = L.Dense(16, activation="relu")(tf.cast(counts, tf.float32) / 128.0)
    x = L.Dense(32, activation="relu")(L.Concatenate()([a, b]))
    return train_classifier(keras, [image, counts], x, split, out, "multi_input", epochs=6)


def build_multi_output(out: Path) -> dict:
    """A shared conv trunk with two heads: ``digit`` softmax[N,10] and ``ink`` (mean pixel / 255) regression[N,1]."""
    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Flatten()(L.Conv2D(16, 3, activation="relu")(L.Rescaling(1 / 255)(inp)))
    x = L.Dense(32, activation="relu")(x)
    model = keras.Model(inp, [classifier_head(keras, x, name="digit"), L.Dense(1, name="ink")(x)])
    ink = (split.x_train.mean(axis=(1, 2, 3)) / 255).astype(np.float32)[:, None]
    return train_and_save(model, split, out, "multi_output", epochs=6, y_train={"digit": split.y_train, "ink": ink})
