"""Fitting shared by every strategy and model: the model under a strategy's scope, the tf.data pipelines, progress
lines, and what the chief writes after it (``finish``)."""

from __future__ import annotations

import math
from pathlib import Path

from edge_tool.training.config import TrainConfig
from edge_tool.training.data import make_dataset
from edge_tool.training.export import write_report
from edge_tool.training.kinds import TRAINABLES


def progress_callback(keras, verbose: bool):
    """A Keras callback printing one line per epoch (loss, accuracy, validation accuracy) when ``verbose``."""

    class EpochLine(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if verbose:
                logs = logs or {}
                print(
                    f"epoch {epoch + 1}: loss {logs.get('loss', float('nan')):.4f} "
                    f"acc {logs.get('accuracy', float('nan')):.4f} "
                    f"val_acc {logs.get('val_accuracy', float('nan')):.4f}",
                    flush=True,
                )

    return EpochLine()


def _with_shard_policy(tf, ds, shard_policy: str | None):
    if shard_policy is None:
        return ds
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = getattr(tf.data.experimental.AutoShardPolicy, shard_policy)
    return ds.with_options(options)


def fit_and_evaluate(tf, strategy, config: TrainConfig, split, shard_policy: str | None = None, extra_callbacks=None):
    """Build ``config.model`` under ``strategy``, fit on the train split; (model, {"loss", "accuracy"} held out, history).

    ``shard_policy`` (an AutoShardPolicy name, e.g. "DATA") is set on both datasets for multi-worker runs.
    """
    import tf_keras as keras

    tf.keras.utils.set_random_seed(config.seed)
    steps = config.epochs * math.ceil(len(split.x_train) / config.batch_size)
    with strategy.scope():
        model = TRAINABLES[config.model].build(keras, config, steps)
    train_ds = make_dataset(tf, split.x_train, split.y_train, config.batch_size, config.seed, training=True)
    eval_ds = make_dataset(tf, split.x_eval, split.y_eval, config.batch_size, config.seed, training=False)
    train_ds, eval_ds = (_with_shard_policy(tf, d, shard_policy) for d in (train_ds, eval_ds))
    hist = model.fit(
        train_ds,
        validation_data=eval_ds,
        epochs=config.epochs,
        verbose=0,
        callbacks=[progress_callback(keras, config.verbose), *(extra_callbacks or [])],
    )
    loss, acc = model.evaluate(eval_ds, verbose=0)
    history = tuple({k: float(v[i]) for k, v in hist.history.items()} for i in range(len(hist.history["loss"])))
    return model, {"loss": float(loss), "accuracy": float(acc)}, history


def finish(model, out: Path, split, config: TrainConfig, metrics: dict, report: dict) -> dict:
    """The chief's last step: the model's sidecars, then train.json (``report`` + metrics + the sidecars' facts);
    returns those facts (e.g. an LM's held-out perplexity and sample)."""
    facts = TRAINABLES[config.model].sidecars(model, out, split, config, metrics)
    write_report(out, {**report, "model": config.model, "eval_accuracy": metrics["accuracy"], **facts})
    return facts
