"""Write a Keras decoder's prefill/decode endpoints as a contract SavedModel (docs/lm.md).

Works for ``edge_tool.lm.model.DecoderLM`` and any Keras model built from the same standard blocks — the protocol
``export`` reads (docs/lm.md):

- ``model.embed_tokens(tokens [1,T], positions [T]) -> [1,T,d]`` and ``model.logits(hidden [1,T,d]) -> [1,T,V]``;
- ``model.blocks``: each with ``norm1``, ``attention``, ``norm2`` and ``feed_forward(x)``, computing
  ``x + attention(norm1(x))`` then ``x + feed_forward(norm2(x))``;
- ``attention``: a Keras ``MultiHeadAttention`` (self-attention, no positions of its own) or a layer with
  ``query``/``key``/``value``/``out`` EinsumDense sublayers in MultiHeadAttention's layout plus ``num_kv_heads`` and
  ``tables`` (rotary positions: ``model.rope_tables``' cos and sin for every position; as ``model.RopeAttention``).

Each call writes its T new keys/values with one dynamic-update-slice at ``input_pos[0]`` (TFLite builtin
DYNAMIC_UPDATE_SLICE: O(T) per call, never a blend over the cache) and masks cache slot j for position p unless j <= p.
"""

from __future__ import annotations

from pathlib import Path

from edge_tool.core.fsutil import atomic_dir
from edge_tool.errors import UsageError
from edge_tool.lm.model import causal_attention, rotate
from edge_tool.lm.spec import SPEC_NAME, LmSpec

DEFAULT_PREFILL = (16, 64)


def _parts(attention):
    """(query, key, value, output, kv_heads, rope tables or None) of a supported attention layer."""
    if hasattr(attention, "_query_dense"):  # keras.layers.MultiHeadAttention
        q = attention._query_dense
        return q, attention._key_dense, attention._value_dense, attention._output_dense, None, None
    return attention.query, attention.key, attention.value, attention.out, attention.num_kv_heads, attention.tables


def lm_step(tf, model, tokens, input_pos, caches: list, layout: str = "bshd"):
    """(logits [1,T,V], new caches) of ``tokens`` [1,T] at ``input_pos`` [T]; ``caches`` = [k0, v0, k1, v1, …] in
    ``layout`` (spec.CACHE_LAYOUTS)."""
    x = model.embed_tokens(tokens, input_pos)
    heads_first = layout == "bhsd"
    max_len = caches[0].shape[2 if heads_first else 1]
    visible = tf.range(max_len)[None, :] <= input_pos[:, None]  # [T, max_len]
    zero = tf.zeros([], tf.int32)
    start = tf.stack([zero, zero, input_pos[0], zero] if heads_first else [zero, input_pos[0], zero, zero])
    new = []
    for i, block in enumerate(model.blocks):
        query, key, value, out, _, tables = _parts(block.attention)
        h = block.norm1(x)
        q, k, v = query(h), key(h), value(h)
        if tables is not None:
            q, k = rotate(tf, q, input_pos, tables), rotate(tf, k, input_pos, tables)
        if heads_first:  # the T new rows as [1, kv_heads, T, head_dim]: O(T), the cache itself is never transposed
            k, v = tf.transpose(k, [0, 2, 1, 3]), tf.transpose(v, [0, 2, 1, 3])
        k_cache = _write(tf, caches[2 * i], k, start)
        v_cache = _write(tf, caches[2 * i + 1], v, start)
        new += [k_cache, v_cache]
        x = x + out(causal_attention(tf, q, k_cache, v_cache, visible, layout))
        x = x + block.feed_forward(block.norm2(x))
    return model.logits(x), new


def _write(tf, cache, update, start):
    from tensorflow.compiler.tf2xla.python import xla

    return xla.dynamic_update_slice(cache, update, start)


def lm_spec_of(model, prefill_lengths=DEFAULT_PREFILL, **fields) -> LmSpec:
    """The ``LmSpec`` of a ``DecoderLM`` (byte tokenizer unless ``fields`` say otherwise)."""
    cfg = model.config
    return LmSpec(
        vocab_size=cfg.vocab_size,
        max_len=cfg.max_len,
        prefill_lengths=tuple(sorted(prefill_lengths)),
        num_layers=cfg.num_layers,
        num_kv_heads=cfg.kv_heads,
        head_dim=cfg.head_dim,
        **fields,
    )


def _signature(tf, model, t: int, spec: LmSpec):
    """The tf.function of one endpoint taking ``t`` tokens, with the contract's tensor names."""
    cache = tf.TensorSpec(spec.cache_shape(), tf.float32)
    names = [f"kv_cache_{kind}_{i}" for i in range(spec.num_layers) for kind in "kv"]
    inputs = [tf.TensorSpec([1, t], tf.int32, name="tokens"), tf.TensorSpec([t], tf.int32, name="input_pos")]
    inputs += [tf.TensorSpec(cache.shape, cache.dtype, name=n) for n in names]

    @tf.function(input_signature=inputs)
    def endpoint(*args):
        logits, caches = lm_step(tf, model, args[0], args[1], list(args[2:]), spec.cache_layout)
        return {"logits": logits, **dict(zip(names, caches))}

    return endpoint.get_concrete_function()


def write_lm_saved_model(model, out: Path, spec: LmSpec) -> None:
    """Save ``model``'s ``prefill_<T>`` (each of ``spec.prefill_lengths``) and ``decode`` signatures into the existing
    directory ``out``, with ``assets/edgetool_lm.json``."""
    import tensorflow as tf

    _check_fits(model, spec)
    module = tf.Module()
    module.lm_variables = list(model.variables)  # tracked, so the endpoints' captured weights are saved
    signatures = {f"prefill_{t}": _signature(tf, model, t, spec) for t in spec.prefill_lengths}
    signatures["decode"] = _signature(tf, model, 1, spec)
    tf.saved_model.save(module, str(out), signatures=signatures)
    (Path(out) / "assets").mkdir(exist_ok=True)
    (Path(out) / "assets" / SPEC_NAME).write_text(spec.to_json(), encoding="utf-8")


def _check_fits(model, spec: LmSpec) -> None:
    if not hasattr(model, "embed_tokens") or not hasattr(model, "blocks"):
        raise UsageError(
            f"edge_tool.lm.export writes the endpoints of decoders built from its standard blocks; "
            f"{type(model).__name__} has no embed_tokens/blocks (docs/lm.md: write the endpoints yourself)."
        )
    if len(model.blocks) != spec.num_layers:
        raise UsageError(f"The model has {len(model.blocks)} blocks but the LM spec says {spec.num_layers} layers.")


def export_lm(model, out: Path, prefill_lengths=DEFAULT_PREFILL, force: bool = False, **spec_fields) -> LmSpec:
    """Write ``model`` as a contract SavedModel at ``out`` (atomically: nothing is left on failure); its ``LmSpec``."""
    spec = lm_spec_of(model, prefill_lengths, **spec_fields)
    with atomic_dir(Path(out), force) as tmp:
        write_lm_saved_model(model, tmp, spec)
    return spec
