"""``--model lm``: a small decoder (``edge_tool.lm.model``) on bundled real text (``training.lm_data``), byte-level or
(``--tokenizer bpe``) over a byte-level BPE trained on the training text, written as a contract LM SavedModel
(prefill_16, prefill_64, decode; docs/lm.md; a BPE's ``tokenizer.json`` in its assets) with heldout.txt beside it."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from edge_tool.lm.export import lm_spec_of, write_lm_saved_model
from edge_tool.lm.generate import generate
from edge_tool.lm.model import LmConfig, build_lm, compile_lm
from edge_tool.lm.sampling import Sampler
from edge_tool.lm.session import open_session
from edge_tool.lm.tokenizer.bpe import SPECIALS
from edge_tool.lm.tokenizer.registry import TOKENIZER_FILE, load_tokenizer, tokenizer_folder
from edge_tool.training.kinds.registry import TRAINABLES, Trainable
from edge_tool.training.lm_data import load_text_split

CONFIG = LmConfig(max_len=128, num_layers=2, d_model=128, num_heads=4, ffn_dim=512, position="rope")
PREFILL = (16, 64)
TRAIN_LEN = 128  # training windows (tokens); held-out windows are max_len long
WARMUP = 0.1  # of the steps: the learning rate ramps up linearly, then decays (cosine) to zero
HELDOUT_FILE = "heldout.txt"
SAMPLE_PROMPT = "And it came to pass"
SAMPLE_TOKENS = 96
SAMPLE_SAMPLER = {"temperature": 0.7, "top_k": 40}


def model_config(config) -> LmConfig:
    """The decoder of a run: CONFIG, its vocabulary the BPE's (rounded up to a multiple of 8) with --tokenizer bpe."""
    if config.tokenizer == "byte":
        return CONFIG
    return dataclasses.replace(CONFIG, vocab_size=-(-config.bpe_vocab // 8) * 8)


def _load(config):
    bpe = config.bpe_vocab if config.tokenizer == "bpe" else None
    return load_text_split(TRAIN_LEN, config.text, eval_len=CONFIG.max_len, bpe_vocab=bpe)


def _build(keras, config, decay_steps: int | None = None):
    model = build_lm(keras, model_config(config))
    compile_lm(keras, model, config.learning_rate, decay_steps, WARMUP)
    return model


def _save(model, out: Path, config) -> None:
    """A plain copy of the trained weights (no strategy's variables) written with the prefill/decode endpoints."""
    import tf_keras as keras

    plain = build_lm(keras, model_config(config))
    plain.set_weights(model.get_weights())
    fields = {"cache_layout": "bhsd"}  # LiteRT-LM's: its engine runs a .litertlm of it 2x faster (docs/lm.md)
    if config.tokenizer == "bpe":  # a trained BPE's specials are its first ids (lm.tokenizer.bpe)
        bos, eos, pad = range(len(SPECIALS))
        fields |= {"tokenizer": "bpe", "bos_id": bos, "eos_id": eos, "pad_id": pad, "stop_ids": (eos,)}
    write_lm_saved_model(plain, out, lm_spec_of(plain, PREFILL, **fields))


def sample_text(saved_model: Path, seed: int) -> dict:
    """A seeded continuation of SAMPLE_PROMPT, generated through the SavedModel's own prefill/decode signatures."""
    session = open_session(saved_model)
    tokenizer = load_tokenizer(session.contract.spec, tokenizer_folder(saved_model))
    sampler = Sampler(seed=seed, **SAMPLE_SAMPLER)
    ids = generate(session, tokenizer.encode(SAMPLE_PROMPT), SAMPLE_TOKENS, sampler)
    return {"prompt": SAMPLE_PROMPT, "text": tokenizer.decode(ids), **SAMPLE_SAMPLER, "seed": seed}


def bits_per_byte(loss: float, targets: np.ndarray, tokenizer) -> float:
    """Held-out bits per UTF-8 byte of a mean next-token loss (nats) over ``targets``: comparable across
    tokenizers (a byte model's is loss / ln 2)."""
    nbytes = sum(len(tokenizer.token_bytes(int(t))) for t in np.asarray(targets).reshape(-1))
    return loss * np.asarray(targets).size / (nbytes * math.log(2))


def _sidecars(model, out: Path, split, config, metrics: dict) -> dict:
    """heldout.txt (and a BPE's tokenizer.json in assets/); held-out perplexity per token, bits per byte, a sample."""
    (out / HELDOUT_FILE).write_text(split.heldout_text, encoding="utf-8")
    if split.tokenizer_json is not None:
        (tokenizer_folder(out) / TOKENIZER_FILE).write_text(split.tokenizer_json, encoding="utf-8")
    tokenizer = load_tokenizer(open_session(out).contract.spec, tokenizer_folder(out))
    return {
        "eval_perplexity": math.exp(metrics["loss"]),
        "eval_bits_per_byte": bits_per_byte(metrics["loss"], split.y_eval, tokenizer),
        "tokenizer": config.tokenizer,
        "sample": sample_text(out, config.seed),
    }


TRAINABLES.register(
    Trainable(
        name="lm",
        summary="a decoder-only transformer (byte-level, or --tokenizer bpe) on bundled public-domain text (KJV "
        "Genesis + Exodus)",
        epochs=8,
        batch_size=32,
        learning_rate=1e-2,
        load=_load,
        build=_build,
        save=_save,
        sidecars=_sidecars,
        output_help="LM SavedModel (prefill/decode, assets/edgetool_lm.json, a BPE's assets/tokenizer.json) + "
        "heldout.txt, train.json",
    )
)
