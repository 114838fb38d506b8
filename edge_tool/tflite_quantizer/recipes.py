"""The quantization recipes edgetool runs through ai-edge-quantizer on a float .tflite: one ``RecipeSpec`` row each
(registered in ``RECIPES``), turned into ai-edge-quantizer's recipe (a JSON list) by ``aeq_recipe``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from edge_tool.core.registry import Registry


class Recipe(str, Enum):
    """The recipes (``RECIPES`` holds each one's spec)."""

    DYNAMIC_INT8 = "dynamic-int8"
    WEIGHT_INT8 = "weight-int8"
    WEIGHT_INT4 = "weight-int4"
    WEIGHT_INT4_BLOCK32 = "weight-int4-block32"
    DYNAMIC_INT4_BLOCK32 = "dynamic-int4-block32"
    FULL_INT8 = "full-int8"
    INT16X8 = "int16x8"


class Kind(str, Enum):
    """How the recipe treats activations (ai-edge-quantizer's three configs)."""

    DYNAMIC = "dynamic"  # integer weights, activations quantized on the fly by the kernel
    WEIGHT_ONLY = "weight_only"  # integer weights dequantized before a float op
    STATIC = "static"  # integer weights and activations, ranges from calibration


BLOCK_SIZES = (32, 64, 128, 256)  # what ai-edge-quantizer's QuantGranularity offers


@dataclass(frozen=True)
class RecipeSpec:
    """One recipe: its kind, weight bits, granularity (``block`` 0 = channel-wise) and activation bits."""

    name: Recipe
    kind: Kind
    weight_bits: int
    block: int = 0
    activation_bits: int | None = None  # STATIC only

    def __post_init__(self) -> None:
        if self.block and self.block not in BLOCK_SIZES:
            raise ValueError(f"{self.name}: block {self.block} is not one of {BLOCK_SIZES}")
        if (self.kind is Kind.STATIC) != (self.activation_bits is not None):
            raise ValueError(f"{self.name}: activation bits go with a static recipe, and only with one")

    @property
    def needs_calibration(self) -> bool:
        """A static recipe measures activation ranges on calibration samples."""
        return self.kind is Kind.STATIC

    @property
    def granularity(self) -> str:
        """ai-edge-quantizer's ``QuantGranularity`` name."""
        return f"BLOCKWISE_{self.block}" if self.block else "CHANNELWISE"

    @property
    def summary(self) -> str:
        """One line: weights and activations."""
        weights = f"int{self.weight_bits} weights ({'block ' + str(self.block) if self.block else 'per channel'})"
        acts = {
            Kind.DYNAMIC: "float activations quantized at run time",
            Kind.WEIGHT_ONLY: "float compute (weights dequantized)",
            Kind.STATIC: f"int{self.activation_bits} activations (calibrated)",
        }[self.kind]
        return f"{weights}, {acts}"


RECIPES: Registry[RecipeSpec] = Registry("ai-edge-quantizer recipe")
for _spec in (
    RecipeSpec(Recipe.DYNAMIC_INT8, Kind.DYNAMIC, 8),
    RecipeSpec(Recipe.WEIGHT_INT8, Kind.WEIGHT_ONLY, 8),
    RecipeSpec(Recipe.WEIGHT_INT4, Kind.WEIGHT_ONLY, 4),
    RecipeSpec(Recipe.WEIGHT_INT4_BLOCK32, Kind.WEIGHT_ONLY, 4, block=32),
    RecipeSpec(Recipe.DYNAMIC_INT4_BLOCK32, Kind.DYNAMIC, 4, block=32),
    RecipeSpec(Recipe.FULL_INT8, Kind.STATIC, 8, activation_bits=8),
    RecipeSpec(Recipe.INT16X8, Kind.STATIC, 8, activation_bits=16),
):
    RECIPES.register(_spec)


def aeq_recipe(spec: RecipeSpec) -> list[dict]:
    """ai-edge-quantizer's recipe for ``spec`` (every supported op, every layer), built with its RecipeManager."""
    from ai_edge_quantizer import qtyping, recipe_manager

    manager = recipe_manager.RecipeManager()
    ops, granularity = qtyping.TFLOperationName.ALL_SUPPORTED, qtyping.QuantGranularity(spec.granularity)
    if spec.kind is Kind.DYNAMIC:
        manager.add_dynamic_config(".*", ops, spec.weight_bits, granularity)
    elif spec.kind is Kind.WEIGHT_ONLY:
        manager.add_weight_only_config(".*", ops, spec.weight_bits, granularity)
    else:
        manager.add_static_config(".*", ops, spec.activation_bits, spec.weight_bits, granularity)
    return manager.get_quantization_recipe()


def recipe_json(recipe: list[dict]) -> list[dict]:
    """``recipe`` with its enums as their string values (what ai-edge-quantizer loads back from JSON)."""

    def plain(value):
        if isinstance(value, Enum):
            return value.value
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return plain(recipe)
