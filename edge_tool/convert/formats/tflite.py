"""tflite: one LiteRT flatbuffer per --quant mode (the mode registry builds it), metadata embedded, self-checked
(``tflite_build``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from edge_tool.convert.formats.registry import FORMATS, FormatJob, FormatSpec
from edge_tool.convert.modes import QuantMode

if TYPE_CHECKING:
    from edge_tool.schemas.manifest import ManifestArtifact


def build(job: FormatJob, mode: QuantMode) -> ManifestArtifact:
    """The .tflite of ``mode`` (``tflite_build``, loaded with its numpy-backed helpers when a conversion runs:
    ``--help`` reads this module)."""
    from edge_tool.convert.formats import tflite_build  # noqa: PLC0415

    return tflite_build.build(job, mode, SPEC)


SPEC = FORMATS.register(
    FormatSpec(
        name="tflite",
        summary="LiteRT / TFLite flatbuffer, one per --quant mode (phones, Linux boards, LiteRT.js)",
        suffix=".tflite",
        build=build,
        in_all=True,
        key="{quant}",
        mode_builds=True,
        honours=("io_type", "allow_select_tf_ops"),
    )
)
