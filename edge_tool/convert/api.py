"""``convert()``: one source model → every requested TFLite mode and TFJS, written atomically with a manifest."""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from edge_tool.convert.config import ConvertConfig, QuantMode
from edge_tool.convert.context import BuildContext
from edge_tool.convert.manifest import build_manifest, write_manifest
from edge_tool.convert.registry import MODES
from edge_tool.convert.source import prepare_source
from edge_tool.errors import UsageError
from edge_tool.fsutil import atomic_dir, check_output_dir
from edge_tool.steps import console, step

DEFAULT_CALIBRATION = "calibration.npz"


@dataclass(frozen=True)
class Artifact:
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
    artifacts: tuple[Artifact, ...]
    manifest: dict

    def tflite(self, mode: QuantMode | str) -> Path:
        """Path of the .tflite of ``mode``."""
        mode = QuantMode(mode).value
        return next(a.path for a in self.artifacts if a.format == "tflite" and a.quant == mode)


def tflite_name(source: Path, mode: QuantMode) -> str:
    """File name of a mode's artefact: ``<model stem>_<mode>.tflite``."""
    stem = Path(source).stem if Path(source).is_file() else Path(source).resolve().name
    return f"{stem or 'model'}_{mode.value}.tflite"


def resolve_calibration(config: ConvertConfig) -> Path | None:
    """--calibration, else calibration.npz beside a SavedModel made by ``edgetool train``, else None."""
    if config.calibration is not None:
        return config.calibration
    beside = config.model / DEFAULT_CALIBRATION if config.model.is_dir() else None
    return beside if beside is not None and beside.is_file() else None


def _needs_calibration(config: ConvertConfig) -> bool:
    return config.wants_tflite and any(MODES[m].needs_calibration for m in config.modes)


def load_calibration(config: ConvertConfig, source):
    """Load and validate the representative dataset; returns (Dataset or None, path used)."""
    if not _needs_calibration(config):
        return None, None
    path = resolve_calibration(config)
    if path is None:
        modes = ", ".join(m.value for m in config.modes if MODES[m].needs_calibration)
        raise UsageError(
            f"--quant {modes} needs representative data: pass --calibration DATA (.npz/.npy/image folder/TFRecord/CSV); "
            f"none was given and {config.model} has no {DEFAULT_CALIBRATION}."
        )
    import calibration  # noqa: PLC0415

    specs = calibration.specs_from(source.signature.inputs)
    ds = calibration.load(path, specs, calibration.LoadOptions(samples=config.samples, seed=config.seed))
    for warning in ds.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    return ds, path


def representative_dataset(ds, specs):
    """A TFLiteConverter representative_dataset: one sample at a time, as a list ordered like the signature."""
    names = [s.name for s in specs]

    def gen():
        for batch in ds.batches(1):
            yield [batch[name] for name in names]

    return gen


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _build_tflite(ctx: BuildContext, mode: QuantMode, out_dir: Path) -> tuple[Artifact, dict]:
    from edge_tool.tflite_model import summarize_tflite  # noqa: PLC0415

    path = out_dir / tflite_name(ctx.config.model, mode)
    with step(f"convert {mode.value}") as rec:
        data = MODES[mode].build(ctx)
        path.write_bytes(data)
        rec.outputs.append(path)
    summary = summarize_tflite(data)
    if summary.flex_ops:
        console.print(f"[yellow]warning:[/] {path.name} uses Flex ops {', '.join(summary.flex_ops)}: "
                      "the runtime needs the Flex delegate (select TF ops).")
    art = Artifact(path, "tflite", mode.value, len(data), rec.seconds)
    return art, {"path": path.name, "format": "tflite", "quant": mode.value, "size_bytes": len(data),
                 "sha256": hashlib.sha256(data).hexdigest(), "seconds": round(rec.seconds, 3),
                 "tensors": summary.to_dict()}


def _build_tfjs(ctx: BuildContext, out_dir: Path) -> tuple[Artifact, dict]:
    from edge_tool.convert.tfjs import export_tfjs  # noqa: PLC0415

    tfjs_dir = out_dir / "tfjs"
    with step("convert tfjs") as rec:
        export_tfjs(ctx.source.saved_model, tfjs_dir, ctx.config.tfjs_quant.value, ctx.source.signature.key)
        rec.outputs.append(tfjs_dir / "model.json")
    files = sorted(p for p in tfjs_dir.iterdir() if p.is_file())
    size = sum(p.stat().st_size for p in files)
    art = Artifact(tfjs_dir, "tfjs", ctx.config.tfjs_quant.value, size, rec.seconds)
    return art, {"path": "tfjs", "format": "tfjs", "quant": ctx.config.tfjs_quant.value, "size_bytes": size,
                 "files": {p.name: {"size_bytes": p.stat().st_size, "sha256": _sha256(p)} for p in files},
                 "seconds": round(rec.seconds, 3)}


def convert(config: ConvertConfig) -> ConvertResult:
    """Run every requested conversion into a temp dir beside OUTDIR, write manifest.json, then rename."""
    check_output_dir(config.output_dir, config.force)
    from edge_tool.env import import_tf, quiet_native_stderr  # noqa: PLC0415

    t0 = time.perf_counter()
    with quiet_native_stderr(), tempfile.TemporaryDirectory(prefix="edgetool-src-") as work:
        tf = import_tf()
        with step("load model"):
            source = prepare_source(config.model, Path(work))
        ds, cal_path = load_calibration(config, source)
        import calibration  # noqa: PLC0415

        rep = representative_dataset(ds, calibration.specs_from(source.signature.inputs)) if ds else None
        ctx = BuildContext(tf, config, source, rep, epoch_progress=_print_epoch)
        artifacts, records = [], []
        with atomic_dir(config.output_dir, config.force) as tmp:
            for mode in config.modes if config.wants_tflite else ():
                art, rec = _build_tflite(ctx, mode, tmp)
                artifacts.append(art)
                records.append(rec)
            if config.wants_tfjs:
                art, rec = _build_tfjs(ctx, tmp)
                artifacts.append(art)
                records.append(rec)
            cal = None if ds is None else {"path": str(cal_path), **ds.summary.to_dict()}
            timings = {r["quant"] if r["format"] == "tflite" else "tfjs": r["seconds"] for r in records}
            timings["total"] = round(time.perf_counter() - t0, 3)
            manifest = build_manifest(config, source, cal, records, timings)
            write_manifest(tmp, manifest)
    final = tuple(Artifact(config.output_dir / a.path.name, a.format, a.quant, a.size_bytes, a.seconds)
                  for a in artifacts)
    return ConvertResult(config.output_dir, final, manifest)


def _print_epoch(epoch: int, logs: dict) -> None:
    parts = " ".join(f"{k} {v:.4f}" for k, v in logs.items() if isinstance(v, float))
    console.print(f"  qat epoch {epoch + 1}: {parts}")
