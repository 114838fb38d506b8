"""A board's TFLite runtime refusing a file it does not know the ops of, said as what it is — the file's op
versions against the runtime's — with the way out, instead of the runtime's raw message.

Measured on the emulated arm64 board (tests/device_board.py: tflite_runtime 2.14.0) with language models converted
by TensorFlow 2.19: fp32, fp16 and weight-int8 load; dynamic int8 does not (TF 2.19 writes FULLY_CONNECTED version
12, 2.14 knows up to 11) and weight-int4 does not (2.14's DEQUANTIZE does not take int4 weights).
"""

from __future__ import annotations

import re

from edge_tool.errors import RuntimeFailure

OP_VERSION = re.compile(r"Didn't find op for builtin opcode '(\w+)' version '(\d+)'")
INT4_DEQUANTIZE = re.compile(r"dequantize\.cc.*\(DEQUANTIZE\) failed to prepare", re.S)
LOADS_ON_2_14 = "fp32, fp16 and weight-int8"  # LM modes that load on tflite_runtime 2.14 (module doc)
NEWER_RUNTIME = "pip install ai-edge-litert on the board (LiteRT's runtime, as new as the converter)"


class BoardRefusedModel(RuntimeFailure):
    """The board's runtime would not load the file (a finding of the file on that runtime, not a lost board)."""


def explain(error: str, runtime: str) -> str | None:
    """The paragraph for a load ``error`` of ``runtime`` (e.g. "tflite_runtime 2.14.0") that is an op version or
    int4 weights the runtime does not have; None for any other error."""
    modes = f" (for a language model on tflite_runtime 2.14: {LOADS_ON_2_14})" if "2.14" in runtime else ""
    way_out = f"The way out: convert to a mode whose ops this runtime has{modes}, or {NEWER_RUNTIME}."
    said = " ".join(error.split())[:300]
    m = OP_VERSION.search(error)
    if m:
        return (
            f"{runtime} on the board cannot load this file: it has no {m.group(1)} kernel of version {m.group(2)}, "
            f"which the converter (newer than this runtime) wrote for this mode. {way_out} (It said: {said})"
        )
    if INT4_DEQUANTIZE.search(error):
        return (
            f"{runtime} on the board cannot load this file: its DEQUANTIZE takes int8/uint8/int16/float16 weights, "
            f"and this mode's weights are int4. {way_out} (It said: {said})"
        )
    return None
