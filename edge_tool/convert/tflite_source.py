"""``convert model.tflite``: a float .tflite as the source (a model hub's, a vendor's), quantized per --quant mode by
ai-edge-quantizer (``edge_tool.tflite_quantizer``: the mode's ``ModeSpec.tflite_recipe``) into the same output
directory, manifest and file names as a SavedModel's modes. The source's metadata and associated files (labels)
carry over; a mode the quantizer left unchanged is not built; the ops left in float are named."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.convert.fidelity import QUANTIZED_SKIP
from edge_tool.convert.formats.entry import file_entry
from edge_tool.convert.formats.registry import artifact_name
from edge_tool.convert.manifest import build_manifest, write_manifest
from edge_tool.convert.modes import MODES, tflite_source_modes
from edge_tool.convert.quantizer_step import quantize_for_mode
from edge_tool.convert.smoke import run_in_litert
from edge_tool.convert.tflite_source_data import calibration_samples
from edge_tool.core.fsutil import atomic_dir
from edge_tool.core.steps import console, step
from edge_tool.core.textsafe import term
from edge_tool.errors import ConversionError, EdgeToolError, ModelError
from edge_tool.metadata.carry import carry_associated_files
from edge_tool.metadata.reader import EmbeddedMetadata, read_metadata
from edge_tool.models.signatures import tflite_signature
from edge_tool.parsers.limits import check_tflite_tensors, read_tflite
from edge_tool.parsers.tflite_model import state_warning, summarize_tflite
from edge_tool.schemas.manifest import Manifest, ManifestArtifact
from edge_tool.schemas.records import MetadataRecord, Normalization, SourceRecord
from edge_tool.tflite_quantizer.facts import weight_facts

KIND, FLAVOR = "tflite-file", "float-tflite"


def is_tflite_source(model: Path) -> bool:
    """True for a .tflite file given as convert's MODEL."""
    return Path(model).suffix.lower() == ".tflite" and not Path(model).is_dir()


@dataclass(frozen=True)
class TfliteSource:
    """The float .tflite as given: its bytes, first signature, signature keys and embedded metadata."""

    original: Path
    data: bytes = field(repr=False)
    signature: object  # models.signatures.SignatureInfo of the signature eval and calibration use
    signatures: tuple[str, ...]
    metadata: EmbeddedMetadata | None

    @property
    def record(self) -> SourceRecord:
        """manifest.json's ``source``."""
        return SourceRecord(
            str(self.original), KIND, FLAVOR, hashlib.sha256(self.data).hexdigest(), self.signature, None
        )


def tflite_source_problems(config) -> list[str]:
    """What a float .tflite MODEL cannot do with these options (ConvertConfig collects them with the rest)."""
    problems = []
    if config.formats != ("tflite",):
        problems.append(
            f"a .tflite MODEL ({config.model}) is quantized to .tflite files only (--format tflite): TF.js, ONNX and "
            "TFLite Micro are built from the SavedModel or Keras file it was made from."
        )
    can = tflite_source_modes()
    for mode in (m.value for m in config.modes):
        if mode == "fp32":
            problems.append(f"--quant fp32 of a float .tflite is the file itself ({config.model}); nothing to build.")
        elif mode not in can:
            problems.append(
                f"--quant {mode} is built by the TFLite converter from the SavedModel or Keras model; a float .tflite "
                f"source takes {', '.join(can)} (ai-edge-quantizer)."
            )
    if config.batch is not None:
        problems.append("--batch re-traces a SavedModel; a .tflite's input shapes are fixed in the file.")
    if config.io_type.value != "model":
        problems.append("--io-type: ai-edge-quantizer keeps the .tflite's own input/output types; drop --io-type.")
    return problems


def read_source(model: Path) -> TfliteSource:
    """The float .tflite at ``model``; UsageError (from the quantizer floor) when it is already quantized."""
    data = read_tflite(model)
    facts = weight_facts(data)
    if facts.quantized_ops and not facts.float_ops:
        raise ModelError(
            f"{model} is already quantized (every weight is integer: {', '.join(sorted(facts.quantized_ops))}); "
            "give the float .tflite it came from, or the SavedModel."
        )
    return TfliteSource(Path(model), data, tflite_signature(model), facts.signatures, read_metadata(data))


def convert_tflite_source(config, t0: float) -> Manifest:
    """Quantize the float .tflite ``config.model`` in every mode of ``config`` into ``config.output_dir``."""
    with step("load model"):
        source = read_source(config.model)
    if len(source.signatures) > 1:
        console.print(
            f"signatures: {', '.join(source.signatures)} (each is quantized; eval runs {source.signature.key})"
        )
    samples, summary, resolution = calibration_samples(config, source)
    failed: dict[str, str] = {}
    built: list[ManifestArtifact] = []
    with atomic_dir(config.output_dir, config.force, config.inputs) as tmp:
        for mode in config.modes:
            try:
                built.append(_build(config, source, mode.value, samples, tmp))
            except EdgeToolError as exc:
                if not config.keep_going:
                    raise
                failed[mode.value] = " ".join(str(exc).split())
                console.print(f"[red]✗[/] convert {mode.value}: {term(failed[mode.value])}")
        if not built:
            raise ConversionError("no mode could be built: " + "; ".join(f"{m}: {w}" for m, w in failed.items()))
        timings = {a.quant: a.seconds for a in built}
        timings["total"] = round(time.perf_counter() - t0, 3)
        manifest = build_manifest(config, source, summary, built, timings, failed, resolution)
        write_manifest(tmp, manifest)
    return manifest


def _build(config, source: TfliteSource, mode: str, samples, out_dir: Path) -> ManifestArtifact:
    path = out_dir / artifact_name(config.model, mode, ".tflite")
    with step(f"convert {mode}") as timed:
        cal = samples if MODES[mode].needs_calibration else None
        data, note = quantize_for_mode(source.data, MODES[mode].tflite_recipe, mode, cal)
        data, carried = carry_associated_files(source.data, data)
        check_tflite_tensors(data, path.name)  # before LiteRT allocates its arena in the smoke child
        why, _ = run_in_litert(data)
        if why is not None:
            raise ConversionError(
                f"--quant {mode}: ai-edge-quantizer wrote a model that LiteRT cannot run ({why}); edgetool does not "
                "ship it. Use another --quant mode."
            )
        path.write_bytes(data)
        timed.outputs.append(path)
    if carried:
        console.print(f"{term(path.name)}: carried {term(', '.join(carried))} over from {term(source.original.name)}")
    summary = summarize_tflite(data)
    state = state_warning(summary.variable_tensors)
    meta = _metadata_record(read_metadata(data))
    return file_entry(
        path,
        "tflite",
        mode,
        data,
        timed.seconds,
        tensors=summary,
        state_warning=state,
        metadata=meta,
        quantizer=note,
        self_check_skipped=QUANTIZED_SKIP,  # every mode of a .tflite source is quantized; it was run once above
    )


def _metadata_record(meta: EmbeddedMetadata | None) -> MetadataRecord | None:
    """The manifest's record of the metadata a quantized file carries (the source's, kept)."""
    if meta is None or not meta.name:
        return None
    norm = next((t.normalization for t in meta.inputs if t.normalization is not None), None)
    files = [t.labels_file for t in meta.outputs if t.labels_file]
    return MetadataRecord(
        meta.name,
        meta.description,
        meta.version,
        meta.author,
        meta.label_count,
        files[0] if files else None,
        norm or Normalization((0.0,), (1.0,)),
    )
