"""What a .tflite file says without running it (no interpreter, so safe on files that crash LiteRT): its quant
mode from tensor types, and the recurrent state it carries."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_tool.errors import ModelError
from edge_tool.parsers.limits import read_tflite, tensor_bytes
from edge_tool.parsers.tflite_schema import enum_names, is_constant, tflite_schema

_STATE_OPS = {"VAR_HANDLE", "ASSIGN_VARIABLE", "READ_VARIABLE"}


@dataclass(frozen=True)
class FlatbufferFacts:
    """What the file says without running it: quant mode from tensor types, recurrent state it carries."""

    quant: str
    variable_tensors: int
    state_ops: int
    float_ops: tuple = ()  # int8/int16x8: ops computing in float32 (QUANTIZE/DEQUANTIZE at the edges aside)
    flex: bool = False  # has TF Select (Flex) ops: needs an interpreter with the Flex delegate
    activation_bytes: int = 0  # the largest operator output of the main graph, for one sample (batch dim 1)

    @property
    def label(self) -> str:
        """What the file is, for reports: the quant mode, flagged when an integer file keeps float ops."""
        return f"{self.quant} (not fully integer)" if self.float_ops else self.quant

    @property
    def stateful(self) -> bool:
        """True when invokes carry state (variable tensors or resource variables) from one call to the next."""
        return bool(self.variable_tensors or self.state_ops)


def read_flatbuffer(path: Path) -> FlatbufferFacts:
    """Parse ``path`` as a TFLite flatbuffer (no interpreter: safe on files that crash LiteRT).

    ModelError when the bytes are not a TFLite model. Quant mode from tensor types: int16 activations = int16x8;
    int8 activations = int8 (full integer); float16 constants = fp16; int8 constants with float activations =
    dynamic, or weight-int8/weight-int4 when a DEQUANTIZE turns them to float before the op (weight-only);
    otherwise fp32 (activations are operator outputs, constants tensors with buffer data; model inputs
    are neither, so an integer input alone says nothing about the quantization).
    """
    schema = tflite_schema()
    path = Path(path)
    buf = read_tflite(path)
    if len(buf) < 8 or not schema.Model.ModelBufferHasIdentifier(buf, 0):
        raise ModelError(
            f"{path} is not a loadable TFLite model (expected a TFLite flatbuffer, file identifier "
            f"TFL3; found {buf[4:8]!r})."
        )
    try:
        return _facts(schema, schema.Model.GetRootAsModel(buf, 0))
    except Exception as exc:
        raise ModelError(f"{path} is not a loadable TFLite model (its flatbuffer is damaged: {exc}).") from None


def _facts(schema, model) -> FlatbufferFacts:
    types, ops = enum_names(schema.TensorType), enum_names(schema.BuiltinOperator)
    acts, consts, variables, state_ops, on_float, flex = set(), set(), 0, 0, set(), False
    dequantized = False  # an integer constant dequantized before a float op: weight-only quantization
    for g in range(model.SubgraphsLength()):
        sg = model.Subgraphs(g)
        outputs = {
            int(i) for k in range(sg.OperatorsLength()) for i in _vector(sg.Operators(k).OutputsAsNumpy()) if i >= 0
        }
        for k in range(sg.OperatorsLength()):
            code = model.OperatorCodes(sg.Operators(k).OpcodeIndex())
            name = ops.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "")
            state_ops += name in _STATE_OPS
            flex = flex or (name == "CUSTOM" and (code.CustomCode() or b"").startswith(b"Flex"))
            if name not in _EDGE_OPS and _computes_in_float(model, sg, sg.Operators(k), types):
                on_float.add(name or "CUSTOM")
            dequantized = dequantized or (name == "DEQUANTIZE" and _integer_constant_in(model, sg, k, types))
        for t in range(sg.TensorsLength()):
            tensor = sg.Tensors(t)
            variables += bool(tensor.IsVariable())
            if t in outputs or is_constant(model, tensor):
                (acts if t in outputs else consts).add(types.get(tensor.Type(), "").lower())
    if "int16" in acts:
        quant = "int16x8"
    elif acts & {"int8", "uint8"}:
        quant = "int8"
    elif "float16" in consts:
        quant = "fp16"
    elif consts & {"int8", "uint8", "int4"} and dequantized:
        quant = "weight-int4" if "int4" in consts else "weight-int8"
    elif consts & {"int8", "uint8", "int4"}:
        quant = "dynamic"
    else:
        quant = "fp32"
    float_ops = tuple(sorted(on_float)) if quant in ("int8", "int16x8") else ()
    return FlatbufferFacts(quant, variables, state_ops, float_ops, flex, _largest_output(model, types))


def _largest_output(model, types: dict) -> int:
    """Bytes of the main graph's largest operator output for one sample (its first dimension taken as 1)."""
    if not model.SubgraphsLength():
        return 0
    sg, largest = model.Subgraphs(0), 0
    count = sg.TensorsLength()
    for k in range(sg.OperatorsLength()):
        for i in _vector(sg.Operators(k).OutputsAsNumpy()):
            if not 0 <= i < count:
                continue
            tensor = sg.Tensors(int(i))
            shape = (1, *(int(d) for d in _vector(tensor.ShapeAsNumpy())[1:]))
            largest = max(largest, tensor_bytes(shape, types.get(tensor.Type(), "float32").lower()))
    return largest


def _vector(indices) -> tuple:
    """Tensor indices of an operator's inputs or outputs; flatbuffers gives 0 (not an empty array) for an absent
    vector (CALL_ONCE, HASHTABLE_IMPORT of a lookup table have no outputs)."""
    return () if isinstance(indices, int) else tuple(indices)


def _integer_constant_in(model, sg, k: int, types: dict) -> bool:
    """True when operator ``k``'s first input is an integer constant (a weight-only file's DEQUANTIZE)."""
    inputs = _vector(sg.Operators(k).InputsAsNumpy())
    if not inputs or inputs[0] < 0:
        return False
    t = sg.Tensors(int(inputs[0]))
    return is_constant(model, t) and types.get(t.Type(), "").lower() in ("int8", "uint8", "int4")


_EDGE_OPS = {"QUANTIZE", "DEQUANTIZE"}  # float I/O of an integer model passes through these


def _computes_in_float(model, sg, op, types: dict) -> bool:
    """True when one of ``op``'s computed (non-constant) inputs or outputs is float32."""
    for i in (*_vector(op.InputsAsNumpy()), *_vector(op.OutputsAsNumpy())):
        if i >= 0:
            t = sg.Tensors(int(i))
            if types.get(t.Type(), "").lower() == "float32" and not is_constant(model, t):
                return True
    return False
