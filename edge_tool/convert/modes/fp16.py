"""fp16: float16 weights (dequantized to float32 at load on CPU; native on many GPUs)."""

from edge_tool.convert.enums import QuantMode
from edge_tool.convert.registry import register


@register(QuantMode.FP16, weights="float16", activations="float32")
def build(ctx) -> bytes:
    """Optimize.DEFAULT with float16 as the supported type."""
    tf = ctx.tf

    def configure(conv):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.target_spec.supported_types = [tf.float16]

    return ctx.convert(configure)
