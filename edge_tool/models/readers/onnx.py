"""onnx: what an .onnx file is, read without running it: a protobuf ``ModelProto`` parsed with the ``onnx`` package (size
capped, tensors checked against the tensor limit, external data kept inside the model's directory), and what it
was quantized to (QDQ nodes, initializer types). A file that is not such a model is refused here, naming what was
found, before any runtime loads it. A file of another name is read as ONNX when its bytes start like a
ModelProto (and not like a TFLite flatbuffer, whose sniff is tried first); an .onnx name must hold ONNX.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf.message import DecodeError

from edge_tool.calibration.safe_open import read_regular
from edge_tool.errors import ModelError, UsageError
from edge_tool.models.readers.registry import READERS, Artifact, FormatReader
from edge_tool.parsers.limits import PROTOBUF_MAX, max_tensor_bytes, tensor_bytes, too_large

EXTRA_HINT = "pip install 'edgetool[onnx]'"
QDQ_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "QLinearAdd", "QLinearMul"}
DYNAMIC_OPS = {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "DynamicQuantizeMatMul"}


@dataclass(frozen=True)
class OnnxFacts:
    """An ONNX model's facts: its quantization label and the opsets it imports."""

    quant: str
    opsets: tuple[str, ...]


def require_onnx(what: str) -> None:
    """UsageError naming the extra to install when ``onnx`` or ``onnxruntime`` cannot be imported."""
    missing = []
    for name in ("onnx", "onnxruntime"):
        try:
            __import__(name)
        except ImportError as exc:
            missing.append(f"{name} ({exc})")
    if missing:
        raise UsageError(
            f"{what} needs ONNX Runtime and the onnx package, which are not installed: "
            f"{'; '.join(missing)}. Install the optional extra: {EXTRA_HINT}."
        )


def looks_like_onnx(data: bytes) -> bool:
    """True when ``data`` starts like a serialized ModelProto (field 1, ir_version, a varint)."""
    return data[:1] == b"\x08"


def locate(path: Path) -> Path | None:
    """A file named .onnx."""
    return path if path.is_file() and path.suffix.lower() == ".onnx" else None


def describe(given: Path, model_file: Path) -> Artifact:
    """An .onnx file, parsed and checked (``read_onnx``), never loaded here."""
    facts = read_onnx(model_file)
    quant_source = "ONNX graph (QDQ nodes, initializer types)"
    return Artifact(given, model_file, "onnx", facts.quant, quant_source, model_file.stat().st_size)


def read_onnx(path: Path) -> OnnxFacts:
    """Parse and check the .onnx file ``path`` (ModelError naming what is wrong); its facts."""
    require_onnx(f"Evaluating {path}")
    import onnx

    data = read_regular(path, "an .onnx file", ModelError, PROTOBUF_MAX, "protobuf cannot parse a larger message")
    if data[4:8] == b"TFL3":
        raise ModelError(
            f"{path} is not an ONNX model: it is a TFLite flatbuffer; give it a .tflite name to evaluate it in LiteRT."
        )
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise ModelError(
            f"{path} is not an ONNX model: it does not parse as an ONNX ModelProto ({exc}); expected "
            "a .onnx file written by an ONNX exporter (tf2onnx, torch.onnx, edgetool convert)."
        ) from None
    graph = model.graph
    inputs = _graph_inputs(graph)
    problems = []
    if model.ir_version <= 0 or not model.opset_import:
        problems.append("no IR version or opset import")
    if not inputs or not graph.output:
        problems.append(f"a graph with {len(inputs)} input(s) and {len(graph.output)} output(s)")
    if problems:
        raise ModelError(
            f"{path} is not a usable ONNX model: it has {' and '.join(problems)}; expected an ONNX "
            "ModelProto with a graph of at least one input and one output."
        )
    _check_tensors(path, [*inputs, *graph.output, *graph.value_info])
    _check_external_data(path, model)
    opsets = tuple(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
    return OnnxFacts(_quant(model), opsets)


def _graph_inputs(graph) -> list:
    """The graph's real inputs (older exporters also list the initializers as inputs)."""
    init = {t.name for t in graph.initializer}
    return [v for v in graph.input if v.name not in init]


def _check_tensors(path: Path, values) -> None:
    """Every typed input/output/intermediate of one sample against the tensor limit (ModelError naming it)."""
    from onnx.helper import tensor_dtype_to_np_dtype

    limit = max_tensor_bytes()
    for v in values:
        t = v.type.tensor_type
        if not v.type.HasField("tensor_type"):
            continue
        dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
        try:
            dtype = str(tensor_dtype_to_np_dtype(t.elem_type))
        except (KeyError, ValueError, TypeError):
            dtype = "float64"
        need = tensor_bytes(dims, dtype)
        if need > limit:
            raise too_large(f"{path}: tensor", v.name, dims, dtype, need, limit)


def _check_external_data(path: Path, model) -> None:
    """Tensors stored outside the file must name a regular file inside the model's directory."""
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    root = path.resolve().parent
    for tensor in _get_all_tensors(model):
        if not uses_external_data(tensor):
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        target = (root / location).resolve()
        if not location or Path(location).is_absolute() or not target.is_relative_to(root) or not target.is_file():
            raise ModelError(
                f"{path}: tensor {tensor.name!r} keeps its data in {location!r}, which is not a file "
                f"inside {root}; refusing to read data from outside the model's directory."
            )


def _quant(model) -> str:
    """ "int8 QDQ" / "uint8 QDQ" (static quantization), "dynamic", "fp16" or "fp32", from nodes and initializers."""
    from onnx import TensorProto

    ops = {n.op_type for n in model.graph.node}
    inits = {t.name: t for t in model.graph.initializer}
    if ops & QDQ_OPS:
        zero_types = {
            inits[n.input[2]].data_type
            for n in model.graph.node
            if n.op_type == "QuantizeLinear" and len(n.input) > 2 and n.input[2] in inits
        }
        return "uint8 QDQ" if zero_types == {TensorProto.UINT8} else "int8 QDQ"
    if ops & DYNAMIC_OPS:
        return "dynamic"
    floats = {t.data_type for t in inits.values() if t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16)}
    return "fp16" if floats == {TensorProto.FLOAT16} else "fp32"


READER = READERS.register(FormatReader("onnx", "an .onnx file", locate, describe, sniff=looks_like_onnx))
