"""``convert()``: one source model → every requested TFLite mode and TFJS, written atomically with a manifest."""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.convert.batch_retry import BatchRetry
from edge_tool.convert.config import ConvertConfig, QuantMode
from edge_tool.convert.context import BuildContext
from edge_tool.convert.file_kind import file_warnings
from edge_tool.convert.manifest import build_manifest, write_manifest
from edge_tool.schemas.manifest import Manifest
from edge_tool.convert.inputs import prepare_inputs
from edge_tool.convert.metadata_step import for_mode, tfjs_user_metadata
from edge_tool.convert.modes import MODES
from edge_tool.convert.source import content_hash, prepare_source
from edge_tool.convert.tfjs import tfjs_refusal
from edge_tool.errors import ConversionError, EdgeToolError
from edge_tool.modelcode.guard import require_safe_model
from edge_tool.models.modelio import signature_note
from edge_tool.core.fsutil import atomic_dir, check_output_dir
from edge_tool.modelfiles.limits import check_tflite_tensors
from edge_tool.core.signals import deferred
from edge_tool.metadata.writer import embed_metadata
from edge_tool.core.steps import console, step
from edge_tool.core.textsafe import term


@dataclass(frozen=True)
class WrittenArtifact:
    """One written artefact."""

    path: Path
    format: str
    quant: str
    size_bytes: int
    seconds: float


@dataclass(frozen=True)
class ConvertResult:
    """What a convert run wrote."""

    output_dir: Path
    artifacts: tuple[WrittenArtifact, ...]
    manifest: Manifest
    failures: dict = field(default_factory=dict)  # mode -> one-line reason (only with config.keep_going)

    def tflite(self, mode: QuantMode | str) -> Path:
        """Path of the .tflite of ``mode``."""
        mode = QuantMode(mode).value
        return next(a.path for a in self.artifacts if a.format == "tflite" and a.quant == mode)


def tflite_name(source: Path, mode: QuantMode) -> str:
    """File name of a mode's artefact: ``<model stem>_<mode>.tflite``."""
    stem = Path(source).stem if Path(source).is_file() else Path(source).resolve().name
    return f"{stem or 'model'}_{mode.value}.tflite"


def load_calibration(config: ConvertConfig, source):
    """Load and validate the representative dataset through the resolved input contract; returns (Dataset or
    None, path used)."""
    from edge_tool.core.env import import_tf  # noqa: PLC0415

    inputs = prepare_inputs(import_tf(), config, source)
    return inputs.dataset, inputs.calibration_path


def _build_tflite(ctx: BuildContext, mode: QuantMode, out_dir: Path) -> tuple[WrittenArtifact, dict]:
    from edge_tool.convert.smoke import open_shape_sample, refuse_if_it_kills_litert  # noqa: PLC0415
    from edge_tool.convert import fidelity  # noqa: PLC0415
    from edge_tool.modelfiles.tflite_model import state_warning, summarize_tflite  # noqa: PLC0415

    path = out_dir / tflite_name(ctx.config.model, mode)
    spec = None if ctx.metadata is None else for_mode(ctx.metadata, mode.value, ctx.source.flavor)
    with step(f"convert {mode.value}") as timed:
        data = MODES[mode].build(ctx)
        if spec is not None:
            data = embed_metadata(data, spec)
        summary = summarize_tflite(data)
        check_tflite_tensors(data, path.name)  # before LiteRT allocates its arena in the smoke child
        check = None
        if not summary.flex_ops:  # Flex models need the Flex delegate, which plain LiteRT lacks
            probes = fidelity.probe_feeds(ctx.source.signature) if mode.value in fidelity.TOLERANCE else None
            sample = open_shape_sample(ctx.source.signature, ctx.representative_dataset)
            got = refuse_if_it_kills_litert(data, mode.value, probes, sample)
            check = got and fidelity.check(ctx, mode.value, probes, got)
        path.write_bytes(data)
        timed.outputs.append(path)
    if check is not None and not check.ok:
        console.print(f"[yellow]warning:[/] {term(check.warning(path.name, mode.value))}")
    for warning in file_warnings(path.name, mode.value, data, summary):
        console.print(f"[yellow]warning:[/] {term(warning)}")
    state = state_warning(summary.variable_tensors)
    if state:
        console.print(f"[yellow]warning:[/] {term(path.name)} {term(state)}")
    art = WrittenArtifact(path, "tflite", mode.value, len(data), timed.seconds)
    record = {"path": path.name, "format": "tflite", "quant": mode.value, "size_bytes": len(data),
              "sha256": hashlib.sha256(data).hexdigest(), "seconds": round(timed.seconds, 3),
              "tensors": summary.to_dict(), "state_warning": state,
              "metadata": None if spec is None else spec.to_dict()}
    if check is not None:
        record["self_check"] = check.to_dict()
    if mode.value in ctx.notes:
        record[mode.value] = ctx.notes.pop(mode.value)  # e.g. "qat": which int8 model was shipped and why
    return art, record


