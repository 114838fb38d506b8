"""The enums of convert's options: a leaf module (no edgetool imports), so modes, config and the CLI can share them
(``QuantMode`` is derived from the mode registry: ``convert.modes``)."""

from __future__ import annotations

from enum import Enum


class IOType(str, Enum):
    """Inference input/output dtype of the converted model; ``model`` keeps the model's own."""

    MODEL = "model"
    FLOAT32 = "float32"
    INT8 = "int8"
    UINT8 = "uint8"


class TfjsQuant(str, Enum):
    """TFJS weight compression."""

    NONE = "none"
    FLOAT16 = "float16"
    UINT8 = "uint8"
    UINT16 = "uint16"


class Objective(str, Enum):
    """What ``--quant auto`` minimises among the candidates within budget."""

    SIZE = "size"  # smallest file; see convert.auto.choose() for ties
    LATENCY = "latency"  # lowest p50 latency; see convert.auto.choose() for ties
