"""The enums of convert's options: a leaf module (no edgetool imports), so modes, config and the CLI can share them."""

from __future__ import annotations

from enum import Enum


class QuantMode(str, Enum):
    """TFLite quantization modes."""

    FP32 = "fp32"
    FP16 = "fp16"
    DYNAMIC = "dynamic"
    INT8 = "int8"
    INT16X8 = "int16x8"
    QAT = "qat"


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