def _build_micro(tflite: Path, out_dir: Path) -> dict:
    """TFLite Micro sources, resolver and measured arena beside ``tflite`` (see ``edge_tool.micro``)."""
    from edge_tool.micro.export import export_micro  # noqa: PLC0415

    with step(f"micro export {term(tflite.name)}") as timed:
        micro = export_micro(tflite, out_dir)
        timed.outputs.extend(micro.files)
    return micro.to_dict()


def _tfjs_job(saved_model: Path, tfjs_dir: Path, quant: str, signature_key: str, user_metadata: dict | None = None
              ) -> float:
    """Export TFJS (in whichever process runs it); returns the seconds it took."""
    from edge_tool.convert.tfjs import export_tfjs  # noqa: PLC0415

    t0 = time.perf_counter()
    export_tfjs(saved_model, tfjs_dir, quant, signature_key, user_metadata)
    return time.perf_counter() - t0


TFJS_WARM_MODULES = ("tensorflow", "tensorflowjs.converters.tf_saved_model_conversion_v2")
# Below this the TFJS export takes about as long as a second process needs to import TensorFlow and tensorflowjs,
# so overlapping it buys nothing (MobileNetV2's 17 MB SavedModel: ~19 s of TFJS export).
PARALLEL_TFJS_MIN_BYTES = 4 * 1024 * 1024


def _model_bytes(model: Path) -> int:
    model = Path(model)
    if model.is_file():
        return model.stat().st_size
    return sum(p.stat().st_size for p in model.rglob("*") if p.is_file()) if model.is_dir() else 0


def start_tfjs_worker(config: ConvertConfig):
    """A BackgroundCall for the TFJS export when it can overlap the TFLite conversions, else None.

    Used with a second CPU, TFLite work to overlap with, and a model of at least PARALLEL_TFJS_MIN_BYTES.
    ``EDGETOOL_CONVERT_WORKERS=0`` turns it off, ``=1`` forces it on (size and CPU checks skipped).
    """
    from edge_tool.convert.background import BackgroundCall, usable_cpus  # noqa: PLC0415

    if not (config.wants_tfjs and config.wants_tflite):
        return None
    forced = os.environ.get("EDGETOOL_CONVERT_WORKERS", "")
    if forced == "0":
        return None
    if forced != "1" and (usable_cpus() < 2 or _model_bytes(config.model) < PARALLEL_TFJS_MIN_BYTES):
        return None
    return BackgroundCall(TFJS_WARM_MODULES)


def _build_tfjs(ctx: BuildContext, out_dir: Path, worker=None) -> tuple[WrittenArtifact, dict]:
    """Write out_dir/tfjs: collect it from the worker it was handed to, or convert it here."""
    tfjs_dir = out_dir / "tfjs"
    quant = ctx.config.tfjs_quant.value
    with step("convert tfjs" + (" (parallel worker)" if worker else "")) as timed:
        if worker is None:
            seconds = _tfjs_job(ctx.source.saved_model, tfjs_dir, quant, ctx.source.signature.key,
                                tfjs_user_metadata(ctx.metadata, ctx.contracts))
        else:
            seconds = worker.result()
        timed.outputs.append(tfjs_dir / "model.json")
    files = sorted(p for p in tfjs_dir.iterdir() if p.is_file())
    size = sum(p.stat().st_size for p in files)
    art = WrittenArtifact(tfjs_dir, "tfjs", quant, size, seconds)
    return art, {"path": "tfjs", "format": "tfjs", "quant": quant, "size_bytes": size,
                 "files": {p.name: {"size_bytes": p.stat().st_size, "sha256": content_hash(p)} for p in files},
                 "seconds": round(seconds, 3)}


