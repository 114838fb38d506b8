"""eval --per-layer: the quantization debugger's worst layers attached to the int8 .tflite rows, and its notes."""

from __future__ import annotations

from dataclasses import replace

from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.data import EvalStream
from edge_tool.evaluate.rows import ArtifactResult
from edge_tool.models.readers import Artifact, ArtifactFormat
from edge_tool.tflite_converter.per_layer import MAX_DEBUG_SAMPLES, worst_layers


def per_layer_eligible(art: Artifact) -> bool:
    """An int8 .tflite: the artefacts --per-layer explains."""
    return art.format is ArtifactFormat.TFLITE and art.quant.split()[0] == "int8"


def with_per_layer(
    results: list[ArtifactResult], arts: list[Artifact], config: EvalConfig, data: EvalStream, ref
) -> list[ArtifactResult]:
    """Attach the debugger's worst layers (computed once, on the first MAX_DEBUG_SAMPLES samples) to int8 rows."""
    if not any(per_layer_eligible(a) for a in arts):
        return results
    order = [s.name for s in ref.input_specs]
    worst = worst_layers(config.reference, data.kept_inputs(), order, config.per_layer_top, ref.signature.key)
    return [replace(r, per_layer=worst) if per_layer_eligible(a) else r for r, a in zip(results, arts)] + results[
        len(arts) :
    ]  # --device rows after the host rows


def per_layer_notes(arts: list[Artifact], labels: list[str]) -> list[str]:
    """What the report says of --per-layer: how the errors were computed, which artefacts it skipped."""
    notes = []
    if any(per_layer_eligible(a) for a in arts):
        notes.append(
            "Per-layer errors: tf.lite.experimental.QuantizationDebugger on an int8 model rebuilt from the "
            f"reference with the first {MAX_DEBUG_SAMPLES} eval samples as representative dataset (the debugger "
            "needs the float model); "
            "they describe that int8 quantization, not the artefact's own scales."
        )
    skipped = [lab for a, lab in zip(arts, labels) if not per_layer_eligible(a)]
    if skipped:
        notes.append(f"--per-layer applies to int8 .tflite artefacts only; skipped: {', '.join(skipped)}.")
    return notes
