"""tfjs: one TensorFlow.js graph model per run (``OUTDIR/tfjs/``, edgetool's own writer: ``tfjs_writer``), self-checked
in tfjs in Node, overlapped with the TFLite builds when it pays."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edge_tool.calibration.serial import Record
from edge_tool.convert.background import BackgroundCall, usable_cpus
from edge_tool.convert.enums import TfjsQuant
from edge_tool.convert.formats.registry import FORMATS, FormatJob, FormatSpec, option
from edge_tool.parsers.tree import tree_bytes
from edge_tool.tfjs_writer.op_table import TFJS_VERSION

if TYPE_CHECKING:
    from edge_tool.schemas.manifest import ManifestArtifact

TFJS_WARM_MODULES = ("tensorflow", "edge_tool.convert.formats.tfjs_build")
# Below this the TFJS export takes about as long as a second process needs to import TensorFlow,
# so overlapping it buys nothing (see benchmarks/RESULTS.md for the measured export times).
PARALLEL_TFJS_MIN_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class TfjsOptions(Record):
    """The options only --format tfjs takes (``ConvertConfig.format_options["tfjs"]``)."""

    tfjs_quant: TfjsQuant = option(
        TfjsQuant.NONE, "TFJS weight compression (float16: IEEE half; uint8/uint16: affine per tensor)."
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "tfjs_quant", TfjsQuant(self.tfjs_quant))


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


def _builder():
    """``tfjs_build``, loaded with its numpy-backed helpers when a conversion runs (``--help`` reads this module)."""
    from edge_tool.convert.formats import tfjs_build  # noqa: PLC0415

    return tfjs_build


def submit(job: FormatJob) -> None:
    """Hand the export to this run's worker (when there is one) as soon as the output dir is open."""
    _builder().submit(job, SPEC)


def refusal(source) -> str | None:
    """Why TensorFlow.js cannot run this model (see ``tfjs_writer.export.tfjs_refusal``), or None."""
    return _builder().refusal(source)


def build(job: FormatJob) -> ManifestArtifact:
    """Write out_dir/tfjs: collect it from the worker it was handed to, or convert it here."""
    return _builder().build(job, SPEC)


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
