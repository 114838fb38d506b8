"""Train a small digits CNN under a tf.distribute strategy and export a SavedModel."""

from edge_tool.training.config import Strategy, TrainConfig, TrainResult

__all__ = ["Strategy", "TrainConfig", "TrainResult"]
