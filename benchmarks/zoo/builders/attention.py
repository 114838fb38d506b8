"""Zoo builders of attention models as people write them: a BERT-tiny encoder (int64 ``input_ids`` and
``attention_mask``, padding mask in attention, CLS head), a ViT-tiny (patch Conv2D, class token, position
embeddings, exact GELU), and a Keras 3 functional model built from ``keras.ops`` (exported and saved as ``.keras``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, fit, predict_classes, seeded_keras, train_classifier, write_sidecars

SEQ_LEN = 16
PAD, CLS, WORDS = 0, 1, 20  # token 0 pads, 1 is [CLS], 2..21 are words
TOPICS = ("numbers", "colours", "animals", "places")


def topic_sentences(seed: int, n: int) -> tuple[dict, np.ndarray]:
    """Synthetic tokenised text: [CLS] + 4..15 words, padded with 0 to 16; each topic draws 70 % of its words from
    its own 5 and the rest from all 20. Returns ({input_ids, attention_mask} int64[n,16], topic int64[n])."""
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, len(TOPICS), n)
    ids = np.zeros((n, SEQ_LEN), np.int64)
    for i, t in enumerate(topic):
        length = int(rng.integers(4, SEQ_LEN))
        own = rng.random(length) < 0.7
        words = np.where(own, 2 + 5 * t + rng.integers(0, 5, length), 2 + rng.integers(0, WORDS, length))
        ids[i, 0], ids[i, 1 : 1 + length] = CLS, words
    return {"input_ids": ids, "attention_mask": (ids != PAD).astype(np.int64)}, topic.astype(np.int64)


def _text_split() -> zdata.Split:
    x_train, y_train = topic_sentences(SEED, 1200)
    x_eval, y_eval = topic_sentences(SEED + 1, 300)
    return zdata.Split(x_train, y_train, x_eval, y_eval, TOPICS)


def _encoder_block(L, x, mask, width: int = 32):
    """Post-LN BERT layer: 2-head self-attention (padding mask) + Add/LayerNorm, exact-GELU FFN + Add/LayerNorm."""
    attended = L.MultiHeadAttention(num_heads=2, key_dim=width // 2)(x, x, attention_mask=mask)
    x = L.LayerNormalization(epsilon=1e-12)(L.Add()([x, attended]))
    ffn = L.Dense(width)(L.Dense(4 * width, activation="gelu")(x))  # tf_keras' gelu: exact (approximate=False)
    return L.LayerNormalization(epsilon=1e-12)(L.Add()([x, ffn]))


def build_bert_tiny(out: Path) -> dict:
    """BERT-tiny: token + position embeddings, LayerNorm, 2 encoder layers (hidden 32, 2 heads, exact GELU) with
    the int64 padding mask applied in attention, tanh pooler on [CLS], softmax over 4 topics (tf_keras SavedModel)."""
    import tensorflow as tf

    keras, L = seeded_keras()
    split = _text_split()
    ids = keras.Input((SEQ_LEN,), dtype="int64", name="input_ids")
    attention_mask = keras.Input((SEQ_LEN,), dtype="int64", name="attention_mask")
    positions = tf.range(tf.shape(ids)[1])
    x = L.Embedding(WORDS + 2, 32)(ids) + L.Embedding(SEQ_LEN, 32)(positions)
    x = L.LayerNormalization(epsilon=1e-12)(x)
    mask = tf.cast(attention_mask[:, tf.newaxis, :], tf.bool)  # (batch, 1, keys): every query ignores padding
    for _ in range(2):
        x = _encoder_block(L, x, mask)
    pooled = L.Dense(32, activation="tanh", name="pooler")(x[:, 0])
    return train_classifier(keras, [ids, attention_mask], pooled, split, out, "bert_tiny", epochs=8, classes=4)


def build_vit_tiny(out: Path) -> dict:
    """ViT-tiny on 8×8 digits: 2×2 patches by a stride-2 Conv2D, a learned class token, learned position
    embeddings, 2 pre-LN blocks (2-head attention, exact-GELU MLP), LayerNorm, softmax on the class token."""
    import tensorflow as tf

    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    patches = L.Reshape((16, 32))(L.Conv2D(32, 2, strides=2, name="patch_embed")(L.Rescaling(1 / 255)(inp)))
    cls_index = tf.zeros_like(patches[:, :1, 0], dtype=tf.int32)  # (batch, 1) zeros: the class token's row
    tokens = L.Concatenate(axis=1)([L.Embedding(1, 32, name="class_token")(cls_index), patches])
    x = tokens + L.Embedding(17, 32, name="position_embedding")(tf.range(17))
    for _ in range(2):
        h = L.LayerNormalization(epsilon=1e-6)(x)
        x = L.Add()([x, L.MultiHeadAttention(num_heads=2, key_dim=16)(h, h)])
        h = L.Dense(32)(L.Dense(64, activation="gelu")(L.LayerNormalization(epsilon=1e-6)(x)))
        x = L.Add()([x, h])
    cls = L.LayerNormalization(epsilon=1e-6)(x)[:, 0]
    return train_classifier(keras, inp, cls, split, out, "vit_tiny", epochs=15)


def _keras3_ops_model():
    """Keras 3 functional model whose middle is ``keras.ops`` calls on symbolic tensors (no Lambda, no tf.*):
    scale, patchify by reshape/transpose, RMS norm, SiLU-gated MLP, mean over tokens, softmax head."""
    keras, L = seeded_keras()
    ops = keras.ops
    inp = keras.Input((8, 8, 1), name="pixels")
    x = ops.divide(inp, 255.0)
    x = ops.reshape(ops.transpose(ops.reshape(x, (-1, 4, 2, 4, 2)), (0, 1, 3, 2, 4)), (-1, 16, 4))  # 2×2 patches
    x = L.Dense(32)(x)
    x = x * ops.rsqrt(ops.mean(ops.square(x), axis=-1, keepdims=True) + 1e-6)  # RMS norm
    gate, value = L.Dense(64)(x), L.Dense(64)(x)
    x = x + L.Dense(32)(ops.multiply(ops.silu(gate), value))
    x = ops.mean(x, axis=1)
    return keras, keras.Model(inp, L.Dense(10, activation="softmax", name="probs")(x))


def build_keras3_ops(out: Path) -> dict:
    """The ``keras.ops`` model exported with ``model.export()`` (a SavedModel without Keras layers)."""
    keras, model = _keras3_ops_model()
    split = zdata.digits(SEED)
    fit(model, split, epochs=20)
    model.export(str(out))
    accuracy = float((predict_classes(lambda v: model.predict(v, verbose=0), split.x_eval) == split.y_eval).mean())
    return write_sidecars(out, split, "keras3_ops", accuracy)


def build_keras3_ops_keras(out: Path) -> dict:
    """The same ``keras.ops`` model saved as a Keras 3 ``model.keras`` file."""
    keras, model = _keras3_ops_model()
    split = zdata.digits(SEED)
    fit(model, split, epochs=20)
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out / "model.keras"))
    accuracy = float((predict_classes(lambda v: model.predict(v, verbose=0), split.x_eval) == split.y_eval).mean())
    return write_sidecars(out, split, "keras3_ops_keras", accuracy)
