"""MultiWorkerMirroredStrategy: one task's training (``run_task``) and the TF_CONFIG-join entry (``train_joined``).

Data sharding: every worker builds the *same* seeded, in-memory dataset and we set
``AutoShardPolicy.DATA`` explicitly. Each global batch is then split so that every worker computes
on a disjoint slice of it (no sample is seen twice per epoch), which is what AUTO would fall back to
anyway for ``from_tensor_slices`` data (there are no files to shard by) — minus the warning.
FILE would fail (no files) and OFF would make each worker walk the whole dataset, i.e. N epochs' worth
of gradient steps per epoch. The shuffle seed is identical on all workers, so their orders agree.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from edge_tool.core.env import import_tf
from edge_tool.core.fsutil import atomic_dir
from edge_tool.errors import UsageError
from edge_tool.training.config import TrainConfig, TrainResult
from edge_tool.training.fit import finish, fit_and_evaluate
from edge_tool.training.kinds import TRAINABLES
from edge_tool.training.peers import wait_for_peers

SHARD_POLICY = "DATA"


def parse_tf_config(raw: str) -> dict:
    """Validate a TF_CONFIG JSON string; return {"cluster", "task_type", "task_index", "is_chief", "num_workers"}."""
    try:
        spec = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"TF_CONFIG is not valid JSON ({exc.msg} at char {exc.pos}); unset it to run local workers."
        ) from None
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    task = spec.get("task") if isinstance(spec, dict) else None
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise UsageError('TF_CONFIG must be {"cluster": {"worker": [...]}, "task": {"type": "worker", "index": i}}.')
    task_type, index = task.get("type"), task.get("index")
    if task_type not in ("chief", "worker") or task_type not in cluster:
        raise UsageError(f"TF_CONFIG task type must be 'chief' or 'worker' and listed in cluster; got {task_type!r}.")
    if not isinstance(index, int) or not 0 <= index < len(cluster[task_type]):
        raise UsageError(
            f"TF_CONFIG task index {index!r} is out of range for {len(cluster[task_type])} {task_type} task(s)."
        )
    is_chief = task_type == "chief" or ("chief" not in cluster and index == 0)
    num_workers = len(cluster.get("worker", [])) + len(cluster.get("chief", []))
    return {
        "cluster": cluster,
        "task_type": task_type,
        "task_index": index,
        "is_chief": is_chief,
        "num_workers": num_workers,
    }


def _count_batches(keras):
    class BatchCounter(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.batches = 0

        def on_train_batch_end(self, batch, logs=None):
            self.batches += 1

    return BatchCounter()


def run_task(config: TrainConfig, save_dir: Path, is_chief: bool, make_callbacks=None) -> dict:
    """Join the cluster in TF_CONFIG, train, evaluate, save (every task must), write sidecars if chief.

    ``make_callbacks(keras)`` may return extra Keras callbacks. Returns a status dict
    (task, pid, local batches run, replicas, accuracy, history).
    """
    tf = import_tf()
    import tf_keras as keras

    start = time.perf_counter()
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING
    )
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    resolver = strategy.cluster_resolver
    kind = TRAINABLES[config.model]
    split = kind.load(config)
    counter = _count_batches(keras)
    model, metrics, history = fit_and_evaluate(
        tf,
        strategy,
        config,
        split,
        shard_policy=SHARD_POLICY,
        extra_callbacks=[counter, *(make_callbacks(keras) if make_callbacks else [])],
    )
    kind.save(model, save_dir, config)  # a collective: every worker must take part
    seconds = time.perf_counter() - start
    status = {
        "task_type": resolver.task_type,
        "task_index": int(resolver.task_id),
        "is_chief": is_chief,
        "pid": os.getpid(),
        "local_train_batches": counter.batches,
        "num_replicas": int(strategy.num_replicas_in_sync),
        "eval_accuracy": metrics["accuracy"],
        "seconds": seconds,
    }
    if is_chief:
        report = {
            "config": config.to_dict(),
            "num_replicas": status["num_replicas"],
            "seconds": seconds,
            "shard_policy": SHARD_POLICY,
            "history": list(history),
            "workers": [status],
        }
        status.update(finish(model, save_dir, split, config, metrics, report))
    status["history"] = list(history)
    return status


def train_joined(config: TrainConfig, tf_config: str) -> TrainResult:
    """Run this process as the TF_CONFIG task: the chief writes ``config.output_dir``, others a temp dir."""
    info = parse_tf_config(tf_config)
    import_tf()  # first, so this task's port is free for only a moment between the peer check and TF's server
    wait_for_peers(info, config.peer_timeout)  # TensorFlow itself would wait for a missing task forever
    if info["is_chief"]:
        with atomic_dir(config.output_dir, config.force) as tmp:
            status = run_task(config, tmp, is_chief=True)
        out = Path(config.output_dir)
    else:
        scratch = Path(tempfile.mkdtemp(prefix=f"edgetool-mw-{info['task_type']}{info['task_index']}-"))
        try:
            status = run_task(config, scratch / "model", is_chief=False)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        out = Path(config.output_dir)
        if config.verbose:
            print(f"{info['task_type']} {info['task_index']}: done; the chief writes the SavedModel.", flush=True)
    return TrainResult(
        out,
        config.strategy.value,
        status["num_replicas"],
        status["eval_accuracy"],
        config.epochs,
        status["seconds"],
        tuple(status["history"]),
        detail=f"TF_CONFIG task {info['task_type']} {info['task_index']} of {info['num_workers']}",
        wrote_output=info["is_chief"],
        model=config.model,
        eval_perplexity=status.get("eval_perplexity"),
        eval_bits_per_byte=status.get("eval_bits_per_byte"),
        sample=status.get("sample"),
    )
