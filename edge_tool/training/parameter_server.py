"""ParameterServerStrategy on an in-process local cluster: N worker servers + 1 ps server + this coordinator.

Workers and the parameter server are ``tf.distribute.Server`` objects in this process. On a small
machine the workers need ``inter_op_parallelism_threads = workers + 1``, or the cluster deadlocks
(the TF tutorial's in-process recipe does the same when cpu_count < workers + 1).
Training uses Keras ``fit`` with a ``DatasetCreator`` (each worker builds its own dataset, so
``steps_per_epoch`` is required); evaluation and export happen on the coordinator. The exported model is
a plain copy of the trained weights (built outside the strategy), so it carries no ps device pins.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from edge_tool.core.env import import_tf
from edge_tool.core.fsutil import atomic_dir
from edge_tool.training.config import TrainConfig, TrainResult
from edge_tool.training.data import make_dataset
from edge_tool.training.fit import finish, progress_callback
from edge_tool.training.kinds import TRAINABLES
from edge_tool.training.launcher import free_ports

NUM_PS = 1


def start_local_cluster(tf, workers: int):
    """Start ``workers`` worker servers and one ps server in-process; return (resolver, cluster dict, servers)."""
    worker_ports, ps_ports = free_ports(workers), free_ports(NUM_PS)
    cluster = {"worker": [f"localhost:{p}" for p in worker_ports], "ps": [f"localhost:{p}" for p in ps_ports]}
    spec = tf.train.ClusterSpec(cluster)
    worker_config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=workers + 1)
    servers = [
        tf.distribute.Server(spec, job_name="worker", task_index=i, config=worker_config, protocol="grpc")
        for i in range(workers)
    ]
    servers += [tf.distribute.Server(spec, job_name="ps", task_index=i, protocol="grpc") for i in range(NUM_PS)]
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc")
    return resolver, cluster, servers


def _fit(tf, strategy, config: TrainConfig, split):
    """Keras fit under PSS (DatasetCreator; steps_per_epoch set); return (model, per-epoch history dicts).

    The final evaluation happens in the caller, on a plain copy of the weights on the coordinator."""
    import tf_keras as keras

    tf.keras.utils.set_random_seed(config.seed)
    steps_per_epoch = math.ceil(len(split.x_train) / config.batch_size)
    with strategy.scope():
        model = TRAINABLES[config.model].build(keras, config, config.epochs * steps_per_epoch)

    def train_fn(input_context):
        batch = input_context.get_per_replica_batch_size(config.batch_size)
        ds = make_dataset(
            tf, split.x_train, split.y_train, batch, config.seed + input_context.input_pipeline_id, training=True
        )
        return ds.repeat()

    def eval_fn(input_context):
        batch = input_context.get_per_replica_batch_size(config.batch_size)
        return make_dataset(tf, split.x_eval, split.y_eval, batch, config.seed, training=False).repeat()

    eval_steps = math.ceil(len(split.x_eval) / config.batch_size)
    hist = model.fit(
        keras.utils.experimental.DatasetCreator(train_fn),
        epochs=config.epochs,
        steps_per_epoch=steps_per_epoch,
        validation_data=keras.utils.experimental.DatasetCreator(eval_fn),
        validation_steps=eval_steps,
        verbose=0,
        callbacks=[progress_callback(keras, config.verbose)],
    )
    history = tuple({k: float(v[i]) for k, v in hist.history.items()} for i in range(len(hist.history["loss"])))
    return model, history


def _plain_copy(model, config: TrainConfig):
    """The same network outside any strategy, holding the trained weights (for a device-free SavedModel)."""
    import tf_keras as keras

    plain = TRAINABLES[config.model].build(keras, config, None)  # no strategy scope: plain variables
    plain.set_weights(model.get_weights())
    return plain


def train_parameter_server(config: TrainConfig) -> TrainResult:
    """Train under ParameterServerStrategy with ``config.workers`` in-process workers; export atomically."""
    tf = import_tf()
    start = time.perf_counter()
    kind = TRAINABLES[config.model]
    split = kind.load(config)
    with atomic_dir(config.output_dir, config.force) as tmp:
        resolver, cluster, _servers = start_local_cluster(tf, config.workers)
        strategy = tf.distribute.ParameterServerStrategy(resolver)
        model, history = _fit(tf, strategy, config, split)
        plain = _plain_copy(model, config)
        eval_ds = make_dataset(tf, split.x_eval, split.y_eval, config.batch_size, config.seed, training=False)
        loss, acc = plain.evaluate(eval_ds, verbose=0)
        metrics = {"loss": float(loss), "accuracy": float(acc)}
        kind.save(plain, tmp, config)
        seconds = time.perf_counter() - start
        report = {
            "config": config.to_dict(),
            "num_replicas": int(strategy.num_replicas_in_sync),
            "seconds": seconds,
            "history": list(history),
            "cluster": cluster,
            "variable_devices": sorted({v.device for v in model.variables}),
        }
        facts = finish(plain, tmp, split, config, metrics, report)
    return TrainResult(
        Path(config.output_dir),
        config.strategy.value,
        int(strategy.num_replicas_in_sync),
        float(acc),
        config.epochs,
        seconds,
        history,
        detail=f"{config.workers} worker(s) + {NUM_PS} ps in-process, asynchronous",
        model=config.model,
        eval_perplexity=facts.get("eval_perplexity"),
        eval_bits_per_byte=facts.get("eval_bits_per_byte"),
        sample=facts.get("sample"),
    )
