"""The calibration samples of a float .tflite source (full int8, int16x8): --calibration (or calibration.npz beside
the file) read through the input contract its metadata states, one dict per sample for ai-edge-quantizer."""

from __future__ import annotations

from pathlib import Path

from edge_tool import calibration
from edge_tool.contract.resolve import resolve
from edge_tool.convert.inputs import calibration_line, contract_options
from edge_tool.convert.modes import MODES, tflite_source_modes
from edge_tool.core.steps import console
from edge_tool.core.textsafe import term
from edge_tool.errors import UsageError
from edge_tool.litert.recipes import missing_calibration_message, resolve_calibration

SERVING = "serving_default"  # the key ai-edge-quantizer gives a file without SignatureDefs


def _normalization(source) -> tuple | None:
    for t in source.metadata.inputs if source.metadata is not None else ():
        if (stated := t.stated_normalization()) is not None:
            return stated.mean, stated.std, f"{source.original.name} (TFLite metadata)"
    return None


def calibration_samples(config, source) -> tuple[dict | None, dict | None, list[dict]]:
    """(samples per signature key for the quantizer, the manifest's calibration record, the input contract records);
    (None, None, […]) when no mode of ``config`` calibrates."""
    needed = [m.value for m in config.modes if MODES[m].needs_calibration]
    path = resolve_calibration(config.model, config.calibration) if needed else None
    resolution = resolve(
        source.signature, Path("-"), None, contract_options(config), path, None, _normalization(source)
    )
    if not needed:
        return None, None, resolution.to_list()
    if path is None:
        raise UsageError(missing_calibration_message(f"--quant {', '.join(needed)}", config.model))
    if len(source.signatures) > 1:
        raise UsageError(
            f"--quant {', '.join(needed)} calibrates every signature of {config.model} "
            f"({', '.join(source.signatures)}), and --calibration holds data for one. Quantize it in Python with "
            "edge_tool.tflite_quantizer.run.quantize_tflite(model, recipe, {signature: samples}), or use a weight "
            f"mode ({', '.join(m for m in tflite_source_modes() if not MODES[m].needs_calibration)}), which needs no "
            "calibration."
        )
    specs = calibration.specs_from(source.signature.inputs)
    options = calibration.LoadOptions(samples=config.samples, seed=config.seed, images=resolution.contracts)
    ds = calibration.load(path, specs, options)
    for warning in ds.warnings:
        console.print(f"[yellow]warning:[/] {term(warning)}")
    console.print(f"calibration: {term(calibration_line(ds.summary, resolution.contracts))}")
    samples = [dict(sample) for sample in ds.representative_dataset()()]
    record = {"path": str(path), **ds.summary.to_dict()}
    return {source.signature.key or SERVING: samples}, record, resolution.to_list()
