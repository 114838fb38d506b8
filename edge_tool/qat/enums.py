"""The choices of QAT's options that the command line offers."""

from __future__ import annotations

from enum import Enum


class QatStrategy(str, Enum):
    """tf.distribute strategies QAT fine-tuning runs under (a local subset of ``train``'s)."""

    DEFAULT = "default"
    ONE_DEVICE = "one-device"
    MIRRORED = "mirrored"
