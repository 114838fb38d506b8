"""dynamic: dynamic-range quantization — int8 weights, float activations, no calibration."""

from edge_tool.convert.enums import QuantMode
from edge_tool.convert.registry import register


@register(QuantMode.DYNAMIC, weights="int8", activations="float32 (dynamic range)")
def build(ctx) -> bytes:
    """Optimize.DEFAULT without a representative dataset."""
    tf = ctx.tf

    def configure(conv):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]

    return ctx.convert(configure)
