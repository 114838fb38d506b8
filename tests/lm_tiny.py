"""A tiny language model following edgetool's LM contract (docs: LM_CONTRACT / issue 39), hand-written as a
tf.Module: byte-level vocabulary 264, learned positions, 2 pre-norm decoder layers, ``prefill_<T>`` + ``decode``
signatures with the KV cache passed in and out, written O(1) per token with XlaDynamicUpdateSlice.

Temporary test model of the demo's LM page until ``edge_tool/lm``'s tiny-LM builder lands."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

VOCAB = 264
BOS, EOS, PAD = 256, 257, 258


def lm_description(layers: int, heads: int, head_dim: int, max_len: int, prefill: tuple[int, ...]) -> dict:
    """The contract's ``edgetool_lm.json`` for this model."""
    return {
        "format": 1,
        "tokenizer": "byte",
        "vocab_size": VOCAB,
        "bos_id": BOS,
        "eos_id": EOS,
        "pad_id": PAD,
        "stop_ids": [EOS],
        "max_len": max_len,
        "prefill_lengths": list(prefill),
        "num_layers": layers,
        "num_kv_heads": heads,
        "head_dim": head_dim,
        "sampler": {"temperature": 0.0, "top_k": 0, "seed": 0},
    }


def build_saved_model(
    out: Path, *, layers=2, d=32, heads=2, max_len=64, prefill=(16,), mlp=4, seed=0, scale=0.5
) -> Path:
    """Write the SavedModel (random weights, seeded; ``scale`` makes logits peaked) with its description in assets/."""
    import tensorflow as tf
    from tensorflow.compiler.tf2xla.python import xla  # XlaDynamicUpdateSlice -> TFLite DYNAMIC_UPDATE_SLICE

    rng = np.random.default_rng(seed)
    hd = d // heads

    def w(*shape, s=None):
        return tf.Variable(rng.normal(0, s or scale / np.sqrt(shape[0]), shape).astype(np.float32))

    class LM(tf.Module):
        def __init__(self):
            super().__init__()
            self.emb = w(VOCAB, d, s=1.0)
            self.pos = w(max_len, d, s=0.3)
            self.qkv = [w(d, 3 * d) for _ in range(layers)]
            self.proj = [w(d, d) for _ in range(layers)]
            self.up = [w(d, mlp * d) for _ in range(layers)]
            self.down = [w(mlp * d, d) for _ in range(layers)]
            self.head = w(d, VOCAB, s=0.5)  # untied: logits of spread ~3, so sampling has choices to make

        def step(self, tokens, input_pos, caches):
            t = tf.shape(tokens)[1]
            x = tf.gather(self.emb, tokens) + tf.gather(self.pos, input_pos)[None]
            visible = tf.range(max_len)[None, :] <= input_pos[:, None]  # [T, M]
            bias = tf.where(visible, 0.0, -1e9)[None, None]  # [1, 1, T, M]
            start = tf.stack([0, input_pos[0], 0, 0])
            out = {}
            for i in range(layers):
                h = _norm(x)
                q, k, v = tf.split(tf.matmul(h, self.qkv[i]), 3, axis=-1)
                k_cache = xla.dynamic_update_slice(caches[f"kv_cache_k_{i}"], tf.reshape(k, [1, t, heads, hd]), start)
                v_cache = xla.dynamic_update_slice(caches[f"kv_cache_v_{i}"], tf.reshape(v, [1, t, heads, hd]), start)
                out[f"kv_cache_k_{i}"], out[f"kv_cache_v_{i}"] = k_cache, v_cache
                qh = tf.transpose(tf.reshape(q, [1, t, heads, hd]), [0, 2, 1, 3])
                kh = tf.transpose(k_cache, [0, 2, 3, 1])  # [1, H, hd, M]
                vh = tf.transpose(v_cache, [0, 2, 1, 3])  # [1, H, M, hd]
                att = tf.nn.softmax(tf.matmul(qh, kh) / np.sqrt(hd).astype(np.float32) + bias, axis=-1)
                o = tf.reshape(tf.transpose(tf.matmul(att, vh), [0, 2, 1, 3]), [1, t, d])
                x = x + tf.matmul(o, self.proj[i])
                x = x + tf.matmul(tf.nn.gelu(tf.matmul(_norm(x), self.up[i])), self.down[i])
            out["logits"] = tf.matmul(_norm(x), self.head)
            return out

    def _norm(x):
        mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
        return (x - mean) * tf.math.rsqrt(var + 1e-5)

    model = LM()
    cache = tf.TensorSpec([1, max_len, heads, hd], tf.float32)
    names = [f"kv_cache_{kv}_{i}" for i in range(layers) for kv in "kv"]

    def signature(t: int):
        fn = tf.function(lambda tokens, input_pos, **caches: model.step(tokens, input_pos, caches))
        return fn.get_concrete_function(
            tokens=tf.TensorSpec([1, t], tf.int32, name="tokens"),
            input_pos=tf.TensorSpec([t], tf.int32, name="input_pos"),
            **{n: tf.TensorSpec(cache.shape, tf.float32, name=n) for n in names},
        )

    sigs = {f"prefill_{t}": signature(t) for t in prefill}
    sigs["decode"] = signature(1)
    tf.saved_model.save(model, str(out), signatures=sigs)
    (Path(out) / "assets").mkdir(exist_ok=True)
    desc = lm_description(layers, heads, hd, max_len, tuple(prefill))
    (Path(out) / "assets" / "edgetool_lm.json").write_text(json.dumps(desc, indent=2) + "\n")
    return Path(out)


def convert_tflite(saved_model: Path, out: Path) -> Path:
    """fp32 .tflite with every signature of the SavedModel, TFLite builtins only; its description beside it."""
    import tensorflow as tf

    desc = json.loads((Path(saved_model) / "assets" / "edgetool_lm.json").read_text())
    keys = [f"prefill_{t}" for t in desc["prefill_lengths"]] + ["decode"]
    conv = tf.lite.TFLiteConverter.from_saved_model(str(saved_model), signature_keys=keys)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    Path(out).write_bytes(conv.convert())
    (Path(out).parent / "edgetool_lm.json").write_text(json.dumps(desc, indent=2) + "\n")
    return Path(out)
