"""One module per TFLite mode; importing this package registers each in ``edge_tool.convert.registry.MODES``."""

# each module registers itself; this order (baseline first, then smaller and more integer) is MODES' order
from edge_tool.convert.modes import fp32, fp16, dynamic, int8, int16x8, qat  # noqa: F401, I001
from edge_tool.convert.registry import MODES, ModeSpec

__all__ = ["MODES", "ModeSpec"]
