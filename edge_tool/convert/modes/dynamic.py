"""dynamic: dynamic-range quantization — int8 weights, float activations, no calibration."""

from edge_tool.convert.registry import MODES, ModeSpec


def build(ctx) -> bytes:
    """Optimize.DEFAULT without a representative dataset."""
    tf = ctx.tf

    def configure(conv):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]

    return ctx.convert(configure)


SPEC = MODES.register(
    ModeSpec(
        "dynamic",
        weights="int8",
        activations="float32 (dynamic range)",
        build=build,
        tflite_recipe="dynamic-int8",
        integer_rank=3,
    )
)
