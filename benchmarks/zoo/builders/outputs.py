"""Zoo builders of issue 35's shapes: an embedding model (metric learning), a denoising autoencoder (image to image),
a keypoint heatmap model, a Keras 3 ``.keras`` file with a registered custom layer defined in a module beside it,
and two SavedModels sharing a parent folder whose ``labels.txt`` belongs to only one of them."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, seeded_keras, train_and_save, write_sidecars
from tests.oracles.output_metrics import coordinate_pck, pck, psnr, recall_at_1


def _save(model, out: Path) -> None:
    model.save(str(out), save_format="tf", include_optimizer=False)


def _no_labels_file(out: Path) -> None:
    """These models output no classes: no labels.txt (write_sidecars writes one for every model)."""
    (out / "labels.txt").unlink()


def build_embedding_metric(out: Path) -> dict:
    """CNN → Dense(32) → UnitNormalization, trained through a cosine classifier (scaled cosine logits) that is then
    cut off: the saved model outputs the L2-normalised embedding; y holds the digit (the identity)."""
    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="image")
    x = L.Flatten()(L.Conv2D(16, 3, activation="relu")(L.Rescaling(1 / 255)(inp)))
    emb = L.UnitNormalization(name="embedding")(L.Dense(32)(L.Dense(64, activation="relu")(x)))
    logits = L.Dense(10, use_bias=False)(L.Rescaling(10.0)(emb))
    trainer = keras.Model(inp, logits)
    trainer.compile(keras.optimizers.Adam(3e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    trainer.fit(split.x_train, split.y_train, epochs=10, batch_size=32, verbose=0)
    model = keras.Model(inp, emb)
    _save(model, out)
    score = recall_at_1(model.predict(split.x_eval, verbose=0), split.y_eval)
    info = write_sidecars(out, split, "embedding_metric", score)
    _no_labels_file(out)
    return info


def build_denoise_autoencoder(out: Path) -> dict:
    """Noisy 16×16 digits (0..255) → stride-2 conv encoder → upsampling conv decoder → sigmoid clean image in [0, 1].

    (A Conv2DTranspose decoder's QAT export exits 70 — tfmot's quantized Conv2DTranspose cannot be saved — the GAN
    generator case of issue 35, left to that lane.)"""
    keras, L = seeded_keras()
    rng = np.random.default_rng(SEED)
    clean = zdata.map_split(zdata.digits(SEED), lambda x: zdata.upscale(x, 2, rgb=False))
    noisy = zdata.map_split(clean, lambda x: np.clip(x + rng.normal(0, 40, x.shape), 0, 255).astype(np.float32))
    split = zdata.Split(
        noisy.x_train,
        (clean.x_train / 255.0).astype(np.float32),
        noisy.x_eval,
        (clean.x_eval / 255.0).astype(np.float32),
        ("image",),
    )
    inp = keras.Input((16, 16, 1), name="noisy")
    x = L.Conv2D(16, 3, strides=2, padding="same", activation="relu")(L.Rescaling(1 / 255)(inp))
    x = L.Conv2D(32, 3, strides=2, padding="same", activation="relu")(x)
    x = L.Conv2D(16, 3, padding="same", activation="relu")(L.UpSampling2D()(x))
    model = keras.Model(inp, L.Conv2D(1, 3, padding="same", activation="sigmoid", name="clean")(L.UpSampling2D()(x)))
    model.compile(keras.optimizers.Adam(3e-3), loss="mse")
    model.fit(split.x_train, split.y_train, epochs=15, batch_size=32, verbose=0)
    _save(model, out)
    info = write_sidecars(out, split, "denoise_autoencoder", psnr(model.predict(split.x_eval, verbose=0), split.y_eval))
    _no_labels_file(out)
    return info


def _corner_maps(x: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    """Each 8×8 digit pasted at random in a 16×16 canvas; Gaussian (σ 1) maps of its top-left and bottom-right."""
    n = len(x)
    canvas, maps = np.zeros((n, 16, 16, 1), np.float32), np.zeros((n, 16, 16, 2), np.float32)
    yy, xx = np.mgrid[:16, :16]
    for i, (dy, dx) in enumerate(rng.integers(0, 9, (n, 2))):
        canvas[i, dy : dy + 8, dx : dx + 8] = x[i]
        for k, (py, px) in enumerate(((dy, dx), (dy + 7, dx + 7))):
            maps[i, ..., k] = np.exp(-((yy - py) ** 2 + (xx - px) ** 2) / 2.0)
    return canvas, maps


def build_keypoint_heatmap(out: Path) -> dict:
    """Conv net (same padding) → 2 linear heatmaps [N,16,16,2], MSE to Gaussian target maps; PCK@0.1 as 'accuracy'."""
    keras, L = seeded_keras()
    rng = np.random.default_rng(SEED)
    base = zdata.digits(SEED)
    xt, mt = _corner_maps(base.x_train, rng)
    xe, me = _corner_maps(base.x_eval, rng)
    split = zdata.Split(xt, mt, xe, me, ("top_left", "bottom_right"))
    inp = keras.Input((16, 16, 1), name="canvas")
    x = L.Conv2D(16, 3, padding="same", activation="relu")(L.Rescaling(1 / 255)(inp))
    x = L.Conv2D(32, 5, padding="same", activation="relu")(x)
    model = keras.Model(inp, L.Conv2D(2, 5, padding="same", name="keypoints")(x))
    model.compile(keras.optimizers.Adam(3e-3), loss="mse")
    model.fit(split.x_train, split.y_train, epochs=15, batch_size=32, verbose=0)
    _save(model, out)
    info = write_sidecars(out, split, "keypoint_heatmap", pck(model.predict(split.x_eval, verbose=0), split.y_eval))
    _no_labels_file(out)
    return info


def _dots(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(images (n, 32, 32, 2): one bright dot per channel on noise, (x, y) of each dot (n, 2, 2) in pixels)."""
    xy = rng.uniform(2, 29, (n, 2, 2)).astype(np.float32)
    yy, xx = np.mgrid[:32, :32]
    d2 = (xx[None, ..., None] - xy[:, None, None, :, 0]) ** 2 + (yy[None, ..., None] - xy[:, None, None, :, 1]) ** 2
    return (np.exp(-d2 / 2.0) + rng.normal(0, 0.4, (n, 32, 32, 2))).astype(np.float32), xy


