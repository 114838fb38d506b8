"""``quantize_tflite``: a float .tflite (path or bytes) and a ``Recipe`` → a frozen ``QuantizedTflite``.

The result says what ai-edge-quantizer did, read from the two flatbuffers rather than taken on trust: which ops
now take integer weights, which still take float ones (``float_ops``: 0.10 leaves GATHER embedding tables in float),
and whether anything changed at all (``changed``: 0.10's weight-only block-wise int4 recipe returns the model with
every tensor as it was). A caller never reports an unchanged result as built: ``require_changed`` raises.
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from edge_tool.errors import ConversionError, DataError, ModelError, UsageError
from edge_tool.parsers.limits import read_tflite
from edge_tool.parsers.tflite_indices import check_indices
from edge_tool.schemas.format_records import QuantizerNote
from edge_tool.tflite_quantizer.facts import WeightFacts, weight_facts
from edge_tool.tflite_quantizer.recipes import RECIPES, Recipe, aeq_recipe, recipe_json

Calibration = Mapping[str, Sequence[Mapping[str, object]]]  # signature key -> samples (input name -> array)


@dataclass(frozen=True)
class QuantizedTflite:
    """What ``quantize_tflite`` made: the bytes, the recipe (ai-edge-quantizer's JSON, replayable), the ops that
    take integer weights now, the ops left with float weights, and whether any tensor changed type."""

    recipe: Recipe
    data: bytes = field(repr=False)
    aeq_recipe: list
    quantized_ops: dict  # op name -> operators with integer weights
    float_ops: dict  # op name -> operators still holding a float weight (rank >= 2 constant)
    changed: bool  # False: every tensor has the type it had in the float file (nothing was quantized)
    source_bytes: int
    signatures: tuple
    quantizer_version: str

    @property
    def size(self) -> int:
        """Bytes of the quantized file."""
        return len(self.data)

    def unchanged_reason(self) -> str | None:
        """Why this result is not a quantized model (None when it is)."""
        if self.changed:
            return None
        return (
            f"ai-edge-quantizer {self.quantizer_version} returned the model unchanged for recipe {self.recipe.value} "
            "(every tensor keeps its float type): nothing was quantized, so no file is written."
        )

    def float_note(self) -> str | None:
        """One sentence naming the ops whose weights stayed float, or None when none did."""
        if not self.float_ops:
            return None
        ops = ", ".join(f"{name} ×{n}" for name, n in sorted(self.float_ops.items()))
        return (
            f"left in float by ai-edge-quantizer {self.quantizer_version} (recipe {self.recipe.value}): {ops} — "
            "their weights are stored and computed as float32."
        )

    def require_changed(self) -> QuantizedTflite:
        """``self`` when something was quantized; ConversionError (never a file reported as built) otherwise."""
        reason = self.unchanged_reason()
        if reason:
            raise ConversionError(f"{reason} {_other_recipes(self.recipe)}")
        return self

    def note(self) -> QuantizerNote:
        """The manifest's record of this result (no bytes): recipe, version, whether it changed, the ops."""
        return QuantizerNote(
            self.recipe.value,
            f"ai-edge-quantizer {self.quantizer_version}",
            self.changed,
            dict(sorted(self.quantized_ops.items())),
            dict(sorted(self.float_ops.items())),
            self.source_bytes,
            self.aeq_recipe,
        )


def _other_recipes(recipe: Recipe) -> str:
    others = [r.value for r in RECIPES if r is not recipe and not RECIPES[r].needs_calibration]
    return f"Recipes that quantize weights without calibration: {', '.join(others)}."


def quantizer_version() -> str:
    """The installed ai-edge-quantizer's version; UsageError with the install line when it is missing."""
    try:
        return metadata.version("ai-edge-quantizer")
    except metadata.PackageNotFoundError:
        raise UsageError(
            "Quantizing a .tflite file needs ai-edge-quantizer, which is not installed: pip install "
            "'ai-edge-quantizer==0.10.*' (edgetool's own install brings it)."
        ) from None


def _source_bytes(model: Path | bytes) -> bytes:
    """The flatbuffer's bytes, its indices checked before any reader follows them; ModelError for other bytes."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        data, name = bytes(model), "the model bytes"
        if data[4:8] == b"TFL3":
            check_indices(data, name)
    else:
        data, name = read_tflite(Path(model)), str(model)
    if data[4:8] != b"TFL3":
        raise ModelError(f"Expected a .tflite flatbuffer (identifier TFL3), but {name} is not one.")
    return data


def quantize_tflite(
    model: Path | bytes, recipe: Recipe | str, calibration: Calibration | None = None
) -> QuantizedTflite:
    """Quantize the float .tflite ``model`` (a path or its bytes; every signature) with ``recipe``.

    ``calibration`` (static recipes only, required there): per signature key, samples as {input name: array};
    every signature of the file needs some. Returns the result whether or not anything changed — check
    ``changed`` (or call ``require_changed()``) before writing it anywhere. ConversionError when the quantizer
    fails, DataError when calibration does not cover the file's signatures, UsageError for a recipe name edgetool
    does not know or a static recipe without calibration.
    """
    version = quantizer_version()
    try:
        spec = RECIPES[Recipe(recipe)]
    except ValueError:
        raise UsageError(f"Unknown recipe {recipe!r}; the recipes are: {', '.join(RECIPES.names())}.") from None
    data = _source_bytes(model)
    before = weight_facts(data)
    if before.float_ops == {} and before.quantized_ops:
        raise UsageError(
            "The .tflite given is already quantized (every weight is integer); give the float file it came from."
        )
    plan = aeq_recipe(spec)
    out = _run(data, plan, spec, calibration, before)
    after = weight_facts(out)
    changed = out != data and after.fingerprint != before.fingerprint
    return QuantizedTflite(
        spec.name,
        out,
        recipe_json(plan),
        after.quantized_ops,
        after.float_ops,
        changed,
        len(data),
        after.signatures,
        version,
    )


def _run(data: bytes, plan: list, spec, calibration: Calibration | None, before: WeightFacts) -> bytes:
    from ai_edge_quantizer import quantizer

    q = quantizer.Quantizer(bytearray(data), plan)
    samples = dict(_checked_calibration(calibration, spec.name, before)) if spec.needs_calibration else None
    # its progress bar (stderr) and LiteRT's debug-mode warning (its calibration interpreters) are not the user's
    with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        qsv = q.calibrate(samples, num_threads=_threads()) if samples is not None else None
        try:
            result = q.quantize(qsv, enable_progress_bar=False, enable_progress_report=False)
        except (ValueError, RuntimeError, KeyError, NotImplementedError, TypeError) as exc:
            raise ConversionError(
                f"ai-edge-quantizer failed on recipe {spec.name.value}: {type(exc).__name__}: {exc}"
            ) from exc
    return bytes(result.quantized_model)


def _checked_calibration(calibration: Calibration | None, recipe: Recipe, before: WeightFacts) -> Calibration:
    if not calibration:
        raise UsageError(
            f"Recipe {recipe.value} measures activation ranges: pass calibration samples (--calibration FILE)."
        )
    keys = before.signatures or ("serving_default",)
    missing = [k for k in keys if not calibration.get(k)]
    if missing:
        raise DataError(
            f"Recipe {recipe.value} needs calibration samples for every signature of the file; none were given for "
            f"{', '.join(missing)} (given: {', '.join(calibration) or 'none'})."
        )
    return calibration


def _threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))
