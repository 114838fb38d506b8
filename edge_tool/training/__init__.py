"""Train a bundled model (the digits CNN, or a byte-level LM on bundled text: `kinds/`) under a tf.distribute strategy and export a SavedModel."""

from edge_tool.training.config import Strategy, TrainConfig, TrainResult

__all__ = ["Strategy", "TrainConfig", "TrainResult"]
