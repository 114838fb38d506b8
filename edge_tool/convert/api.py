"""``convert()``: one source model → every requested format (``convert.formats``), written atomically with a
manifest."""

from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.convert.batch_retry import BatchRetry
from edge_tool.convert.config import ConvertConfig, QuantMode
from edge_tool.convert.context import BuildContext
from edge_tool.convert.formats import FORMATS, FormatJob, FormatSpec
from edge_tool.convert.inputs import drop_string_calibration, prepare_inputs
from edge_tool.convert.manifest import build_manifest, write_manifest
from edge_tool.convert.qat_trained_step import qat_trained_step
from edge_tool.convert.size_limit import drop_modes_too_large
from edge_tool.convert.source import prepare_source
from edge_tool.convert.tflite_source import convert_tflite_source, is_tflite_source
from edge_tool.core.env import import_tf, quiet_native_stderr
from edge_tool.core.fsutil import atomic_dir, check_output_dir
from edge_tool.core.signals import deferred
from edge_tool.core.steps import console, step
from edge_tool.core.textsafe import term
from edge_tool.errors import ConversionError, EdgeToolError
from edge_tool.models.augmentation import inference_only_note
from edge_tool.models.precision import precision_note
from edge_tool.models.signatures import signature_note
from edge_tool.schemas.manifest import Manifest, ManifestArtifact
from edge_tool.tflite_converter.fast_path import fast_path_problem
from edge_tool.trust.guard import require_safe_model

__all__ = ["ConvertResult", "convert", "one_line"]


@dataclass(frozen=True)
class ConvertResult:
    """What a convert run wrote: ``artifacts`` are the manifest's entries (the same objects as
    ``manifest.artifacts``; their ``path`` is relative to ``output_dir``, see ``path_of``)."""

    output_dir: Path
    manifest: Manifest
    failures: dict = field(default_factory=dict)  # mode -> one-line reason (only with config.keep_going)

    @property
    def artifacts(self) -> tuple[ManifestArtifact, ...]:
        """The manifest's artefact entries, in build order."""
        return self.manifest.artifacts

    def path_of(self, entry: ManifestArtifact) -> Path:
        """Where the artefact of ``entry`` is on disk (a file, or the tfjs directory)."""
        return self.output_dir / entry.path

    def tflite(self, mode: QuantMode | str) -> Path:
        """Path of the .tflite of ``mode``."""
        return self.artifact("tflite", QuantMode(mode).value)

    def artifact(self, format: str, quant: str) -> Path:
        """Path of the artefact of ``format`` built with ``quant`` (a --quant mode, or tfjs's weight compression)."""
        return next(self.path_of(a) for a in self.artifacts if a.format == format and a.quant == quant)


def convert(config: ConvertConfig) -> ConvertResult:
    """Run every requested conversion into a temp dir beside OUTDIR, write manifest.json, then rename.

    The TFLite modes share one GraphDef and one calibration (see ``converter.fast_path``); a format with a
    background worker (TFJS, with two CPUs) starts it here, before TensorFlow is imported.
    """
    check_output_dir(config.output_dir, config.force, config.inputs)
    require_safe_model(
        config.model, config.trust_model_code, "convert", config.signature
    )  # before any worker or loader starts
    config, too_large = drop_modes_too_large(config)  # a .tflite over 2 GiB: refused before anything converts

    t0 = time.perf_counter()
    if is_tflite_source(config.model):  # a float .tflite: ai-edge-quantizer per mode (convert.tflite_source)
        with quiet_native_stderr():
            manifest = convert_tflite_source(config, t0)
        return ConvertResult(config.output_dir, manifest, dict(manifest.failed or {}))
    workers = {}
    with quiet_native_stderr(), tempfile.TemporaryDirectory(prefix="edgetool-src-") as work:
        try:
            with deferred():  # a stop signal cannot fall between starting a worker process and the try
                for spec in _specs(config):
                    worker = spec.start_worker(config) if spec.start_worker else None
                    if worker is not None:
                        workers[spec.name] = worker
            manifest = _convert_in(config, Path(work), import_tf(), workers, t0, too_large)
        finally:
            _close(workers)
    return ConvertResult(config.output_dir, manifest, dict(manifest.failed or {}))


def _specs(config: ConvertConfig) -> list[FormatSpec]:
    return [FORMATS[name] for name in config.formats]


def _close(workers: dict) -> None:
    for worker in workers.values():
        worker.close()


