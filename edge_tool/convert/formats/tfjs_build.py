"""How --format tfjs builds: edgetool's TensorFlow.js writer (``tfjs_writer``) run here or in this run's
background worker, and the manifest entry of the graph model's directory (loaded by ``formats.tfjs`` when a
conversion runs: its helpers are numpy-backed, and ``--help`` reads the registry)."""

from __future__ import annotations

import time
from pathlib import Path

from edge_tool.convert.formats.registry import FormatJob, FormatSpec
from edge_tool.convert.metadata_step import tfjs_user_metadata
from edge_tool.core.steps import console, step
from edge_tool.parsers.tree import content_hash
from edge_tool.schemas.format_records import TfjsAgreement
from edge_tool.schemas.manifest import ManifestArtifact
from edge_tool.schemas.records import FileEntry
from edge_tool.tfjs_writer.export import export_tfjs, tfjs_refusal

DIR = "tfjs"  # the graph model's directory in OUTDIR


def _tfjs_job(
    saved_model: Path, tfjs_dir: Path, quant: str, signature_key: str, user_metadata: dict | None = None
) -> tuple[float, dict]:
    """Export TFJS (in whichever process runs it); returns the seconds it took and its self-check record."""
    t0 = time.perf_counter()
    written = export_tfjs(saved_model, tfjs_dir, quant, signature_key, user_metadata)
    return time.perf_counter() - t0, written.check


def _user_metadata(ctx) -> dict | None:
    return tfjs_user_metadata(ctx.metadata, ctx.contracts)


def submit(job: FormatJob, spec: FormatSpec) -> None:
    """Hand the export to this run's worker (when there is one) as soon as the output dir is open."""
    worker = job.workers.get(spec.name)
    if worker is not None:
        ctx = job.ctx
        worker.submit(
            _tfjs_job,
            ctx.source.saved_model,
            job.out_dir / DIR,
            _quant(ctx.config, spec),
            ctx.source.signature.key,
            _user_metadata(ctx),
        )


def refusal(source) -> str | None:
    """Why TensorFlow.js cannot run this model (see ``tfjs_writer.export.tfjs_refusal``), or None."""
    return tfjs_refusal(source)


def _quant(config, spec: FormatSpec) -> str:
    return config.format_options[spec.name].tfjs_quant.value


def build(job: FormatJob, spec: FormatSpec) -> ManifestArtifact:
    """Write out_dir/tfjs: collect it from the worker it was handed to, or convert it here."""
    ctx, worker = job.ctx, job.workers.get(spec.name)
    tfjs_dir = job.out_dir / DIR
    quant = _quant(ctx.config, spec)
    with step("convert tfjs" + (" (parallel worker)" if worker else "")) as timed:
        if worker is None:
            seconds, check = _tfjs_job(
                ctx.source.saved_model, tfjs_dir, quant, ctx.source.signature.key, _user_metadata(ctx)
            )
        else:
            seconds, check = worker.result()
        timed.outputs.append(tfjs_dir / "model.json")
    agreement = TfjsAgreement(**check, measured=bool(check.get("checked")))
    if not agreement.checked:
        console.print(f"tfjs: self-check skipped ({agreement.reason or 'no reason given'})")
    files = sorted(p for p in tfjs_dir.iterdir() if p.is_file())
    size = sum(p.stat().st_size for p in files)
    return ManifestArtifact(
        DIR,
        spec.name,
        quant,
        size,
        files={p.name: FileEntry(p.stat().st_size, content_hash(p)) for p in files},
        seconds=round(seconds, 3),
        agreement=agreement,
    )
