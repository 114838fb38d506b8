"""Run training for in-process strategies and export the result atomically."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path


from edge_tool.env import import_tf
from edge_tool.fsutil import atomic_dir, check_output_dir
from edge_tool.training.config import Strategy, TrainConfig, TrainResult
from edge_tool.training.data import DigitsSplit, load_digits_split, make_dataset
from edge_tool.training.export import save_keras_model, write_sidecars
from edge_tool.training.model import build_model


def _progress_callback(keras, verbose: bool):
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


def fit_and_evaluate(tf, strategy, config: TrainConfig, split: DigitsSplit, shard_policy: str | None = None,
                     extra_callbacks: list | None = None):
    """Build the model under ``strategy``, fit on the train split, return (model, eval accuracy, history).

    ``shard_policy`` (an AutoShardPolicy name, e.g. "DATA") is set on both datasets for multi-worker runs.
    """
    import tf_keras as keras  # noqa: PLC0415

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
        callbacks=[_progress_callback(keras, config.verbose), *(extra_callbacks or [])],
    )
    _, acc = model.evaluate(eval_ds, verbose=0)
    history = tuple(
        {k: float(v[i]) for k, v in hist.history.items()} for i in range(len(hist.history["loss"]))
    )
    return model, float(acc), history


def train_local(config: TrainConfig) -> TrainResult:
    """Train under default / one-device / mirrored and export to ``config.output_dir``."""
    from edge_tool.training.strategies import build_local_strategy  # noqa: PLC0415

    tf = import_tf()
    start = time.perf_counter()
    strategy = build_local_strategy(tf, config.strategy, config.replicas)
    split = load_digits_split(config.seed)
    with atomic_dir(config.output_dir, config.force) as tmp:
        model, acc, history = fit_and_evaluate(tf, strategy, config, split)
        save_keras_model(model, tmp)
        seconds = time.perf_counter() - start
        report = {
            "config": config.to_dict(),
            "num_replicas": int(strategy.num_replicas_in_sync),
            "eval_accuracy": acc,
            "seconds": seconds,
            "history": list(history),
        }
        write_sidecars(tmp, split, config.calibration_samples, config.seed, report)
    return TrainResult(Path(config.output_dir), config.strategy.value, int(strategy.num_replicas_in_sync), acc,
                       config.epochs, seconds, history)


def train(config: TrainConfig) -> TrainResult:
    """Train under ``config.strategy``; dispatches to the in-process, local-cluster or TF_CONFIG runner.

    multiworker: with TF_CONFIG set this process joins that cluster as its task; without it,
    ``config.workers`` local worker processes are started. parameter-server: in-process cluster.
    """
    tf_config = os.environ.get("TF_CONFIG", "").strip()
    if config.strategy is Strategy.MULTIWORKER and tf_config:
        from edge_tool.training.multiworker import train_joined  # noqa: PLC0415

        return train_joined(config, tf_config)  # the chief checks -o itself; other tasks never write it
    check_output_dir(config.output_dir, config.force)  # fail fast, before TensorFlow is imported
    if config.strategy in (Strategy.DEFAULT, Strategy.ONE_DEVICE, Strategy.MIRRORED):
        return train_local(config)
    if config.strategy is Strategy.MULTIWORKER:
        from edge_tool.training.launcher import train_local_cluster  # noqa: PLC0415

        return train_local_cluster(config)
    from edge_tool.training.parameter_server import train_parameter_server  # noqa: PLC0415

    return train_parameter_server(config)
