"""Run every .tflite convert writes once, in a child process: a file that kills LiteRT is refused, not shipped.

TensorFlow 2.19's converter can write a model LiteRT aborts on (e.g. int16x8 of a Transformer block: SIGABRT in
the kernel's prepare, the raw converter's file too). The child loads the file with the serving signature and runs
one all-zeros input; only a death by signal (or a hang) refuses the mode — an exception may come from the zero
input itself (a dynamic height/width set to 1), so it is not held against the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from edge_tool.errors import ConversionError

TIMEOUT_S = 300
_CHILD = r"""
import sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter

it = Interpreter(model_path=sys.argv[1], num_threads=1)
signatures = it.get_signature_list()
if not signatures:
    it.allocate_tensors()
    it.invoke()
    sys.exit(0)
runner = it.get_signature_runner(next(iter(signatures)))
feed = {}
for name, d in runner.get_input_details().items():
    dims = d.get("shape_signature")
    dims = d["shape"] if dims is None or len(dims) == 0 else dims
    feed[name] = np.zeros([max(1, int(n)) for n in dims], d["dtype"])
runner(**feed)
"""


def refuse_if_it_kills_litert(data: bytes, mode: str) -> None:
    """ConversionError when one zero-input run of ``data`` kills (or hangs) LiteRT in a child process."""
    from edge_tool.evaluate.isolated import death_reason  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="edgetool-smoke-") as tmp:
        path = Path(tmp) / "model.tflite"
        path.write_bytes(data)
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
        try:
            proc = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True,
                                  timeout=TIMEOUT_S, env=env)
        except subprocess.TimeoutExpired:
            raise ConversionError(_refusal(mode, f"one inference did not finish within {TIMEOUT_S} s")) from None
    if proc.returncode < 0:
        raise ConversionError(_refusal(mode, death_reason(proc.returncode, proc.stderr, "LiteRT")))


def _refusal(mode: str, why: str) -> str:
    return (f"--quant {mode}: the TFLite converter wrote a model that LiteRT cannot run ({why}). That is a "
            "TensorFlow 2.19 converter/kernel bug for this model in this mode (the raw TFLiteConverter's file "
            "behaves the same), so edgetool does not ship it. Use another --quant mode; --quant auto builds them "
            "all and keeps those that run.")
