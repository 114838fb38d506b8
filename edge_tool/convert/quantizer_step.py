"""A .tflite quantized by ai-edge-quantizer (``edge_tool.tflite_quantizer``) as convert ships it: never a result that
changed nothing (ConversionError), the ops it left in float said once, and the manifest's ``quantizer`` record."""

from __future__ import annotations

from edge_tool.convert.registry import MODES
from edge_tool.core.steps import console
from edge_tool.core.textsafe import term
from edge_tool.errors import ConversionError
from edge_tool.schemas.format_records import QuantizerNote
from edge_tool.tflite_quantizer.run import Calibration, quantize_tflite


def quantize_for_mode(
    float_tflite: bytes, recipe: str, mode: str, calibration: Calibration | None = None
) -> tuple[bytes, QuantizerNote]:
    """(the quantized bytes, their record) for ``--quant mode``; ConversionError naming the mode when the quantizer
    returned the model unchanged. The ops left in float are printed as a note (and kept in the record)."""
    result = quantize_tflite(float_tflite, recipe, calibration)
    if not result.changed:
        others = [m for m, spec in MODES.items() if spec.tflite_recipe and not spec.needs_calibration and m != mode]
        raise ConversionError(
            f"--quant {mode} not built: {result.unchanged_reason()} Modes that do quantize the weights without "
            f"calibration: {', '.join(others)}."
        )
    if note := result.float_note():
        console.print(f"[yellow]note:[/] --quant {term(mode)}: {term(note)} (manifest.json: artifacts[].quantizer)")
    return result.data, result.note()
