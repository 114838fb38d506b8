"""onnx: an ONNX model (tf2onnx) of the prepared SavedModel, fp32, or int8 as QDQ through ONNX Runtime.

The source is the one every format converts: the SavedModel (or the SavedModel exported from a .keras/.h5) after
the model-code guard, with ``--batch``'s re-trace applied. int8 is ONNX Runtime's ``quantize_static`` (QDQ, int8
activations, per-channel symmetric int8 weights, min/max) fed by the same calibration selection as the TFLite int8
build, through the same input contract. Each file is then loaded in ONNX Runtime (CPU) and run on calibration
samples (or, without calibration data, the seeded random probes of ``convert.fidelity``); how far it is from the
SavedModel goes into manifest.json's ``agreement`` (fp32 is held to float rounding and warned about beyond it;
int8's error is data-dependent and measured, not judged — ``edgetool eval`` measures accuracy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edge_tool.convert.enums import IOType
from edge_tool.convert.formats.registry import FORMATS, FormatJob, FormatSpec
from edge_tool.convert.modes import QuantMode

if TYPE_CHECKING:
    from edge_tool.schemas.manifest import ManifestArtifact


def onnx_problems(config) -> list[str]:
    """The options --format onnx cannot honour (collected with every other option problem)."""
    problems, modes = [], SPEC.modes
    bad = [m.value for m in config.modes if m.value not in modes]
    if bad:
        problems.append(
            f"--format onnx builds {' and '.join(modes)} (int8: QDQ through ONNX Runtime's "
            f"quantize_static), got --quant {', '.join(bad)}: those are TFLite modes, build them with "
            "--format tflite."
        )
    if config.io_type not in (IOType.MODEL, IOType.FLOAT32):
        problems.append(
            f"--io-type {config.io_type.value} is a TFLite option: the ONNX int8 model keeps float "
            "inputs and outputs (its QuantizeLinear/DequantizeLinear nodes are inside the graph)."
        )
    return problems


def build(job: FormatJob, mode: QuantMode) -> ManifestArtifact:
    """``<model>_<mode>.onnx`` (``onnx_build``, loaded with its numpy-backed helpers when a conversion runs:
    ``--help`` reads this module)."""
    from edge_tool.convert.formats import onnx_build  # noqa: PLC0415

    return onnx_build.build(job, mode, SPEC)


SPEC = FORMATS.register(
    FormatSpec(
        name="onnx",
        summary="ONNX model, fp32 or int8 QDQ (ONNX Runtime CPU/Mobile/Web, TensorRT/Jetson, NPU SDKs)",
        suffix=".onnx",
        build=build,
        modes=("fp32", "int8"),
        extra="onnx",
        packages=("tf2onnx", "onnx", "onnxruntime"),
        libraries=("tf2onnx", "onnx", "onnxruntime", "protobuf"),
        problems=onnx_problems,
        honours=("io_type",),  # model or float32 (its QDQ model keeps float I/O): onnx_problems refuses the others
    )
)
