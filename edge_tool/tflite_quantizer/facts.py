"""What a .tflite's weights are, read from the flatbuffer (no interpreter): which ops take integer weights, which
still take float ones, and a fingerprint of every tensor's type to tell whether a quantizer changed anything.

A *weight* here is a constant tensor of rank 2 or more (kernels, embedding tables): biases, shapes and scalars are
not counted, since weight-only and dynamic-range quantization leave them as they are by design. An op whose weight
reaches it through a DEQUANTIZE of an integer constant counts as quantized (weight-only's pattern).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from edge_tool.parsers.tflite_schema import enum_names, is_constant, tflite_schema

_EDGE_OPS = ("QUANTIZE", "DEQUANTIZE")
_FLOATS = ("float32", "float16", "bfloat16", "float64")


@dataclass(frozen=True)
class WeightFacts:
    """Per op name, how many of its operators take integer weights and how many float ones; ``fingerprint`` is
    every subgraph's tensor types in order (equal fingerprints: no tensor changed type)."""

    quantized_ops: dict  # op name -> operators whose weights are integer
    float_ops: dict  # op name -> operators with a float weight left
    weight_dtypes: dict  # dtype -> weight tensors of that type
    fingerprint: tuple
    signatures: tuple  # signature keys (empty for a file without SignatureDefs)


def _op_name(model, op, op_names: dict) -> str:
    code = model.operatorCodes[op.opcodeIndex]
    name = op_names.get(max(code.builtinCode, code.deprecatedBuiltinCode), "?")
    if name == "CUSTOM":
        return code.customCode.decode() if isinstance(code.customCode, bytes) else str(code.customCode)
    return name


def _is_weight(model, tensor) -> bool:
    return is_constant(model, tensor) and tensor.shape is not None and len(tensor.shape) >= 2


def _dequantized_integers(model, sg, dtype_of, op_names) -> set[int]:
    """Output tensors of DEQUANTIZE ops fed by an integer weight (the weight-only pattern)."""
    found = set()
    for op in sg.operators:
        if _op_name(model, op, op_names) == "DEQUANTIZE" and op.inputs is not None and len(op.inputs):
            source = sg.tensors[op.inputs[0]]
            if _is_weight(model, source) and dtype_of(source) not in _FLOATS:
                found.update(int(i) for i in op.outputs)
    return found


def weight_facts(data: bytes) -> WeightFacts:
    """Read ``data`` (a .tflite flatbuffer): see ``WeightFacts``."""
    schema = tflite_schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(data), 0))
    type_names, op_names = enum_names(schema.TensorType), enum_names(schema.BuiltinOperator)

    def dtype_of(t) -> str:
        return type_names.get(t.type, str(t.type)).lower()

    quantized, floating, weights, fingerprint = Counter(), Counter(), Counter(), []
    for sg in model.subgraphs:
        fingerprint.append(tuple(dtype_of(t) for t in sg.tensors))
        weights.update(dtype_of(t) for t in sg.tensors if _is_weight(model, t))
        dequantized = _dequantized_integers(model, sg, dtype_of, op_names)
        for op in sg.operators:
            name = _op_name(model, op, op_names)
            if name in _EDGE_OPS or op.inputs is None:
                continue
            kinds = set()
            for i in (int(i) for i in op.inputs if i >= 0):
                t = sg.tensors[i]
                if i in dequantized:
                    kinds.add("int")
                elif _is_weight(model, t):
                    kinds.add("float" if dtype_of(t) in _FLOATS else "int")
            if "float" in kinds:
                floating[name] += 1
            elif "int" in kinds:
                quantized[name] += 1
    keys = tuple(sorted(s.signatureKey.decode() for s in (model.signatureDefs or []) if s.signatureKey))
    return WeightFacts(dict(quantized), dict(floating), dict(weights), tuple(fingerprint), keys)
