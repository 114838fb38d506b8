"""What the LiteRT.js engine of a ``demo --litert`` page needs to know of a fixed-batch .tflite (built by
``convert.fixed_int8`` or given with --tflite): its I/O dtype, fixed shape and quantization, checked first."""

from __future__ import annotations

from pathlib import Path

from edge_tool.calibration.spec import dtype_name
from edge_tool.errors import ModelError
from edge_tool.litert.runtime import load_interpreter

TFLITE_NAME = "model-int8-b1.tflite"
FP32_NAME = "model-fp32-b1.tflite"  # built beside it from a SavedModel, so the page can pick LiteRT.js fp32 too
IO_DTYPES = ("float32", "int8", "uint8")


def tflite_spec(path: Path, classes: int | None) -> dict:
    """What the page needs to feed and read ``path``: I/O dtype, fixed shape, quantization (scale, zero point)."""
    interp = load_interpreter(Path(path))
    ins, outs = interp.get_input_details(), interp.get_output_details()
    if len(ins) != 1 or len(outs) != 1:
        raise ModelError(f"{path} has {len(ins)} inputs and {len(outs)} outputs; the LiteRT.js engine drives 1 and 1.")
    i, o = ins[0], outs[0]
    shape_sig = [int(d) for d in i.get("shape_signature", i["shape"])]
    problems = []
    if any(d < 0 for d in shape_sig):
        problems.append(
            f"its input shape {shape_sig} is not fixed (LiteRT.js cannot run a variable batch); "
            f"re-export it with batch 1 or let --litert build it from the SavedModel"
        )
    if shape_sig and shape_sig[0] != 1:
        problems.append(f"its input batch is {shape_sig[0]}; the page feeds one sample at a time (batch 1)")
    out_shape = [int(d) for d in o["shape"]]
    if out_shape[:1] != [1] or (classes is not None and out_shape != [1, classes]):
        problems.append(
            f"its output shape is {out_shape}; expected {[1, classes] if classes else '[1, ...]'} "
            "(the model's output at batch 1)"
        )
    for role, d in (("input", i), ("output", o)):
        if d["dtype"].__name__ not in IO_DTYPES:
            problems.append(f"its {role} dtype is {dtype_name(d['dtype'])}; expected one of {', '.join(IO_DTYPES)}")
    if problems:
        raise ModelError(f"{path} cannot be the LiteRT.js model: " + "; ".join(problems) + ".")
    return {"input": _io(i), "output": _io(o)}


def _io(detail: dict) -> dict:
    scale, zero = detail.get("quantization", (0.0, 0))
    return {
        "dtype": detail["dtype"].__name__,
        "shape": [int(d) for d in detail["shape"]],
        "scale": float(scale),
        "zeroPoint": int(zero),
    }
