"""Zoo builders of image models: keras.applications, residual and BatchNorm CNNs, TF-op layers, open height/width."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, seeded_keras, train_and_save, train_classifier


def image_split(size: int, rgb: bool) -> zdata.Split:
    """The digits upscaled to ``size``×``size`` (grey, or repeated to RGB)."""
    return zdata.map_split(zdata.digits(SEED), lambda x: zdata.upscale(x, size // 8, rgb))


def uint8_resize_cnn(keras, inp, widths: tuple[int, int] = (8, 16)):
    """uint8 image → tf.cast, /255 and tf.image.resize to 16×16 (TF-op layers) → conv, pool, conv → global pooling."""
    import tensorflow as tf

    L = keras.layers
    x = tf.cast(inp, tf.float32) / 255.0
    x = tf.image.resize(x, (16, 16))
    x = L.Conv2D(widths[0], 3, activation="relu", padding="same")(x)
    x = L.MaxPooling2D()(x)
    x = L.Conv2D(widths[1], 3, activation="relu", padding="same")(x)
    return L.GlobalAveragePooling2D()(x)


def build_mobilenet_v2(out: Path) -> dict:
    """keras.applications.MobileNetV2, alpha 0.35, random init, 32×32 RGB."""
    keras, L = seeded_keras()
    split = image_split(32, rgb=True)
    inp = keras.Input((32, 32, 3), name="image")
    x = L.Rescaling(1 / 127.5, offset=-1)(inp)
    base = keras.applications.MobileNetV2(input_tensor=x, alpha=0.35, weights=None, include_top=False, pooling="avg")
    return train_classifier(keras, inp, base.output, split, out, "mobilenet_v2", epochs=4)


def build_mobilenet_v3_small(out: Path) -> dict:
    """keras.applications.MobileNetV3Small (its own Rescaling and hard-swish), random init, 32×32 RGB."""
    keras, _ = seeded_keras()
    split = image_split(32, rgb=True)
    model = keras.applications.MobileNetV3Small(
        input_shape=(32, 32, 3), alpha=0.75, weights=None, classes=10, dropout_rate=0.0, include_preprocessing=True
    )
    return train_and_save(model, split, out, "mobilenet_v3_small", epochs=5)


def build_efficientnet_b0(out: Path) -> dict:
    """keras.applications.EfficientNetB0 (Rescaling → Normalization inside), random init, 32×32 RGB."""
    keras, _ = seeded_keras()
    split = image_split(32, rgb=True)
    model = keras.applications.EfficientNetB0(input_shape=(32, 32, 3), weights=None, classes=10, drop_connect_rate=0.0)
    return train_and_save(model, split, out, "efficientnet_b0", epochs=4)


def build_resnet_bn(out: Path) -> dict:
    """Two residual blocks, Conv → BN → ReLU, Add skips, on 8×8 digits."""
    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Rescaling(1 / 255)(inp)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, padding="same", use_bias=False)(x)))
    for _ in range(2):
        y = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, padding="same", use_bias=False)(x)))
        y = L.BatchNormalization()(L.Conv2D(16, 3, padding="same", use_bias=False)(y))
        x = L.ReLU()(L.Add()([x, y]))
    return train_classifier(keras, inp, L.GlobalAveragePooling2D()(x), split, out, "resnet_bn", epochs=6)


def build_tfop_uint8(out: Path) -> dict:
    """uint8 [N,8,8,1] input; tf.cast, division and tf.image.resize to 16×16 as TF-op layers; a small CNN."""
    keras, _ = seeded_keras()
    split = zdata.map_split(zdata.digits(SEED), lambda x: x.astype(np.uint8))
    inp = keras.Input((8, 8, 1), dtype="uint8", name="image_u8")
    return train_classifier(keras, inp, uint8_resize_cnn(keras, inp), split, out, "tfop_uint8", epochs=8)


def build_bn_after_act(out: Path) -> dict:
    """Conv → ReLU → BatchNorm (not foldable into the conv), SeparableConv2D, DepthwiseConv2D, on 8×8 digits."""
    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Rescaling(1 / 255)(inp)
    x = L.BatchNormalization()(L.Conv2D(16, 3, padding="same", activation="relu")(x))
    x = L.BatchNormalization()(L.SeparableConv2D(24, 3, padding="same", activation="relu")(x))
    x = L.BatchNormalization()(L.ReLU()(L.DepthwiseConv2D(3, padding="same")(x)))
    return train_classifier(keras, inp, L.GlobalAveragePooling2D()(x), split, out, "bn_after_act", epochs=8)


def build_dynamic_hw(out: Path) -> dict:
    """Input [N,?,?,1], convs and global average pooling; trained and evaluated on 16×16 upscaled digits."""
    keras, L = seeded_keras()
    split = image_split(16, rgb=False)
    inp = keras.Input((None, None, 1), name="image")
    x = L.Conv2D(16, 3, padding="same", activation="relu")(L.Rescaling(1 / 255)(inp))
    x = L.MaxPooling2D()(x)
    x = L.Conv2D(32, 3, padding="same", activation="relu")(x)
    return train_classifier(keras, inp, L.GlobalMaxPooling2D()(x), split, out, "dynamic_hw", epochs=8)
