"""``--model lm``: a small byte-level decoder (``edge_tool.lm.model``) on bundled real text (``training.lm_data``),
written as a contract LM SavedModel (prefill_16, prefill_64, decode; docs/lm.md) with heldout.txt beside it."""

from __future__ import annotations

import math
from pathlib import Path

from edge_tool.lm.export import lm_spec_of, write_lm_saved_model
from edge_tool.lm.generate import decode_bytes, encode_bytes, generate
from edge_tool.lm.model import LmConfig, build_lm, compile_lm
from edge_tool.lm.sampling import Sampler
from edge_tool.lm.session import open_session
from edge_tool.training.kinds.registry import TRAINABLES, Trainable
from edge_tool.training.lm_data import load_text_split

CONFIG = LmConfig(max_len=128, num_layers=2, d_model=128, num_heads=4, ffn_dim=512, position="rope")
PREFILL = (16, 64)
TRAIN_LEN = 128  # training windows (bytes); held-out windows are max_len long
WARMUP = 0.1  # of the steps: the learning rate ramps up linearly, then decays (cosine) to zero
HELDOUT_FILE = "heldout.txt"
SAMPLE_PROMPT = "And it came to pass"
SAMPLE_TOKENS = 96
SAMPLE_SAMPLER = {"temperature": 0.7, "top_k": 40}


def _load(config):
    return load_text_split(TRAIN_LEN, config.text, eval_len=CONFIG.max_len)


def _build(keras, learning_rate: float, decay_steps: int | None = None):
    model = build_lm(keras, CONFIG)
    compile_lm(keras, model, learning_rate, decay_steps, WARMUP)
    return model


def _save(model, out: Path) -> None:
    """A plain copy of the trained weights (no strategy's variables) written with the prefill/decode endpoints."""
    import tf_keras as keras

    plain = build_lm(keras, CONFIG)
    plain.set_weights(model.get_weights())
    write_lm_saved_model(plain, out, lm_spec_of(plain, PREFILL))


def sample_text(saved_model: Path, seed: int) -> dict:
    """A seeded continuation of SAMPLE_PROMPT, generated through the SavedModel's own prefill/decode signatures."""
    sampler = Sampler(seed=seed, **SAMPLE_SAMPLER)
    ids = generate(open_session(saved_model), encode_bytes(SAMPLE_PROMPT), SAMPLE_TOKENS, sampler)
    return {"prompt": SAMPLE_PROMPT, "text": decode_bytes(ids), **SAMPLE_SAMPLER, "seed": seed}


def _sidecars(model, out: Path, split, config, metrics: dict) -> dict:
    """heldout.txt; the held-out perplexity (per byte) and a sample for train.json."""
    (out / HELDOUT_FILE).write_text(split.heldout_text, encoding="utf-8")
    return {"eval_perplexity": math.exp(metrics["loss"]), "sample": sample_text(out, config.seed)}


TRAINABLES.register(
    Trainable(
        name="lm",
        summary="a byte-level decoder-only transformer on bundled public-domain text (KJV Genesis + Exodus)",
        epochs=8,
        batch_size=32,
        learning_rate=1e-2,
        load=_load,
        build=_build,
        save=_save,
        sidecars=_sidecars,
        output_help="LM SavedModel (prefill/decode, assets/edgetool_lm.json) + heldout.txt, train.json",
    )
)
