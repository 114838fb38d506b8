"""Tiny contract LMs for the tests (edge_tool.lm): built once per run by the ``tiny_lm``/``tiny_lm_rope`` fixtures
(tests/conftest.py), or by hand: ``python tests/lm_models.py OUTDIR learned|rope``.

OUTDIR/model: the contract SavedModel (prefill_8, prefill_16, decode; assets/edgetool_lm.json) of a seeded, untrained
2-layer decoder (d=32, 4 heads, max_len 64); OUTDIR/reference.npz: ``tokens`` [1, 48] and ``logits`` [1, 48, V], the
Keras model's own full forward pass over them (the oracle every runtime is compared with).
learned: learned positions, Keras MultiHeadAttention, tied embeddings; rope: rotary positions, 2 key/value heads
(grouped), a separate output head; rope-bhsd: rope with its caches in LiteRT-LM's layout (cache_layout bhsd).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np

from edge_tool.lm.contract import read_lm_contract
from edge_tool.lm.export import _signature, export_lm, lm_spec_of, lm_step
from edge_tool.lm.model import LmConfig, build_lm
from edge_tool.lm.spec import SPEC_NAME
from edge_tool.tflite_converter.run import Refusal, new_converter, run_converter

TINY = {"max_len": 64, "num_layers": 2, "d_model": 32, "num_heads": 4, "ffn_dim": 64}
PREFILL = (8, 16)
REFERENCE_TOKENS = 48
BUILD = "from tests.lm_models import main; import sys; main(sys.argv[1:])"


def build(out: Path, position: str = "learned") -> None:
    """The tiny LM of ``position`` exported to ``out/model`` with its Keras reference in ``out/reference.npz``."""
    import tf_keras as keras

    rope = position.startswith("rope")
    config = LmConfig(**TINY, position=position[:4] if rope else position, num_kv_heads=2 if rope else 0)
    config = dataclasses.replace(config, tied_embeddings=not rope)
    keras.utils.set_random_seed(0)
    model = build_lm(keras, config)
    layout = "bhsd" if position.endswith("bhsd") else "bshd"
    export_lm(model, out / "model", prefill_lengths=PREFILL, cache_layout=layout)
    tokens = np.random.default_rng(1).integers(0, 256, size=(1, REFERENCE_TOKENS)).astype(np.int32)
    np.savez(out / "reference.npz", tokens=tokens, logits=model(tokens).numpy())


def main(argv: list[str]) -> None:
    """``OUTDIR [learned|rope|rope-bhsd|eval]`` (eval: the learned LM, its fp32 .tflite, the forgetful one's .tflite)."""
    kind = argv[1] if len(argv) > 1 else "learned"
    out = Path(argv[0])
    if kind != "eval":
        build(out, kind)
        return
    build(out, "learned")
    build_forgetful(out)
    convert(out / "model", out / "lm_fp32.tflite")
    convert(out / "forgetful", out / "lm_forgetful.tflite")


def build_forgetful(out: Path) -> None:
    """``out/forgetful``: the tiny learned-position LM whose ``decode`` ignores the cache it is given (it attends
    to zeros plus its own token) while its prefills are right — the cache bug eval must show as decode-only error."""
    import tensorflow as tf
    import tf_keras as keras

    keras.utils.set_random_seed(0)
    model = build_lm(keras, LmConfig(**TINY))
    spec = lm_spec_of(model, PREFILL)
    names = [f"kv_cache_{k}_{i}" for i in range(spec.num_layers) for k in "kv"]
    cache = tf.TensorSpec(spec.cache_shape(), tf.float32)
    inputs = [tf.TensorSpec([1, 1], tf.int32, name="tokens"), tf.TensorSpec([1], tf.int32, name="input_pos")]
    inputs += [tf.TensorSpec(cache.shape, cache.dtype, name=n) for n in names]

    @tf.function(input_signature=inputs)
    def decode(*args):
        logits, caches = lm_step(tf, model, args[0], args[1], [tf.zeros_like(c) for c in args[2:]])
        return {"logits": logits, **dict(zip(names, caches))}

    module = tf.Module()
    module.lm_variables = list(model.variables)
    signatures = {f"prefill_{t}": _signature(tf, model, t, spec) for t in spec.prefill_lengths}
    signatures["decode"] = decode.get_concrete_function()
    tf.saved_model.save(module, str(out / "forgetful"), signatures=signatures)
    (out / "forgetful" / "assets").mkdir(exist_ok=True)
    (out / "forgetful" / "assets" / SPEC_NAME).write_text(spec.to_json(), encoding="utf-8")


def convert(model: Path, out: Path) -> Path:
    """``model`` (a contract SavedModel) as an fp32 multi-signature .tflite at ``out`` through edgetool's converter."""
    c = read_lm_contract(model)
    converter = new_converter(model, signatures=("decode", *c.prefill_keys))
    out.write_bytes(run_converter(converter, Refusal(model=model, failed=f"The TFLite converter failed on {model}")))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
