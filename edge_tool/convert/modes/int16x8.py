"""int16x8: 16-bit activations with 8-bit weights, for models int8 activations hurt."""

from edge_tool.convert.enums import QuantMode
from edge_tool.convert.registry import register


@register(
    QuantMode.INT16X8,
    weights="int8",
    activations="int16",
    needs_calibration=True,
)
def build(ctx) -> bytes:
    """EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8 with a representative dataset."""
    tf = ctx.tf

    def configure(conv):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = ctx.representative_dataset
        conv.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]

    return ctx.convert(configure)
