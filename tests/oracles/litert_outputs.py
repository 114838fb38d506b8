"""The suite's in-process LiteRT oracle: plain ``ai_edge_litert``, one sample at a time, float64 outputs."""

from __future__ import annotations

import numpy as np


def litert_outputs(path, x):
    """Independent oracle: plain LiteRT, one sample at a time, float64 outputs.

    Float inputs of an integer-input model are quantized with the model's own scale/zero-point
    (round(x / scale + zero), clipped); integer outputs are dequantized. Integer data for an
    integer-input model (raw uint8 pixels) is passed unchanged.
    """
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    inp, outp = it.get_input_details()[0], it.get_output_details()[0]
    rows = []
    for i in range(len(x)):
        sample = x[i : i + 1]
        if inp["dtype"] in (np.int8, np.uint8) and sample.dtype.kind == "f":
            s, z = inp["quantization"]
            info = np.iinfo(inp["dtype"])
            sample = np.clip(np.round(sample.astype(np.float64) / s + z), info.min, info.max)
        it.set_tensor(inp["index"], sample.astype(inp["dtype"]))
        it.invoke()
        y = it.get_tensor(outp["index"])
        if outp["dtype"] in (np.int8, np.uint8):
            s, z = outp["quantization"]
            y = (y.astype(np.float64) - z) * s
        rows.append(np.asarray(y, dtype=np.float64))
    return np.concatenate(rows)
