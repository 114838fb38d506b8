"""fp32: the plain float TFLite model (the baseline every other mode is compared with)."""

from edge_tool.convert.registry import MODES, ModeSpec
from edge_tool.models.tolerances import FLOAT32_TOLERANCE


def build(ctx) -> bytes:
    """Convert with no optimisation."""
    return ctx.convert(lambda conv: None)


SPEC = MODES.register(
    ModeSpec(
        "fp32",
        weights="float32",
        activations="float32",
        auto_candidate=False,
        build=build,
        self_check_tolerance=FLOAT32_TOLERANCE,
    )
)
