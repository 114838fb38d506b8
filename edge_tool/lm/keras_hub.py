"""Keras-Hub decoder-only CausalLMs as contract LMs (docs/lm.md, "Keras-Hub models").

``hub_decoder(model)`` wraps a Keras-Hub ``GPT2CausalLM``/``GPT2Backbone`` (learned positions, LayerNorm, tied
embeddings) or ``LlamaCausalLM``/``LlamaBackbone`` (rotary positions, RMSNorm, SwiGLU, grouped key/value heads) in
the protocol ``edge_tool.lm.export`` reads (``embed_tokens``, ``blocks``, ``logits``), made of the model's own layers;
``export_hub_lm`` writes the contract SavedModel, and ``hub_logits`` is the model's own forward pass (the reference
the endpoints are checked against). keras_hub is imported only inside these functions.
"""

from __future__ import annotations

import json
import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.errors import ModelError, UsageError
from edge_tool.lm.contract import LmContract
from edge_tool.lm.export import DEFAULT_PREFILL, write_lm_saved_model
from edge_tool.lm.spec import BYTE_VOCAB, LmSpec

FAMILIES = ("GPT2", "Llama")  # the Keras-Hub class-name prefixes the adapter knows
DEFAULT_ROPE_MAX_LEN = 256  # a rotary model has no position table: its context unless --max-len says otherwise
MAX_CONFIG = 16 << 20  # bytes of a .keras file's config.json read to recognise a Keras-Hub model
INSTALL = "pip install 'edgetool[keras-hub]'"


def hub_config(path: Path) -> dict | None:
    """The top-level ``config.json`` of a ``.keras`` file when it is a Keras-Hub object, else None (no TF import).
    Only a regular file is opened (a FIFO would block the caller) and a config.json of at most MAX_CONFIG bytes read
    (a hostile zip may declare anything); anything else is not a Keras-Hub file here (the loaders say what it is)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo("config.json")
            if info.file_size > MAX_CONFIG:
                return None
            with zf.open(info) as f:
                cfg = json.loads(f.read(MAX_CONFIG + 1))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, RuntimeError, NotImplementedError):
        return None
    return cfg if isinstance(cfg, dict) and str(cfg.get("module", "")).startswith("keras_hub") else None


def is_hub_lm(path: Path) -> bool:
    """True for a ``.keras`` file holding a Keras-Hub CausalLM or decoder backbone (by its class name)."""
    cfg = hub_config(Path(path)) if Path(path).suffix == ".keras" else None
    name = str((cfg or {}).get("class_name", ""))
    return name.endswith(("CausalLM", "Backbone"))


def load_hub(path: Path):
    """The Keras-Hub object saved in ``path`` (keras_hub imported first, so its classes deserialize)."""
    try:
        import keras_hub  # noqa: F401  (registers the Keras-Hub classes)
    except ImportError:
        raise UsageError(f"{path} is a Keras-Hub model; reading it needs keras_hub: {INSTALL}.") from None
    import keras

    return keras.saving.load_model(str(path), compile=False)


@dataclass(frozen=True)
class _Attention:
    """Rotary attention in the form ``export._parts`` reads (query/key/value/out, kv heads, cos/sin tables)."""

    query: object
    key: object
    value: object
    out: object
    num_kv_heads: int
    tables: tuple


@dataclass(frozen=True)
class _Block:
    norm1: object
    attention: object
    norm2: object
    feed_forward: object


class HubDecoder:
    """A Keras-Hub backbone seen through ``edge_tool.lm.export``'s protocol (its own layers, its own weights)."""

    def __init__(self, backbone, family: str, max_len: int):
        self.backbone, self.family, self.max_len = backbone, family, max_len
        self.blocks = [self._block(layer) for layer in backbone.transformer_layers]
        first = backbone.transformer_layers[0]._self_attention_layer
        self.head_dim = first._query_dense.kernel.shape[-1]
        self.num_kv_heads = first._key_dense.kernel.shape[-2]

    @property
    def variables(self):
        """The underlying tf.Variables (tracked by the SavedModel so the endpoints' captured weights are saved)."""
        return [getattr(v, "value", v) for v in self.backbone.weights]

    def embed_tokens(self, tokens, positions):
        """Token (plus learned position) embeddings [1, T, d] at ``positions`` [T]."""
        import tensorflow as tf

        x = self.backbone.token_embedding(tokens)
        if self.family == "GPT2":
            table = self.backbone.position_embedding.position_embeddings
            x = x + tf.gather(tf.convert_to_tensor(table), positions)[None]
        return x

    def logits(self, hidden):
        """The final norm, then the (tied or separate) output embedding: [1, T, V]."""
        return self.backbone.token_embedding(self.backbone.layer_norm(hidden), reverse=True)

    def _block(self, layer) -> _Block:
        att = layer._self_attention_layer
        if self.family == "GPT2":
            mlp = lambda x: layer._feedforward_output_dense(layer._feedforward_intermediate_dense(x))  # noqa: E731
            return _Block(layer._self_attention_layer_norm, att, layer._feedforward_layer_norm, mlp)
        rope = _Attention(
            att._query_dense, att._key_dense, att._value_dense, att._output_dense,
            att.num_key_value_heads, _rope_tables(att.rotary_embedding_layer, self.max_len, att._query_dense),
        )  # fmt: skip

        def swiglu(x):
            gate = layer.activation(layer._feedforward_gate_dense(x))
            return layer._feedforward_output_dense(layer._feedforward_intermediate_dense(x) * gate)

        return _Block(layer._self_attention_layernorm, rope, layer._feedforward_layernorm, swiglu)


