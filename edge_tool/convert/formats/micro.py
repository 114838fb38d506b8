"""micro: TFLite Micro C sources, op resolver and measured tensor arena beside every full-integer .tflite."""

from __future__ import annotations

from typing import TYPE_CHECKING

from edge_tool.convert.formats.registry import FORMATS, FormatJob, FormatSpec
from edge_tool.convert.modes import MODES
from edge_tool.core.steps import step
from edge_tool.core.textsafe import term

if TYPE_CHECKING:
    from edge_tool.schemas.manifest import ManifestArtifact
    from edge_tool.schemas.records import MicroRecord

MICRO_MODES = tuple(name for name, spec in MODES.items() if spec.integer_only)  # TFLite Micro runs int8 only


def micro_problems(config) -> list[str]:
    """Why ``--format micro`` refuses modes other than full-integer int8 / qat."""
    bad = [m.value for m in config.modes if m.value not in MICRO_MODES]
    if not bad:
        return []
    return [
        f"--format micro needs full-integer models (--quant int8 or qat), got {', '.join(bad)}: TFLite Micro is "
        "integer-first — its float kernels cover only part of the op set, it has no hybrid (dynamic-range) "
        "kernels, and int16x8 kernels exist for a few ops only."
    ]


def build(job: FormatJob, tflite: ManifestArtifact) -> MicroRecord:
    """TFLite Micro sources, resolver and measured arena beside the entry ``tflite`` (see ``edge_tool.micro``)."""
    from edge_tool.micro.export import export_micro  # noqa: PLC0415

    with step(f"micro export {term(tflite.path)}") as timed:
        micro = export_micro(job.out_dir / tflite.path, job.out_dir)
        timed.outputs.extend(micro.files)
    return micro.record()


SPEC = FORMATS.register(
    FormatSpec(
        name="micro",
        summary="a .tflite plus C sources, op resolver and measured arena for TFLite Micro (int8/qat)",
        suffix=".tflite",
        build=build,
        extends="tflite",
        default_modes=("int8",),
        modes=MICRO_MODES,
        problems=micro_problems,
    )
)
