"""The models ``edgetool train --model`` can train: one ``Trainable`` spec per model, registered in ``TRAINABLES``.

Every strategy (``training.runner``, ``multiworker``, ``parameter_server``) trains any of them the same way: ``load``
the seeded split, ``build`` the compiled Keras model under the strategy's scope (from the ``TrainConfig``), ``fit``, then ``save`` the
model
(every multi-worker task calls it) and, on the chief, ``sidecars`` (what lies beside it; returns facts for
train.json and the result).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edge_tool.core.registry import Registry


@dataclass(frozen=True)
class Trainable:
    """One trainable model: its defaults and the four steps every strategy runs."""

    name: str
    summary: str  # one line for --help and the docs
    epochs: int
    batch_size: int
    learning_rate: float
    load: Callable[[Any], Any]  # TrainConfig -> split with x_train, y_train, x_eval, y_eval (numpy)
    build: Callable[[Any, Any, int | None], Any]  # (tf_keras, TrainConfig, cosine decay steps) -> compiled model
    save: Callable[[Any, Path, Any], None]  # (trained model, directory, TrainConfig) -> the SavedModel written there
    sidecars: Callable[[Any, Path, Any, Any, dict], dict]  # (model, dir, split, TrainConfig, metrics) -> facts
    output_help: str = ""  # what the output directory holds, for --help


TRAINABLES: Registry[Trainable] = Registry("trainable model")