def _rope_tables(rotary, max_len: int, query) -> tuple:
    """cos and sin [max_len, head_dim // 2] from the model's own rotary layer (its wavelength and scaling), computed
    once here so the converted model gathers them instead of running SIN/COS."""
    head_dim = int(query.kernel.shape[-1])
    cos, sin = rotary._compute_cos_sin_embedding(np.zeros((1, max_len, 1, head_dim), np.float32), 0)
    half = head_dim // 2
    return np.asarray(cos)[0, :, 0, :half].astype(np.float32), np.asarray(sin)[0, :, 0, :half].astype(np.float32)


def backbone_of(model):
    """(backbone, family) of a Keras-Hub CausalLM or backbone; UsageError for a family the adapter does not know."""
    backbone = getattr(model, "backbone", model)
    name = type(backbone).__name__
    family = next((f for f in FAMILIES if name.startswith(f)), None)
    if family is None:
        raise UsageError(
            f"{type(model).__name__} is a Keras-Hub model edgetool cannot write LM endpoints for yet (it knows "
            f"{', '.join(f + 'CausalLM' for f in FAMILIES)}). Write the prefill/decode endpoints yourself "
            "(docs/lm.md, 'For anything else') and convert that SavedModel."
        )
    compute = getattr(getattr(backbone, "dtype_policy", None), "compute_dtype", "float32")
    if compute != "float32":
        raise UsageError(
            f"{type(model).__name__} computes in {compute}; edgetool's LM endpoints and caches are float32. Load "
            "it in float32 (keras_hub.models.….from_preset(..., dtype='float32'), or rebuild the backbone with "
            "dtype='float32' and copy the weights), save it, and convert that file."
        )
    return backbone, family


def tokenizer_problem(model, backbone) -> str | None:
    """Why edgetool cannot ship this model's tokenizer, or None when the model uses edgetool's byte ids."""
    if backbone.vocabulary_size == BYTE_VOCAB:
        return None
    tok = getattr(getattr(model, "preprocessor", None), "tokenizer", None)
    what = f"its tokenizer ({type(tok).__name__})" if tok is not None else "its token ids"
    return (
        f"the model's vocabulary has {backbone.vocabulary_size} ids, and edgetool ships only its byte tokenizer "
        f"(vocabulary {BYTE_VOCAB}: UTF-8 bytes, then <bos> 256, <eos> 257, <pad> 258), so {what} would go "
        f"unshipped and every eval/demo would feed it wrong ids. Build the model with vocabulary_size={BYTE_VOCAB} "
        "and train it on byte ids (edge_tool.lm.generate.encode_bytes), or write the endpoints with "
        "edge_tool.lm.keras_hub.export_hub_lm(model, out, spec_fields=...) and ship the tokenizer yourself."
    )


def hub_decoder(model, max_len: int | None = None) -> HubDecoder:
    """The export adapter of a Keras-Hub CausalLM/backbone with a context of ``max_len`` tokens."""
    backbone, family = backbone_of(model)
    table = getattr(backbone, "max_sequence_length", None)
    max_len = max_len or (table if family == "GPT2" else DEFAULT_ROPE_MAX_LEN)
    if table and max_len > table:
        raise UsageError(f"--max-len {max_len} exceeds the model's position table ({table} positions).")
    return HubDecoder(backbone, family, max_len)


def hub_spec(decoder: HubDecoder, prefill_lengths=DEFAULT_PREFILL, **fields) -> LmSpec:
    """The ``edgetool_lm.json`` of a wrapped backbone (prefill lengths above max_len are dropped)."""
    lengths = tuple(sorted({t for t in prefill_lengths if t <= decoder.max_len})) or (decoder.max_len,)
    return LmSpec(
        vocab_size=decoder.backbone.vocabulary_size,
        max_len=decoder.max_len,
        prefill_lengths=lengths,
        num_layers=len(decoder.blocks),
        num_kv_heads=int(decoder.num_kv_heads),
        head_dim=int(decoder.head_dim),
        **fields,
    )


def hub_contract(path: Path) -> LmContract:
    """The contract ``convert`` would write for the Keras-Hub ``.keras`` file ``path`` (default max length and prefill
    lengths), without tracing it: what ``edgetool inspect`` shows. ModelError when edgetool cannot ship its tokenizer."""
    model = load_hub(path)
    decoder = hub_decoder(model)
    if problem := tokenizer_problem(model, decoder.backbone):
        raise ModelError(f"{path} is a Keras-Hub language model edgetool cannot convert as it is: {problem}")
    return LmContract.of_spec(hub_spec(decoder))


def export_hub_lm(model, out: Path, prefill_lengths=DEFAULT_PREFILL, max_len=None, spec_fields=None) -> LmSpec:
    """Write the contract SavedModel of Keras-Hub ``model`` into the existing directory ``out``; its ``LmSpec``.
    Refuses a vocabulary edgetool cannot tokenize unless ``spec_fields`` (the caller's own tokenizer ids) are given."""
    decoder = hub_decoder(model, max_len)
    if spec_fields is None and (problem := tokenizer_problem(model, decoder.backbone)):
        raise ModelError(f"Cannot convert this Keras-Hub model as an edgetool LM: {problem}")
    spec = hub_spec(decoder, prefill_lengths, **(spec_fields or {}))
    write_lm_saved_model(decoder, Path(out), spec)
    return spec


def hub_logits(model, tokens):
    """The Keras-Hub model's own forward pass over ``tokens`` [n] (one causal pass): logits [n, V] (numpy)."""
    ids = np.asarray(tokens, np.int32)[None]
    inputs = {"token_ids": ids, "padding_mask": np.ones_like(ids, dtype=bool)}
    if hasattr(model, "backbone"):
        return np.asarray(model(inputs, training=False))[0]
    hidden = model(inputs, training=False)
    return np.asarray(model.token_embedding(hidden, reverse=True))[0]
