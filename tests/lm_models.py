"""Tiny contract LMs for the tests (edge_tool.lm): built once per run by the ``tiny_lm``/``tiny_lm_rope`` fixtures
(tests/conftest.py), or by hand: ``python tests/lm_models.py OUTDIR learned|rope``.

OUTDIR/model: the contract SavedModel (prefill_8, prefill_16, decode; assets/edgetool_lm.json) of a seeded, untrained
2-layer decoder (d=32, 4 heads, max_len 64); OUTDIR/reference.npz: ``tokens`` [1, 48] and ``logits`` [1, 48, V], the
Keras model's own full forward pass over them (the oracle every runtime is compared with).
learned: learned positions, Keras MultiHeadAttention, tied embeddings; rope: rotary positions, 2 key/value heads
(grouped), a separate output head.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np

from edge_tool.lm.export import export_lm
from edge_tool.lm.model import LmConfig, build_lm

TINY = {"max_len": 64, "num_layers": 2, "d_model": 32, "num_heads": 4, "ffn_dim": 64}
PREFILL = (8, 16)
REFERENCE_TOKENS = 48
BUILD = "from tests.lm_models import main; import sys; main(sys.argv[1:])"


def build(out: Path, position: str = "learned") -> None:
    """The tiny LM of ``position`` exported to ``out/model`` with its Keras reference in ``out/reference.npz``."""
    import tf_keras as keras

    rope = position == "rope"
    config = LmConfig(**TINY, position=position, num_kv_heads=2 if rope else 0, tied_embeddings=not rope)
    keras.utils.set_random_seed(0)
    model = build_lm(keras, config)
    export_lm(model, out / "model", prefill_lengths=PREFILL)
    tokens = np.random.default_rng(1).integers(0, 256, size=(1, REFERENCE_TOKENS)).astype(np.int32)
    np.savez(out / "reference.npz", tokens=tokens, logits=model(tokens).numpy())


def main(argv: list[str]) -> None:
    """``OUTDIR [learned|rope]``."""
    build(Path(argv[0]), argv[1] if len(argv) > 1 else "learned")


if __name__ == "__main__":
    main(sys.argv[1:])
