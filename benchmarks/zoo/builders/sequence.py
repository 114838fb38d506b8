"""Zoo builders of sequence models: Embedding + LSTM, bidirectional LSTM + GRU, a Transformer block, Conv1D audio, a
streaming (stateful) GRU."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, seeded_keras, train_classifier, write_sidecars


def _row_split() -> zdata.Split:
    """The digits as sequences of 8 rows of 8 pixels."""
    return zdata.map_split(zdata.digits(SEED), lambda x: x.reshape(len(x), 8, 8))


def build_embedding_lstm(out: Path) -> dict:
    """Embedding(17, 16) + LSTM(32) over the 64 pixel intensities (0..16) of a digit as int32 token ids."""
    keras, L = seeded_keras()
    split = zdata.map_split(zdata.digits(SEED), lambda x: (x.reshape(len(x), 64) * 16 / 255).round().astype(np.int32))
    inp = keras.Input((64,), dtype="int32", name="tokens")
    x = L.LSTM(32)(L.Embedding(17, 16)(inp))
    return train_classifier(keras, inp, x, split, out, "embedding_lstm", epochs=6, lr=1e-2)


def build_bilstm_gru(out: Path) -> dict:
    """Bidirectional LSTM(16) then GRU(16) over the 8 rows (8 pixels each) of a digit."""
    keras, L = seeded_keras()
    split = _row_split()
    inp = keras.Input((8, 8), name="rows")
    x = L.Rescaling(1 / 255)(inp)
    x = L.Bidirectional(L.LSTM(16, return_sequences=True))(x)
    return train_classifier(keras, inp, L.GRU(16)(x), split, out, "bilstm_gru", epochs=6, lr=1e-2)


def build_transformer(out: Path) -> dict:
    """Conv1D token stem + one Transformer encoder block (2-head attention, LayerNorm, FFN) over 8 rows."""
    keras, L = seeded_keras()
    split = _row_split()
    inp = keras.Input((8, 8), name="rows")
    x = L.Conv1D(32, 3, padding="same")(L.Rescaling(1 / 255)(inp))
    x = L.LayerNormalization()(L.Add()([x, L.MultiHeadAttention(num_heads=2, key_dim=16)(x, x)]))
    ffn = L.Dense(32)(L.Dense(64, activation="relu")(x))
    x = L.LayerNormalization()(L.Add()([x, ffn]))
    return train_classifier(keras, inp, L.GlobalAveragePooling1D()(x), split, out, "transformer", epochs=6)


def build_conv1d_audio(out: Path) -> dict:
    """Conv1D → MaxPool ×2 → global pooling on 256-sample noisy tones, 4 frequency bands."""
    keras, L = seeded_keras()
    split = zdata.tones(SEED)
    inp = keras.Input((256, 1), name="waveform")
    x = L.MaxPooling1D(4)(L.Conv1D(16, 9, padding="same", activation="relu")(inp))
    x = L.MaxPooling1D(4)(L.Conv1D(32, 5, padding="same", activation="relu")(x))
    x = L.GlobalAveragePooling1D()(L.Conv1D(32, 3, padding="same", activation="relu")(x))
    return train_classifier(keras, inp, x, split, out, "conv1d_audio", epochs=8, classes=len(zdata.TONE_LABELS))


def _row_stream(x: np.ndarray, y: np.ndarray, digits: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``digits`` digits read row by row as one stream: frames (n·8, 1, 8) and each frame's digit label."""
    rows = x[:digits].reshape(-1, 1, 8)
    return rows, np.repeat(y[:digits], 8)


def build_stateful_gru(out: Path) -> dict:
    """A streaming reader: one row of 8 pixels per call into GRU(32, stateful=True) → softmax of the digit being read;
    trained on 8-digit streams (64 rows) with return_sequences, the weights then moved into the batch-1 stateful
    model (the way keyword-spotting and sensor models are built)."""
    keras, L = seeded_keras()
    split = zdata.map_split(zdata.digits(SEED), lambda x: (x / 255.0).astype(np.float32))
    n = len(split.y_train) // 8 * 8
    seqs = split.x_train[:n].reshape(-1, 64, 8)
    labels = np.repeat(split.y_train[:n], 8).reshape(-1, 64)
    train = keras.Sequential(
        [keras.Input((64, 8)), L.GRU(32, return_sequences=True), L.Dense(10, activation="softmax")]
    )
    train.compile(keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy")
    train.fit(seqs, labels, epochs=30, batch_size=16, verbose=0)
    model = keras.Sequential(
        [keras.Input(batch_shape=(1, 1, 8), name="row"), L.GRU(32, stateful=True), L.Dense(10, activation="softmax")]
    )
    model.set_weights(train.get_weights())
    x_eval, y_eval = _row_stream(split.x_eval, split.y_eval, 60)
    model.reset_states()
    got = np.array([model(x_eval[i : i + 1]).numpy()[0] for i in range(len(x_eval))])
    model.reset_states()
    model.save(str(out), save_format="tf", include_optimizer=False)
    x_train, y_train = _row_stream(split.x_train, split.y_train, 200)
    stream = zdata.Split(x_train, y_train, x_eval, y_eval, split.labels)
    return write_sidecars(out, stream, "stateful_gru", float((got.argmax(-1) == y_eval).mean()))
