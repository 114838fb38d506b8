"""Zoo builders of what GPU training produces (issue 35): models trained under a mixed-precision policy (tf_keras
``mixed_float16`` and ``mixed_bfloat16`` SavedModels, a Keras-3 ``mixed_float16`` ``.keras`` file), a GAN-style
generator, a masked Bidirectional LSTM text model and a causal dilated TCN.

A mixed-precision model's own oracle is its float32 twin: the same architecture built afresh under the float32
policy with the trained weights copied in, run on the eval inputs (``twin.npz``) — what a correct float32 conversion
must reproduce to float rounding (the SavedModel itself computes in float16/bfloat16, so it is only matched to that
precision) — and saved (``twin_savedmodel/``) for the raw converter's int8/int16x8 files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, fit, predict_classes, seeded_keras, write_sidecars
from tests.oracles.task_metrics import r2


def _mixed_cnn(keras, L):
    """Conv → BN → ReLU → pool ×2 → Dense → softmax (float32, as the mixed-precision guide says) on 8×8 digits."""
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Rescaling(1 / 255)(inp)
    for filters in (16, 32):
        x = L.ReLU()(L.BatchNormalization()(L.Conv2D(filters, 3, padding="same", use_bias=False)(x)))
        x = L.MaxPooling2D()(x)
    x = L.Dense(32, activation="relu")(L.Flatten()(x))
    return keras.Model(inp, L.Activation("softmax", dtype="float32", name="probs")(L.Dense(10)(x)))


def _build_mixed(out: Path, name: str, policy: str, keras_file: bool = False) -> dict:
    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    keras.mixed_precision.set_global_policy(policy)
    model = _mixed_cnn(keras, L)
    fit(model, split, epochs=6)
    out.mkdir(parents=True, exist_ok=True)
    if keras_file:
        model.save(str(out / "model.keras"))
    else:
        model.save(str(out), save_format="tf", include_optimizer=False)
    keras.mixed_precision.set_global_policy("float32")
    twin = _mixed_cnn(keras, L)
    twin.set_weights(model.get_weights())
    if keras_file:  # the raw converter's oracle for int8/int16x8 (it cannot convert the mixed model itself)
        twin.export(str(out / "twin_savedmodel"), verbose=False)
    else:
        twin.save(str(out / "twin_savedmodel"), save_format="tf", include_optimizer=False)
    np.savez(out / "twin.npz", probs=twin.predict(split.x_eval, verbose=0).astype(np.float32))
    accuracy = float((predict_classes(lambda v: model.predict(v, verbose=0), split.x_eval) == split.y_eval).mean())
    return write_sidecars(out, split, name, accuracy)


def build_mixed_float16_cnn(out: Path) -> dict:
    """tf_keras CNN trained under ``mixed_float16`` (float32 softmax), saved with ``model.save`` as a SavedModel."""
    return _build_mixed(out, "mixed_float16_cnn", "mixed_float16")


def build_mixed_bfloat16_cnn(out: Path) -> dict:
    """The same CNN trained under ``mixed_bfloat16`` (the TPU / recent-GPU policy)."""
    return _build_mixed(out, "mixed_bfloat16_cnn", "mixed_bfloat16")


def build_keras3_mixed(out: Path) -> dict:
    """The same CNN built by Keras 3 under ``mixed_float16``, saved as ``model.keras``."""
    return _build_mixed(out, "keras3_mixed", "mixed_float16", keras_file=True)


def _generator(keras, L):
    """Noise[N,16] → Dense → Reshape 4×4×32 → Conv2DTranspose + BN + LeakyReLU → Conv2DTranspose → tanh 16×16×1."""
    inp = keras.Input((16,), name="noise")
    x = L.LeakyReLU(0.2)(L.BatchNormalization()(L.Dense(4 * 4 * 32, use_bias=False)(inp)))
    x = L.Reshape((4, 4, 32))(x)
    x = L.Conv2DTranspose(16, 4, strides=2, padding="same", use_bias=False)(x)
    x = L.LeakyReLU(0.2)(L.BatchNormalization()(x))
    return keras.Model(inp, L.Conv2DTranspose(1, 4, strides=2, padding="same", activation="tanh", name="image")(x))


def build_gan_generator(out: Path) -> dict:
    """A GAN-style generator (:func:`_generator`) distilled (MSE) from a randomly initialised teacher generator of
    the same architecture: every pixel varies with the noise, so per-pixel R² is defined everywhere (a generator
    fitted to map noise to fixed digits leaves border pixels constant); R² as 'accuracy' (task regression)."""
    keras, L = seeded_keras()
    rng = np.random.default_rng(SEED)
    zt = rng.normal(size=(1200, 16)).astype(np.float32)
    ze = rng.normal(size=(300, 16)).astype(np.float32)
    teacher = _generator(keras, L)
    yt, ye = teacher.predict(zt, verbose=0), teacher.predict(ze, verbose=0)
    model = _generator(keras, L)
    model.compile(keras.optimizers.Adam(2e-3), loss="mse")
    model.fit(zt, yt, epochs=20, batch_size=32, verbose=0)
    model.save(str(out), save_format="tf", include_optimizer=False)
    score = r2(model.predict(ze, verbose=0), ye)
    return write_sidecars(out, zdata.Split(zt, yt, ze, ye, ("image",)), "gan_generator", score)


def _token_split(classes: int = 3, steps: int = 16) -> zdata.Split:
    """Right-padded token sequences (id 0 = padding, lengths 3..16) whose class is the id range most tokens come
    from (the rest are shared noise tokens), so the mask matters."""
    rng = np.random.default_rng(SEED)

    def make(n):
        x, y = np.zeros((n, steps), np.int32), rng.integers(0, classes, n)
        for i in range(n):
            length = int(rng.integers(3, steps + 1))
            own = rng.integers(2 + 10 * y[i], 12 + 10 * y[i], length)
            noise = rng.integers(2 + 10 * classes, 8 + 10 * classes, length)
            x[i, :length] = np.where(rng.random(length) < 0.6, own, noise)
        return x, y.astype(np.int64)

    (xt, yt), (xe, ye) = make(1200), make(300)
    return zdata.Split(xt, yt, xe, ye, ("a", "b", "c"))


def build_masked_bilstm(out: Path) -> dict:
    """Embedding(mask_zero=True) → Bidirectional(LSTM(16)) → softmax(3) over padded int32 token ids."""
    keras, L = seeded_keras()
    split = _token_split()
    inp = keras.Input((16,), dtype="int32", name="tokens")
    x = L.Bidirectional(L.LSTM(16))(L.Embedding(40, 16, mask_zero=True)(inp))
    model = keras.Model(inp, L.Dense(3, activation="softmax", name="probs")(x))
    fit(model, split, epochs=6, lr=1e-2)
    model.save(str(out), save_format="tf", include_optimizer=False)
    accuracy = float((predict_classes(lambda v: model.predict(v, verbose=0), split.x_eval) == split.y_eval).mean())
    return write_sidecars(out, split, "masked_bilstm", accuracy)


def build_causal_tcn(out: Path) -> dict:
    """A causal TCN: Conv1D(padding='causal') blocks with dilations 1, 2, 4, 8 and residual adds → global pooling →
    softmax, on 256-sample noisy tones (4 bands)."""
    keras, L = seeded_keras()
    split = zdata.tones(SEED)
    inp = keras.Input((256, 1), name="waveform")
    x = L.Conv1D(16, 1)(inp)
    for rate in (1, 2, 4, 8):
        y = L.Conv1D(16, 3, padding="causal", dilation_rate=rate, activation="relu")(x)
        y = L.Conv1D(16, 3, padding="causal", dilation_rate=rate)(y)
        x = L.ReLU()(L.Add()([x, y]))
    model = keras.Model(inp, L.Dense(4, activation="softmax", name="probs")(L.GlobalAveragePooling1D()(x)))
    fit(model, split, epochs=8)
    model.save(str(out), save_format="tf", include_optimizer=False)
    accuracy = float((predict_classes(lambda v: model.predict(v, verbose=0), split.x_eval) == split.y_eval).mean())
    return write_sidecars(out, split, "causal_tcn", accuracy)
