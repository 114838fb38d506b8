"""What a written .tflite really is, said when it is not what its mode's name promises (read from the flatbuffer)."""

from __future__ import annotations

from edge_tool.convert.registry import MODES
from edge_tool.parsers.tflite_model import TfliteSummary, ops_on_dtype

_EDGE_OPS = {"QUANTIZE", "DEQUANTIZE"}  # float I/O of an integer model passes through these


def file_warnings(name: str, mode: str, data: bytes, summary: TfliteSummary) -> list[str]:
    """Warnings about ``name``: Flex ops it needs, and where its tensor types contradict ``mode``."""
    found = []
    if summary.flex_ops:
        found.append(
            f"{name} uses Flex ops {', '.join(summary.flex_ops)}: the runtime needs the Flex delegate (select TF ops)."
        )
    weights = set(summary.weight_dtypes)
    if mode == "dynamic" and not weights & {"int8", "uint8"}:
        found.append(
            f"{name} is really fp32: no weight tensor of this model was quantized (dynamic-range "
            "quantization leaves tensors under 1,024 values in float), so it equals the fp32 file; "
            "--quant int8 quantizes every weight."
        )
    elif mode == "fp16" and "float16" not in weights:
        found.append(f"{name} is really fp32: no weight tensor was stored as float16.")
    elif mode in MODES and MODES[mode].integer_only:
        float_ops = sorted(set(ops_on_dtype(data, "float32")) - _EDGE_OPS)
        if float_ops:
            found.append(
                f"{name} is not fully integer: {', '.join(float_ops)} compute in float32 (an integer-only "
                "accelerator or TFLite Micro cannot run it; manifest.json lists the tensor types)."
            )
    return found
