"""The state a .tflite keeps between calls in resource variables (Keras ``stateful=True`` layers): VAR_HANDLE names a
variable, ASSIGN_VARIABLE writes it (its value input gives shape and dtype), READ_VARIABLE reads it. Read from the
flatbuffer alone, no interpreter."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edge_tool.calibration.serial import Record
from edge_tool.parsers.tflite_schema import enum_names, tflite_schema

# How an app starts a new stream on LiteRT, as measured on ai-edge-litert 2.3: reset_all_variables() resets variable
# tensors only, not resource variables (a reset interpreter's next call differs from a fresh one's).
RESET = (
    "starts from its initial state in a new Interpreter (LiteRT): create one per stream; reset_all_variables() "
    "does not reset resource variables"
)
STREAM = (
    "one stream of {calls} seeded random calls, each side from its initial state (SavedModel freshly loaded, "
    "a new LiteRT Interpreter), same order, compared call by call"
)


@dataclass(frozen=True)
class StateVariable(Record):
    """One resource variable the model assigns on each call: its name, shape, dtype and size."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    bytes: int


@dataclass(frozen=True)
class ModelState(Record):
    """The resource-variable state a file carries from one call to the next, and how an app resets it."""

    variables: tuple[StateVariable, ...]
    bytes: int
    reset: str = RESET


def read_state(data: bytes) -> ModelState | None:
    """The resource variables ``data`` assigns (by VAR_HANDLE shared name), or None when it assigns none."""
    schema = tflite_schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(data), 0))
    ops, types = enum_names(schema.BuiltinOperator), enum_names(schema.TensorType)
    found: dict[str, StateVariable] = {}
    for sg in model.subgraphs or ():
        handles = {}
        for op in sg.operators or ():
            code = model.operatorCodes[op.opcodeIndex]
            name = ops.get(max(code.builtinCode, code.deprecatedBuiltinCode), "")
            if name == "VAR_HANDLE":
                shared = getattr(op.builtinOptions, "sharedName", None) or b""
                handles[int(op.outputs[0])] = shared.decode() if isinstance(shared, bytes) else str(shared)
            elif name == "ASSIGN_VARIABLE" and int(op.inputs[0]) in handles:
                value = sg.tensors[int(op.inputs[1])]
                var = handles[int(op.inputs[0])]
                shape = tuple(int(d) for d in (value.shape if value.shape is not None else ()))
                dtype = types.get(value.type, str(value.type)).lower()
                size = int(np.prod(shape, dtype=np.int64)) * _itemsize(dtype)
                found.setdefault(var, StateVariable(var, shape, dtype, size))
    if not found:
        return None
    variables = tuple(found.values())
    return ModelState(variables, sum(v.bytes for v in variables))


def _itemsize(dtype: str) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        return 0


def state_line(state: ModelState) -> str:
    """What convert says about a file with state: its variables, and how an app starts a new stream."""
    shown = ", ".join(f"{v.name} {'×'.join(map(str, v.shape))} {v.dtype}" for v in state.variables)
    count = len(state.variables)
    return (
        f"keeps state between calls in {count} resource variable{'s' if count != 1 else ''} ({shown}; "
        f"{state.bytes} bytes): each call continues the stream of the calls before it, and the file {state.reset}."
    )


def streaming_loop_refusal(bits: str) -> tuple[str, str]:
    """(finding, way out) of the refusal to calibrate ``bits`` (int8/int16) activations of a stateful model's loop."""
    return (
        f"calibrated {bits} quantization of a streaming model (a Keras stateful=True recurrent layer: state in "
        "resource variables, its step a WHILE loop edgetool does not unroll) crashes TensorFlow's calibrator (2.19 "
        "to 2.21: segmentation fault, also with the raw TFLiteConverter), so edgetool refuses it.",
        "Use --quant dynamic (int8 weights, float activations) or fp16 for this model: both keep the state.",
    )