def _convert_in(config: ConvertConfig, work: Path, tf, workers: dict, t0: float, too_large: dict) -> Manifest:
    """Load, calibrate and build every format into the atomic output dir; returns the manifest written."""
    with step("load model"):
        source = prepare_source(config.model, work, config.batch, config.trust_model_code, config.signature)
    if note := signature_note(config.model, config.signature):
        console.print(term(note))
    if source.precision is not None:
        console.print(term(precision_note(source.precision)))
    if source.inference_only:
        console.print(term(inference_only_note(source.original.name, source.inference_only)))
    config, failed = drop_string_calibration(config, source)
    failed = {**too_large, **failed}
    config, trained = qat_trained_step(config, source, failed)
    inputs = prepare_inputs(tf, config, source, bool(trained))
    ds = inputs.dataset
    rep = ds.representative_dataset() if ds else None
    ctx = BuildContext(
        tf, config, source, rep, epoch_progress=_print_epoch, metadata=inputs.metadata, contracts=inputs.contracts
    )
    ctx.qat_trained = trained
    if config.runs_mode_builds:
        _warn_if_public_converter()
    for mode, why in failed.items():
        console.print(f"[red]✗[/] convert {mode}: {term(why)}")
    specs = _buildable(config, source, failed)
    with atomic_dir(config.output_dir, config.force, config.inputs) as tmp:
        ctx.retry = BatchRetry(ctx, work)
        job = FormatJob(ctx, tmp, work, ctx.retry, workers)
        try:
            built = _build_all(job, specs, failed)
        except BaseException:
            _close(workers)  # stop them writing into tmp before atomic_dir deletes tmp
            raise
        cal = None if ds is None else {"path": str(inputs.calibration_path), **ds.summary.to_dict()}
        timings = {FORMATS[a.format].key_of(a.quant): a.seconds for a in built}
        timings["total"] = round(time.perf_counter() - t0, 3)
        manifest = build_manifest(config, source, cal, built, timings, failed, inputs.resolution.to_list())
        write_manifest(tmp, manifest)
    return manifest


def _buildable(config: ConvertConfig, source, failed: dict) -> list[FormatSpec]:
    """The formats to build: a format that refuses this model fails the run, or — with --keep-going semantics and
    another format to build — is recorded in ``failed`` and skipped."""
    specs = _specs(config)
    out = []
    for spec in specs:
        why = spec.refusal(source) if spec.refusal else None
        if why is None:
            out.append(spec)
            continue
        others = any(s is not spec and s.extends is None for s in specs)
        if not (config.keep_going and others):
            raise ConversionError(why)
        failed[spec.key_of("")] = one_line(why)
        console.print(f"[red]✗[/] convert {spec.name}: {term(failed[spec.key_of('')])}")
    return out


def _build_all(job: FormatJob, specs: list[FormatSpec], failed: dict) -> list[ManifestArtifact]:
    """Build every format (per mode where it takes modes, extensions beside their base's artefacts)."""
    config = job.ctx.config
    for spec in specs:
        if spec.submit is not None:
            spec.submit(job)
    built = []
    for spec in specs:
        if spec.extends is not None:
            continue
        if not spec.per_mode:
            built.append(spec.build(job))
            continue
        for mode in config.modes:
            try:
                entry = spec.build(job, mode)
            except EdgeToolError as exc:
                if not config.keep_going:
                    raise
                failed[spec.key_of(mode.value)] = one_line(str(exc))
                console.print(f"[red]✗[/] convert {spec.key_of(mode.value)}: {term(failed[spec.key_of(mode.value)])}")
                continue
            for ext in specs:
                if ext.extends == spec.name:
                    entry = dataclasses.replace(entry, **{ext.name: ext.build(job, entry)})
            built.append(entry)
    if failed and not built:
        raise ConversionError("no mode could be built: " + "; ".join(f"{m}: {w}" for m, w in failed.items()))
    return built


def _warn_if_public_converter() -> None:
    """One line when the fast path is off for a reason the user did not choose (same files, slower)."""
    problem = fast_path_problem()
    if problem and not problem.startswith("EDGETOOL_FAST_CONVERT"):
        console.print(
            f"[yellow]warning:[/] converter fast path off: {term(problem)}; using the public "
            "TFLiteConverter.from_saved_model (same files, slower)."
        )


def one_line(message: str) -> str:
    """A message on one line (whitespace runs collapsed), for tables and JSON fields."""
    return " ".join(message.split())


def _print_epoch(epoch: int, logs: dict) -> None:
    parts = " ".join(f"{k} {v:.4f}" for k, v in logs.items() if isinstance(v, float))
    console.print(f"  qat epoch {epoch + 1}: {term(parts)}")
