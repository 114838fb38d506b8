"""int8: full-integer quantization calibrated on a representative dataset."""

from edge_tool.convert.registry import MODES, ModeSpec
from edge_tool.litert.recipes import configure_full_int8


def build(ctx) -> bytes:
    """Full-integer conversion with TFLITE_BUILTINS_INT8 only: every activation is int8. A model trained
    quantization-aware is converted with its trained FakeQuant ranges, no representative data."""
    if ctx.qat_trained:
        return ctx.convert(lambda conv: _from_trained_ranges(ctx, conv))
    return ctx.convert(lambda conv: configure_full_int8(ctx.tf, conv, ctx.representative_dataset, ctx.io_dtype))


def _from_trained_ranges(ctx, conv) -> None:
    """Optimize.DEFAULT on a graph with FakeQuant ops: the converter quantizes with their trained min/max (the
    TFLITE_BUILTINS_INT8 restriction is what asks for a representative dataset, so it is not set; convert's
    file check says if an op stayed float)."""
    conv.optimizations = [ctx.tf.lite.Optimize.DEFAULT]
    if ctx.io_dtype is not None:
        conv.inference_input_type = ctx.io_dtype
        conv.inference_output_type = ctx.io_dtype


SPEC = MODES.register(
    ModeSpec(
        "int8",
        weights="int8",
        activations="int8 (TFLITE_BUILTINS_INT8 only)",
        integer_only=True,
        needs_calibration=True,
        io_types=("model", "float32", "int8", "uint8"),
        build=build,
        tflite_recipe="full-int8",
        integer_rank=0,
    )
)