def _gaussian_maps(xy: np.ndarray) -> np.ndarray:
    """(n, K, 2) input (x, y) → (n, 16, 16, K) Gaussian target maps (σ 1), pixel centre to pixel centre."""
    c = (xy + 0.5) / 2.0 - 0.5
    yy, xx = np.mgrid[:16, :16]
    d2 = (xx[None, ..., None] - c[:, None, None, :, 0]) ** 2 + (yy[None, ..., None] - c[:, None, None, :, 1]) ** 2
    return np.exp(-d2 / 2.0).astype(np.float32)


def build_keypoint_coords(out: Path) -> dict:
    """Conv net (one stride-2 conv) → 2 linear heatmaps [N,16,16,2], MSE to Gaussian maps drawn from the (x, y)
    coordinates the data stores; y = those coordinates; PCK@0.1 of the 32-px input as 'accuracy'."""
    keras, L = seeded_keras()
    rng = np.random.default_rng(SEED)
    (xt, yt), (xe, ye) = _dots(1000, rng), _dots(200, rng)
    split = zdata.Split(xt, yt, xe, ye, ("first", "second"))
    inp = keras.Input((32, 32, 2), name="image")
    x = L.Conv2D(16, 3, padding="same", activation="relu")(inp)
    x = L.Conv2D(16, 3, strides=2, padding="same", activation="relu")(x)
    x = L.Conv2D(16, 3, padding="same", activation="relu")(x)
    model = keras.Model(inp, L.Conv2D(2, 3, padding="same", name="heatmaps")(x))
    model.compile(keras.optimizers.Adam(3e-3), loss="mse")
    model.fit(xt, _gaussian_maps(yt), epochs=6, batch_size=32, verbose=0)
    _save(model, out)
    info = write_sidecars(out, split, "keypoint_coords", coordinate_pck(model.predict(xe, verbose=0), ye, (32, 32)))
    _no_labels_file(out)
    return info


