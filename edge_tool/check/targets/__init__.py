"""One module per check target; importing this package registers each in ``edge_tool.check.registry.TARGETS``."""

from edge_tool.check.registry import TARGETS, TargetSpec
from edge_tool.check.targets import edgetpu, gpu, litert_cpu, litertjs, tfjs, tflm  # noqa: F401  (each registers itself)

__all__ = ["TARGETS", "TargetSpec"]
