"""Run training for in-process strategies and export the result atomically."""

from __future__ import annotations

import os
import time
from pathlib import Path

from edge_tool.core.env import import_tf
from edge_tool.core.fsutil import atomic_dir, check_output_dir
from edge_tool.training.config import Strategy, TrainConfig, TrainResult
from edge_tool.training.fit import finish, fit_and_evaluate
from edge_tool.training.kinds import TRAINABLES
from edge_tool.training.launcher import train_local_cluster
from edge_tool.training.multiworker import train_joined
from edge_tool.training.parameter_server import train_parameter_server
from edge_tool.training.strategies import build_local_strategy


def train_local(config: TrainConfig) -> TrainResult:
    """Train under default / one-device / mirrored and export to ``config.output_dir``."""
    tf = import_tf()
    start = time.perf_counter()
    strategy = build_local_strategy(tf, config.strategy, config.replicas)
    kind = TRAINABLES[config.model]
    split = kind.load(config)
    with atomic_dir(config.output_dir, config.force) as tmp:
        model, metrics, history = fit_and_evaluate(tf, strategy, config, split)
        kind.save(model, tmp, config)
        seconds = time.perf_counter() - start
        report = {
            "config": config.to_dict(),
            "num_replicas": int(strategy.num_replicas_in_sync),
            "seconds": seconds,
            "history": list(history),
        }
        facts = finish(model, tmp, split, config, metrics, report)
    return TrainResult(
        Path(config.output_dir),
        config.strategy.value,
        int(strategy.num_replicas_in_sync),
        metrics["accuracy"],
        config.epochs,
        seconds,
        history,
        model=config.model,
        eval_perplexity=facts.get("eval_perplexity"),
        eval_bits_per_byte=facts.get("eval_bits_per_byte"),
        sample=facts.get("sample"),
    )


def train(config: TrainConfig) -> TrainResult:
    """Train under ``config.strategy``; dispatches to the in-process, local-cluster or TF_CONFIG runner.

    multiworker: with TF_CONFIG set this process joins that cluster as its task; without it,
    ``config.workers`` local worker processes are started. parameter-server: in-process cluster.
    """
    tf_config = os.environ.get("TF_CONFIG", "").strip()
    if config.strategy is Strategy.MULTIWORKER and tf_config:
        return train_joined(config, tf_config)  # the chief checks -o itself; other tasks never write it
    check_output_dir(config.output_dir, config.force)  # fail fast, before TensorFlow is imported
    if config.strategy in (Strategy.DEFAULT, Strategy.ONE_DEVICE, Strategy.MIRRORED):
        return train_local(config)
    if config.strategy is Strategy.MULTIWORKER:
        return train_local_cluster(config)
    return train_parameter_server(config)
