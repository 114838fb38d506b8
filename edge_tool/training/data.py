"""Bundled real data: scikit-learn's handwritten digits (8x8 grey), as raw 0..255 pixels."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LABELS = tuple(str(i) for i in range(10))
INPUT_SHAPE = (8, 8, 1)


@dataclass(frozen=True)
class DigitsSplit:
    """Train / held-out split of load_digits; x is float32 in 0..255, shape (n, 8, 8, 1)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_eval: np.ndarray
    y_eval: np.ndarray


def load_digits_split(seed: int = 0, eval_fraction: float = 0.2) -> DigitsSplit:
    """Stratified, seeded split of the 1,797 digits; the eval part (>= 300) is never trained on."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images.astype(np.float32) * (255.0 / 16.0)).round().reshape(-1, *INPUT_SHAPE)
    y = digits.target.astype(np.int64)
    x_tr, x_ev, y_tr, y_ev = train_test_split(x, y, test_size=eval_fraction, random_state=seed, stratify=y)
    return DigitsSplit(x_tr, y_tr, x_ev, y_ev)


def make_dataset(tf, x: np.ndarray, y: np.ndarray, global_batch: int, seed: int, training: bool):
    """tf.data pipeline: cache, shuffle (training), batch by the global batch, prefetch(AUTOTUNE)."""
    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache()
    if training:
        ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
    return ds.batch(global_batch).prefetch(tf.data.AUTOTUNE)
