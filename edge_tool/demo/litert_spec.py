"""What the LiteRT.js engine of a ``demo --litert`` page needs to know of a fixed-batch .tflite (built by
``convert.fixed_int8`` or given with --tflite): each input's name, dtype, fixed shape and quantization, and its one
output's, checked first."""

from __future__ import annotations

from pathlib import Path

from edge_tool.calibration.spec import dtype_name
from edge_tool.errors import ModelError
from edge_tool.litert.runtime import load_interpreter

TFLITE_NAME = "model-int8-b1.tflite"
FP32_NAME = "model-fp32-b1.tflite"  # built beside it from a SavedModel, so the page can pick LiteRT.js fp32 too
IO_DTYPES = ("float32", "int8", "uint8")
# @litertjs/core 2.5.3 (DATATYPES in its index.d.ts) holds float32, int32 and uint8 tensors only; a model input of
# another integer dtype is fed as int32 (convert.fixed_int8 builds it so)
INPUT_DTYPES = (*IO_DTYPES, "int32")


def _signature_io(interp) -> tuple[list, list]:
    """(inputs, outputs) as [(name LiteRT.js runs them by, detail)]: the first signature's keys, else tensor names."""
    signatures = interp.get_signature_list()
    if signatures:
        runner = interp.get_signature_runner(next(iter(signatures)))
        return list(runner.get_input_details().items()), list(runner.get_output_details().items())
    return ([(d["name"], d) for d in interp.get_input_details()], [(d["name"], d) for d in interp.get_output_details()])


def tflite_spec(path: Path, classes: int | None, page_inputs: tuple[str, ...] = ()) -> dict:
    """What the page needs to feed and read ``path``: per input its name, the page input that feeds it (by name out of
    ``page_inputs``, else by position), dtype, fixed shape, quantization; the same for its one output."""
    interp = load_interpreter(Path(path))
    ins, outs = _signature_io(interp)
    if len(outs) != 1:
        raise ModelError(f"{path} has {len(outs)} outputs; the LiteRT.js engine reads 1.")
    if page_inputs and len(ins) != len(page_inputs):
        raise ModelError(f"{path} has {len(ins)} inputs; the model the page shows has {len(page_inputs)}.")
    problems = []
    for key, i in ins:
        shape_sig = [int(d) for d in i.get("shape_signature", i["shape"])]
        if any(d < 0 for d in shape_sig):
            problems.append(
                f"its input {key} shape {shape_sig} is not fixed (LiteRT.js cannot run a variable batch); "
                f"re-export it with batch 1 or let --litert build it from the SavedModel"
            )
        if shape_sig and shape_sig[0] != 1:
            problems.append(f"its input {key} batch is {shape_sig[0]}; the page feeds one sample at a time (batch 1)")
        if i["dtype"].__name__ not in INPUT_DTYPES:
            problems.append(
                f"its input {key} dtype is {dtype_name(i['dtype'])}; LiteRT.js 2.5.3 feeds "
                f"{', '.join(INPUT_DTYPES)} (let --litert build it from the SavedModel: int64 ids are fed as int32)"
            )
    o = outs[0][1]
    out_shape = [int(d) for d in o["shape"]]
    if out_shape[:1] != [1] or (classes is not None and out_shape != [1, classes]):
        problems.append(
            f"its output shape is {out_shape}; expected {[1, classes] if classes else '[1, ...]'} "
            "(the model's output at batch 1)"
        )
    if o["dtype"].__name__ not in IO_DTYPES:
        problems.append(f"its output dtype is {dtype_name(o['dtype'])}; expected one of {', '.join(IO_DTYPES)}")
    if problems:
        raise ModelError(f"{path} cannot be the LiteRT.js model: " + "; ".join(problems) + ".")
    keys = [key for key, _ in ins]
    feeds = keys if set(keys) == set(page_inputs) or not page_inputs else list(page_inputs)
    inputs = [{**_io(d), "key": key, "feed": feed} for (key, d), feed in zip(ins, feeds)]
    return {"input": inputs[0], "inputs": inputs, "output": _io(o)}


def _io(detail: dict) -> dict:
    scale, zero = detail.get("quantization", (0.0, 0))
    return {
        "dtype": detail["dtype"].__name__,
        "shape": [int(d) for d in detail["shape"]],
        "scale": float(scale),
        "zeroPoint": int(zero),
    }
