"""A small decoder-only transformer in tf_keras (Keras 2): token ids (batch, seq) in, logits (batch, seq, vocab) out.

Pre-norm blocks (LayerNorm → causal self-attention → residual, LayerNorm → GELU MLP → residual), learned or rotary
(RoPE) positions, tied or separate output embeddings. With learned positions the attention is Keras'
``MultiHeadAttention``; with RoPE it is ``RopeAttention`` (same weight layout: EinsumDense query/key/value/output,
plus grouped key/value heads). ``edge_tool.lm.export`` writes the prefill/decode endpoints of these models.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edge_tool.calibration.serial import Record
from edge_tool.errors import collect_and_raise
from edge_tool.lm.spec import BYTE_VOCAB

POSITIONS = ("learned", "rope")
NEG_INF = -1e9  # what Keras' masked softmax adds to masked scores


@dataclass(frozen=True)
class LmConfig(Record):
    """Shape of the decoder; validated on construction."""

    vocab_size: int = BYTE_VOCAB
    max_len: int = 128
    num_layers: int = 2
    d_model: int = 64
    num_heads: int = 4
    num_kv_heads: int = 0  # 0: as many as num_heads (grouped key/value heads need rope)
    ffn_dim: int = 256
    position: str = "learned"
    tied_embeddings: bool = True
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        kv = self.num_kv_heads or self.num_heads
        problems = []
        if self.position not in POSITIONS:
            problems.append(f"position must be one of {', '.join(POSITIONS)}, got {self.position!r}.")
        if min(self.vocab_size, self.max_len, self.num_layers, self.d_model, self.num_heads, self.ffn_dim) < 1:
            problems.append("vocab_size, max_len, num_layers, d_model, num_heads and ffn_dim must be >= 1.")
        elif self.d_model % self.num_heads or self.num_heads % kv:
            problems.append(f"d_model {self.d_model} must split into {self.num_heads} heads, in {kv} key/value groups.")
        if kv != self.num_heads and self.position != "rope":
            problems.append("grouped key/value heads (num_kv_heads < num_heads) need position='rope'.")
        if self.position == "rope" and (self.d_model // max(self.num_heads, 1)) % 2:
            problems.append("rope needs an even head_dim.")
        collect_and_raise(problems, header="Invalid LM configuration:")

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.d_model // self.num_heads

    @property
    def kv_heads(self) -> int:
        """Key/value heads (the cache's third dimension)."""
        return self.num_kv_heads or self.num_heads


def causal_attention(tf, q, k, v, visible, layout: str = "bshd"):
    """Softmax attention of q [B,T,H,D] over k, v [B,S,Hkv,D] (``layout`` "bhsd": [B,Hkv,S,D]) where ``visible``
    [T,S] (bool) holds; H = G * Hkv."""
    b, t, h, d = (tf.shape(q)[0], tf.shape(q)[1], q.shape[2], q.shape[3])
    kv = "bksd" if layout == "bhsd" else "bskd"
    heads = k.shape[1] if layout == "bhsd" else k.shape[2]
    q = tf.reshape(q * (1.0 / float(d) ** 0.5), [b, t, heads, h // heads, d])
    scores = tf.einsum(f"btkgd,{kv}->bkgts", q, k)
    scores = tf.where(visible, scores, tf.constant(NEG_INF, scores.dtype))
    out = tf.einsum(f"bkgts,{kv}->btkgd", tf.nn.softmax(scores, axis=-1), v)
    return tf.reshape(out, [b, t, h, d])


def rope_tables(max_len: int, head_dim: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [max_len, head_dim // 2] (float32) of the rotary angles ``pos / base ** (2i / head_dim)``."""
    half = head_dim // 2
    angles = np.arange(max_len, dtype=np.float64)[:, None] / base ** (np.arange(half) / half)[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def rotate(tf, x, positions, tables: tuple[np.ndarray, np.ndarray]):
    """Rotary embedding of x [B,T,H,D] at integer ``positions`` [T] (rotate-half pairing, as Llama/Keras-Hub); the
    angles are gathered from constant ``rope_tables`` (no SIN/COS ops in the converted model)."""
    half = x.shape[-1] // 2
    cos = tf.gather(tf.constant(tables[0]), positions)[None, :, None, :]
    sin = tf.gather(tf.constant(tables[1]), positions)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return tf.concat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def build_lm(keras, config: LmConfig):
    """An uncompiled ``DecoderLM`` (a keras.Model) for ``config``, built on (1, max_len) tokens."""
    import tensorflow as tf

    layers = keras.layers

    class RopeAttention(layers.Layer):
        """Causal self-attention with rotary positions and grouped key/value heads (MultiHeadAttention's layout)."""

        def __init__(self, num_heads, num_kv_heads, head_dim, base, max_len, **kw):
            super().__init__(**kw)
            self.num_heads, self.num_kv_heads, self.head_dim, self.base = num_heads, num_kv_heads, head_dim, base
            self.tables = rope_tables(max_len, head_dim, base)
            dense = layers.EinsumDense
            self.query = dense("abc,cde->abde", output_shape=(None, num_heads, head_dim), bias_axes="de", name="query")
            self.key = dense("abc,cde->abde", output_shape=(None, num_kv_heads, head_dim), bias_axes="de", name="key")
            self.value = dense(
                "abc,cde->abde", output_shape=(None, num_kv_heads, head_dim), bias_axes="de", name="value"
            )
            self.out = None

        def build(self, input_shape):
            self.out = layers.EinsumDense(
                "abcd,cde->abe", output_shape=(None, input_shape[-1]), bias_axes="e", name="attention_output"
            )
            super().build(input_shape)

        def call(self, x):
            pos = tf.range(tf.shape(x)[1])
            q = rotate(tf, self.query(x), pos, self.tables)
            k = rotate(tf, self.key(x), pos, self.tables)
            return self.out(causal_attention(tf, q, k, self.value(x), pos[None, :] <= pos[:, None]))

    class DecoderBlock(layers.Layer):
        """Pre-norm transformer decoder block."""

        def __init__(self, cfg: LmConfig, **kw):
            super().__init__(**kw)
            self.norm1 = layers.LayerNormalization(epsilon=1e-5, name="norm1")
            self.norm2 = layers.LayerNormalization(epsilon=1e-5, name="norm2")
            if cfg.position == "rope":
                self.attention = RopeAttention(
                    cfg.num_heads, cfg.kv_heads, cfg.head_dim, cfg.rope_base, cfg.max_len, name="attn"
                )
            else:
                self.attention = layers.MultiHeadAttention(cfg.num_heads, cfg.head_dim, name="attn")
            self.up = layers.Dense(cfg.ffn_dim, activation="gelu", name="ffn_up")
            self.down = layers.Dense(cfg.d_model, name="ffn_down")

        def attend(self, h):
            if isinstance(self.attention, layers.MultiHeadAttention):
                return self.attention(h, h, use_causal_mask=True)
            return self.attention(h)

        def feed_forward(self, x):
            return self.down(self.up(x))

        def call(self, x):
            x = x + self.attend(self.norm1(x))
            return x + self.feed_forward(self.norm2(x))

    class DecoderLM(keras.Model):
        """Token ids (batch, seq ≤ max_len) → logits (batch, seq, vocab)."""

        def __init__(self, cfg: LmConfig, **kw):
            super().__init__(**kw)
            self.config = cfg
            self.embed = layers.Embedding(cfg.vocab_size, cfg.d_model, name="embed")
            self.pos_embed = (
                layers.Embedding(cfg.max_len, cfg.d_model, name="pos_embed") if cfg.position == "learned" else None
            )
            self.blocks = [DecoderBlock(cfg, name=f"block_{i}") for i in range(cfg.num_layers)]
            self.final_norm = layers.LayerNormalization(epsilon=1e-5, name="final_norm")
            self.head = None if cfg.tied_embeddings else layers.Dense(cfg.vocab_size, use_bias=False, name="head")

        def embed_tokens(self, tokens, positions):
            """Token (+ learned position) embeddings of ``tokens`` [B,T] at ``positions`` [T]."""
            x = self.embed(tokens)
            return x if self.pos_embed is None else x + self.pos_embed(positions)[None]

        def logits(self, x):
            """Vocabulary logits of the last hidden states (final norm, then tied or separate head)."""
            x = self.final_norm(x)
            return tf.matmul(x, self.embed.embeddings, transpose_b=True) if self.head is None else self.head(x)

        def call(self, tokens):
            x = self.embed_tokens(tokens, tf.range(tf.shape(tokens)[1]))
            for block in self.blocks:
                x = block(x)
            return self.logits(x)

    model = DecoderLM(config, name="decoder_lm")
    model(tf.zeros([1, config.max_len], tf.int32))
    return model


def compile_lm(keras, model, learning_rate: float = 3e-3, decay_steps: int | None = None, warmup: float = 0.0) -> None:
    """Adam (β2 0.98) on next-token cross-entropy from logits; with ``decay_steps`` the rate warms up linearly over the
    first ``warmup`` fraction of them, then follows a cosine decay to zero."""
    lr = learning_rate
    if decay_steps:
        ramp = int(decay_steps * warmup)
        lr = keras.optimizers.schedules.CosineDecay(
            0.0 if ramp else learning_rate,
            max(decay_steps - ramp, 1),
            warmup_target=learning_rate if ramp else None,
            warmup_steps=ramp,
        )
    model.compile(
        optimizer=keras.optimizers.Adam(lr, beta_2=0.98),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
    )
