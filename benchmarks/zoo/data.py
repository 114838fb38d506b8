"""Real or learnable data for the zoo: sklearn's bundled digits and breast_cancer, and seeded synthetic tones.

Every function is seeded and returns numpy arrays only (no TensorFlow), so the checks can reuse them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DIGIT_LABELS = tuple(str(i) for i in range(10))
TONE_LABELS = ("low", "mid", "high", "very-high")


@dataclass(frozen=True)
class Split:
    """x_* is an array (one input) or a dict input-name -> array; y_* integer class labels."""

    x_train: object
    y_train: np.ndarray
    x_eval: object
    y_eval: np.ndarray
    labels: tuple[str, ...]


def digits(seed: int = 0) -> Split:
    """The 1,797 digits as raw 0..255 pixels (n, 8, 8, 1), stratified 80/20 split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.images.astype(np.float32) * (255.0 / 16.0)).round().reshape(-1, 8, 8, 1)
    xt, xe, yt, ye = train_test_split(x, d.target.astype(np.int64), test_size=0.2, random_state=seed, stratify=d.target)
    return Split(xt, yt, xe, ye, DIGIT_LABELS)


def upscale(x: np.ndarray, factor: int, rgb: bool) -> np.ndarray:
    """Nearest-neighbour upscale of (n, h, w, 1) images by ``factor``; grey repeated to RGB when ``rgb``."""
    up = x.repeat(factor, axis=1).repeat(factor, axis=2)
    return np.repeat(up, 3, axis=3) if rgb else up


def map_split(split: Split, fn) -> Split:
    """The same split with ``fn`` applied to both x arrays."""
    return Split(fn(split.x_train), split.y_train, fn(split.x_eval), split.y_eval, split.labels)


def breast_cancer(seed: int = 0) -> tuple[Split, tuple[str, ...]]:
    """sklearn's breast_cancer table (569 × 30 raw features, 2 classes) and its feature names."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    d = load_breast_cancer()
    x = d.data.astype(np.float32)
    xt, xe, yt, ye = train_test_split(x, d.target.astype(np.int64), test_size=0.3, random_state=seed, stratify=d.target)
    return Split(xt, yt, xe, ye, tuple(str(n) for n in d.target_names)), tuple(str(n) for n in d.feature_names)


def tones(seed: int = 0, n_train: int = 800, n_eval: int = 240, length: int = 256) -> Split:
    """Noisy sine tones (n, length, 1) in [-1, 1]; the class is the frequency band (4 bands)."""
    rng = np.random.default_rng(seed)

    def make(n):
        y = rng.integers(0, len(TONE_LABELS), n)
        cycles = (2.0 + 5.0 * y + rng.uniform(0, 4.0, n))[:, None]  # cycles per window, bands 5 apart
        t = np.arange(length)[None, :] / length
        wave = rng.uniform(0.3, 0.9, (n, 1)) * np.sin(2 * np.pi * cycles * t + rng.uniform(0, 2 * np.pi, (n, 1)))
        wave = np.clip(wave + rng.normal(0, 0.15, (n, length)), -1, 1)
        return wave.astype(np.float32)[..., None], y.astype(np.int64)

    xt, yt = make(n_train)
    xe, ye = make(n_eval)
    return Split(xt, yt, xe, ye, TONE_LABELS)


def take(x, idx):
    """Rows ``idx`` of an array or of every array of a dict."""
    return {k: v[idx] for k, v in x.items()} if isinstance(x, dict) else x[idx]
