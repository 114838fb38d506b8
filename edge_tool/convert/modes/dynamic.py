"""dynamic: dynamic-range quantization — int8 weights, float activations, no calibration."""

from edge_tool.convert.config import QuantMode
from edge_tool.convert.registry import register


@register(QuantMode.DYNAMIC, "int8 weights, float activations (dynamic range)", expected_size_ratio=0.27)
def build(ctx) -> bytes:
    """Optimize.DEFAULT without a representative dataset."""
    tf = ctx.tf

    def configure(conv):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]

    return ctx.convert(configure)
