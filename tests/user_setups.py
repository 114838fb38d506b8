"""Users' setups unlike the project's fixtures: image folders of real data (sklearn's digits, upscaled to 32×32 RGB,
PNG and JPEG mixed) split into train/val/test, and tf_keras models trained the tutorials' way with the
preprocessing OUTSIDE the graph (x/255, [-1, 1], ImageNet mean/std) or a Rescaling layer inside.

Built in a subprocess (TF_USE_LEGACY_KERAS=1) by ``build(root)``; ``x_of``/``y_of`` read a split back with PIL the
way a test oracle does, independent of edgetool's readers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

CLASSES = ("four", "one", "three", "zero")  # folder (alphanumeric) order differs from the digit order 0, 1, 3, 4
DIGITS = {"zero": 0, "one": 1, "three": 3, "four": 4}
SIZE = 32
IMAGENET_MEAN = np.array([123.675, 116.28, 103.53], dtype=np.float32)
IMAGENET_STD = np.array([58.395, 57.12, 57.375], dtype=np.float32)
PREPROCESS = {
    "x255": lambda x: x / 255.0,
    "pm1": lambda x: x / 127.5 - 1.0,
    "imagenet": lambda x: (x - IMAGENET_MEAN) / IMAGENET_STD,
    "inside": lambda x: x,
}


def write_images(root: Path) -> None:
    """root/{train,val,test}/<class>/NNN.png|jpg from sklearn's digits (60/20/20 split, seeded)."""
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    rng = np.random.default_rng(0)
    for name, digit in DIGITS.items():
        imgs = digits.images[digits.target == digit]
        order = rng.permutation(len(imgs))
        n = len(order)
        splits = {
            "train": order[: int(0.6 * n)],
            "val": order[int(0.6 * n) : int(0.8 * n)],
            "test": order[int(0.8 * n) :],
        }
        for split, idx in splits.items():
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            for k, i in enumerate(idx):
                grey = (imgs[i] / 16.0 * 255).astype(np.uint8)
                big = Image.fromarray(grey).resize((SIZE, SIZE), Image.BILINEAR)
                tint = np.array([1.0, 0.8, 0.6]) if k % 3 == 0 else np.array([0.7, 0.9, 1.0])
                rgb = np.clip(np.asarray(big, dtype=np.float32)[..., None] * tint + 20, 0, 255).astype(np.uint8)
                ext = "png" if k % 2 == 0 else "jpg"
                Image.fromarray(rgb, "RGB").save(folder / f"{k:03d}.{ext}", quality=95)


def read_split(root: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(x float32 0..255 NHWC, y folder-order index) of a split, read with PIL (the oracle's own reader)."""
    from PIL import Image

    xs, ys = [], []
    for i, name in enumerate(sorted(CLASSES)):
        for f in sorted((root / split / name).iterdir()):
            with Image.open(f) as img:
                xs.append(np.asarray(img.convert("RGB"), dtype=np.float32))
            ys.append(i)
    return np.stack(xs), np.array(ys)


_TRAIN = r"""
import sys, numpy as np
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import tf_keras as keras, tensorflow as tf
tf.config.experimental.enable_op_determinism()  # the same models on every run
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)  # with one seed for every generator: one result
from tests.user_setups import PREPROCESS, read_split
root = Path(sys.argv[1])
x, y = read_split(root / "images", "train")
xt, _ = read_split(root / "images", "test")
for kind in sys.argv[3:]:
    keras.utils.set_random_seed(0)
    layers = [keras.Input((32, 32, 3))]
    if kind == "inside":
        layers.append(keras.layers.Rescaling(1 / 255))
    layers += [keras.layers.Conv2D(8, 3, activation="relu"), keras.layers.MaxPooling2D(),
               keras.layers.Conv2D(16, 3, activation="relu"), keras.layers.GlobalAveragePooling2D(),
               keras.layers.Dense(4, activation="softmax")]
    model = keras.Sequential(layers)
    model.compile(keras.optimizers.Adam(0.005), "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(PREPROCESS[kind](x), y, epochs=30, batch_size=32, verbose=0)
    model.save(str(root / f"model_{kind}"), save_format="tf")
    np.save(root / f"oracle_{kind}.npy", model.predict(PREPROCESS[kind](xt), verbose=0))  # Keras on PIL + numpy
    if kind == "x255":  # the same network behind a tf.function that divides by 255 itself (no Keras metadata)
        class Graph(tf.Module):
            def __init__(self, net):
                super().__init__()
                self.net = net

            @tf.function(input_signature=[tf.TensorSpec([None, 32, 32, 3], tf.float32, name="image")])
            def serve(self, image):
                return {"scores": self.net(image / 255.0)}

        class MinMax(tf.Module):  # every channel of every image to its own 0..1: no candidate range changes a thing
            def __init__(self, net):
                super().__init__()
                self.net = net

            @tf.function(input_signature=[tf.TensorSpec([None, 32, 32, 3], tf.float32, name="image")])
            def serve(self, image):
                lo = tf.reduce_min(image, axis=[1, 2], keepdims=True)
                hi = tf.reduce_max(image, axis=[1, 2], keepdims=True)
                return {"scores": self.net((image - lo) / (hi - lo + 1e-6))}

        g, mm = Graph(model), MinMax(model)
        tf.saved_model.save(g, str(root / "model_graph"), signatures={"serving_default": g.serve})
        tf.saved_model.save(mm, str(root / "model_minmax"), signatures={"serving_default": mm.serve})
"""


def train(root: Path, kinds: tuple[str, ...]) -> dict[str, Path]:
    """tf_keras SavedModels trained on ``PREPROCESS[kind]`` of the train split (labels in folder order), one per
    kind (x255 also gives ``graph``, the same network behind a tf.function dividing by 255 itself, and
    ``minmax``, behind one rescaling every image to its own min..max, which no input range changes)."""
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", _TRAIN, str(root), str(Path(__file__).parents[1]), *kinds],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = [*kinds, *(["graph", "minmax"] if "x255" in kinds else [])]
    return {k: root / f"model_{k}" for k in names}


_KERAS3 = r"""
import sys, numpy as np
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import keras
from tests.user_setups import read_split
root = Path(sys.argv[1])
x, y = read_split(root / "images", "train")
xt, _ = read_split(root / "images", "test")
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Rescaling(1 / 127.5, offset=-1),
                          keras.layers.Conv2D(8, 3, activation="relu"), keras.layers.MaxPooling2D(),
                          keras.layers.Conv2D(16, 3, activation="relu"), keras.layers.GlobalAveragePooling2D(),
                          keras.layers.Dense(4, activation="softmax")])
model.compile(keras.optimizers.Adam(0.005), "sparse_categorical_crossentropy")
model.fit(x, y, epochs=30, batch_size=32, verbose=0)
model.save(root / "keras3.keras")
np.save(root / "oracle_keras3.npy", model.predict(xt, verbose=0))
"""


def train_keras3(root: Path) -> Path:
    """A Keras-3 ``.keras`` file with Rescaling(1/127.5, offset=-1) inside, trained on raw pixels of the train split."""
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    proc = subprocess.run(
        [sys.executable, "-c", _KERAS3, str(root), str(Path(__file__).parents[1])],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "keras3.keras"
