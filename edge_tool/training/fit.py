"""Fitting shared by every strategy: the model under a strategy's scope, the tf.data pipelines, progress lines."""

from __future__ import annotations

import math

from edge_tool.training.config import TrainConfig
from edge_tool.training.data import DigitsSplit, make_dataset
from edge_tool.training.model import build_model


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


def fit_and_evaluate(
    tf,
    strategy,
    config: TrainConfig,
    split: DigitsSplit,
    shard_policy: str | None = None,
    extra_callbacks: list | None = None,
):
    """Build the model under ``strategy``, fit on the train split, return (model, eval accuracy, history).

    ``shard_policy`` (an AutoShardPolicy name, e.g. "DATA") is set on both datasets for multi-worker runs.
    """
    import tf_keras as keras

    tf.keras.utils.set_random_seed(config.seed)
    steps = config.epochs * math.ceil(len(split.x_train) / config.batch_size)
    with strategy.scope():
        model = build_model(keras, config.learning_rate, decay_steps=steps)
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
    _, acc = model.evaluate(eval_ds, verbose=0)
    history = tuple({k: float(v[i]) for k, v in hist.history.items()} for i in range(len(hist.history["loss"])))
    return model, float(acc), history
