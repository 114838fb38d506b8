"""The modes an LM converts in: one ``LmModeSpec`` row each, registered in ``LM_MODES``.

The names are the mode registry's (``convert.modes``): fp32/fp16/dynamic from the TFLite converter, and the
weight-only modes ai-edge-quantizer makes from the fp32 file (named by ``tflite_quantizer.recipes.Recipe``), so a
user sees one vocabulary. Modes that make no sense for an LM are refused with the reason (``REFUSED``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edge_tool.core.registry import Registry
from edge_tool.tflite_quantizer.recipes import RECIPES, Recipe


@dataclass(frozen=True)
class LmModeSpec:
    """One LM mode: built by the TFLite converter (``configure``) or by ai-edge-quantizer from the fp32 file
    (``recipe``); ``judged`` modes must match the SavedModel to ``tolerance`` × the logit scale, the others are
    measured (failing only on NaN or a broken cache)."""

    name: str
    summary: str
    configure: Callable | None = None  # (tf, converter) -> None
    recipe: Recipe | None = None
    tolerance: float | None = None  # judged against the reference; None: measured only
    auto_candidate: bool = True

    def __post_init__(self) -> None:
        if (self.configure is None) == (self.recipe is None):
            raise ValueError(f"{self.name}: exactly one of configure and recipe")


def _fp32(tf, conv) -> None:
    """The converter's defaults."""


def _fp16(tf, conv) -> None:
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.target_spec.supported_types = [tf.float16]


def _dynamic(tf, conv) -> None:
    conv.optimizations = [tf.lite.Optimize.DEFAULT]


LM_MODES: Registry[LmModeSpec] = Registry("language-model mode")
for _spec in (
    LmModeSpec("fp32", "float32 weights and compute (the reference file)", _fp32, tolerance=1e-4, auto_candidate=False),
    LmModeSpec("fp16", "float16 weights, float32 compute", _fp16),
    LmModeSpec("dynamic", "int8 weights, activations quantized at run time (TFLite converter)", _dynamic),
    *(
        LmModeSpec(r.value, RECIPES[r].summary + " (ai-edge-quantizer on the fp32 file)", recipe=r)
        for r in (Recipe.WEIGHT_INT8, Recipe.WEIGHT_INT4, Recipe.WEIGHT_INT4_BLOCK32)
    ),
):
    LM_MODES.register(_spec)

_CALIBRATED = (
    "needs calibration data for integer activations; an LM's activations (attention scores, the KV cache) span ranges "
    "a few calibration prompts do not cover, and LiteRT-LM runs float activations with integer weights"
)
REFUSED = {
    "int8": _CALIBRATED,
    "int16x8": _CALIBRATED,
    "full-int8": _CALIBRATED,
    "qat": "fine-tunes a Keras classifier/regressor with tfmot; an LM SavedModel holds prefill/decode endpoints, not a "
    "Keras model tfmot can wrap",
}


def refusal(name: str) -> str | None:
    """Why ``name`` is not an LM mode (with the way out), or None when it is one."""
    if name in LM_MODES:
        return None
    why = REFUSED.get(name, "is not a mode edgetool knows")
    return (
        f"--quant {name} is not built for a language model: it {why}. The LM modes are "
        f"{', '.join(LM_MODES.names())} (weight-only int8/int4 keep float activations and shrink the weights)."
    )
