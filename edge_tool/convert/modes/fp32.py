"""fp32: the plain float TFLite model (the baseline every other mode is compared with)."""

from edge_tool.convert.enums import QuantMode
from edge_tool.convert.registry import register


@register(QuantMode.FP32, weights="float32", activations="float32", auto_candidate=False)
def build(ctx) -> bytes:
    """Convert with no optimisation."""
    return ctx.convert(lambda conv: None)
