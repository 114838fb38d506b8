"""Build tiny models of every eval task, their eval data and fp32 / int8 .tflite files (raw TFLiteConverter, not
edgetool's convert): ``python tests/task_models.py OUTDIR``.

OUTDIR/<task>/model (SavedModel, Keras 2), OUTDIR/<task>/eval.npz (x, y), OUTDIR/<task>/fp32.tflite, int8.tflite:
- regression: sklearn diabetes, 10 features -> 1 value (raw targets 25..346); also untrained.tflite (random weights)
- multilabel: digits 8x8 -> 3 sigmoid tags (even, > 4, in {0, 1, 2}), multi-hot y
- segmentation: digits 8x8 -> per-pixel 3 classes by ink level (softmax), masks y (n, 8, 8)
- detection: digits 8x8 -> 'classes' (softmax 10) and 'boxes' (4 corners of the ink), y = digit class
- classification3: digits 0..2 -> softmax 3, labels.txt (zero, one, two)
Built only when named (``python tests/task_models.py OUTDIR embedding image heatmap``):
- embedding: digits 8x8 -> 16-d UnitNormalization embedding (trained through a cosine classifier), y = digit
- image: 16x16 noisy digits -> the clean image (sigmoid), float targets in [0, 1]
- heatmap: a digit pasted in a 16x16 canvas -> 2 keypoint maps (its top-left and bottom-right corners)
- keypoints: a 32x32 2-channel image, one bright dot per channel -> 2 keypoint maps 16x16, trained on Gaussian
  maps drawn from the (x, y) coordinates; y = those coordinates (n, 2, 2) in input pixels, as datasets store them
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np


def _digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images / 16.0).astype("float32").reshape(-1, 8, 8, 1), d.target.astype("int64")


def _save(keras, model, out: Path, x: np.ndarray, y: np.ndarray, calib: np.ndarray) -> None:
    import tensorflow as tf

    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out / "model"), save_format="tf")
    np.savez(out / "eval.npz", x=x, y=y)
    conv = tf.lite.TFLiteConverter.from_saved_model(str(out / "model"))
    (out / "fp32.tflite").write_bytes(conv.convert())
    conv = tf.lite.TFLiteConverter.from_saved_model(str(out / "model"))
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([c[None]] for c in calib[:100])
    (out / "int8.tflite").write_bytes(conv.convert())


def regression(keras, out: Path) -> None:
    from sklearn.datasets import load_diabetes

    d = load_diabetes()
    x, y = d.data.astype("float32"), d.target.astype("float32")
    model = keras.Sequential(
        [
            keras.Input((10,), name="features"),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(1, name="value"),
        ]
    )
    untrained = keras.models.clone_model(model)  # same shapes, random weights: an artefact far off the reference
    model.compile(keras.optimizers.Adam(0.05), "mse")
    model.fit(x[:300], y[:300], epochs=120, batch_size=32, verbose=0)
    _save(keras, model, out, x[300:], y[300:], x[:300])
    import tensorflow as tf

    (out / "untrained.tflite").write_bytes(tf.lite.TFLiteConverter.from_keras_model(untrained).convert())


def multilabel(keras, out: Path) -> None:
    x, t = _digits()
    tags = np.stack([t % 2 == 0, t > 4, t <= 2], axis=1).astype("float32")
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1), name="image"),
            keras.layers.Flatten(),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(3, activation="sigmoid"),
        ]
    )
    model.compile("adam", "binary_crossentropy")
    model.fit(x[:1200], tags[:1200], epochs=8, batch_size=32, verbose=0)
    _save(keras, model, out, x[1200:1500], tags[1200:1500].astype("int64"), x[:1200])


def segmentation(keras, out: Path) -> None:
    x, _ = _digits()
    masks = np.digitize(x[..., 0], [0.25, 0.65]).astype("int64")  # 0 background, 1 faint ink, 2 strong ink
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1), name="image"),
            keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(3, 1, activation="softmax"),
        ]
    )
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(x[:1200], masks[:1200], epochs=6, batch_size=32, verbose=0)
    _save(keras, model, out, x[1200:1400], masks[1200:1400], x[:1200])


def _ink_boxes(x: np.ndarray) -> np.ndarray:
    boxes = []
    for img in x[..., 0]:
        ys, xs = np.nonzero(img > 0.3)
        boxes.append([ys.min() / 8, xs.min() / 8, (ys.max() + 1) / 8, (xs.max() + 1) / 8])
    return np.asarray(boxes, dtype="float32")


def detection(keras, out: Path) -> None:
    x, t = _digits()
    inp = keras.Input((8, 8, 1), name="image")
    h = keras.layers.Dense(48, activation="relu")(keras.layers.Flatten()(inp))
    classes = keras.layers.Dense(10, activation="softmax", name="classes")(h)
    boxes = keras.layers.Dense(4, activation="sigmoid", name="boxes")(h)
    model = keras.Model(inp, {"classes": classes, "boxes": boxes})
    model.compile("adam", {"classes": "sparse_categorical_crossentropy", "boxes": "mse"})
    model.fit(x[:1200], {"classes": t[:1200], "boxes": _ink_boxes(x[:1200])}, epochs=8, batch_size=32, verbose=0)
    _save(keras, model, out, x[1200:1400], t[1200:1400], x[:1200])


def classification3(keras, out: Path) -> None:
    x, t = _digits()
    keep = t <= 2
    x, t = x[keep], t[keep]
    model = keras.Sequential(
        [keras.Input((8, 8, 1), name="image"), keras.layers.Flatten(), keras.layers.Dense(3, activation="softmax")]
    )
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(x[:300], t[:300], epochs=5, batch_size=32, verbose=0)
    _save(keras, model, out, x[300:], t[300:], x[:300])
    (out / "model" / "labels.txt").write_text("zero\none\ntwo\n")


def embedding(keras, out: Path) -> None:
    x, t = _digits()
    inp = keras.Input((8, 8, 1), name="image")
    h = keras.layers.Dense(64, activation="relu")(keras.layers.Flatten()(inp))
    emb = keras.layers.UnitNormalization(name="embedding")(keras.layers.Dense(16)(h))
    logits = keras.layers.Dense(10, use_bias=False)(keras.layers.Rescaling(8.0)(emb))
    trainer = keras.Model(inp, logits)
    trainer.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    trainer.fit(x[:1200], t[:1200], epochs=8, batch_size=32, verbose=0)
    _save(keras, keras.Model(inp, emb), out, x[1200:1500], t[1200:1500], x[:1200])


def _big_digits() -> np.ndarray:
    x, _ = _digits()
    return np.kron(x, np.ones((1, 2, 2, 1), "float32"))


def image(keras, out: Path) -> None:
    clean = _big_digits()
    noisy = np.clip(clean + np.random.default_rng(0).normal(0, 0.2, clean.shape), 0, 1).astype("float32")
    model = keras.Sequential(
        [
            keras.Input((16, 16, 1), name="noisy"),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(1, 3, padding="same", activation="sigmoid", name="clean"),
        ]
    )
    model.compile("adam", "mse")
    model.fit(noisy[:1200], clean[:1200], epochs=6, batch_size=32, verbose=0)
    _save(keras, model, out, noisy[1200:1400], clean[1200:1400], noisy[:1200])


def corner_maps(n: int, seed: int = 0):
    """(canvases (n, 16, 16, 1) with a digit pasted at random, heatmaps (n, 16, 16, 2) of its two corners)."""
    x, _ = _digits()
    rng = np.random.default_rng(seed)
    canvas, maps = np.zeros((n, 16, 16, 1), "float32"), np.zeros((n, 16, 16, 2), "float32")
    yy, xx = np.mgrid[:16, :16]
    for i in range(n):
        dy, dx = rng.integers(0, 9, 2)
        canvas[i, dy : dy + 8, dx : dx + 8] = x[i % len(x)]
        for k, (py, px) in enumerate(((dy, dx), (dy + 7, dx + 7))):
            maps[i, ..., k] = np.exp(-((yy - py) ** 2 + (xx - px) ** 2) / 2.0)
    return canvas, maps


def heatmap(keras, out: Path) -> None:
    canvas, maps = corner_maps(1400)
    model = keras.Sequential(
        [
            keras.Input((16, 16, 1), name="canvas"),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(16, 5, padding="same", activation="relu"),
            keras.layers.Conv2D(2, 5, padding="same", name="keypoints"),
        ]
    )
    model.compile("adam", "mse")
    model.fit(canvas[:1200], maps[:1200], epochs=10, batch_size=32, verbose=0)
    _save(keras, model, out, canvas[1200:], maps[1200:], canvas[:1200])


def dots(n: int, seed: int = 0):
    """(images (n, 32, 32, 2) with a bright dot per channel on noise, (x, y) of each dot (n, 2, 2) in pixels)."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(2, 29, (n, 2, 2))
    yy, xx = np.mgrid[:32, :32]
    d2 = (xx[None, ..., None] - xy[:, None, None, :, 0]) ** 2 + (yy[None, ..., None] - xy[:, None, None, :, 1]) ** 2
    img = np.exp(-d2 / 2.0) + rng.normal(0, 0.4, (n, 32, 32, 2))
    return img.astype("float32"), xy.astype("float32")


