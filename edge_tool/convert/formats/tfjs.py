"""tfjs: one TensorFlow.js graph model per run (``OUTDIR/tfjs/``, edgetool's own writer: ``convert.tfjs``), self-checked
in tfjs in Node, overlapped with the TFLite builds when it pays."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edge_tool.calibration.serial import Record
from edge_tool.convert.background import BackgroundCall, usable_cpus
from edge_tool.convert.enums import TfjsQuant
from edge_tool.convert.formats.registry import FORMATS, FormatJob, FormatSpec, option
from edge_tool.convert.tfjs_op_table import TFJS_VERSION
from edge_tool.core.steps import console, step
from edge_tool.modelfiles.tree import tree_bytes
from edge_tool.schemas.format_records import TfjsAgreement

if TYPE_CHECKING:
    from edge_tool.schemas.manifest import ManifestArtifact

TFJS_WARM_MODULES = ("tensorflow", "edge_tool.convert.tfjs")
# Below this the TFJS export takes about as long as a second process needs to import TensorFlow,
# so overlapping it buys nothing (see benchmarks/RESULTS.md for the measured export times).
PARALLEL_TFJS_MIN_BYTES = 4 * 1024 * 1024
DIR = "tfjs"  # the graph model's directory in OUTDIR


@dataclass(frozen=True)
class TfjsOptions(Record):
    """The options only --format tfjs takes (``ConvertConfig.format_options["tfjs"]``)."""

    tfjs_quant: TfjsQuant = option(
        TfjsQuant.NONE, "TFJS weight compression (float16: IEEE half; uint8/uint16: affine per tensor)."
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "tfjs_quant", TfjsQuant(self.tfjs_quant))


def _tfjs_job(
    saved_model: Path, tfjs_dir: Path, quant: str, signature_key: str, user_metadata: dict | None = None
) -> tuple[float, dict]:
    """Export TFJS (in whichever process runs it); returns the seconds it took and its self-check record."""
    from edge_tool.convert.tfjs import export_tfjs  # noqa: PLC0415

    t0 = time.perf_counter()
    written = export_tfjs(saved_model, tfjs_dir, quant, signature_key, user_metadata)
    return time.perf_counter() - t0, written.check


def _model_bytes(model: Path) -> int:
    model = Path(model)
    if model.is_file():
        return model.stat().st_size
    return tree_bytes(model)


def start_tfjs_worker(config):
    """A BackgroundCall for the TFJS export when it can overlap the per-mode conversions, else None.

    Used with a second CPU, per-mode work to overlap with, and a model of at least PARALLEL_TFJS_MIN_BYTES.
    ``EDGETOOL_CONVERT_WORKERS=0`` turns it off, ``=1`` forces it on (size and CPU checks skipped).
    """
    if not config.builds_modes:
        return None
    forced = os.environ.get("EDGETOOL_CONVERT_WORKERS", "")
    if forced == "0":
        return None
    if forced != "1" and (usable_cpus() < 2 or _model_bytes(config.model) < PARALLEL_TFJS_MIN_BYTES):
        return None
    return BackgroundCall(TFJS_WARM_MODULES)


def _user_metadata(ctx) -> dict | None:
    from edge_tool.convert.metadata_step import tfjs_user_metadata  # noqa: PLC0415 - numpy-backed

    return tfjs_user_metadata(ctx.metadata, ctx.contracts)


def submit(job: FormatJob) -> None:
    """Hand the export to this run's worker (when there is one) as soon as the output dir is open."""
    worker = job.workers.get(SPEC.name)
    if worker is not None:
        ctx = job.ctx
        worker.submit(
            _tfjs_job,
            ctx.source.saved_model,
            job.out_dir / DIR,
            _quant(ctx.config),
            ctx.source.signature.key,
            _user_metadata(ctx),
        )


def refusal(source) -> str | None:
    """Why TensorFlow.js cannot run this model (see ``convert.tfjs.tfjs_refusal``), or None."""
    from edge_tool.convert.tfjs import tfjs_refusal  # noqa: PLC0415 - numpy-backed

    return tfjs_refusal(source)


def _quant(config) -> str:
    return config.format_options[SPEC.name].tfjs_quant.value


def build(job: FormatJob) -> ManifestArtifact:
    """Write out_dir/tfjs: collect it from the worker it was handed to, or convert it here."""
    from edge_tool.convert.source import content_hash  # noqa: PLC0415 - numpy-backed
    from edge_tool.schemas.manifest import ManifestArtifact  # noqa: PLC0415 - numpy-backed
    from edge_tool.schemas.records import FileEntry  # noqa: PLC0415 - numpy-backed

    ctx, worker = job.ctx, job.workers.get(SPEC.name)
    tfjs_dir = job.out_dir / DIR
    quant = _quant(ctx.config)
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
        SPEC.name,
        quant,
        size,
        files={p.name: FileEntry(p.stat().st_size, content_hash(p)) for p in files},
        seconds=round(seconds, 3),
        agreement=agreement,
    )


SPEC = FORMATS.register(
    FormatSpec(
        name="tfjs",
        summary="TensorFlow.js graph model in OUTDIR/tfjs/ (browsers, Node); weights per --tfjs-quant",
        suffix="/",
        build=build,
        per_mode=False,
        in_all=True,
        key="tfjs",
        refusal=refusal,
        start_worker=start_tfjs_worker,
        submit=submit,
        options=TfjsOptions,
        runtime_versions=(("tfjs", TFJS_VERSION),),  # edgetool writes the graph model itself, for this runtime
    )
)
