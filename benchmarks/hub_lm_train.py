"""A Keras-Hub-style decoder of ~30M parameters for benchmarks/bench_lm_hub.py: a ``GPT2CausalLM`` with edgetool's
byte vocabulary (264), 6 layers, d_model 640, 10 heads, MLP 2560, 256 positions (29.8M parameters), briefly trained
on the bundled text (a wall-clock budget: this is a measurement subject, not a good model) and saved with ``.save()``.

    PYTHONPATH=. .venv/bin/python benchmarks/hub_lm_train.py OUT_DIR [--seconds 180]

Writes OUT_DIR/hub_gpt2.keras, OUT_DIR/heldout.txt and OUT_DIR/train.json (steps, loss, parameters)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from edge_tool.lm.spec import BYTE_VOCAB
from edge_tool.training.lm_data import load_text_split

CONFIG = {"num_layers": 6, "num_heads": 10, "hidden_dim": 640, "intermediate_dim": 2560, "max_sequence_length": 256}
SEQ, BATCH, LR = 128, 8, 1e-3


def build(keras_hub, config=CONFIG, vocab=BYTE_VOCAB):
    """An untrained GPT2CausalLM (no preprocessor: byte ids go in)."""
    backbone = keras_hub.models.GPT2Backbone(vocabulary_size=vocab, dropout=0.0, **config)
    return keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)


def train(out: Path, seconds: float, seed: int = 0) -> dict:
    """Build, train for ``seconds`` of wall clock, save; the record written to train.json."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(seed)
    model = build(keras_hub)
    split = load_text_split(SEQ)
    model.compile(
        optimizer=keras.optimizers.Adam(LR),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=False,
    )
    order = np.random.default_rng(seed).permutation(len(split.x_train))
    losses, t0, step = [], time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        idx = order[(step * BATCH) % len(order) :][:BATCH]
        x = {"token_ids": split.x_train[idx], "padding_mask": np.ones_like(split.x_train[idx], bool)}
        losses.append(float(np.ravel(model.train_on_batch(x, split.y_train[idx]))[0]))
        step += 1
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "hub_gpt2.keras")
    (out / "heldout.txt").write_text(split.heldout_text, encoding="utf-8")
    record = {
        "parameters": int(model.count_params()),
        "config": CONFIG,
        "steps": step,
        "bytes_seen": step * BATCH * SEQ,
        "seconds": round(time.perf_counter() - t0, 1),
        "loss_first": losses[0],
        "loss_last10": float(np.mean(losses[-10:])),
    }
    (out / "train.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seconds", type=float, default=180.0)
    args = ap.parse_args()
    print(json.dumps(train(args.out, args.seconds), indent=2))


if __name__ == "__main__":
    main()
