"""Child process: ``python -m edge_tool.check.litert_probe MODEL`` loads, allocates and invokes a .tflite with LiteRT
(zeros in, any variable dimension set to 1) and prints one JSON line ``{"ok": bool, "error": str}``.

A child, because a hostile or broken flatbuffer can crash the interpreter; only LiteRT and numpy are imported.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from edge_tool.litert.runtime import interpreter_class


def probe(path: str) -> dict:
    """Load + allocate + invoke; the interpreter's own error text when any step fails."""
    cls, name = interpreter_class()
    try:
        it = cls(model_path=path)
        for d in it.get_input_details():
            sig = [int(s) for s in d.get("shape_signature", d["shape"])]
            if any(s < 0 for s in sig):
                it.resize_tensor_input(d["index"], [1 if s < 0 else s for s in sig])
        it.allocate_tensors()
        for d in it.get_input_details():
            it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
        it.invoke()
    except (ValueError, RuntimeError) as exc:
        return {"ok": False, "error": str(exc), "runtime": name}
    return {"ok": True, "error": "", "runtime": name}


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1])))
