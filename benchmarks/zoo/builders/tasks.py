"""Zoo builders of models whose task is not single-label classification: regression, multi-label, segmentation,
detection-style heads. Labels are stored as users store them (float targets, multi-hot rows, integer masks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, seeded_keras, write_sidecars
from tests.oracles.task_metrics import mean_iou, multilabel_f1_macro, r2


def _save(model, out: Path) -> None:
    model.save(str(out), save_format="tf", include_optimizer=False)


def build_regression_mlp(out: Path) -> dict:
    """Normalization → Dense(32) → Dense(1) on sklearn diabetes (raw targets 25..346); held-out R² as 'accuracy'."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    keras, L = seeded_keras()
    d = load_diabetes()
    x, y = d.data.astype(np.float32), d.target.astype(np.float32)[:, None]
    xt, xe, yt, ye = train_test_split(x, y, test_size=0.25, random_state=SEED)
    norm = L.Normalization()
    norm.adapt(xt)
    inp = keras.Input((10,), name="features")
    model = keras.Model(inp, L.Dense(1, name="value")(L.Dense(32, activation="relu")(norm(inp))))
    model.compile(keras.optimizers.Adam(3e-2), loss="mse")
    model.fit(xt, yt, epochs=60, batch_size=32, verbose=0)
    _save(model, out)
    score = r2(model.predict(xe, verbose=0), ye)
    return write_sidecars(out, zdata.Split(xt, yt, xe, ye, ("value",)), "regression_mlp", score)


def _tags(digit: np.ndarray) -> np.ndarray:
    """Multi-hot tags: even, greater than 4, less than 3, has a closed loop (0, 6, 8, 9)."""
    return np.stack([digit % 2 == 0, digit > 4, digit < 3, np.isin(digit, (0, 6, 8, 9))], axis=1).astype(np.int64)


def build_multilabel_sigmoid(out: Path) -> dict:
    """Conv → Dense → 4 sigmoid tags, binary cross-entropy, multi-hot int labels; held-out macro F1 as 'accuracy'."""
    keras, L = seeded_keras()
    base = zdata.digits(SEED)
    split = zdata.Split(
        base.x_train,
        _tags(base.y_train),
        base.x_eval,
        _tags(base.y_eval),
        ("even", "greater_than_4", "less_than_3", "loop"),
    )
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Flatten()(L.Conv2D(16, 3, activation="relu")(L.Rescaling(1 / 255)(inp)))
    model = keras.Model(inp, L.Dense(4, activation="sigmoid", name="tags")(L.Dense(32, activation="relu")(x)))
    model.compile(keras.optimizers.Adam(3e-3), loss="binary_crossentropy")
    model.fit(split.x_train, split.y_train, epochs=10, batch_size=32, verbose=0)
    _save(model, out)
    score = multilabel_f1_macro(model.predict(split.x_eval, verbose=0), split.y_eval)
    return write_sidecars(out, split, "multilabel_sigmoid", score)


def _ink_masks(x: np.ndarray) -> np.ndarray:
    """Per-pixel class of 0..255 images: 0 background (< 40), 1 faint (< 160), 2 strong."""
    return np.digitize(x[..., 0], [40, 160]).astype(np.int64)


def build_unet_seg(out: Path) -> dict:
    """A two-level U-Net on 16×16 digits → per-pixel softmax over 3 ink levels; held-out mIoU as 'accuracy'."""
    keras, L = seeded_keras()
    rng = np.random.default_rng(SEED)
    base = zdata.map_split(zdata.digits(SEED), lambda x: zdata.upscale(x, 2, rgb=False))
    noisy = zdata.map_split(base, lambda x: np.clip(x + rng.normal(0, 20, x.shape), 0, 255).astype(np.float32))
    split = zdata.Split(
        noisy.x_train,
        _ink_masks(base.x_train),
        noisy.x_eval,
        _ink_masks(base.x_eval),
        ("background", "faint", "strong"),
    )
    inp = keras.Input((16, 16, 1), name="image")
    e1 = L.Conv2D(8, 3, padding="same", activation="relu")(L.Rescaling(1 / 255)(inp))
    e2 = L.Conv2D(16, 3, padding="same", activation="relu")(L.MaxPooling2D()(e1))
    d1 = L.Concatenate()([L.UpSampling2D()(e2), e1])
    d1 = L.Conv2D(8, 3, padding="same", activation="relu")(d1)
    model = keras.Model(inp, L.Conv2D(3, 1, activation="softmax", name="mask")(d1))
    model.compile(keras.optimizers.Adam(3e-3), loss="sparse_categorical_crossentropy")
    model.fit(split.x_train, split.y_train, epochs=6, batch_size=32, verbose=0)
    _save(model, out)
    score = mean_iou(model.predict(split.x_eval, verbose=0), split.y_eval)
    return write_sidecars(out, split, "unet_seg", score)


def _placed(x: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    """Each 8×8 digit pasted at a random spot of a 16×16 canvas; boxes (y0, x0, y1, x1) in 0..1."""
    n = len(x)
    canvas = np.zeros((n, 16, 16, 1), np.float32)
    off = rng.integers(0, 9, (n, 2))
    for i, (dy, dx) in enumerate(off):
        canvas[i, dy : dy + 8, dx : dx + 8] = x[i]
    return canvas, (np.concatenate([off, off + 8], axis=1) / 16.0).astype(np.float32)


def build_detection_heads(out: Path) -> dict:
    """A CNN with two heads: ``classes`` softmax[N,10] and ``boxes`` sigmoid[N,4] of where the digit was pasted.

    eval.npz's ``y`` is the digit class; the boxes are stored as ``boxes`` in the data files for the oracle."""
    keras, L = seeded_keras()
    rng = np.random.default_rng(SEED)
    base = zdata.digits(SEED)
    xt, bt = _placed(base.x_train, rng)
    xe, be = _placed(base.x_eval, rng)
    inp = keras.Input((16, 16, 1), name="image")
    x = L.MaxPooling2D()(L.Conv2D(16, 3, padding="same", activation="relu")(L.Rescaling(1 / 255)(inp)))
    x = L.Dense(64, activation="relu")(L.Flatten()(L.Conv2D(32, 3, padding="same", activation="relu")(x)))
    model = keras.Model(
        inp,
        {
            "classes": L.Dense(10, activation="softmax", name="classes")(x),
            "boxes": L.Dense(4, activation="sigmoid", name="boxes")(x),
        },
    )
    model.compile(keras.optimizers.Adam(3e-3), loss={"classes": "sparse_categorical_crossentropy", "boxes": "mse"})
    model.fit(xt, {"classes": base.y_train, "boxes": bt}, epochs=8, batch_size=32, verbose=0)
    _save(model, out)
    pred = model.predict(xe, verbose=0)
    accuracy = float((np.asarray(pred["classes"]).argmax(-1) == base.y_eval).mean())
    info = write_sidecars(out, zdata.Split(xt, base.y_train, xe, base.y_eval, base.labels), "detection_heads", accuracy)
    np.savez(out / "boxes.npz", train=bt, eval=be)
    return info
