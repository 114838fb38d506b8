"""edgetpu: Coral Edge TPU — the published model requirements, checked on the int8 flatbuffer.

Source: coral.ai/docs/edgetpu/models-intro/ ("Model requirements" and "Supported operations", Edge TPU compiler
v16): every tensor 8-bit quantized (int8/uint8; int32 biases), tensor sizes constant at compile time (no dynamic
shapes), model parameters constant, tensors 1-3-D (or only the 3 innermost dimensions larger than 1), only the
operations in the table below. From a model, check builds the full-integer int8 .tflite with the batch fixed to 1
(the same build as ``demo --litert``), since the compiler refuses a variable batch. The compiler maps ops onto the Edge TPU up to the first one it cannot; that op and
every op after it run on the CPU. This is a static reading of those rules: the compiler itself (x86-64 Debian only,
not on PyPI) has the last word, including per-op limits the table notes.
"""

from __future__ import annotations

from pathlib import Path

from edge_tool.check.base import Finding, Status, TargetResult, target_result
from edge_tool.check.registry import TARGETS, TargetSpec
from edge_tool.check.targets.common import of_artefact
from edge_tool.parsers.limits import read_tflite
from edge_tool.parsers.tflite_schema import tflite_schema

EDGETPU_OPS = frozenset(
    """
ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D EXPAND_DIMS FULLY_CONNECTED L2_NORMALIZATION LOGISTIC
LSTM UNIDIRECTIONAL_SEQUENCE_LSTM MAXIMUM MAX_POOL_2D MEAN MINIMUM MUL PACK PAD PRELU QUANTIZE REDUCE_MAX REDUCE_MIN
RELU RELU6 RELU_N1_TO_1 RESHAPE RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR RSQRT SLICE SOFTMAX SPACE_TO_DEPTH SPLIT SQUEEZE
STRIDED_SLICE SUB SUM SQUARED_DIFFERENCE TANH TRANSPOSE TRANSPOSE_CONV
""".split()
)
INTEGER = {"int8", "uint8", "int32"}


def _model(path: Path):
    schema = tflite_schema()
    raw = schema.Model.GetRootAsModel(bytearray(read_tflite(path)), 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    types = {v: k.lower() for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
    return schema.ModelT.InitFromObj(raw), names, types


def _op_name(model, op, names) -> str:
    code = model.operatorCodes[op.opcodeIndex]
    name = names.get(max(code.builtinCode, code.deprecatedBuiltinCode), "?")
    if name == "CUSTOM":
        custom = code.customCode
        return custom.decode(errors="replace") if isinstance(custom, bytes) else str(custom)
    return name


def requirement_findings(model, types) -> list[Finding]:
    """Whole-model requirements: one subgraph, static shapes, 8-bit tensors, at most 3 non-1 dimensions."""
    findings = []
    if len(model.subgraphs) != 1:
        findings.append(
            Finding(
                "(model)",
                Status.UNSUPPORTED,
                f"{len(model.subgraphs)} subgraphs; the Edge TPU compiler takes one (no control flow)",
            )
        )
    sg = model.subgraphs[0]
    io = set(sg.inputs) | set(sg.outputs)
    dynamic = [
        t.name.decode(errors="replace") if isinstance(t.name, bytes) else str(t.name)
        for t in sg.tensors
        if t.shapeSignature is not None and any(int(d) < 0 for d in t.shapeSignature)
    ]
    if dynamic:
        findings.append(
            Finding(
                "(model)",
                Status.UNSUPPORTED,
                f"dynamic tensor shapes (e.g. {dynamic[0]}); the "
                "compiler needs every size fixed (convert with a fixed batch)",
            )
        )
    floats = [i for i, t in enumerate(sg.tensors) if types.get(t.type, "?") not in INTEGER and i not in io]
    if floats:
        findings.append(
            Finding(
                "(model)",
                Status.UNSUPPORTED,
                f"{len(floats)} internal tensor(s) are not 8-bit "
                "quantized; the Edge TPU needs a full-integer model (--quant int8 or qat)",
            )
        )
    computed = [
        t
        for t in sg.tensors
        if not (
            t.buffer < len(model.buffers)
            and model.buffers[t.buffer].data is not None
            and len(model.buffers[t.buffer].data)
        )
    ]
    big = [t for t in computed if t.shape is not None and any(d > 1 for d in t.shape[:-3])]
    if big:
        findings.append(
            Finding(
                "(model)",
                Status.UNSUPPORTED,
                "an activation tensor has a dimension > 1 outside its 3 innermost; the Edge TPU handles 1-3-D tensors",
            )
        )
    return findings


def check(path: Path) -> TargetResult:
    """Requirements the whole model must meet (fails), then ops from the first unsupported one on (CPU fallback)."""
    model, names, types = _model(path)
    findings = requirement_findings(model, types)
    ops = [_op_name(model, op, names) for op in model.subgraphs[0].operators]
    first = next((i for i, name in enumerate(ops) if name not in EDGETPU_OPS and name != "DEQUANTIZE"), None)
    if first is not None:
        for i, name in enumerate(ops[first:], start=first):
            why = (
                "not an Edge TPU operation"
                if name not in EDGETPU_OPS
                else f"after {ops[first]} (node {first}), the first op the Edge TPU cannot run"
            )
            findings.append(Finding(f"{name} (node {i})", Status.FALLBACK, f"{why}: runs on the CPU"))
    return target_result(
        "edgetpu", path, findings, "static check of the published Edge TPU model requirements and op table (coral.ai)"
    )


SPEC = TARGETS.register(
    TargetSpec(
        "edgetpu",
        "Coral Edge TPU (published requirements; needs edgetpu_compiler to deploy)",
        "int8-b1",
        of_artefact("edgetpu", "int8-b1", check),
    )
)
