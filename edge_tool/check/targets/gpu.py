"""gpu: the LiteRT GPU delegate — which ops it takes and which fall back to the CPU.

First choice is the converter's own analyzer (``tf.lite.experimental.Analyzer.analyze(..., gpu_compatibility=True)``,
whose per-op ``GPU COMPATIBILITY WARNING`` lines come from tensorflow/lite/tools/versioning/gpu_compatibility.cc).
The analyzers in the pip wheels of TensorFlow (2.19 checked) and ai-edge-litert 2.3 are built without that checker: they
print "Your model looks compatible" for any model (checked here on GELU, TOPK_V2, ARG_MAX and Flex ops, all of which
gpu_compatibility.cc rejects), and their binaries do not contain the warning text. When the installed analyzer
lacks it, the op-level table below applies: the ops CheckGpuDelegateCompatibility() accepts (its switch in
gpu_compatibility.cc, tensorflow/tensorflow commit 03a5e4e1); its per-op parameter checks are not reproduced.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from pathlib import Path

from edge_tool.check.base import Finding, Status, TargetResult, target_result
from edge_tool.check.registry import TARGETS, TargetSpec
from edge_tool.check.targets.common import model_ops, of_artefact
from edge_tool.core.env import import_tf

WARNING = "GPU COMPATIBILITY WARNING"
GPU_BUILTINS = frozenset(
    """
ABS ADD ADD_N ATAN2 AVERAGE_POOL_2D BATCH_MATMUL CAST CEIL CONCATENATION CONV_2D COS CUMSUM DENSIFY DEPTHWISE_CONV_2D
DEPTH_TO_SPACE DEQUANTIZE DIV DYNAMIC_UPDATE_SLICE ELU EMBEDDING_LOOKUP EQUAL EXP FLOOR FLOOR_DIV FLOOR_MOD
FULLY_CONNECTED GATHER GELU GREATER GREATER_EQUAL HARD_SWISH LEAKY_RELU LESS LESS_EQUAL LOG LOGICAL_AND LOGISTIC LSTM
MAXIMUM MAX_POOL_2D MEAN MINIMUM MIRROR_PAD MUL NEG NOT_EQUAL ONE_HOT PACK PAD PADV2 POW PRELU QUANTIZE REDUCE_MAX
REDUCE_MIN REDUCE_PROD RELU RELU6 RELU_N1_TO_1 RESHAPE RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR RSQRT SELECT SELECT_V2
SIGN SIN SLICE SOFTMAX SPACE_TO_DEPTH SPLIT SPLIT_V SQRT SQUARE SQUARED_DIFFERENCE STABLEHLO_CLAMP STRIDED_SLICE SUB SUM
TANH TILE TRANSPOSE TRANSPOSE_CONV
""".split()
)
GPU_CUSTOM = frozenset({"Convolution2DTransposeBias", "MaxPoolingWithArgmax2D", "MaxUnpooling2D", "Resampler"})
_OP_LINE = re.compile(r"^\s*Op#(\d+) ([A-Za-z0-9_]+)\(")


def analyzer_report(data: bytes) -> str:
    """The analyzer's text (it prints to stdout; captured here)."""
    tf = import_tf()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        tf.lite.experimental.Analyzer.analyze(model_content=data, gpu_compatibility=True)
    return buf.getvalue()


def analyzer_checks_gpu() -> bool:
    """True if the installed analyzer binary carries the GPU compatibility checker (its warning text)."""
    analyzer = importlib.import_module("tensorflow.lite.python.analyzer")
    lib = Path(analyzer._analyzer_wrapper.__file__)
    return WARNING.encode() in lib.read_bytes()


def warnings_by_op(report: str) -> list[tuple[str, str]]:
    """(op, message) for each ``GPU COMPATIBILITY WARNING`` line the analyzer printed under an op."""
    found, current = [], None
    for line in report.splitlines():
        m = _OP_LINE.match(line)
        if m:
            current = f"{m.group(2)} (node {m.group(1)})"
        elif line.startswith(WARNING + ":") and current and "has GPU delegate compatibility issues" not in line:
            found.append((current, line.split(":", 1)[1].strip()))
    return found


def check(path: Path) -> TargetResult:
    """Ops the GPU delegate will not take; they run on the CPU (verdict partial), the rest on the GPU."""
    report = analyzer_report(Path(path).read_bytes())
    if analyzer_checks_gpu():
        pairs = warnings_by_op(report)
        method = "tf.lite.experimental.Analyzer (gpu_compatibility=True)"
    else:
        pairs = [
            (op, "not among the ops the GPU delegate accepts (gpu_compatibility.cc)")
            for op in dict.fromkeys(model_ops(path))
            if op not in GPU_BUILTINS and op not in GPU_CUSTOM
        ]
        method = (
            "op table of gpu_compatibility.cc: the installed Analyzer was built without the GPU checker and "
            "reports every model compatible; per-op parameter limits are not checked"
        )
    findings = [Finding(op, Status.FALLBACK, f"{why}; runs on the CPU instead") for op, why in pairs]
    return target_result("gpu", path, findings, method)


SPEC = TARGETS.register(
    TargetSpec(
        "gpu",
        "LiteRT GPU delegate (ops it cannot take fall back to the CPU)",
        "fp32",
        of_artefact("gpu", "fp32", check),
    )
)
