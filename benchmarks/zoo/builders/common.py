"""What every zoo builder shares: seeded Keras, training, BatchNorm re-estimation, and writing the model's files.

Each builder writes, like ``edgetool train`` does, a SavedModel directory holding ``labels.txt``, ``calibration.npz``
(200 seeded training samples), ``eval.npz`` (held-out), ``train.npz`` (the training split) and ``zoo.json`` (what was
built, held-out accuracy). Multi-input models store one array per input, named after it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.specs import SPECS

SEED = 0
CALIBRATION_SAMPLES = 200


def keras_module():
    """tf_keras when ``TF_USE_LEGACY_KERAS=1`` (Keras 2), else Keras 3."""
    if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
        import tf_keras as keras
    else:
        import keras
    return keras


def seeded_keras():
    """(keras, keras.layers) with every random generator seeded: call it first in a builder."""
    keras = keras_module()
    keras.utils.set_random_seed(SEED)
    return keras, keras.layers


def classifier_head(keras, x, classes: int = 10, name: str = "probs"):
    """A softmax Dense layer over ``x``."""
    return keras.layers.Dense(classes, activation="softmax", name=name)(x)


def fit(model, split: zdata.Split, epochs: int, lr: float = 3e-3, batch: int = 32, y_train=None) -> None:
    """Adam, sparse cross-entropy (mse for float targets of a multi-head ``y_train``), then fresh BatchNorm stats."""
    keras = keras_module()
    loss = "sparse_categorical_crossentropy"
    if isinstance(y_train, dict):
        loss = {name: ("mse" if y.dtype.kind == "f" else loss) for name, y in y_train.items()}
    model.compile(keras.optimizers.Adam(lr), loss=loss)
    model.fit(
        split.x_train,
        split.y_train if y_train is None else y_train,
        epochs=epochs,
        batch_size=batch,
        verbose=0,
        shuffle=True,
    )
    _recalibrate_batchnorm(keras, model, split.x_train)


def _recalibrate_batchnorm(keras, model, x, passes: int = 3, batch: int = 64) -> None:
    """Re-estimate BatchNorm moving statistics on the trained weights (a few epochs leave them stale).

    keras.applications use momentum 0.99-0.999, so after ~200 steps the moving variance still remembers its
    initial 1.0 and held-out accuracy is at chance although training accuracy is high.
    """
    bns = [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)]
    if not bns:
        return
    saved = [layer.momentum for layer in bns]
    for layer in bns:
        layer.momentum = 0.8
    n = len(next(iter(x.values()))) if isinstance(x, dict) else len(x)
    for _ in range(passes):
        for start in range(0, n, batch):
            model(zdata.take(x, slice(start, start + batch)), training=True)
    for layer, momentum in zip(bns, saved):
        layer.momentum = momentum


def predict_classes(predict, x) -> np.ndarray:
    """Argmax of the first (or only) output of ``predict(x)``."""
    out = predict(x)
    if isinstance(out, dict):
        out = next(iter(out.values()))
    if isinstance(out, (list, tuple)):
        out = out[0]
    return np.asarray(out).argmax(-1)


def write_sidecars(out: Path, split: zdata.Split, name: str, accuracy: float) -> dict:
    """Write the data files, labels.txt and zoo.json beside the SavedModel in ``out``; return zoo.json's content."""
    info = {"name": name, "about": SPECS[name].about, "eval_accuracy": round(accuracy, 4), "seed": SEED}
    rng = np.random.default_rng(SEED)
    n = len(split.y_train)
    idx = np.sort(rng.choice(n, size=min(CALIBRATION_SAMPLES, n), replace=False))

    def arrays(x, y):
        return {**(x if isinstance(x, dict) else {"x": x}), "y": y}

    np.savez(out / "calibration.npz", **arrays(zdata.take(split.x_train, idx), split.y_train[idx]))
    np.savez(out / "eval.npz", **arrays(split.x_eval, split.y_eval))
    np.savez(out / "train.npz", **arrays(split.x_train, split.y_train))
    (out / "labels.txt").write_text("\n".join(split.labels) + "\n")
    (out / "zoo.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def train_and_save(model, split: zdata.Split, out: Path, name: str, epochs: int, **fit_options) -> dict:
    """Fit a Keras model, measure held-out accuracy, save it (``model.export()`` for Keras 3) with its sidecars."""
    fit(model, split, epochs, **fit_options)
    accuracy = float((predict_classes(lambda x: model.predict(x, verbose=0), split.x_eval) == split.y_eval).mean())
    if SPECS[name].keras3:
        model.export(str(out))
    else:
        model.save(str(out), save_format="tf", include_optimizer=False)
    return write_sidecars(out, split, name, accuracy)


def train_classifier(
    keras, inputs, x, split: zdata.Split, out: Path, name: str, epochs: int, classes: int = 10, **fit_options
) -> dict:
    """The model ``inputs`` → ``x`` → softmax head, trained and saved by :func:`train_and_save`."""
    model = keras.Model(inputs, classifier_head(keras, x, classes=classes))
    return train_and_save(model, split, out, name, epochs, **fit_options)
