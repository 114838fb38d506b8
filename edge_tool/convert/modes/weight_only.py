"""weight-int8, weight-int4, weight-int4-block32: weight-only quantization by ai-edge-quantizer — integer weights
dequantized to float before each op, float compute. Built from the fp32 conversion (or from a float .tflite source);
not in ``--quant all`` (named when wanted). A result the quantizer left unchanged is refused, never shipped."""

from edge_tool.convert.quantizer_step import quantize_for_mode
from edge_tool.convert.registry import MODES, ModeSpec
from edge_tool.tflite_quantizer.recipes import RECIPES, Recipe


def _builder(mode: str, recipe: Recipe):
    def build(ctx) -> bytes:
        """The fp32 file, then ai-edge-quantizer's weight-only recipe on it."""
        data, note = quantize_for_mode(ctx.convert(lambda conv: None), recipe.value, mode)
        ctx.record_notes(mode, note)
        return data

    return build


for _mode, _recipe in (
    ("weight-int8", Recipe.WEIGHT_INT8),
    ("weight-int4", Recipe.WEIGHT_INT4),
    ("weight-int4-block32", Recipe.WEIGHT_INT4_BLOCK32),
):
    _r = RECIPES[_recipe]
    MODES.register(
        ModeSpec(
            _mode,
            weights=f"int{_r.weight_bits} ({f'block {_r.block}' if _r.block else 'per channel'}, ai-edge-quantizer)",
            activations="float32 (weights dequantized)",
            build=_builder(_mode, _recipe),
            auto_candidate=False,
            in_all=False,
            tflite_recipe=_recipe.value,
        )
    )
