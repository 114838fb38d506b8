"""The fine-tuning schedule: distillation from the float model, small cosine-decayed LR, keep the best epoch.

Epoch 0 is the QAT model right after range calibration (it computes what int8 PTQ computes). After every
epoch the fake-quantized model is scored on the held-out split (accuracy on the labels, then agreement with
the float model as tie-break); the best state — epoch 0 included — is restored at the end, and training stops
after ``patience`` epochs without improvement. So fine-tuning can only keep or improve what calibration gave.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from edge_tool.qat.heads import Head, accuracy, agreement
from edge_tool.training.data import make_dataset


@dataclass(frozen=True)
class Schedule:
    """Epochs, global batch, peak LR (cosine to 0), patience, seed."""

    epochs: int
    batch_size: int
    learning_rate: float
    patience: int
    seed: int


def predict(model, inputs: list[np.ndarray], n_outputs: int, batch: int = 256) -> list[np.ndarray]:
    """The model's outputs (inference mode) as a list of arrays, one per output."""
    out = model.predict(inputs if len(inputs) > 1 else inputs[0], batch_size=batch, verbose=0)
    if isinstance(out, dict):  # a model built with dict outputs: in output_names order (tfmot prefixes quant_)
        out = [out[n if n in out else n.removeprefix("quant_")] for n in model.output_names]
    out = out if isinstance(out, (list, tuple)) else [out]
    return [np.asarray(o) for o in out[:n_outputs]]


def score(
    model, heads: tuple[Head, ...], inputs: list[np.ndarray], labels: list[np.ndarray], reference: list[np.ndarray]
) -> tuple[float, float]:
    """(accuracy on labels, agreement with the reference outputs) of ``model`` on ``inputs``."""
    out = predict(model, inputs, len(heads))
    return accuracy(heads, out, labels), agreement(heads, out, reference)


def fine_tune(
    tf,
    keras,
    qat,
    heads: tuple[Head, ...],
    fit: tuple[list, list],
    held: tuple[list, list, list],
    schedule: Schedule,
    progress: Callable | None = None,
) -> list[dict]:
    """Compile and fine-tune ``qat`` on ``fit`` = (inputs, soft targets); pick the best epoch on ``held`` =
    (inputs, labels, float outputs). Returns the per-epoch history; ``qat`` ends with the best weights."""
    x, targets = fit
    steps = schedule.epochs * math.ceil(len(x[0]) / schedule.batch_size)
    keyed = isinstance(qat.output, dict)  # a model built with dict outputs takes losses and targets by key
    with qat.distribute_strategy.scope():
        qat.compile(
            optimizer=keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(schedule.learning_rate, steps)),
            loss={h.name: h.loss(keras) for h in heads} if keyed else [h.loss(keras) for h in heads],
        )
    y = {h.name: t for h, t in zip(heads, targets)} if keyed else tuple(targets) if len(targets) > 1 else targets[0]
    ds = make_dataset(tf, tuple(x) if len(x) > 1 else x[0], y, schedule.batch_size, schedule.seed, training=True)
    acc, agree = score(qat, heads, *held)
    history = [{"epoch": 0, "held_out_accuracy": acc, "agreement": agree}]
    best, best_weights, stale = (acc, agree), qat.get_weights(), 0
    for epoch in range(schedule.epochs):
        logs = qat.fit(ds, epochs=epoch + 1, initial_epoch=epoch, verbose=0).history
        acc, agree = score(qat, heads, *held)
        row = {"epoch": epoch + 1, "loss": float(logs["loss"][-1]), "held_out_accuracy": acc, "agreement": agree}
        history.append(row)
        if progress is not None:
            progress(epoch, {k: float(v) for k, v in row.items() if k != "epoch"})
        if (acc, agree) > best:
            best, best_weights, stale = (acc, agree), qat.get_weights(), 0
        else:
            stale += 1
            if stale >= schedule.patience:
                break
    qat.set_weights(best_weights)
    return history
