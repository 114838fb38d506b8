"""One module per check target, each registering its ``TargetSpec`` in ``edge_tool.check.registry.TARGETS`` at import.

The names below are the registry's derived views: ``TARGET_NAMES`` (the order ``--help``, the report and ``--target
all`` use: the import order below) and ``parse_targets`` (what ``--target`` values mean).
"""

# isort: off
# each module registers itself; this order is TARGETS' order
from edge_tool.check.targets import litert_cpu, gpu, tflm, tfjs, litertjs, edgetpu  # noqa: F401

# isort: on
from edge_tool.check.registry import TARGETS, TargetSpec
from edge_tool.errors import UsageError

__all__ = ["ALL", "TARGETS", "TARGET_NAMES", "TargetSpec", "parse_targets"]

ALL = "all"
TARGET_NAMES = TARGETS.names()


def parse_targets(values) -> tuple[str, ...]:
    """``--target`` values (repeated, comma lists, any case; ``all`` = every target) as target names in the order
    given, each once; UsageError naming the choices for an unknown or empty one."""
    raw = [v.strip().lower() for value in values for v in str(getattr(value, "value", value)).split(",") if v.strip()]
    bad = [v for v in raw if v not in TARGETS and v != ALL]
    if bad or not raw:
        raise UsageError(
            f"--target expects one or more of {', '.join(TARGET_NAMES)} or {ALL}, got {', '.join(bad) or 'none'}."
        )
    return tuple(dict.fromkeys(TARGET_NAMES if ALL in raw else raw))