def gaussian_targets(xy: np.ndarray, size: int = 16, scale: float = 2.0, sigma: float = 1.0) -> np.ndarray:
    """(n, K, 2) input (x, y) -> (n, size, size, K) Gaussian maps, pixel centre to pixel centre."""
    c = (xy + 0.5) / scale - 0.5
    yy, xx = np.mgrid[:size, :size]
    d2 = (xx[None, ..., None] - c[:, None, None, :, 0]) ** 2 + (yy[None, ..., None] - c[:, None, None, :, 1]) ** 2
    return np.exp(-d2 / (2 * sigma**2)).astype("float32")


def keypoints(keras, out: Path) -> None:
    img, xy = dots(1200)
    model = keras.Sequential(
        [
            keras.Input((32, 32, 2), name="image"),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(16, 3, strides=2, padding="same", activation="relu"),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(2, 3, padding="same", name="heatmaps"),
        ]
    )
    model.compile(keras.optimizers.Adam(3e-3), "mse")
    model.fit(img[:1000], gaussian_targets(xy[:1000]), epochs=6, batch_size=32, verbose=0)
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out / "model"), save_format="tf")
    np.savez(out / "eval.npz", x=img[1000:], y=xy[1000:])
    np.savez(out / "calib.npz", x=img[:200])


DEFAULT = ("regression", "multilabel", "segmentation", "detection", "classification3")
BUILDERS = {
    "regression": regression,
    "multilabel": multilabel,
    "segmentation": segmentation,
    "detection": detection,
    "classification3": classification3,
    "embedding": embedding,
    "image": image,
    "heatmap": heatmap,
    "keypoints": keypoints,
}


if __name__ == "__main__":
    import tf_keras as keras

    keras.utils.set_random_seed(0)
    root = Path(sys.argv[1])
    for name in sys.argv[2:] or DEFAULT:
        BUILDERS[name](keras, root / name)
