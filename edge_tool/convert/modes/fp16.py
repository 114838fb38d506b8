"""fp16: float16 weights (dequantized to float32 at load on CPU; native on many GPUs)."""

from edge_tool.convert.registry import MODES, ModeSpec
from edge_tool.models.tolerances import FLOAT16_TOLERANCE


def build(ctx) -> bytes:
    """Optimize.DEFAULT with float16 as the supported type."""
    tf = ctx.tf

    def configure(conv):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.target_spec.supported_types = [tf.float16]

    return ctx.convert(configure)


SPEC = MODES.register(
    ModeSpec(
        "fp16",
        weights="float16",
        activations="float32",
        build=build,
        integer_rank=4,
        self_check_tolerance=FLOAT16_TOLERANCE,
    )
)
