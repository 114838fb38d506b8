"""Child process: ``python -m edge_tool.check.litert_probe MODEL`` loads, allocates and invokes a .tflite with LiteRT
(zeros in, any variable dimension set to 1) and prints one JSON line ``{"ok": bool, "error": str}``.

A child, because a hostile or broken flatbuffer can crash the interpreter; it imports only LiteRT, numpy and the
probe the board runner makes too (``device.board_model``, stdlib at import).
"""

from __future__ import annotations

import json
import sys

from edge_tool.device.board_model import probe_zeros
from edge_tool.litert.runtime import interpreter_class


def probe(path: str) -> dict:
    """Load + allocate + invoke (the check a board's runner makes too); the interpreter's own error text when any
    step fails."""
    cls, name = interpreter_class()
    answer = probe_zeros(cls, path)
    return {"ok": answer["ok"], "error": answer["error"], "runtime": name}


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1])))
