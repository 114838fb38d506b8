"""int8: full-integer quantization calibrated on a representative dataset."""

from edge_tool.convert.registry import MODES, ModeSpec
from edge_tool.litert.recipes import configure_full_int8


def build(ctx) -> bytes:
    """Full-integer conversion with TFLITE_BUILTINS_INT8 only: every activation is int8."""
    return ctx.convert(lambda conv: configure_full_int8(ctx.tf, conv, ctx.representative_dataset, ctx.io_dtype))


SPEC = MODES.register(
    ModeSpec(
        "int8",
        weights="int8",
        activations="int8 (TFLITE_BUILTINS_INT8 only)",
        integer_only=True,
        needs_calibration=True,
        io_types=("model", "float32", "int8", "uint8"),
        build=build,
        integer_rank=0,
    )
)