def convert(config: ConvertConfig) -> ConvertResult:
    """Run every requested conversion into a temp dir beside OUTDIR, write manifest.json, then rename.

    The TFLite modes share one GraphDef and one calibration (see ``converter.fast_path``); with two CPUs the
    TFJS export runs in a worker process started before TensorFlow is imported here.
    """
    check_output_dir(config.output_dir, config.force, config.inputs)
    require_safe_model(config.model, config.trust_model_code, "convert")  # before any worker or loader starts
    from edge_tool.core.env import import_tf, quiet_native_stderr  # noqa: PLC0415

    t0 = time.perf_counter()
    with quiet_native_stderr(), tempfile.TemporaryDirectory(prefix="edgetool-src-") as work:
        with deferred():  # a stop signal cannot fall between starting the worker process and the try below
            worker = start_tfjs_worker(config)
        try:
            artifacts, records, manifest = _convert_in(config, Path(work), import_tf(), worker, t0)
        finally:
            if worker is not None:
                worker.close()
    final = tuple(WrittenArtifact(config.output_dir / a.path.name, a.format, a.quant, a.size_bytes, a.seconds)
                  for a in artifacts)
    return ConvertResult(config.output_dir, final, manifest, dict(manifest.failed or {}))


def _convert_in(config: ConvertConfig, work: Path, tf, worker, t0: float) -> tuple[list, list, Manifest]:
    """Load, calibrate and convert into the atomic output dir; returns (artifacts, manifest records, manifest)."""
    with step("load model"):
        source = prepare_source(config.model, work, config.batch, config.trust_model_code, config.signature)
    if note := signature_note(config.model, config.signature):
        console.print(term(note))
    inputs = prepare_inputs(tf, config, source)
    spec, ds, cal_path = inputs.metadata, inputs.dataset, inputs.calibration_path
    rep = ds.representative_dataset() if ds else None
    ctx = BuildContext(tf, config, source, rep, epoch_progress=_print_epoch, metadata=spec, contracts=inputs.contracts)
    retry = BatchRetry(ctx, work)
    _warn_if_public_converter()
    artifacts, records, failed = [], [], {}
    tfjs_refused = tfjs_refusal(source) if config.wants_tfjs else None
    if tfjs_refused and not (config.keep_going and config.wants_tflite):
        raise ConversionError(tfjs_refused)
    if tfjs_refused:
        failed["tfjs"] = one_line(tfjs_refused)
        console.print(f"[red]✗[/] convert tfjs: {term(failed['tfjs'])}")
    wants_tfjs = config.wants_tfjs and not tfjs_refused
    with atomic_dir(config.output_dir, config.force, config.inputs) as tmp:
        try:
            if worker is not None and wants_tfjs:
                worker.submit(_tfjs_job, source.saved_model, tmp / "tfjs", config.tfjs_quant.value,
                              source.signature.key, tfjs_user_metadata(spec, inputs.contracts))
            for mode in config.modes if config.wants_tflite else ():
                try:
                    art, record = retry.run(mode, lambda c, m=mode: _build_tflite(c, m, tmp))
                except EdgeToolError as exc:
                    if not config.keep_going:
                        raise
                    failed[mode.value] = one_line(str(exc))
                    console.print(f"[red]✗[/] convert {mode.value}: {term(failed[mode.value])}")
                    continue
                if config.wants_micro:
                    record["micro"] = _build_micro(art.path, tmp)
                artifacts.append(art)
                records.append(record)
            if failed and not artifacts and not wants_tfjs:
                raise ConversionError("no mode could be built: " + "; ".join(f"{m}: {w}" for m, w in failed.items()))
            if wants_tfjs:
                art, record = _build_tfjs(ctx, tmp, worker)
                artifacts.append(art)
                records.append(record)
        except BaseException:
            if worker is not None:
                worker.close()  # stop it writing into tmp before atomic_dir deletes tmp
            raise
        cal = None if ds is None else {"path": str(cal_path), **ds.summary.to_dict()}
        timings = {r["quant"] if r["format"] == "tflite" else "tfjs": r["seconds"] for r in records}
        timings["total"] = round(time.perf_counter() - t0, 3)
        manifest = build_manifest(config, source, cal, records, timings, failed, inputs.resolution.to_list())
        write_manifest(tmp, manifest)
    return artifacts, records, manifest


def _warn_if_public_converter() -> None:
    """One line when the fast path is off for a reason the user did not choose (same files, slower)."""
    from edge_tool.converter.fast_path import fast_path_problem  # noqa: PLC0415

    problem = fast_path_problem()
    if problem and not problem.startswith("EDGETOOL_FAST_CONVERT"):
        console.print(f"[yellow]warning:[/] converter fast path off: {term(problem)}; using the public "
                      "TFLiteConverter.from_saved_model (same files, slower).")


def one_line(message: str) -> str:
    """A message on one line (whitespace runs collapsed), for tables and JSON fields."""
    return " ".join(message.split())


def _print_epoch(epoch: int, logs: dict) -> None:
    parts = " ".join(f"{k} {v:.4f}" for k, v in logs.items() if isinstance(v, float))
    console.print(f"  qat epoch {epoch + 1}: {term(parts)}")
