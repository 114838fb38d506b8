"""The trainable models; importing this package registers each in ``registry.TRAINABLES`` (``--model``'s choices,
in this order)."""

from __future__ import annotations

# isort: off
from edge_tool.training.kinds import digits, lm  # noqa: F401

# isort: on
from edge_tool.training.kinds.registry import TRAINABLES, Trainable

MODEL_NAMES = TRAINABLES.names()

__all__ = ["MODEL_NAMES", "TRAINABLES", "Trainable"]
