"""int8: full-integer quantization calibrated on a representative dataset."""

from edge_tool.convert.enums import QuantMode
from edge_tool.convert.registry import register


def configure_full_int8(tf, conv, representative_dataset, io_dtype) -> None:
    """Set ``conv`` up for full-integer int8 with optional integer I/O (shared with QAT)."""
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative_dataset
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if io_dtype is not None:
        conv.inference_input_type = io_dtype
        conv.inference_output_type = io_dtype


@register(
    QuantMode.INT8,
    "int8 weights and activations (full integer, calibrated)",
    needs_calibration=True,
    io_types=("model", "float32", "int8", "uint8"),
)
def build(ctx) -> bytes:
    """Full-integer conversion with TFLITE_BUILTINS_INT8 only: every activation is int8."""
    return ctx.convert(lambda conv: configure_full_int8(ctx.tf, conv, ctx.representative_dataset, ctx.io_dtype))
