"""Read a .tflite flatbuffer's structure: operators, and dtypes of weights vs activations."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from edge_tool.calibration.serial import Record
from edge_tool.parsers.tflite_schema import enum_names, is_constant, tflite_schema


@dataclass(frozen=True)
class TfliteSummary(Record):
    """What a flatbuffer really contains (used to check a mode is what its name says)."""

    ops: dict = field(default_factory=dict)  # op name -> count
    weight_dtypes: dict = field(default_factory=dict)  # dtype -> tensor count (constant tensors)
    activation_dtypes: dict = field(default_factory=dict)  # dtype -> tensor count (computed tensors, I/O included)
    input_dtypes: tuple = ()
    output_dtypes: tuple = ()
    weight_params: int = 0
    flex_ops: tuple = ()
    variable_tensors: int = 0  # state kept between invocations (e.g. recurrent h/c): reset between samples


def state_warning(variable_tensors: int) -> str | None:
    """The advice for a model that carries state between invocations, or None when it carries none."""
    if not variable_tensors:
        return None
    return (
        f"carries state in {variable_tensors} variable tensor{'s' if variable_tensors != 1 else ''}: call "
        "reset_all_variables() (LiteRT Interpreter) between independent samples, or each result depends on "
        "the samples run before it."
    )


def _unpack(data: bytes):
    """(schema module, ModelT, tensor-type names, builtin-operator names) of a flatbuffer."""
    schema = tflite_schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(data), 0))
    return schema, model, enum_names(schema.TensorType), enum_names(schema.BuiltinOperator)


def _op_name(model, op, op_names: dict) -> str:
    """A builtin op's name, or a custom op's own code (``FlexConv3D``…)."""
    code = model.operatorCodes[op.opcodeIndex]
    builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
    name = op_names.get(builtin, str(builtin))
    if name == "CUSTOM":
        return code.customCode.decode() if isinstance(code.customCode, bytes) else str(code.customCode)
    return name


def summarize_tflite(data: bytes) -> TfliteSummary:
    """Parse the flatbuffer (no interpreter) and count ops and tensor dtypes."""
    _, model, type_names, op_names = _unpack(data)
    ops, weights, acts, flex = Counter(), Counter(), Counter(), []
    params = variables = 0
    for sg in model.subgraphs:
        for op in sg.operators:
            name = _op_name(model, op, op_names)
            if name.startswith("Flex"):
                flex.append(name[4:])
            ops[name] += 1
        for t in sg.tensors:
            variables += bool(t.isVariable)
            dtype = type_names.get(t.type, str(t.type)).lower()
            if is_constant(model, t):
                weights[dtype] += 1
                params += int(np.prod(t.shape)) if t.shape is not None and len(t.shape) else 1
            else:
                acts[dtype] += 1
    sg = model.subgraphs[0]
    ins = tuple(type_names[sg.tensors[i].type].lower() for i in sg.inputs)
    outs = tuple(type_names[sg.tensors[i].type].lower() for i in sg.outputs)
    return TfliteSummary(dict(ops), dict(weights), dict(acts), ins, outs, params, tuple(sorted(set(flex))), variables)


def ops_on_dtype(data: bytes, dtype: str) -> list[str]:
    """Op names (one per operator) with a computed (non-constant) input or output of ``dtype``, e.g. ``"float32"``."""
    _, model, type_names, op_names = _unpack(data)
    found = []
    for sg in model.subgraphs:
        for op in sg.operators:
            name = _op_name(model, op, op_names)
            tensors = [*(op.inputs if op.inputs is not None else []), *(op.outputs if op.outputs is not None else [])]
            for i in tensors:
                if i < 0:
                    continue
                t = sg.tensors[i]
                if not is_constant(model, t) and type_names.get(t.type, "").lower() == dtype:
                    found.append(name)
                    break
    return found


INTEGER_ACTIVATIONS = {"int8", "uint8", "int32", "bool"}  # int32: biases, accumulators, shapes and indices


def integer_only_problem(data: bytes) -> str | None:
    """Why a .tflite is not integer-only (what TFLM, the Edge TPU and integer NPUs run), or None when it is: every
    computed tensor 8-bit (int32 for biases, shapes and indices) apart from a float model input/output converted by
    QUANTIZE/DEQUANTIZE at the edge, and no custom or Flex op."""
    _, model, type_names, op_names = _unpack(data)
    floats, wide, custom = Counter(), Counter(), []
    for sg in model.subgraphs:
        for op in sg.operators:
            name = _op_name(model, op, op_names)
            if not name.isupper() or name.startswith("Flex"):
                custom.append(name)
            if name in ("QUANTIZE", "DEQUANTIZE"):
                continue
            tensors = [*(op.inputs if op.inputs is not None else []), *(op.outputs if op.outputs is not None else [])]
            kinds = {
                type_names.get(sg.tensors[i].type, "?").lower()
                for i in tensors
                if i >= 0 and not is_constant(model, sg.tensors[i])
            }
            if any(k.startswith("float") for k in kinds):
                floats[name] += 1
            elif kinds - INTEGER_ACTIVATIONS:
                wide[f"{name} ({', '.join(sorted(kinds - INTEGER_ACTIVATIONS))})"] += 1
    problems = [
        f"{what}: {', '.join(sorted(found))}"
        for what, found in (
            ("computes in float", floats),
            ("has non-8-bit activations", wide),
            ("has custom/Flex ops", custom),
        )
        if found
    ]
    return "; ".join(problems) or None


def signature_keys(data: bytes) -> tuple[str, ...]:
    """The signature keys of the flatbuffer ``data``, read without LiteRT (a file whose ops a runtime lacks still
    names its signatures); empty for a file that has none or that does not parse."""
    try:
        model = tflite_schema().Model.GetRootAsModel(bytearray(data), 0)
        keys = [model.SignatureDefs(i).SignatureKey() for i in range(model.SignatureDefsLength())]
    except Exception:  # a damaged flatbuffer: the loaders say what it is
        return ()
    return tuple(k.decode("utf-8", "replace") for k in keys if k is not None)