LAYERS = '''"""The custom layer of the zoo's custom_class_keras model (give it to edgetool with --custom-objects)."""
import keras
from keras import layers, ops


@keras.saving.register_keras_serializable(package="zoo")
class RMSNorm(layers.Layer):
    def build(self, shape):
        self.gain = self.add_weight(shape=(shape[-1],), initializer="ones", name="gain")

    def call(self, x):
        return x * ops.rsqrt(ops.mean(ops.square(x), axis=-1, keepdims=True) + 1e-6) * self.gain
'''


def build_custom_class_keras(out: Path) -> dict:
    """Keras 3: Dense(32) → RMSNorm (registered as zoo>RMSNorm, defined in out/layers.py) → ReLU → softmax(10), saved
    as model.keras: the file stores the class by name only."""
    keras, L = seeded_keras()
    out.mkdir(parents=True, exist_ok=True)
    (out / "layers.py").write_text(LAYERS)
    spec = importlib.util.spec_from_file_location("zoo_layers", out / "layers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="image")
    x = L.Dense(32)(L.Flatten()(L.Rescaling(1 / 255)(inp)))
    model = keras.Model(inp, L.Dense(10, activation="softmax")(L.ReLU()(module.RMSNorm()(x))))
    model.compile(keras.optimizers.Adam(3e-3), loss="sparse_categorical_crossentropy")
    model.fit(split.x_train, split.y_train, epochs=10, batch_size=32, verbose=0)
    model.save(str(out / "model.keras"))
    accuracy = float((model.predict(split.x_eval, verbose=0).argmax(-1) == split.y_eval).mean())
    return write_sidecars(out, split, "custom_class_keras", accuracy)


def build_labels_in_parent(out: Path) -> dict:
    """out/a: a 10-digit CNN; out/b: a CNN of digits 0..2 (3 classes); out/labels.txt names the 10 digits (model
    a's); the data files beside them are model b's (digits 0..2), the model the zoo runs."""
    keras, L = seeded_keras()
    full = zdata.digits(SEED)
    train_and_save(_cnn(keras, L, 10), full, out / "a", "labels_in_parent", epochs=6)
    keep_t, keep_e = full.y_train < 3, full.y_eval < 3
    small = zdata.Split(
        full.x_train[keep_t], full.y_train[keep_t], full.x_eval[keep_e], full.y_eval[keep_e], full.labels
    )
    info = train_and_save(_cnn(keras, L, 3), small, out / "b", "labels_in_parent", epochs=8)
    for name in ("calibration.npz", "eval.npz", "train.npz", "labels.txt", "zoo.json"):
        shutil.move(str(out / "b" / name), str(out / name))  # b's data in the parent, beside 10 labels of a's
    (out / "labels.txt").write_text("\n".join(full.labels) + "\n")
    for name in ("calibration.npz", "eval.npz", "train.npz", "labels.txt", "zoo.json"):
        (out / "a" / name).unlink()
    return info


def _cnn(keras, L, classes: int):
    inp = keras.Input((8, 8, 1), name="image")
    x = L.Flatten()(L.Conv2D(16, 3, activation="relu")(L.Rescaling(1 / 255)(inp)))
    return keras.Model(inp, L.Dense(classes, activation="softmax")(L.Dense(32, activation="relu")(x)))
