"""Zoo builders of models whose preprocessing lives in the graph: string input (TextVectorization), open H×W with
resize and standardization, an STFT/log-mel audio front end, and Conv3D over video frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, seeded_keras, train_classifier

TOPICS = (
    ("goal", "match", "team", "score", "coach", "league"),
    ("rain", "cloud", "sun", "storm", "wind", "snow"),
    ("bread", "cheese", "soup", "salad", "cake", "pasta"),
    ("code", "bug", "test", "merge", "build", "deploy"),
)
FILLER = ("the", "a", "today", "very", "and", "of", "we", "it")


def _sentences(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` short sentences (3 topic words, 3 filler, 1 word of another topic) of string dtype (n, 1), and topics."""
    y = rng.integers(0, len(TOPICS), n)
    rows = []
    for label in y:
        other = TOPICS[(label + rng.integers(1, len(TOPICS))) % len(TOPICS)]
        words = [*rng.choice(TOPICS[label], 3), *rng.choice(FILLER, 3), rng.choice(other)]
        rng.shuffle(words)
        rows.append(" ".join(words).capitalize() + ".")
    return np.array(rows)[:, None], y.astype(np.int64)


def build_text_vectorization(out: Path) -> dict:
    """string[N,1] → TextVectorization (adapted: lower-case, strip punctuation, 8 ids) → Embedding → mean → softmax."""
    keras, L = seeded_keras()
    rng = np.random.default_rng(SEED)
    xt, yt = _sentences(rng, 800)
    xe, ye = _sentences(rng, 200)
    split = zdata.Split(xt, yt, xe, ye, tuple(t[0] for t in TOPICS))
    vec = L.TextVectorization(max_tokens=48, output_sequence_length=8)
    vec.adapt(xt[:, 0])
    inp = keras.Input((1,), dtype="string", name="text")
    x = L.GlobalAveragePooling1D()(L.Embedding(48, 8)(vec(inp)))
    return train_classifier(keras, inp, x, split, out, "text_vectorization", epochs=10, classes=len(TOPICS), lr=1e-2)


def build_resize_standardize(out: Path) -> dict:
    """Input [N,?,?,1] → tf.image.resize to 16×16 → tf.image.per_image_standardization (TF-op layers) → CNN;
    trained on 16×16 digits, evaluated on 24×24 ones (the resize is in the model)."""
    import tensorflow as tf

    keras, L = seeded_keras()
    base = zdata.digits(SEED)
    split = zdata.Split(
        zdata.upscale(base.x_train, 2, rgb=False),
        base.y_train,
        zdata.upscale(base.x_eval, 3, False),
        base.y_eval,
        base.labels,
    )
    inp = keras.Input((None, None, 1), name="image")
    x = tf.image.per_image_standardization(tf.image.resize(inp, (16, 16)))
    x = L.MaxPooling2D()(L.Conv2D(16, 3, padding="same", activation="relu")(x))
    x = L.Flatten()(L.Conv2D(16, 3, padding="same", activation="relu")(x))
    return train_classifier(keras, inp, x, split, out, "resize_standardize", epochs=6)


def build_stft_logmel(out: Path) -> dict:
    """waveform[N,256] → tf.signal.stft (64/32) → magnitude → 16 mel bands → log → Conv2D → softmax(4 tone bands)."""
    import tensorflow as tf

    keras, L = seeded_keras()
    split = zdata.map_split(zdata.tones(SEED), lambda x: x[..., 0])
    inp = keras.Input((256,), name="waveform")
    spec = tf.abs(tf.signal.stft(inp, frame_length=64, frame_step=32, fft_length=64))
    mel = tf.constant(tf.signal.linear_to_mel_weight_matrix(16, 33, 8000, 20.0, 4000.0).numpy())
    x = tf.math.log(tf.matmul(spec, mel) + 1e-6)[..., None]
    x = L.Flatten()(L.Conv2D(8, 3, activation="relu")(x))
    return train_classifier(keras, inp, x, split, out, "stft_logmel", epochs=8, classes=len(zdata.TONE_LABELS))


def _sliding(x: np.ndarray, frames: int = 4) -> np.ndarray:
    """(n, 8, 8, 1) digits → (n, frames, 8, 8, 1) clips of the digit moving one pixel right per frame."""
    clips = np.zeros((len(x), frames, 8, 8, 1), np.float32)
    for t in range(frames):
        clips[:, t, :, t:] = x[:, :, : 8 - t]
    return clips


def build_conv3d_video(out: Path) -> dict:
    """Conv3D (2×3×3) → MaxPool3D (1×2×2) → Conv3D → flatten → softmax over 4-frame clips of sliding digits."""
    keras, L = seeded_keras()
    split = zdata.map_split(zdata.digits(SEED), _sliding)
    inp = keras.Input((4, 8, 8, 1), name="frames")
    x = L.Conv3D(8, (2, 3, 3), padding="same", activation="relu")(L.Rescaling(1 / 255)(inp))
    x = L.Conv3D(16, (2, 3, 3), padding="same", activation="relu")(L.MaxPooling3D((1, 2, 2))(x))
    return train_classifier(keras, inp, L.Flatten()(L.MaxPooling3D((2, 2, 2))(x)), split, out, "conv3d_video", epochs=6)
